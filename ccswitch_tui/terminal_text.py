"""The display rule for text from elsewhere: what a settings file, another process, a CC Switch
database or a provider wrote is shown, never obeyed by the terminal.

``visible`` shows every C0 control character but newline and tab, DEL, every C1 control character
and the bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069) as escapes (``\\x1b``,
``\\x9b``, ``\\u202e``), and a byte that was not UTF-8 as ``\\xNN``. An escape sequence
(``ESC ]52;…`` rewrites the clipboard, ``ESC ]0;…`` the window title, ``ESC ]8;;…`` makes a
hyperlink, ``ESC [2J`` clears the screen) then prints as its characters, and a path holding a
right-to-left override cannot display as another path.

Every command and the TUI pass foreign text through it where it is shown. It is not a filter on
the output stream: ccs's own ``\\r`` progress lines pass as they are. ``visible`` is idempotent (its
output holds no character it escapes), so a value wrapped twice shows the same.
"""

from __future__ import annotations

import re

# C0 but tab and newline, DEL, C1, the bidi embeddings, overrides and isolates, and lone surrogates:
# a byte that was not UTF-8 (a directory name, another process's environment) is read as U+DC80–U+DCFF,
# and a stream that writes it back as the byte would hand a C1 control to the terminal.
CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group(0))
    if c <= 0xFF:
        return f"\\x{c:02x}"
    if 0xDC80 <= c <= 0xDCFF:  # the undecodable byte itself
        return f"\\x{c - 0xDC00:02x}"
    return f"\\u{c:04x}"


def visible(text: str) -> str:
    """``text`` with every character that could drive a terminal or reorder a line shown escaped."""
    if not CONTROL_RE.search(text):
        return text
    return CONTROL_RE.sub(_escape, text)


def visible_json(text: str) -> str:
    """A JSON text with DEL, the C1 controls and the bidi characters written as ``\\u`` escapes too
    (the encoder escapes C0 only): the same data, still valid JSON, nothing for a terminal to obey.
    Outside strings JSON holds none of them, so every one replaced sits inside a string."""
    if not CONTROL_RE.search(text):
        return text
    return CONTROL_RE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def first_control(text: str) -> str | None:
    """The first such character of ``text``, escaped (``"\\x1b"``), or None when it has none."""
    m = CONTROL_RE.search(text)
    return None if m is None else _escape(m)

"""The output filter: every line ccs prints — stdout, stderr, click's usage errors, JSON, a
``--debug`` traceback — passes through ``redact_text`` on its way out, which masks key-shaped
tokens (``shapes``) and credentials inside URLs (``https://***@host``, ``?api_key=***``).

``install()`` puts the filter in front of ``sys.stdout`` and ``sys.stderr`` at the CLI's entry
point. Children that ccs launches inherit the terminal's file descriptors, not these Python
streams, so a tool's own output is never touched.
"""

from __future__ import annotations

import re
import sys
from typing import Any, TextIO

from ccswitch_tui.policy.secret_forms import KnownSecrets
from ccswitch_tui.policy.shapes import CREDENTIAL_HEADER_RE as _HEADER
from ccswitch_tui.policy.shapes import SECRET_PARAM_RE, LazyPattern, key_spans

# a quick test that lets most lines through untouched: no long token, no URL credential, no '='
_MAYBE = LazyPattern(r"[A-Za-z0-9+/_.~-]{20,}|://[^\s/@]*@|[?&][^=\s&#]+=|(?i:authorization|api-key|cookie|token:|bearer)")
_USERINFO = LazyPattern(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]{0,31}://)(?P<userinfo>[^\s/?#@\"']+)@")
# a backslash ends a value: in JSON text it escapes the quote that closes the string, and must stay
_QUERY_PARAM = LazyPattern(r"(?P<lead>[?&;])(?P<name>[^=\s&#?\"'\\]+)=(?P<value>[^&#\s\"'<>\\]*)")
# a token has a digit in it: "bearer authentication" in a sentence is prose, not a credential
_BEARER = LazyPattern(r"(?i)\b(?P<scheme>bearer\s+)(?P<token>(?=[A-Za-z._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{8,})")
HIDDEN = "***"


def mask_token(token: str) -> str:
    """``sk-…9f3a``: the same shape ccs uses for keys everywhere (``****`` when short)."""
    return f"{token[:3]}…{token[-4:]}" if len(token) >= 16 else "****"


_KNOWN = KnownSecrets(mask_token)  # every secret ccs read in this process: masked in every form


def remember(*secrets: str | None) -> None:
    """Mask every form of these secrets in whatever ccs prints from now on (``secret_forms``)."""
    _KNOWN.remember(*secrets)


def _param(m: re.Match[str]) -> str:
    name, value = m.group("name"), m.group("value")
    if value and value != HIDDEN and SECRET_PARAM_RE.search(name):
        return f"{m.group('lead')}{name}={HIDDEN}"
    return m.group(0)


def redact_text(text: str) -> str:
    """``text`` with every key-shaped token masked and every URL credential hidden; first, every form
    of each secret ccs read in this process (``remember``)."""
    text = _KNOWN.masked(text)
    if not _MAYBE.search(text):
        return text
    text = _USERINFO.sub(lambda m: f"{m.group('scheme')}{HIDDEN}@", text)
    text = _QUERY_PARAM.sub(_param, text)
    text = _HEADER.sub(lambda m: f"{m.group('name')}{m.group('sep')}{m.group('scheme') or ''}{HIDDEN}", text)
    text = _BEARER.sub(lambda m: m.group("token") if m.group("token") == HIDDEN else f"{m.group('scheme')}{HIDDEN}",
                       text)  # a bearer token quoted without its header (a provider's error text)
    spans = list(key_spans(text))
    if not spans:
        return text
    out, last = [], 0
    for start, end in spans:
        out.append(text[last:start])
        out.append(mask_token(text[start:end]))
        last = end
    out.append(text[last:])
    return "".join(out)


class RedactingStream:
    """A text stream that redacts whole lines before they reach ``inner``. A partial line waits for
    its end (so a key written in two pieces is still seen whole) until ``flush``."""

    def __init__(self, inner: TextIO):
        self._inner = inner
        self._pending = ""

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # bytes through a text stream is the caller's error
            return self._inner.write(text)
        data = self._pending + text
        cut = data.rfind("\n") + 1
        self._pending = data[cut:]
        if cut:
            self._inner.write(redact_text(data[:cut]))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self._pending:
            pending, self._pending = self._pending, ""
            self._inner.write(redact_text(pending))
        self._inner.flush()

    def __getattr__(self, name: str) -> Any:
        if name == "buffer":  # no way around the filter through the binary layer
            raise AttributeError(name)
        return getattr(self._inner, name)


def echo_revealed(text: str) -> None:
    """Print ``text`` past the filter: only for output the user asked to hold secrets (``--reveal``)."""
    out = sys.stdout
    inner = out._inner if isinstance(out, RedactingStream) else out
    out.flush()
    inner.write(text + "\n")
    inner.flush()


def install() -> None:
    """Put the filter in front of ``sys.stdout`` and ``sys.stderr`` (once)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, RedactingStream):
            setattr(sys, name, RedactingStream(stream))

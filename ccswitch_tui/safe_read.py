"""Reading files that someone else may have planted: regular files only, never blocking, bounded.

A FIFO named like a profile, a link to ``/dev/zero`` or a gigabyte of JSON must give one line, not
a hang or a memory blow-up. And a file nested thousands of levels deep must give one line, not the
parser's ``RecursionError``.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ccswitch_tui.errors import ProfileError

if TYPE_CHECKING:
    from tomlkit.toml_document import TOMLDocument

MAX_BYTES = 8 * 1024 * 1024  # far above any profile, settings file or manifest a person writes


class NotRegularFile(OSError):
    """The path exists but is not a regular file (or is too large to be one ccs should read)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "not a regular file"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def read_bytes(path: Path | str, limit: int = MAX_BYTES) -> bytes:
    """The file's bytes. FileNotFoundError when missing; NotRegularFile for anything that is not a
    regular file of at most ``limit`` bytes (a link is followed to its target)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except IsADirectoryError:
        raise NotRegularFile("is a directory, not a file") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(f"is {_kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise NotRegularFile(f"is {st.st_size} bytes, more than the {limit}-byte limit for this file")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise NotRegularFile(f"grew past the {limit}-byte limit for this file while being read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: Path | str, limit: int = MAX_BYTES) -> str:
    """The file as UTF-8 text, line endings kept as they are (no CRLF → LF translation).
    Raises FileNotFoundError, NotRegularFile (an OSError) or UnicodeDecodeError."""
    return read_bytes(path, limit).decode("utf-8")


def decode_error_line(exc: UnicodeDecodeError) -> str:
    """``not UTF-8 text (byte 0xff at offset 12)``, for a one-line message."""
    bad = exc.object[exc.start:exc.start + 1]
    return f"not UTF-8 text (byte 0x{bad.hex()} at offset {exc.start}); save it as UTF-8"


def no_surrogates(value: str) -> str:
    """Text decoded with ``surrogateescape`` (a process environment, a file name) made printable:
    undecodable bytes become U+FFFD instead of making every later print fail."""
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


# --- parsing without RecursionError -------------------------------------------------------------

def _depth_position(text: str, limit: int) -> int:
    """Where the nesting of ``[``/``{`` first passes ``limit`` (strings skipped); 0 when it never does."""
    depth, i, n = 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c in "[{":
            depth += 1
            if depth > limit:
                return i
        elif c in "]}":
            depth -= 1
        i += 1
    return 0


def loads_json(text: str | bytes) -> Any:
    """``json.loads``, with too deep a nesting reported as a ``json.JSONDecodeError`` (which carries a
    line and column) instead of a RecursionError, so every caller's existing handling applies."""
    try:
        return json.loads(text)
    except RecursionError:
        doc = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        raise json.JSONDecodeError("nested too deeply for ccs to read", doc, _depth_position(doc, 200)) from None


def strip_jsonc(text: str, *, trailing_commas: bool = True) -> str:
    """JSON with comments (``//``, ``/* */``) as plain JSON, strings kept, as the clients that allow
    comments in their config files read it; with ``trailing_commas`` a comma before ``}`` or ``]`` goes too."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            out.append(c)
            i += 1
    plain = "".join(out)
    return re.sub(r",(\s*[}\]])", r"\1", plain) if trailing_commas else plain


def line_col(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def too_deep_toml(text: str) -> str:
    """``line L, column C: nested too deeply``, for a TOML text that made its parser recurse too far."""
    line, col = line_col(text, _depth_position(text, 200))
    return f"{line}:{col}: nested too deeply for ccs to read (flatten the arrays or tables)"


def parse_toml(text: str, where: str) -> TOMLDocument:
    """Parse TOML text; a syntax error becomes ``where:line:col: message``."""
    import tomlkit  # lazy: tomlkit loads only when a profile is written
    from tomlkit.exceptions import ParseError, TOMLKitError  # lazy: tomlkit loads only when a profile is written

    if text.startswith("\ufeff"):
        raise ProfileError(f"{where}:1:1: the file starts with a byte-order mark (BOM); save it as UTF-8 without BOM",
                           line=1, column=1)
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise ProfileError(f"{where}:{line}: holds a NUL character; remove it (a profile is plain text)", line=line)
    try:
        return tomlkit.parse(text)
    except RecursionError:
        raise ProfileError(f"{where}:{too_deep_toml(text)}") from None
    except ParseError as exc:
        from ccswitch_tui.toml_errors import explain  # lazy: only a file that does not parse

        msg = str(exc).split(" at line ")[0]
        line, col, msg = explain(text, exc.line, exc.col, msg, type(exc).__name__)
        raise ProfileError(f"{where}:{line}:{col}: {msg}", line=line, column=col) from None
    except TOMLKitError as exc:  # e.g. KeyAlreadyPresent ([a] b = 1 then [a.b]), raised without a position
        from ccswitch_tui.toml_errors import duplicate_place  # lazy: as above

        place = duplicate_place(text, str(exc))
        if place:
            raise ProfileError(f"{where}:{place[0]}:{place[1]}: {place[2]}", line=place[0], column=place[1]) from None
        raise ProfileError(f"{where}: {str(exc).rstrip('.')}") from None


# --- streaming a file line by line ---------------------------------------------------------------

MAX_LINE = 16 * 1024 * 1024  # one JSONL record; a longer line is damage, not data
NO_LIMIT = 1 << 62


def iter_lines(path: Path | str, limit: int = NO_LIMIT, line_limit: int = MAX_LINE) -> Iterator[bytes | None]:
    """The complete lines (``\\n``-terminated, without it) of a regular file of at most ``limit``
    bytes, read in chunks so memory stays bounded by ``line_limit``; a longer line is yielded as
    None (the caller counts it as damaged). Only the bytes present when the file was opened are read,
    so a file being appended to cannot make it run forever, and a last line without its newline
    (still being written) is left out. Raises FileNotFoundError, or NotRegularFile before the first line."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except IsADirectoryError:
        raise NotRegularFile("is a directory, not a file") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(f"is {_kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise NotRegularFile(f"is {st.st_size} bytes, more than the {limit}-byte limit for this file")
        pending, skipping, left = b"", False, st.st_size
        while left > 0:
            chunk = os.read(fd, min(1 << 20, left))
            if not chunk:
                return
            left -= len(chunk)
            parts = (pending + chunk).split(b"\n")
            pending = parts.pop()
            for part in parts:
                if skipping:
                    skipping = False
                    yield None
                else:
                    yield part if len(part) <= line_limit else None
            if len(pending) > line_limit:
                pending, skipping = b"", True
    finally:
        os.close(fd)


def iter_numbered_lines(path: Path | str, max_line: int = MAX_LINE) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` for each complete line (``iter_lines``); NotRegularFile for a line
    longer than ``max_line``."""
    for number, line in enumerate(iter_lines(path, line_limit=max_line), 1):
        if line is None:
            raise NotRegularFile(f"line {number} is longer than {max_line} bytes")
        yield number, line


def read_toml(text: str, where: str) -> dict[str, Any]:
    """TOML text as plain data with the standard library's parser (tomlkit stays off the launch
    path); a syntax error or too deep a nesting is one ``where: …`` ProfileError."""
    tomllib = tomllib_module()
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise ProfileError(f"{where}:{too_deep_toml(text)}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{where}: {exc}") from None


def tomllib_module() -> ModuleType:
    """The standard library's TOML reader (tomli before Python 3.11), loaded when first needed: it is
    several times cheaper to import than tomlkit, and a launch whose texts are cached
    (toml_cache.py) needs neither."""
    if sys.version_info >= (3, 11):
        import tomllib  # lazy: see above
    else:  # Python 3.10: the same API, before it joined the standard library
        import tomli as tomllib  # lazy: see above
    return tomllib

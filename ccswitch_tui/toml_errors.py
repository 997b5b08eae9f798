"""TOML syntax errors a person can act on: what is wrong, where (line and column, counted from 1,
at the place to fix), and how to fix it — instead of the parser's own words ("Control characters
(codes less than 0x1f and 0x7f) are not allowed in strings, use \\u000a instead" for a string whose
closing quote is missing, a duplicate key reported at column 0 of the line after it).

``explain`` takes what tomlkit's ``ParseError`` knows (its class, line, 0-based column, message)
and the text, and looks at the text around that place; what it does not recognise keeps the
parser's message, with the column counted from 1.
"""

from __future__ import annotations

import re

_KEY = r'[A-Za-z0-9_-]+|"[^"\n]*"|\'[^\'\n]*\''
_ASSIGN = re.compile(rf"\s*(?P<key>(?:{_KEY})(?:\s*\.\s*(?:{_KEY}))*)\s*=\s*(?P<value>.*)")
_HEADER = re.compile(r"\s*\[\[?\s*(?P<name>[^\]\n#]*?)\s*\]\]?\s*(?:#.*)?$")
_ALREADY = re.compile(r'Key "(?P<key>.*)" already exists')
_BARE_VALUES = ("true", "false", "inf", "nan", "+inf", "-inf", "+nan", "-nan")


def explain(text: str, line: int, col: int, message: str, kind: str) -> tuple[int, int, str]:
    """``(line, column, message)`` for a syntax error tomlkit reported at ``line``/``col`` (0-based)."""
    lines = text.split("\n")
    here = lines[line - 1] if 0 < line <= len(lines) else ""
    already = _ALREADY.match(message)
    if already:
        return _duplicate(lines, line, already.group("key")) or (line, col + 1, _plain(message))
    if kind == "InvalidControlChar":
        char = here[col] if col < len(here) else "\n"
        if char in "\r\n":
            start = _open_string(here)
            quote = here[start] if start is not None else '"'
            return (line, (start if start is not None else col) + 1,
                    f"this string has no closing quote: end it with {quote} on the same line (text over several "
                    f"lines goes between {quote * 3} and {quote * 3})")
        return (line, col + 1, f"a string holds the control character \\u{ord(char):04x}, which TOML does not allow "
                               "inside quotes: remove it")
    if kind == "InvalidCharInStringError":
        return (line, max(col, 1), "a backslash starts an escape TOML does not know (\\n, \\t, \\\" and \\\\ are "
                                   "escapes): write \\\\ for a backslash, or put the text in single quotes ('…')")
    if kind == "UnexpectedEofError" or (kind == "UnexpectedCharError" and message.endswith("'\\x00'")):
        return _end_of_file(lines, line, col)
    if kind == "UnexpectedCharError":
        return _unexpected(here, line, col, message)
    return line, col + 1, _plain(message)


def duplicate_place(text: str, message: str) -> tuple[int, int, str] | None:
    """For a "Key … already exists" raised without a position: where the key is set the second time."""
    already = _ALREADY.match(message)
    lines = text.split("\n")
    return _duplicate(lines, len(lines), already.group("key")) if already else None


def _plain(message: str) -> str:
    message = message.rstrip(".")
    return message[:1].lower() + message[1:]


def _open_string(line: str) -> int | None:
    """Where the string still open at the end of ``line`` starts (None when none is)."""
    start, quote, i = None, "", 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 2
                continue
            if ch == quote:
                quote, start = "", None
        elif ch == "#":
            break
        elif ch in "\"'":
            quote, start = ch, i
        i += 1
    return start


def _unexpected(here: str, line: int, col: int, message: str) -> tuple[int, int, str]:
    stripped = here.strip()
    if stripped.startswith("[") and "]" not in stripped:
        name = stripped.strip("[ ")
        return line, len(here) + 1, f"this table header is not closed: write [{name}]"
    m = _ASSIGN.match(here)
    if m is None:
        key = re.match(r"\s*(" + _KEY + ")", here)
        if key and key.end() <= col:
            return (line, key.end() + 1,
                    f"{key.group(1)} is not followed by '=': write {key.group(1)} = <value> (a comment starts with #)")
        return line, col + 1, _plain(message) + " (each line is key = value, a [table] or a # comment)"
    value_at = m.start("value")
    value = m.group("value").split("#")[0].strip()
    if not value:
        return line, value_at + 1, f'{m.group("key")} has no value: write {m.group("key")} = "…" (text in quotes)'
    if col == value_at and value and value.lower() not in _BARE_VALUES:
        return (line, col + 1, f'the value of {m.group("key")} is not quoted: write {m.group("key")} = "{value}"')
    return (line, col + 1, f"unexpected {here[col:col + 1]!r} after the value of {m.group('key')}: one value per line "
                           "(a comment starts with #)")


def _end_of_file(lines: list[str], line: int, col: int) -> tuple[int, int, str]:
    for quote in ('"""', "'''"):
        places = [(n, ln.index(quote)) for n, ln in enumerate(lines, 1) if quote in ln]
        count = sum(ln.count(quote) for ln in lines)
        if count % 2:
            n, at = places[-1]
            return n, at + 1, f"the text opened with {quote} here is not closed: end it with {quote}"
    for n in range(len(lines), 0, -1):  # the last value that opens more brackets than it closes
        m = _ASSIGN.match(lines[n - 1])
        if m:
            value = m.group("value")
            for opening, closing, what in (("[", "]", "array"), ("{", "}", "inline table")):
                if value.startswith(opening) and value.count(opening) > value.count(closing):
                    return n, m.start("value") + 1, f"this {what} is not closed: end it with {closing}"
            break
    return line, col + 1, "the file ends inside a value: an array ([…]), inline table ({…}) or string is not closed"


def _duplicate(lines: list[str], upto: int, key: str) -> tuple[int, int, str] | None:
    """The second place ``key`` is set (a key in one table, or a table header), and the first."""
    table = ""
    seen_keys: dict[tuple[str, str], int] = {}
    seen_tables: dict[str, int] = {}
    for n, text in enumerate(lines[:upto], 1):
        header = _HEADER.match(text)
        if header and not text.strip().startswith("[["):
            table = header.group("name").replace(" ", "")
            parent, _, last = table.rpartition(".")
            if last == key and (parent, key) in seen_keys:
                return (n, text.index("[") + 1, f"the table [{table}] sets {key}, which line {seen_keys[parent, key]} "
                                                "already set to a value: keep one")
            if last == key:
                if table in seen_tables:
                    return (n, text.index("[") + 1, f"the table [{table}] appears twice (first on line "
                                                    f"{seen_tables[table]}): put its fields under one header")
                seen_tables[table] = n
            continue
        m = _ASSIGN.match(text)
        if m and m.group("key").strip("\"'") == key:
            place = (table, key)
            if place in seen_keys:
                where = f" in [{table}]" if table else ""
                return (n, m.start("key") + 1,
                        f"{key} is set twice{where} (first on line {seen_keys[place]}): keep one")
            seen_keys[place] = n
    return None

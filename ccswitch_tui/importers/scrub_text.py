"""Removing a key from a JSON or TOML text while keeping every other byte as it was.

A parse-and-dump would rewrite numbers (``1E400`` → ``Infinity``), escapes, line endings and
spacing. Here the text itself is scanned for the places that hold exactly the key, and only those
members (with one separator) are cut out.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ccswitch_tui.safe_read import loads_json, tomllib_module
from ccswitch_tui.valueclass import field, valueclass


@valueclass
class _Frame:
    kind: str                 # "obj" or "arr"
    open: int                 # index of "{" or "["
    path: str                 # label prefix for members ("env.", "providers[2].")
    members: list[tuple[int, int, str, Any]] = field(default_factory=list)  # start, end, label, value
    expect: str = "value"     # obj: "key", "colon", "value"
    key: str = ""
    key_start: int = 0
    close: int = 0


def _string_end(text: str, i: int) -> int:
    """Index just after the string starting at ``text[i] == '"'``."""
    j = i + 1
    while j < len(text) and text[j] != '"':
        j += 2 if text[j] == "\\" else 1
    return j + 1


def _containers(text: str) -> list[_Frame]:  # noqa: C901
    """Every object and array of a valid JSON text, with its members' spans."""
    stack: list[_Frame] = []
    done: list[_Frame] = []

    def member(start: int, end: int, value: Any) -> None:
        if not stack:
            return
        f = stack[-1]
        if f.kind == "obj":
            f.members.append((f.key_start, end, f"{f.path}{f.key}", value))
        else:
            f.members.append((start, end, f"{f.path}[{len(f.members)}]", value))

    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n":
            i += 1
        elif c == '"':
            j = _string_end(text, i)
            value = json.loads(text[i:j])
            if stack and stack[-1].kind == "obj" and stack[-1].expect == "key":
                stack[-1].key, stack[-1].key_start, stack[-1].expect = value, i, "colon"
            else:
                member(i, j, value)
            i = j
        elif c == ":":
            stack[-1].expect = "value"
            i += 1
        elif c == ",":
            stack[-1].expect = "key" if stack[-1].kind == "obj" else "value"
            i += 1
        elif c in "[{":
            if stack and stack[-1].kind == "obj":
                path = f"{stack[-1].path}{stack[-1].key}."
            elif stack:
                path = f"{stack[-1].path}[{len(stack[-1].members)}]."
            else:
                path = ""
            stack.append(_Frame("obj" if c == "{" else "arr", i, path, expect="key" if c == "{" else "value"))
            i += 1
        elif c in "]}":
            f = stack.pop()
            f.close = i
            done.append(f)
            member(f.open, i + 1, None)
            i += 1
        else:  # a number or a literal
            j = i
            while j < n and text[j] not in " \t\r\n,]}":
                j += 1
            member(i, j, None)
            i = j
    return done


def scrub_json_text(text: str, key: str) -> tuple[str, list[str]]:
    """``text`` without the members whose value is the key (blanks around it ignored), and their labels."""
    loads_json(text)  # a text that is not JSON is not scanned
    cuts: list[tuple[int, int]] = []
    removed: list[str] = []
    for f in _containers(text):
        ms = f.members
        hit = [isinstance(v, str) and v.strip() == key for _, _, _, v in ms]
        a = 0
        while a < len(ms):
            if not hit[a]:
                a += 1
                continue
            b = a
            while b + 1 < len(ms) and hit[b + 1]:
                b += 1
            if b + 1 < len(ms):
                cuts.append((ms[a][0], ms[b + 1][0]))     # up to the next kept member
            elif a > 0:
                cuts.append((ms[a - 1][1], ms[b][1]))     # from the end of the previous kept member
            else:
                cuts.append((f.open + 1, ms[b][1]))       # every member goes
            removed += [label for _, _, label, _ in ms[a:b + 1]]
            a = b + 1
    out = text
    for start, end in sorted(cuts, reverse=True):
        out = out[:start] + out[end:]
    loads_json(out)  # still JSON, or the caller's error handling says so
    order = {label: i for i, label in enumerate(removed)}
    return out, sorted(removed, key=lambda label: order[label])


def scrub_toml_text(text: str, key: str) -> tuple[str, list[str]]:  # noqa: C901
    """``text`` without the ``name = "KEY"`` lines (one-line strings), and their dotted names. A key
    inside a longer value, a multi-line string or a comment stays (the caller reports it)."""
    tomllib = tomllib_module()
    lines = text.splitlines(keepends=True)
    table: list[str] | None = []  # None inside an array of tables: left alone
    kept: list[str] = []
    removed: list[tuple[list[str], list[str]]] = []  # (table, dotted key within it)
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("["):
            header = stripped.split("#")[0].strip()
            try:
                inner = header.lstrip("[").rstrip("]")
                table = None if header.startswith("[[") else _leaf_path(tomllib.loads(inner + " = 0"))[0]
            except (tomllib.TOMLDecodeError, IndexError, RecursionError):
                table = None
        elif key in line and "=" in line and table is not None:
            try:
                path, value = _leaf_path(tomllib.loads(line))
            except (tomllib.TOMLDecodeError, IndexError, RecursionError):
                path, value = [], None
            if isinstance(value, str) and value.strip() == key:
                removed.append((table, path))
                continue
        kept.append(line)
    out = "".join(kept)
    expected = tomllib.loads(text)
    for table_path, key_path in removed:
        node = expected
        for part in table_path:
            node = node[part]
        chain = [node]
        for part in key_path[:-1]:
            chain.append(chain[-1][part])
        chain[-1].pop(key_path[-1], None)
        for parent, part, child in reversed(list(zip(chain, key_path, chain[1:], strict=False))):
            if not child:  # `x.y = "KEY"` alone defined x: it goes with the line
                parent.pop(part)
    if tomllib.loads(out) != expected:  # a line that only looked like `name = "KEY"` (inside a longer string)
        raise ValueError("the key's lines could not be told apart from the rest of the file")
    return out, [".".join(_bare_or_quoted(p) for p in t + k) for t, k in removed]


def _bare_or_quoted(part: str) -> str:
    return part if re.fullmatch(r"[A-Za-z0-9_-]+", part) else json.dumps(part)


def _leaf_path(data: Any) -> tuple[list[str], Any]:
    """The one dotted path and value of a one-line TOML document."""
    path: list[str] = []
    while isinstance(data, dict) and len(data) == 1:
        (k, data), = data.items()
        path.append(k)
    if not path:
        raise IndexError("not a single key")
    return path, data

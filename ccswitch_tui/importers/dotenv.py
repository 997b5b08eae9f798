"""Reading a ``.env`` file the way ``sh`` (``set -a; . FILE``) and dotenv loaders read it.

Each line is an assignment (``KEY=V``, ``export KEY=V``), a comment, a blank line, or something ccs
does not evaluate (a command, ``${VAR:-default}``, ``$(…)``), which is kept with the reason. Values
follow sh's quoting: ``'…'`` is literal, ``"…"`` expands ``$VAR``/``${VAR}`` and the escapes
``\\" \\\\ \\$ \\```, and an unquoted word expands too; a reference names an earlier line of the file
(a name the file does not set reads as empty, as in a clean shell). Nothing is executed, and only
the text is read: each entry keeps the span of its line, so the file can be rewritten byte for byte.
"""

from __future__ import annotations

import re

from ccswitch_tui.policy import credential_value
from ccswitch_tui.valueclass import field, valueclass

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"(?P<indent>[ \t]*)(?P<export>export[ \t]+)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)=")


@valueclass
class Entry:
    """One assignment of the file."""

    line: int  # 1-based
    name: str
    value: str = field(repr=False)  # as sh would set it (references resolved)
    refs: tuple[str, ...] = ()  # the variables its value references
    exported: bool = False  # ``export NAME=…``
    start: int = 0  # the line's span in the text (its newline included)
    end: int = 0

    @property
    def literal(self) -> bool:
        return not self.refs


@valueclass
class Unread:
    """A line ccs does not evaluate, and why."""

    line: int
    text: str = field(repr=False)  # may hold a value, even a key: never shown
    reason: str
    name: str = ""  # what a report may show: the assigned name, or the line's first word



@valueclass
class EnvFile:
    entries: list[Entry]
    unread: list[Unread]
    shell: bool  # written for a shell (``export``), where a comment may stand in for a removed line


class _Unsupported(Exception):
    pass


def _expand(text: str, i: int, values: dict[str, str], refs: list[str]) -> tuple[str, int]:
    """``$NAME`` or ``${NAME}`` at ``text[i] == "$"``: (its value, the index after it)."""
    if i + 1 < len(text) and text[i + 1] == "{":
        close = text.find("}", i + 2)
        inner = text[i + 2:close] if close > 0 else ""
        if close < 0 or not _NAME.fullmatch(inner):
            raise _Unsupported(f"${{{inner or '…'}}} is a parameter expansion ccs does not evaluate "
                               "(only $NAME and ${NAME})")
        refs.append(inner)
        return values.get(inner, ""), close + 1
    m = _NAME.match(text, i + 1)
    if m:
        refs.append(m.group())
        return values.get(m.group(), ""), m.end()
    if i + 1 < len(text) and text[i + 1] == "(":
        raise _Unsupported("$(…) runs a command, which ccs does not do")
    if i + 1 < len(text) and text[i + 1] not in " \t\"'":
        raise _Unsupported(f"${text[i + 1]} is a special parameter ccs does not evaluate")
    return "$", i + 1


def _word(text: str, values: dict[str, str]) -> tuple[str, list[str]]:  # noqa: C901
    """The value of the one shell word ``text`` (quotes and references resolved); what follows it
    must be blank or a comment."""
    out: list[str] = []
    refs: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t":
            rest = text[i:].strip()
            if rest and not rest.startswith("#"):
                raise _Unsupported("more than one word after '=' (sh would run the rest as a command); quote the value")
            break
        if c == "'":
            close = text.find("'", i + 1)
            if close < 0:
                raise _Unsupported("a quote that does not close on this line")
            out.append(text[i + 1:close])
            i = close + 1
        elif c == '"':
            i += 1
            while True:
                if i >= n:
                    raise _Unsupported("a quote that does not close on this line")
                ch = text[i]
                if ch == '"':
                    i += 1
                    break
                if ch == "\\" and i + 1 < n and text[i + 1] in '"\\$`':
                    out.append(text[i + 1])
                    i += 2
                elif ch == "$":
                    v, i = _expand(text, i, values, refs)
                    out.append(v)
                elif ch == "`":
                    raise _Unsupported("`…` runs a command, which ccs does not do")
                else:
                    out.append(ch)
                    i += 1
        elif c == "\\":
            if i + 1 < n:
                out.append(text[i + 1])
            i += 2
        elif c == "$":
            v, i = _expand(text, i, values, refs)
            out.append(v)
        elif c == "`":
            raise _Unsupported("`…` runs a command, which ccs does not do")
        elif c in ";&|<>()":
            raise _Unsupported(f"{c!r} makes this line more than an assignment")
        else:
            out.append(c)
            i += 1
    return "".join(out), refs


def _first_word(line: str) -> str:
    """The command or name a line starts with, shortened; a word that looks like a credential is not shown."""

    words = line.strip().removeprefix("export ").split()
    word = words[0] if words else ""
    if _NAME.fullmatch(word):
        return word[:40]
    m = _NAME.match(word)  # NAME=…, NAME+=…: the name only
    if m and word[m.end():m.end() + 1] in "=+":
        return m.group()[:40]
    return "(line)" if credential_value(word) or len(word) > 40 else word


def parse(text: str) -> EnvFile:
    """Every line of ``text``, as sh would set it (nothing run)."""
    entries: list[Entry] = []
    unread: list[Unread] = []
    values: dict[str, str] = {}
    shell = False
    pos = 0
    for number, raw in enumerate(text.splitlines(keepends=True), 1):
        start, pos = pos, pos + len(raw)
        line = raw.rstrip("\r\n")
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("export "):
            shell = True
        m = _ASSIGN.match(line)
        if not m:
            why = ("a command, not an assignment (ccs reads NAME=value lines)" if not re.match(
                r"[ \t]*(export[ \t]+)?[A-Za-z_][A-Za-z0-9_]*[ \t]+=", line)
                else "spaces around '=' are not sh syntax (NAME=value)")
            unread.append(Unread(number, line, why, _first_word(line)))
            continue
        try:
            value, refs = _word(line[m.end():], values)
        except _Unsupported as exc:
            unread.append(Unread(number, line, str(exc), m.group("name")))
            continue
        values[m.group("name")] = value
        entries.append(Entry(number, m.group("name"), value, tuple(dict.fromkeys(refs)), bool(m.group("export")),
                             start, pos))
    return EnvFile(entries, unread, shell)

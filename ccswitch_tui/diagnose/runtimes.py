"""What runs a program, told from its executable: the runtimes whose loader variables reach inside it
(``policy.loader_runtimes``), for `doctor` (each installed client) and `inspect`/`ps` (a process).

- an ELF file: ``dynamic`` when it names a program interpreter (``PT_INTERP``: the dynamic loader
  reads ``LD_*``), ``bun`` when it carries Bun's ``.bun`` section (a `bun build --compile` executable:
  Claude Code, OpenCode, Kilo Code's native binary); a statically linked one (Codex's native binary)
  has neither;
- a ``#!`` script: its interpreter's (``#!/usr/bin/env node`` is looked up on PATH's absolute entries);
- a name: ``node``, ``bun``, ``python3.11``, ``bash`` … say their runtime whatever the file is.

Reads a few KB of each file (headers, the section table), never the whole of a 400 MB binary.
"""

from __future__ import annotations

import fnmatch
import os
import struct
from collections.abc import Mapping
from functools import lru_cache

_NAMES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("node", ("node", "nodejs")),
    ("bun", ("bun",)),
    ("python", ("python", "python[0-9]*", "pypy*")),
    ("shell", ("sh", "bash", "dash", "zsh", "ksh", "ash")),
    ("perl", ("perl", "perl5*")),
    ("ruby", ("ruby",)),
    ("java", ("java",)),
)
_PT_INTERP = 3
_MAX_TABLE = 1 << 18  # section and program header tables read at most this much
_MAX_NAMES = 1 << 16


def by_name(name: str) -> frozenset[str]:
    """The runtime a program's name says it is (``node``, ``python3.11``), if any."""
    base = os.path.basename(name).lower()
    return frozenset(rt for rt, patterns in _NAMES if any(fnmatch.fnmatchcase(base, p) for p in patterns))


def of_file(path: str, environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The runtimes of the executable at ``path`` (empty when none is known or it cannot be read)."""
    try:
        st = os.stat(path)
    except OSError:
        return by_name(path)
    search = (environ or {}).get("PATH", os.defpath)
    return _of_file(os.path.realpath(path), st.st_ino, st.st_mtime_ns, search, 0)


@lru_cache(maxsize=256)
def _of_file(path: str, _ino: int, _mtime: int, search: str, depth: int) -> frozenset[str]:
    found = set(by_name(path))
    try:
        with open(path, "rb") as fh:
            head = fh.read(256)
            if head.startswith(b"\x7fELF"):
                found |= _elf(fh, head)
            elif head.startswith(b"#!") and depth < 2:
                found |= _script(head, search, depth)
    except OSError:
        pass
    return frozenset(found)


def _script(head: bytes, search: str, depth: int) -> set[str]:
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if not words:
        return set()
    interpreter, args = words[0], words[1:]
    if os.path.basename(interpreter) == "env":  # #!/usr/bin/env [-S] node …
        names = [a for a in args if not a.startswith("-") and "=" not in a]
        if not names:
            return set()
        interpreter = _on_path(names[0], search) or names[0]
    found = set(by_name(interpreter))
    if os.path.isabs(interpreter):
        try:
            st = os.stat(interpreter)
        except OSError:
            return found
        found |= _of_file(os.path.realpath(interpreter), st.st_ino, st.st_mtime_ns, search, depth + 1)
    return found


def _on_path(name: str, search: str) -> str | None:
    for entry in search.split(os.pathsep):
        candidate = os.path.join(entry, name)
        if os.path.isabs(entry) and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def _elf(fh, head: bytes) -> set[str]:
    """``dynamic`` and ``bun`` from an ELF file's program headers and section names."""
    if len(head) < 64 or head[4] not in (1, 2) or head[5] not in (1, 2):
        return set()
    end = "<" if head[5] == 1 else ">"
    wide = head[4] == 2
    fields = struct.unpack_from(end + ("HHIQQQIHHHHHH" if wide else "HHIIIIIHHHHHH"), head, 16)
    phoff, shoff, phentsize, phnum, shentsize, shnum, shstrndx = (fields[4], fields[5], *fields[8:])
    found: set[str] = set()
    table = _read(fh, phoff, phentsize * phnum)
    for i in range(len(table) // phentsize if phentsize else 0):
        if struct.unpack_from(end + "I", table, i * phentsize)[0] == _PT_INTERP:
            found.add("dynamic")
            break
    sections = _read(fh, shoff, shentsize * shnum)
    if not shentsize or shstrndx >= len(sections) // shentsize:
        return found
    layout = end + ("IIQQQQ" if wide else "IIIIII")  # name, type, flags, addr, offset, size
    _, _, _, _, names_at, names_size = struct.unpack_from(layout, sections, shstrndx * shentsize)
    names = _read(fh, names_at, min(names_size, _MAX_NAMES))
    for i in range(len(sections) // shentsize):
        start = struct.unpack_from(end + "I", sections, i * shentsize)[0]
        if names[start:names.find(b"\0", start)] == b".bun":
            found.add("bun")
            break
    return found


def _read(fh, offset: int, size: int) -> bytes:
    if not offset or size <= 0 or size > _MAX_TABLE:
        return b""
    try:
        fh.seek(offset)
        return fh.read(size)
    except (OSError, ValueError):
        return b""


def of_process(pid: int, environ: Mapping[str, str] | None = None) -> frozenset[str] | None:
    """The runtimes of process ``pid``'s executable (``/proc/PID/exe``, or psutil elsewhere); None when it
    cannot be told (another user's process, gone, no such interface)."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        try:
            import psutil  # lazy: psutil loads only for process listings

            exe = psutil.Process(pid).exe()
        except Exception:  # noqa: BLE001 — an unknown runtime is an answer, not an error
            return None
    if not exe:
        return None
    exe = exe.removesuffix(" (deleted)")
    return of_file(exe, environ)

"""Setting the shims up, on ccs's side: `ccs use` writes the choice, ``.ccs-profile`` and the shim
scripts, and tells where the shim folder is on PATH. What a shim does when it starts is ``shims.py``."""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import ccswitch_tui
from ccswitch_tui.atomic import atomic_write, locked
from ccswitch_tui.errors import UsageError
from ccswitch_tui.launch.ownership import NotOwned, check_folders
from ccswitch_tui.launch.shims import (
    ALL,
    MARKER,
    OFF,
    PROJECT_FILE,
    find_real,
    is_shim,
    parse_project_file,
    read_project_text,
    selection_path,
)
from ccswitch_tui.paths import ensure_private_dir


@contextlib.contextmanager
def choice_lock(state: str | Path) -> Iterator[None]:
    """Held by `ccs use` from reading a choice (the selection or a ``.ccs-profile``) to writing it back:
    four parallel `ccs use --tool T P` kept as few as two of their four choices."""
    ensure_private_dir(Path(state))
    with locked(Path(state) / ".use.lock"):
        yield


def write_selection(state: str | Path, tools: Mapping[str, str | None]) -> Path:
    ensure_private_dir(Path(state))
    path = Path(selection_path(state))
    lines = ["# written by `ccs use`: TOOL=PROFILE, a bare PROFILE for every tool, - for straight through"]
    lines += [(f"{v or OFF}" if k == ALL else f"{k}={v or OFF}") for k, v in tools.items()]
    atomic_write(path, "\n".join(lines) + "\n", mode=0o600)
    return path


def write_project_file(folder: Path, profile: str, tool: str | None) -> Path:
    """Set ``.ccs-profile`` in ``folder``: the default line, or ``tool``'s line; other lines are kept.
    A file there that is not the user's own (a link, a FIFO, another user's) is never written through
    or over, and a folder others control is refused: a file there would be ignored."""

    path = Path(folder) / PROJECT_FILE
    try:
        check_folders(str(folder))
    except NotOwned as exc:
        raise UsageError(f"{exc.path} {exc.what}, so a {PROJECT_FILE} in {folder} would be ignored; "
                         "keep your project in folders only you (or root) can change") from None
    lines: list[str] = []
    if os.path.lexists(path):
        try:
            text = read_project_text(path)
        except NotOwned as exc:
            raise UsageError(f"{exc.path} {exc.what}; `ccs use --here` never writes through or over it: "
                             "remove it, then run this again") from None
        except FileNotFoundError:
            text = ""
        parse_project_file(text, str(path), off=True)  # a damaged, odd or huge file is reported, never rewritten
        lines = text.splitlines()
    key = tool or ALL
    out, done = [], False
    for raw in lines:
        body = raw.split("#", 1)[0].strip()
        t = body.partition("=")[0].strip() if "=" in body else (ALL if body else None)
        if t == key:
            if not done:
                out.append(f"{tool}={profile}" if tool else profile)
                done = True
            continue
        out.append(raw)
    if not done and tool:
        out.append(f"{tool}={profile}")
    elif not done:
        out.insert(0, profile)  # the line for every tool comes first
    atomic_write(path, "\n".join(out) + "\n", mode=0o644)
    return path


GONE_NOTE = ".ccs-gone"  # in the shim folder: the shims said once that ccs is no longer installed


def script(tool: str, program: str, python: str, profiles: Path, state: Path, folder: Path | None = None) -> str:
    """A shim: ccs's own Python runs ``ccswitch_tui.shims``. When that Python or ccs is gone (ccs was
    uninstalled, or moved), the shim runs the real ``program`` instead — the first on PATH's absolute
    entries that is no ccs shim — and says so once, on stderr, with how to remove the shims."""

    # -I: the shell's PYTHONPATH and the working directory (a repository's json.py, say) never load in
    # place of ccs's modules; the folder holding ccs comes last, for an install outside site-packages.
    home = os.path.dirname(os.path.dirname(os.path.abspath(ccswitch_tui.__file__)))
    code = f"import sys; sys.path.append({home!r}); import ccswitch_tui.shims as s; s.main()"
    q = shlex.quote
    args = " ".join(q(a) for a in ("-I", "-c", code, str(profiles), str(state), tool, program))
    folder = Path(folder) if folder is not None else Path(state) / "shims"
    note = folder / GONE_NOTE
    gone = (f"ccs: ccs is no longer installed ({python} is gone), so {program} runs without it. To remove ccs's "
            f"launchers: rm -r {q(str(folder))}, and take that folder off PATH in your shell's rc file")
    return f"""#!/bin/sh
{MARKER.decode()}1 {program} (written by `ccs use`; `ccs use --none` makes it pass straight through)
py={q(python)}
if [ -x "$py" ] && [ -f {q(os.path.join(home, "ccswitch_tui", "shims.py"))} ]; then
  exec "$py" {args} "$@"
fi
# ccs is gone: the real {program}, the first on PATH's absolute folders that is no ccs shim
if [ ! -e {q(str(note))} ]; then
  printf '%s\\n' {q(gone)} >&2
  : > {q(str(note))} 2>/dev/null || :
fi
IFS=:
set -f
for d in $PATH; do
  case $d in /*) ;; *) continue ;; esac
  f=$d/{program}
  [ -f "$f" ] && [ -x "$f" ] || continue
  [ "$(dd if="$f" bs=256 count=1 2>/dev/null | sed -n 2p | cut -c1-{len(MARKER)})" = {q(MARKER.decode())} ] && continue
  unset IFS
  set +f
  exec "$f" "$@"
done
printf '%s\\n' {q(f"ccs: no real {program} on PATH (ccs, which wrote this launcher, is no longer installed)")} >&2
exit 127
"""


def install(folder: Path, programs: Mapping[str, str], profiles: Path, state: Path,
            python: str | None = None) -> list[Path]:
    """Write (or refresh) one shim per ``tool → program`` in ``folder``. A file there that is not a
    ccs shim is never replaced; a folder that cannot be written is one line."""

    folder = Path(folder)
    try:
        if not os.path.lexists(folder):
            folder.mkdir(parents=True)
    except OSError as exc:
        raise UsageError(f"cannot create the shim folder {folder} ({exc.strerror or exc}); "
                         "set CCS_SHIM_DIR to a folder you can write") from None
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"the shim folder {folder} is not a writable folder; fix its permissions or set "
                         "CCS_SHIM_DIR to a folder you can write")
    written = []
    for tool, program in programs.items():
        path = folder / program
        if os.path.lexists(path) and not is_shim(path):
            raise UsageError(f"{path} exists and is not a ccs shim; ccs never replaces it: move it or set "
                             "CCS_SHIM_DIR to another folder")
        text = script(tool, program, python or sys.executable, profiles, state, folder)
        try:
            if not (path.is_file() and path.read_text() == text):
                atomic_write(path, text, mode=0o755, durable=False)
        except OSError as exc:
            raise UsageError(f"cannot write the shim {path} ({exc.strerror or exc}); fix the folder's "
                             "permissions or set CCS_SHIM_DIR") from None
        written.append(path)
    return written


def path_position(folder: Path, path_env: str | None) -> int | None:
    """Where ``folder`` is on ``PATH`` (0: first), or None. Relative entries do not count: no shim is
    ever found through them (``find_real``)."""
    target = os.path.realpath(folder)
    for i, entry in enumerate((path_env or "").split(os.pathsep)):
        if os.path.isabs(entry) and os.path.realpath(entry) == target:
            return i
    return None


def shadowed(folder: Path, programs: Sequence[str], path_env: str | None) -> dict[str, str]:
    """Programs whose real binary comes before the shim folder on PATH: program → that binary."""
    pos = path_position(folder, path_env)
    if pos is None:
        return {}
    before = os.pathsep.join((path_env or "").split(os.pathsep)[:pos])
    out = {}
    for program in programs:
        found = find_real(program, before).path if before else None
        if found:
            out[program] = found
    return out

"""Where a run ran: each manifest names its machine (``machine``); an imported one also says where it
came from (``ccs runs import``).

An imported manifest carries ``origin`` — the machine that exported it, that machine's ccs version,
when it was exported and the id of that machine's own fingerprint salt — and is read-only here.
A machine is named by ``CCS_MACHINE`` when set (CI jobs, several state folders on one host), else by
the host name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ccswitch_tui.errors import UsageError

MACHINE_VAR = "CCS_MACHINE"
MACHINE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def this_machine(environ: Mapping[str, str] | None = None, *, strict: bool = True) -> str:
    """This machine's name: ``CCS_MACHINE``, else the host name (cut to a name's characters). A
    ``CCS_MACHINE`` that is no name is a UsageError, or (``strict=False``: a launch) the host name."""
    env = os.environ if environ is None else environ
    given = env.get(MACHINE_VAR, "").strip()
    if given and MACHINE_RE.fullmatch(given):
        return given
    if given and strict:
        raise UsageError(f"{MACHINE_VAR}={given[:40]!r} is not a machine name: use letters, digits, '.', "
                         "'_' and '-' (64 at most), starting with a letter or digit")
    host = re.sub(r"[^A-Za-z0-9._-]", "-", os.uname().nodename)[:64].lstrip("._-")
    return host or "localhost"


def imported_from(m: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The origin of an imported run; None for a run of this machine."""
    origin = m.get("origin")
    return origin if isinstance(origin, dict) else None


def machine_of(m: Mapping[str, Any], here: str | None = None) -> str:
    """The machine a run ran on: as its manifest says (since this version), else as the machine that
    exported it says, else ``here`` (this machine's name: a run of this state folder)."""
    for value in (m.get("machine"), (imported_from(m) or {}).get("machine")):
        if isinstance(value, str) and MACHINE_RE.fullmatch(value):
            return value
    return here if here is not None else machine_here()


def machines(manifests: Iterable[Mapping[str, Any]], here: str | None = None) -> list[str]:
    """The machines the runs ran on, sorted. A view shows a machine column when there is more than one."""
    here = here if here is not None else machine_here()
    return sorted({machine_of(m, here) for m in manifests})


def machine_here() -> str:
    """This machine's name for a view (a bad ``CCS_MACHINE`` is said where it matters: export)."""
    try:
        return this_machine()
    except UsageError:  # a bad CCS_MACHINE is said where it matters (export); a view still shows
        return "this machine"


def refuse_imported(m: Mapping[str, Any], what: str) -> None:
    """Imported runs are read-only: one line when asked to change one."""
    origin = imported_from(m)
    if origin is not None:
        raise UsageError(f"run {m.get('launch_id')} was imported from {origin.get('machine')!r} and is read-only "
                         f"here; {what} on that machine and export it again")

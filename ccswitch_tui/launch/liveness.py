"""Whether the ccs that wrote a run manifest is still there.

A manifest records ccs's own pid and that process's start (boot id and start time in clock ticks
on Linux), so a pid reused by another process after a reboot or a wrap-around is not mistaken for
it. A manifest without an end whose ccs is gone (killed with SIGKILL, a power cut) is ``lost``; so is an
imported one without an end (its ccs ran on another machine).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ccswitch_tui.procfs import process_start

RUNNING, LOST, ENDED = "running", "lost", "ended"


def owner() -> dict[str, Any]:
    """The manifest fields that name the running ccs."""
    pid = os.getpid()
    return {"ccs_pid": pid, "ccs_start": process_start(pid)}


def state(manifest: Mapping[str, Any]) -> str:
    """``ended`` once the manifest has an exit status; ``lost`` when it has none and the ccs that
    wrote it is gone; ``running`` otherwise (also for manifests that predate the ccs fields)."""
    if manifest.get("exit_status") is not None:
        return ENDED
    if isinstance(manifest.get("origin"), dict):  # imported: its ccs ran on another machine, and is not here
        return LOST
    pid, start = manifest.get("ccs_pid"), manifest.get("ccs_start")
    if not isinstance(pid, int) or not start:
        return RUNNING
    return RUNNING if process_start(pid) == start else LOST


def status_text(manifest: Mapping[str, Any]) -> str:
    """The STATUS column of `ccs runs`: the exit status, ``running`` or ``lost``."""
    s = state(manifest)
    return str(manifest["exit_status"]) if s == ENDED else s

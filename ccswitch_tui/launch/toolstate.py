"""Each profile's tool state (``state/tools/<profile>/``: Claude Code's config dir and Codex's home
with their sessions, history and downloads): its size, and its removal with the profile (`ccs rm`)
or once the profile is gone (`ccs gc`).

Removal never follows a link, so a piece shared from the user's own ``~/.claude`` or ``~/.codex``
stays where it is; it ends the profile's Codex daemons first and refuses while a launch of the
profile is running.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ccswitch_tui import tools
from ccswitch_tui.errors import UsageError
from ccswitch_tui.launch import liveness
from ccswitch_tui.paths import Paths
from ccswitch_tui.runs.manifests import load_manifests
from ccswitch_tui.tools.capabilities import OwningProcesses
from ccswitch_tui.valueclass import valueclass


@valueclass(frozen=True)
class ToolState:
    profile: str
    path: Path
    size: int  # bytes, links not followed

    @property
    def size_text(self) -> str:
        return size_text(self.size)


def size_text(size: int) -> str:
    """``171.3 KB``: a size in bytes as people read it."""
    n = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError


def tree_size(path: Path) -> int:
    """The bytes of a folder's files, links not followed."""
    return _size(path)


def _size(path: Path) -> int:
    total = 0
    for root, dirs, files in os.walk(path):  # os.walk does not follow links to folders
        for name in (*files, *dirs):
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def state_of(paths: Paths, profile: str) -> ToolState | None:
    path = paths.state / "tools" / profile
    return ToolState(profile, path, _size(path)) if path.is_dir() and not path.is_symlink() else None


def orphans(paths: Paths, profiles: set[str]) -> list[ToolState]:
    """Tool state of profiles that no longer exist."""
    root = paths.state / "tools"
    if not root.is_dir():
        return []
    return [s for d in sorted(root.iterdir()) if d.name not in profiles and (s := state_of(paths, d.name))]


def running_launches(paths: Paths, profile: str) -> list[str]:
    return [m.get("launch_id", "?") for m in load_manifests(paths, profile) if liveness.state(m) == liveness.RUNNING]


def remove(paths: Paths, state: ToolState) -> None:
    """End what still uses the profile's tool state (each client's ``before_remove``) and delete it;
    refused while a launch runs."""

    live = running_launches(paths, state.profile)
    if live:
        raise UsageError(f"profile {state.profile!r} has a running launch ({', '.join(live)}); end it first, "
                         f"then remove {state.path}")
    for spec in tools.load().specs():
        if isinstance(spec, OwningProcesses):
            spec.before_remove(state.path)
    shutil.rmtree(state.path)

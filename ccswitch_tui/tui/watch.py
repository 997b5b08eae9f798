"""Noticing profile files changed outside the TUI, without a file-watching dependency: a cheap
snapshot of the profiles folder (one scandir, a stat a file), taken periodically in a worker and
compared with the last one."""

from __future__ import annotations

import os
from pathlib import Path

# name → (modification time in ns, size, inode): an atomic rewrite changes the inode even when
# the time and size happen to match.
Snapshot = dict[str, tuple[int, int, int]]


def snapshot(folder: Path) -> Snapshot:
    out: Snapshot = {}
    try:
        with os.scandir(folder) as it:
            for e in it:
                if not e.name.endswith(".toml"):
                    continue
                try:
                    st = e.stat()  # follows a link to the profile it names
                except OSError:
                    st = e.stat(follow_symlinks=False)
                out[e.name[:-5]] = (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:  # no folder yet, or unreadable: nothing to list
        pass
    return out


def changed(before: Snapshot, after: Snapshot) -> set[str]:
    """The profile names added, removed or rewritten between two snapshots."""
    return {n for n in before.keys() | after.keys() if before.get(n) != after.get(n)}

"""Temp files that a killed writer left behind.

``atomic_write`` writes ``.NAME.<random>.tmp`` beside its target and renames it; a ``kill -9``
between the two leaves the temp file. Writers that serialize on a lock sweep their folder's temp
files under that lock (no other writer can be mid-write then); folders written without a lock
sweep only temp files old enough that no live writer can own them.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path

_TEMP = re.compile(r"\.(?P<target>.+)\.[a-z0-9_]{8}\.tmp")  # tempfile.mkstemp's 8 random characters


def is_temp_name(name: str, target: str | None = None, suffix: str = "") -> bool:
    """Whether ``name`` is one of ``atomic_write``'s temp files: for ``target`` when given, else for
    any file name ending in ``suffix``."""
    m = _TEMP.fullmatch(name)
    if m is None:
        return False
    return m["target"] == target if target else m["target"].endswith(suffix)


def sweep_temp_files(folder: Path, target: str | None = None, older_than: float = 0.0,
                     suffix: str = "") -> list[Path]:
    """Remove ``atomic_write`` temp files in ``folder`` (only ``target``'s, or those of files ending
    in ``suffix``) whose last change is more than ``older_than`` seconds ago. Returns what was
    removed; never raises."""
    removed: list[Path] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    now = time.time()
    for name in names:
        if not is_temp_name(name, target, suffix):
            continue
        path = folder / name
        with contextlib.suppress(OSError):
            st = path.lstat()
            if older_than and now - st.st_mtime < older_than:
                continue
            path.unlink()
            removed.append(path)
    return removed

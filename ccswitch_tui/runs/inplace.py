"""Closing a run manifest when the disk is full.

The manifest written at launch is followed by blank space (valid JSON whitespace), so the closing
write fits in blocks the file already owns: when the usual atomic replace fails for lack of space,
the new text overwrites the old in place, padded with spaces to the old length.
"""

from __future__ import annotations

import os
from pathlib import Path

SLACK = 4096


def reserve(path: Path, slack: int = SLACK) -> None:
    """Append ``slack`` spaces (at least) so the file ends on a 4 KiB boundary with room to grow."""
    try:
        size = path.stat().st_size
        pad = -(size + slack) % 4096 + slack
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        try:
            os.write(fd, b" " * pad)
        finally:
            os.close(fd)
    except OSError:
        return  # no room even for this: the closing write will say so


def rewrite(path: Path, text: str) -> bool:
    """Overwrite ``path`` with ``text`` in place, padded to its current size; False when it does not fit."""
    data = text.encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        size = os.fstat(fd).st_size
        if len(data) > size:
            return False
        os.pwrite(fd, data + b" " * (size - len(data)), 0)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)

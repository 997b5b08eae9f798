"""Rewriting a user's file without its key (``--scrub``): atomically, as the file it was — its owner,
group and mode kept (root scrubbing another user's file must not leave it root's), and only when
that is the whole of it: a file with other hard links (they would keep the key), or one that changed
after it was read (a line appended meanwhile would be lost), is left as it is and said so.

``rewrite`` returns None when the file was rewritten, else the one line saying why not; it never
raises for the file's own trouble (a read-only or full disk), so the import's report still prints.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from ccswitch_tui.atomic import sync_folder


def rewrite(path: Path, expected: bytes, new: bytes) -> str | None:
    """Replace ``path`` (read as ``expected``) with ``new``; None when done, else why it was not."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"cannot read it again ({exc.strerror or exc})"
    if st.st_nlink > 1:
        return (f"it has {st.st_nlink - 1} other hard link(s), which would keep the key; remove the key's line "
                "by hand (or the other links first)")
    if st.st_uid != os.geteuid() and os.geteuid() != 0:
        return "it belongs to another user, and a rewrite by you would make it yours; remove the key's line by hand"
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(new)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, st.st_mode & 0o7777)
        if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
            os.chown(tmp, st.st_uid, st.st_gid)  # root: the owner's file stays the owner's
        if _changed(path, st, expected):  # last look, right before the rename
            return "the file changed while ccs rewrote it (a line added meanwhile would be lost); run the import again"
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        return f"cannot rewrite it ({exc.strerror or exc}); remove the key's line by hand"
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    sync_folder(path.parent)
    return None


def _changed(path: Path, before: os.stat_result, expected: bytes) -> bool:
    try:
        now = os.stat(path)
        if (now.st_ino, now.st_size, now.st_mtime_ns) != (before.st_ino, before.st_size, before.st_mtime_ns):
            return True
        with open(path, "rb") as fh:
            return fh.read(len(expected) + 1) != expected
    except OSError:
        return True

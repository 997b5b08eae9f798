"""Atomic file writes (temp file, fsync, rename) and an advisory lock around them."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path

_TEMP_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_"  # as tempfile's names (tempfiles.py sweeps them)
_TEMP_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def make_temp(folder: Path, prefix: str, suffix: str) -> tuple[int, str]:
    """A new file ``folder/<prefix><8 random characters><suffix>``, 0600, opened exclusively: what
    ``tempfile.mkstemp`` makes, without the cost of importing tempfile on the launch path."""
    for _ in range(100):
        name = prefix + "".join(_TEMP_CHARS[b % len(_TEMP_CHARS)] for b in os.urandom(8)) + suffix
        path = os.path.join(folder, name)
        try:
            return os.open(path, _TEMP_FLAGS, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {folder}")


def atomic_write(path: Path, data: str | bytes, mode: int = 0o600, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` so that a reader sees the old file or the new one, never half.

    ``durable`` also fsyncs the file and its folder so the new content survives a power loss; files
    that are regenerated anyway (manifests, generated tool configs) skip that cost on the launch path.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = make_temp(path.parent, f".{path.name}.", ".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if durable:
        sync_folder(path.parent)


def sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` survive a crash (fsync of the folder); best effort."""
    with contextlib.suppress(OSError):
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


@contextlib.contextmanager
def locked(lock_path: Path, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``lock_path`` (created if missing) for the block. When
    another holder has it, ``on_wait()`` (if given) is called once before waiting for it."""

    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if on_wait is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        else:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                on_wait()
                fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

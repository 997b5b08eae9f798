"""`ccs edit`: a profile opened in the user's editor through a private copy, saved back only when the
file still holds what the copy started from.

A second writer that saved meanwhile (another `ccs edit`, an import merge, the TUI) is never
overwritten: the edit is refused in one line and the edited copy kept, its path named. SIGTERM and
SIGHUP end the editor and take the copy away (or keep it, named, when it holds changes).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from typing import Any

from ccswitch_tui.errors import CcsError, UsageError
from ccswitch_tui.profiles.store import ProfileChanged, Store, validate_text
from ccswitch_tui.safe_read import read_text

STOPPING = (signal.SIGTERM, signal.SIGHUP)


class EditInterrupted(CcsError):
    """ccs was told to stop while the editor ran; the exit code says by which signal."""

    def __init__(self, message: str, signum: int):
        super().__init__(message)
        self.exit_code = 128 + signum


def _run_editor(argv: Sequence[str]) -> tuple[int, int | None]:
    """(editor's status, the stopping signal ccs received or None). The handlers are in place
    before the editor exists (signals blocked across the spawn), so a signal is never missed."""
    got: list[int] = []
    procs: list[subprocess.Popen[bytes]] = []

    def on_signal(signum: int, _frame: Any) -> None:
        got.append(signum)
        for p in procs:
            with contextlib.suppress(OSError):
                p.send_signal(signal.SIGTERM)

    signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
    old = {s: signal.signal(s, on_signal) for s in STOPPING}
    try:
        try:
            procs.append(subprocess.Popen(list(argv), preexec_fn=_unblock_in_child))
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)
        rc = procs[0].wait()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    return rc, (got[0] if got else None)


def _unblock_in_child() -> None:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)


def keep_aside(name: str, text: str) -> str:
    """Write an edit that could not be saved to a private file of its own; return its path."""
    fd, tmp = tempfile.mkstemp(prefix=f"ccs-{name}-", suffix=".toml")  # 0600
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
    return tmp


def edit(store: Store, name: str, editor_argv: Sequence[str], editor: str) -> str:
    """Run the edit; return the line to print. Raises CcsError (one line) otherwise."""
    path = store.path_for(name)
    original = store.read_text(name)
    tmp = keep_aside(name, original)
    keep = False
    try:
        try:
            rc, stopped = _run_editor([*editor_argv, tmp])
        except OSError as exc:
            what = "not found" if isinstance(exc, FileNotFoundError) else f"cannot be started ({exc.strerror})"
            raise UsageError(f"editor {editor!r} {what}; set $EDITOR to your editor's command") from None
        edited = _read_copy(tmp)
        changed = edited is not None and edited != original
        if stopped is not None:
            keep = changed
            kept = f"; your edit is kept in {tmp}" if keep else ""
            raise EditInterrupted(f"stopped by {signal.Signals(stopped).name} while editing; {path} left "
                                  f"unchanged{kept}", stopped)
        if rc != 0:
            raise UsageError(f"editor exited with status {rc}; {path} left unchanged")
        if edited is None:
            raise UsageError(f"cannot read the edited copy {tmp}; {path} left unchanged")
        if not changed:
            return f"no changes to {path}"
        keep = True
        try:
            validate_text(name, edited, str(path))
        except CcsError as exc:
            raise UsageError(f"{exc} — {path} left unchanged; your edit is kept in {tmp}") from None
        try:
            store.save_text(name, edited, expected=original)
        except ProfileChanged as exc:
            raise UsageError(f"{exc}; your edit was not saved and is kept in {tmp}: run `ccs edit {name}` "
                             "again and carry it over") from None
        keep = False
        return f"saved {path}"
    finally:
        if not keep:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _read_copy(tmp: str) -> str | None:
    try:
        return read_text(tmp)
    except (OSError, UnicodeDecodeError):
        return None

"""The child supervised: started in its own process group, given the terminal (so Ctrl-C and Ctrl-Z
reach the tool, not ccs), sent the signals ccs gets, waited for. It loads only ``os``, ``signal``,
``_signal``, ``sys``, ``time`` and ``spawn``: a resident launch's client (``resident/client.py``) runs it in the
process the user started, where the terminal and the shell's job control are, while the launch's
work runs in the resident process."""

from __future__ import annotations

import os
import sys
import time

from ccswitch_tui.launch.spawn import spawn

TYPE_CHECKING = False
# the C module under `signal`: the same calls and numbers, without the enums (enum is most of a resident
# launch's client's imports: resident/client.py); type checkers see `signal`
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path
    from types import FrameType
else:
    import _signal as signal

FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT)
# Whether the user's terminal is ccs's, when this process cannot tell (empty: ask its stdin's foreground group); a
# resident launch's worker, which is not in the user's session, is told the client's answer.
TERMINAL_OWNED: list[bool] = []
# The supervisor of a resident launch's worker (``resident/worker.py``): the client starts the child.
REMOTE: list[Callable[..., int]] = []


class RunItHere(BaseException):
    """A resident launch's worker cannot do this launch (the child needs ``before_exec``, or a
    pseudo-terminal of ccs's): the client does it all itself. Not an ``Exception``: nothing between
    the check and the worker may take it for an error."""


def check_here(before_exec: bool, tail: bool) -> None:
    """Raise ``RunItHere`` in a resident launch's worker for a launch only the client can run."""
    if REMOTE and (before_exec or tail):
        raise RunItHere


def status_from_returncode(rc: int) -> int:
    return 128 - rc if rc < 0 else rc


def _terminal_fd() -> int | None:
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):
        return None
    try:
        return fd if os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp() else None
    except OSError:
        return None


def on_terminal() -> bool:
    """Whether ccs runs in the foreground of the user's terminal (a resume line is worth showing)."""
    return TERMINAL_OWNED[0] if TERMINAL_OWNED else _terminal_fd() is not None


def supervise(argv: Sequence[str], executable: str, env: Mapping[str, str], cwd: Path | str,
              started: Callable[[int], None] | None = None, before_exec: Callable[[], None] | None = None) -> int:
    """Run the child in its own process group; on a terminal, make that group the foreground one
    (so Ctrl-C and Ctrl-Z reach the tool, not ccs). Forward SIGTERM/SIGHUP/SIGINT/SIGQUIT to the
    group. Return the child's status (128+N for signal N). ``started`` gets the child's pid (its
    process group) as soon as it runs; ``before_exec`` runs in the child, in its own process group,
    before the tool does (a recorded launch's guard learns the group there: ``bridge.guard``).
    In a resident launch's worker, the client does all this (``REMOTE``)."""
    if REMOTE:
        return REMOTE[0](argv, executable, env, cwd, started=started, before_exec=before_exec)
    return supervise_here(argv, executable, env, cwd, started, before_exec)


def supervise_here(argv: Sequence[str], executable: str, env: Mapping[str, str], cwd: Path | str,  # noqa: C901
                   started: Callable[[int], None] | None = None,
                   before_exec: Callable[[], None] | None = None) -> int:
    """``supervise`` in this process."""
    tty = _terminal_fd()

    def in_child() -> None:
        os.setpgid(0, 0)
        if before_exec is not None:
            before_exec()
        if tty is not None:
            signal.signal(signal.SIGTTOU, signal.SIG_IGN)
            os.tcsetpgrp(tty, os.getpgrp())
            signal.signal(signal.SIGTTOU, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)

    old_handlers = {}
    received: list[int] = []
    # Signals wait (blocked) from before the child exists until forwarding is in place: a SIGTERM
    # in between reaches the child instead of killing ccs and orphaning it.
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    try:
        pgid = spawn(argv, executable, env, str(cwd), in_child)
    except BaseException:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
        raise
    if started is not None:
        started(pgid)

    def forward(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)
        try:
            os.killpg(pgid, signum)
        except ProcessLookupError:
            pass

    for sig in FORWARDED:
        old_handlers[sig] = signal.signal(sig, forward)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    old_ttou = signal.signal(signal.SIGTTOU, signal.SIG_IGN) if tty is not None else None
    try:
        if tty is not None:
            try:
                os.tcsetpgrp(tty, pgid)
            except OSError:
                pass
        while True:
            try:
                _, status = os.waitpid(pgid, os.WUNTRACED)
            except ChildProcessError:
                return status_from_returncode(0)
            if os.WIFSTOPPED(status):
                # The tool was suspended (Ctrl-Z): take the terminal back, stop ourselves so the shell
                # sees the job stop, and on `fg` hand the terminal over and continue the tool.
                if tty is not None:
                    os.tcsetpgrp(tty, os.getpgrp())
                os.kill(os.getpid(), signal.SIGSTOP)
                if tty is not None:
                    os.tcsetpgrp(tty, pgid)
                os.killpg(pgid, signal.SIGCONT)
                continue
            returncode = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            if received:
                _end_group(pgid)
            return status_from_returncode(returncode)
    finally:
        if tty is not None:
            try:
                os.tcsetpgrp(tty, os.getpgrp())
            except OSError:
                pass
            signal.signal(signal.SIGTTOU, old_ttou)
        for sig, handler in old_handlers.items():
            signal.signal(sig, handler)


def _end_group(pgid: int, grace: float = 2.0) -> None:
    """ccs was told to stop and the tool has exited: end whatever else the launch left in its
    process group (background jobs that ignored the signal), politely first."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except (ProcessLookupError, PermissionError):
                return
            time.sleep(0.02)

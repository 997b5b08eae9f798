"""Run a child on a pseudo-terminal of its own and relay it to ccs's terminal, keeping the last few
kilobytes it wrote: when a tool launched from the TUI ends with an error, the TUI shows its last lines
(the terminal that showed them is repainted by the TUI as soon as it comes back).

The child sees a terminal as it would without ccs in between (size and resizes included, keys
passed through raw, Ctrl-C from its own terminal); ccs's terminal is put back as it was afterwards.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import select
import signal
import subprocess
import termios
import time
import tty
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ccswitch_tui.terminal_text import visible

TAIL_BYTES = 16384
DRAIN_QUIET = 0.25  # seconds of silence after the child ended that end the relay
DRAIN_LIMIT = 1.0  # seconds the relay reads on after the child ended, at most
# escape sequences (CSI, OSC, DCS/APC/PM strings, two-byte ones): what a terminal would obey, not text
_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[\]P_^X][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[ -/]*[0-~]")


class Tail:
    """The last ``limit`` bytes a child wrote."""

    def __init__(self, limit: int = TAIL_BYTES):
        self.limit = limit
        self.data = bytearray()

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > self.limit:
            del self.data[:len(self.data) - self.limit]

    def lines(self, n: int = 8, width: int = 200) -> list[str]:
        """Its last ``n`` non-blank lines as plain text: escape sequences dropped, a line rewritten
        with carriage returns shown as it ended, every other control character shown escaped."""
        text = _SEQUENCE.sub("", self.data.decode("utf-8", "replace"))
        out = []
        for raw in text.replace("\r\n", "\n").split("\n"):
            line = raw.rstrip("\r").rsplit("\r", 1)[-1].rstrip()
            if line.strip():
                line = visible(line)
                out.append(line if len(line) <= width else line[:width - 1] + "…")
        return out[-n:]


def _window_size(fd: int) -> bytes | None:
    try:
        return fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8)
    except OSError:
        return None


def _set_window_size(fd: int, size: bytes | None) -> None:
    if size is not None:
        try:
            fcntl.ioctl(fd, termios.TIOCSWINSZ, size)
        except OSError:
            pass


def supervise_on_pty(argv: Sequence[str], executable: str, env: Mapping[str, str], cwd: Path, tail: Tail,  # noqa: C901
                     forwarded: Sequence[int], started: Callable[[int], None] | None = None,
                     before_exec: Callable[[], None] | None = None) -> int:
    """As ``launcher.supervise``, with the child on a pseudo-terminal whose output also goes to
    ``tail``. Returns the child's status (128+N for signal N)."""

    # the process's own descriptors: the TUI's stand-ins for sys.stdout are not the terminal
    stdin: int | None = 0 if os.isatty(0) else None
    out: int | None = 1
    master, slave = os.openpty()
    _set_window_size(slave, _window_size(stdin) if stdin is not None else None)

    def in_child() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)  # the pseudo-terminal is the child's own terminal
        if before_exec is not None:  # the child leads its own session (and group) already
            before_exec()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, forwarded)

    signal.pthread_sigmask(signal.SIG_BLOCK, forwarded)
    try:
        proc = subprocess.Popen(list(argv), executable=executable, env=dict(env), cwd=str(cwd), stdin=slave,
                                stdout=slave, stderr=slave, start_new_session=True, preexec_fn=in_child,
                                close_fds=True)
    except BaseException:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, forwarded)
        os.close(master)
        os.close(slave)
        raise
    os.close(slave)
    if started is not None:
        started(proc.pid)

    def forward(signum: int, _frame: object) -> None:
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            pass

    def resized(_signum: int, _frame: object) -> None:
        if stdin is not None:
            _set_window_size(master, _window_size(stdin))  # the child's group gets SIGWINCH

    old = {sig: signal.signal(sig, forward) for sig in forwarded}
    old[signal.SIGWINCH] = signal.signal(signal.SIGWINCH, resized)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, forwarded)
    saved = None
    if stdin is not None:
        try:
            saved = termios.tcgetattr(stdin)
            tty.setraw(stdin)
        except termios.error:
            saved = None
    try:
        status = _relay(master, stdin, out, tail, proc.pid)
        proc.returncode = status
        return 128 - status if status < 0 else status
    finally:
        if saved is not None and stdin is not None:
            termios.tcsetattr(stdin, termios.TCSAFLUSH, saved)
        os.close(master)
        for sig, handler in old.items():
            signal.signal(sig, handler)


def _reap(pid: int) -> int | None:
    """The child's return code once it has ended (-N for signal N); a stopped child (Ctrl-Z on its
    own terminal: there is no shell to resume it from) is continued."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG | os.WUNTRACED)
    except ChildProcessError:
        return 0
    if not done:
        return None
    if os.WIFSTOPPED(status):
        os.killpg(pid, signal.SIGCONT)
        return None
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _relay(master: int, stdin: int | None, out: int | None, tail: Tail, pid: int) -> int:
    """Keys to the child, its output to the terminal and the tail, until it has ended and its
    terminal has nothing more to read; its return code."""
    watched = [master] + ([stdin] if stdin is not None else [])
    while True:
        ready, _, _ = select.select(watched, [], [], 0.1)  # retried after a signal (PEP 475)
        if master in ready:
            chunk = _read(master)
            if not chunk:
                return _wait(pid)
            out = _pass_on(chunk, out, tail)
        if stdin is not None and stdin in ready:
            try:
                keys = os.read(stdin, 4096)
            except OSError:
                keys = b""
            if keys:
                os.write(master, keys)
            else:
                watched = [master]
        rc = _reap(pid)
        if rc is not None:
            _drain(master, out, tail)
            return rc


def _read(master: int) -> bytes:
    """What the child's terminal has to read; empty once every copy of it is closed."""
    try:
        return os.read(master, 65536)
    except OSError as exc:
        if exc.errno not in (errno.EIO, errno.EBADF):  # EIO: every copy of its terminal is closed
            raise
        return b""


def _pass_on(chunk: bytes, out: int | None, tail: Tail) -> int | None:
    tail.add(chunk)
    if out is not None:
        try:
            os.write(out, chunk)
        except OSError:
            return None
    return out


def _drain(master: int, out: int | None, tail: Tail, quiet: float = DRAIN_QUIET, limit: float = DRAIN_LIMIT) -> None:
    """After the child has ended: what it wrote last. Its output reaches this side of the terminal
    after a delay of the kernel's (so the child may have ended before the read that would show it);
    read until every copy of the terminal is closed, or until ``quiet`` seconds pass with nothing
    to read (a process the child started holds the terminal open), and for ``limit`` seconds at
    most (such a process may write on and on; keys no longer reach anything)."""
    deadline = time.monotonic() + limit
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        ready, _, _ = select.select([master], [], [], min(quiet, left))
        chunk = _read(master) if ready else b""
        if not chunk:
            return
        out = _pass_on(chunk, out, tail)


def _wait(pid: int) -> int:
    while True:
        rc = _reap(pid)
        if rc is not None:
            return rc
        time.sleep(0.02)

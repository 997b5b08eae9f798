"""Drive an interactive program on a real pseudo-terminal, answering the terminal queries a
full-screen TUI sends at start-up (cursor position, device attributes, colours) the way a terminal
emulator would, so that the program gets past them."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

# query → answer, as xterm answers them
_ANSWERS = (
    (re.compile(rb"\x1b\[6n"), b"\x1b[1;1R"),
    (re.compile(rb"\x1b\[\?u"), b"\x1b[?0u"),
    (re.compile(rb"\x1b\[c"), b"\x1b[?62;22c"),
    (re.compile(rb"\x1b\]10;\?(?:\x1b\\|\x07)"), b"\x1b]10;rgb:ffff/ffff/ffff\x1b\\"),
    (re.compile(rb"\x1b\]11;\?(?:\x1b\\|\x07)"), b"\x1b]11;rgb:0000/0000/0000\x1b\\"),
)
_ANSI = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]")


class PtySession:
    def __init__(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path | str | None = None,
                 rows: int = 40, cols: int = 120):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: a session leader with the pty as its controlling terminal
            try:
                if cwd is not None:
                    os.chdir(cwd)
                os.execvpe(argv[0], list(argv), dict(env))
            finally:
                os._exit(127)
        import fcntl
        import struct
        import termios

        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.raw = b""
        self._answered = 0
        self.status: int | None = None

    @property
    def text(self) -> str:
        """Everything the program wrote, escape sequences removed."""
        return _ANSI.sub(b"", self.raw).decode("utf-8", "replace")

    def _pump(self, timeout: float) -> bool:
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            return True
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:
            return False
        if not chunk:
            return False
        self.raw += chunk
        tail = self.raw[self._answered:]
        for pattern, answer in _ANSWERS:
            for _ in pattern.finditer(tail):
                os.write(self.fd, answer)
        self._answered = max(self._answered, len(self.raw) - 16)
        return True

    def expect(self, pattern: str, timeout: float = 30) -> str:
        """Wait until the (unescaped) output matches ``pattern``; the output so far on failure."""
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern)
        while time.monotonic() < deadline:
            if rx.search(self.text):
                return self.text
            if not self._pump(0.1):
                break
        if rx.search(self.text):
            return self.text
        raise AssertionError(f"{pattern!r} not seen within {timeout}s; output:\n{self.text[-3000:]}")

    def pump(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and self._pump(0.1):
            pass

    def send(self, data: str) -> None:
        os.write(self.fd, data.encode())

    def type_line(self, line: str) -> None:
        """Type a line as a person would: the text, a pause, then Enter."""
        self.send(line)
        self.pump(0.5)
        self.send("\r")

    def wait(self, timeout: float = 30) -> int:
        """Read until the program exits; its exit code (128+N for signal N)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
                self.status = 128 - self.status if self.status < 0 else self.status
                while self._pump(0.05):
                    pass
                return self.status
            self._pump(0.1)
        raise AssertionError(f"still running after {timeout}s; output:\n{self.text[-3000:]}")

    def close(self) -> None:
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        try:
            os.close(self.fd)
        except OSError:
            pass


# A tool that says whether it is the terminal's foreground group, then waits for Ctrl-C (exit 3)
FOREGROUND_TOOL = ("import os,signal,sys\n"
                   "signal.signal(signal.SIGINT, lambda *a: (os.write(1, b'tool-got-SIGINT\\n'), os._exit(3)))\n"
                   "print('foreground', os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp(), flush=True)\n"
                   "signal.pause()\n")


def ctrl_c_on_a_terminal(argv: Sequence[str], env: Mapping[str, str]) -> tuple[int, bytes, int]:
    """``argv`` (ending in the command that runs ``FOREGROUND_TOOL``) on a real pseudo-terminal, as a
    terminal session runs it; Ctrl-C typed once the tool has said whether it is the foreground group.
    The pid of the process started, all it printed, and its exit code."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: on the pty's slave side
        try:
            os.execve(argv[0], list(argv), dict(env))
        finally:
            os._exit(127)
    output = b""
    try:
        deadline = time.time() + 20
        while b"foreground" not in output and time.time() < deadline:
            output += os.read(fd, 1024)
        if b"foreground True" in output:
            os.write(fd, b"\x03")  # Ctrl-C, delivered by the terminal to its foreground process group
        while time.time() < deadline:
            try:
                chunk = os.read(fd, 1024)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(fd)
    return pid, output, os.waitstatus_to_exitcode(status)

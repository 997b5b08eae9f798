"""A recorded child never outlives its ccs, and never talks to a port ccs no longer holds.

The bridge lives in ccs's own process. If ccs dies (``kill -9``, a crash) the child would keep
sending its prompts, with the token, to ``127.0.0.1:<port>``, and any local user could listen there
and answer. So a recorded launch starts a guard: a tiny process of its own session that shares the
bridge's listening socket (it never accepts on it) and holds the reading end of a pipe whose
writing end only ccs holds. ccs tells it the child's process group once the child runs, and
``done`` when the launch ends normally. When the pipe closes without ``done``, ccs is gone: the
guard ends the child's process group (SIGTERM, then SIGKILL after a grace period) and only then
exits, closing the socket. Until then the port stays taken, so nobody else can listen on it: a
request the child sends in between waits in the socket's queue and is never read.

    guard = Guard.start(listen_fd)
    guard.watch(child_pid)     # the child's pid, which is its process group
    guard.release()            # the launch ended: the guard exits and leaves the group alone
"""

from __future__ import annotations

import os
import subprocess
import sys

GRACE = 2.0  # seconds between SIGTERM and SIGKILL for the child's group

# The guard's program: no import of ccs (it starts in a few ms with -I -S), nothing on the terminal.
_PROGRAM = r"""
import os, signal, sys, time
for s in (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU):
    signal.signal(s, signal.SIG_IGN)
grace = float(sys.argv[1])
group = None
data = b""
while True:
    more = os.read(0, 4096)
    if not more:
        break
    data += more
    lines = data.split(b"\n")
    data = lines.pop()
    for line in lines:
        if line == b"done":
            sys.exit(0)
        if line.isdigit():
            group = int(line)
if group is None:
    sys.exit(0)
for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, grace)):
    try:
        os.killpg(group, sig)
    except (ProcessLookupError, PermissionError):
        break
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except (ProcessLookupError, PermissionError):
            sys.exit(0)
        time.sleep(0.02)
"""


class Guard:
    def __init__(self, proc: subprocess.Popen[bytes]):
        self._proc = proc

    @classmethod
    def start(cls, listen_fd: int, grace: float = GRACE) -> Guard:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _PROGRAM, str(grace)],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(listen_fd,), start_new_session=True, cwd="/",
            env={"PATH": os.environ.get("PATH", os.defpath)},
        )
        return cls(proc)

    @property
    def pid(self) -> int:
        return self._proc.pid

    def watch(self, child_pid: int) -> None:
        """The child runs (its pid is its process group): end that group if ccs dies."""
        self._send(f"{child_pid}\n".encode())

    def release(self) -> None:
        """The launch ended normally: the guard exits without touching anything. ccs does not wait
        for it (a guard still starting would add its whole start, some 15 ms, to a short launch):
        ``done`` is in the pipe before the pipe closes, so the guard reads it first whenever it
        gets there. A guard not yet gone is reaped later (by ``subprocess`` in a long-lived ccs,
        by init once ccs exits)."""
        self._send(b"done\n")
        if self._proc.stdin is not None:
            try:
                self._proc.stdin.close()
            except OSError:
                pass
        self._proc.poll()

    def _send(self, data: bytes) -> None:
        if self._proc.stdin is None:
            return
        try:
            self._proc.stdin.write(data)
            self._proc.stdin.flush()
        except (OSError, ValueError):  # the guard is gone: nothing to tell
            pass

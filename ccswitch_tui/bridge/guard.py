"""The bridge's port lives as long as anything that holds the launch's token.

The bridge lives in ccs's own process, and the child (and whatever it starts) holds the token and
sends its prompts to ``127.0.0.1:<port>``. Once that port is free, any local user can listen there,
receive them and forge the answers. So a recorded launch starts a guard before the child (a small
program of its own session, ``bridge.guard_program``) that shares the bridge's listening socket and
holds it until no process of the launch remains, however the launch ended:

- The guard learns the child's process group before the child runs a single instruction of its
  own: the child writes its pid (its group, and its session when it leads one) into the guard's
  pipe itself, from the fork, before it executes the tool (``in_child``). The pipe's writing end
  stays open in the child until that exec, so a ccs killed at any moment after the fork still
  leaves the guard knowing the group. ccs says it again once the child runs (``watch``).
- While ccs runs, the guard only reads its pipe. ``done`` (``release``): the launch ended normally.
  The pipe closing without ``done``: ccs is gone (``kill -9``, a crash); the guard ends the launch's
  processes (SIGTERM, SIGKILL after a grace period).
- Either way it then answers every request on the port with a 503 naming the ended launch (never
  forwarding anything; another user's connections are closed unread), until no process of the
  launch is left — none in the child's group or session, none carrying the launch's
  ``CCS_LAUNCH_ID`` — and only then exits, which frees the port.

What it cannot see: a process that leaves the child's group and session (``setsid``) and also drops
``CCS_LAUNCH_ID`` from its environment (an ``env -i``, a daemon that cleans its environment) is no
longer known to be the launch's; if it kept the token it may outlive the port. Outside Linux (no
``/proc``) only the child's process group is watched.

    guard = Guard.start(listen_fd, launch_id)
    ... Popen(..., preexec_fn=lambda: (os.setpgid(0, 0), guard.in_child()))
    guard.watch(child_pid)     # the child's pid, which is its process group
    guard.release()            # the launch ended: the guard holds the port until its processes are gone
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ccswitch_tui.helper_spawn import Helper, spawn_helper

GRACE = 2.0  # seconds between SIGTERM and SIGKILL for a launch whose ccs is gone

# The guard's program: ccs's own package on the path, nothing else of ccs imported (it starts in
# a few ms with -I -S), nothing on the terminal, in "/" (it holds no folder of the user's).
_BOOT = ("import os, sys; os.chdir('/'); sys.path.insert(0, sys.argv.pop(1)); "
         "from ccswitch_tui.bridge.guard_program import main; main(sys.argv)")
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)


class Guard:
    def __init__(self, helper: Helper):
        self._helper = helper
        self._fd: int | None = helper.stdin

    @classmethod
    def start(cls, listen_fd: int, launch_id: str, grace: float = GRACE) -> Guard:
        """Started as ``subprocess.Popen(..., stdin=PIPE, stdout=DEVNULL, stderr=DEVNULL,
        pass_fds=(listen_fd,), start_new_session=True)`` would, without loading ``subprocess``
        (``helper_spawn.spawn_helper``)."""
        helper = spawn_helper(
            [sys.executable, "-I", "-S", "-c", _BOOT, _PACKAGE_ROOT, str(listen_fd), str(grace), launch_id,
             str(os.geteuid())],
            sys.executable, {"PATH": os.environ.get("PATH", os.defpath)}, pass_fds=(listen_fd,),
        )
        return cls(helper)

    @property
    def pid(self) -> int:
        return self._helper.pid

    def poll(self) -> int | None:
        """The guard's exit status once it has exited, else None."""
        return self._helper.poll()

    def in_child(self) -> None:
        """In the child, between its fork and its exec, once it is in its own process group: tell
        the guard its pid. (The pipe's end closes at the exec: it never reaches the tool.)"""
        if self._fd is None:
            return
        try:
            os.write(self._fd, b"%d\n" % os.getpid())
        except OSError:  # the guard is gone: nothing to tell
            pass

    def watch(self, child_pid: int) -> None:
        """The child runs (its pid is its process group): said again from ccs's side."""
        self._send(f"{child_pid}\n".encode())

    def release(self) -> None:
        """The launch ended normally: the guard answers 503 on the port until the launch's last
        process is gone, then exits. ccs does not wait for it (a guard still starting would add its
        whole start, some 15 ms, to a short launch): ``done`` is in the pipe before the pipe closes,
        so the guard reads it first whenever it gets there. A guard not yet gone is reaped later (by
        the next guard's start in a long-lived ccs, by init once ccs exits)."""
        self._send(b"done\n")
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError:
                pass
        self._helper.poll()

    def _send(self, data: bytes) -> None:
        if self._fd is None:
            return
        try:
            while data:
                data = data[os.write(self._fd, data):]
        except OSError:  # the guard is gone: nothing to tell
            pass

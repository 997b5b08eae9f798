"""Start a helper program as ``subprocess.Popen`` starts it with ``stdin=PIPE``, ``stdout`` and
``stderr`` to DEVNULL, ``pass_fds`` and ``start_new_session=True``, without loading ``subprocess``:
the bridge's port guard (``bridge.guard``), started on every recorded launch. ``launch/spawn.py``
does the same for the launched child itself (with a fork, for its ``in_child`` step).
"""

from __future__ import annotations

import os
import signal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

_MAXFD = os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 256
# the signals Python ignores, back to their defaults in the helper (Popen's restore_signals)
# the signals Python ignores, back to their defaults in a child (Popen's restore_signals)
RESTORED_SIGNALS = tuple(getattr(signal, name) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(signal, name))


class Helper:
    """A helper started by ``spawn_helper``: its pid and the writing end of its standard input."""

    def __init__(self, pid: int, stdin: int):
        self.pid = pid
        self.stdin = stdin
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """Its exit status once it has ended (``Popen.poll``: reaped then), else None."""
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: its status is lost
                pid, status = self.pid, 0
            if pid == self.pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


_unreaped: list[Helper] = []


def spawn_helper(argv: Sequence[str], executable: str, env: Mapping[str, str], pass_fds: Sequence[int] = ()) -> Helper:
    """Start a helper program as ``subprocess.Popen(argv, executable=executable, env=env,
    stdin=PIPE, stdout=DEVNULL, stderr=DEVNULL, pass_fds=pass_fds, start_new_session=True)`` does,
    without loading ``subprocess``: in a session of its own, SIGPIPE and SIGXFSZ at their defaults,
    ``pass_fds`` open under their own numbers and every other inherited descriptor above stderr
    closed. It is ``posix_spawn`` (a vfork, as Popen's own for such a child): no fork hooks run, so
    a recorded launch's bridge still loads at its child's fork (``bridge.loading``). Unlike Popen,
    the helper starts in ccs's working folder: a helper that must not hold it moves itself.

    Raises the ``OSError`` that kept it from starting. A helper that ends by itself is reaped by the
    next ``spawn_helper`` or ``Helper.poll``, as Popen reaps its lost children."""
    for helper in list(_unreaped):
        if helper.poll() is not None:
            _unreaped.remove(helper)
    keep = {0, 1, 2, *pass_fds}
    read_end, write_end = os.pipe()  # both close-on-exec
    devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    try:
        actions: list[tuple[int, ...]] = [(os.POSIX_SPAWN_DUP2, read_end, 0), (os.POSIX_SPAWN_DUP2, devnull, 1),
                                          (os.POSIX_SPAWN_DUP2, devnull, 2)]
        # a descriptor duplicated onto itself loses close-on-exec (POSIX; glibc 2.29, musl, the BSDs)
        actions += [(os.POSIX_SPAWN_DUP2, fd, fd) for fd in pass_fds]
        actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inheritable() if fd not in keep]
        pid = os.posix_spawn(executable, list(argv), dict(env), file_actions=actions, setsid=True,
                             setsigdef=RESTORED_SIGNALS)
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
        os.close(devnull)
    helper = Helper(pid, write_end)
    _unreaped.append(helper)
    return helper


def _inheritable() -> list[int]:
    """This process's descriptors above stderr that an exec would not close (those ccs inherited
    open from whatever started it: its own are all close-on-exec)."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd")]
    except OSError:
        fds = list(range(3, min(_MAXFD, 4096)))
    found = []
    for fd in fds:
        if fd > 2:
            try:
                if os.get_inheritable(fd):
                    found.append(fd)
            except OSError:  # the listing's own descriptor, closed by now
                pass
    return found

"""A resident launcher's worker: a fork of the resident that does one launch's work as the client
would have done it (``cli.run``, or a shim's launch), in the client's environment, working folder,
umask and standard streams, then hands the child back to the client to start (``launch.supervise``'s
``REMOTE``) and finishes the launch with the status the client reports.

What the worker prints is held until the launch is its own (``Held``): a launch that must run in the
client after all (a recorded launch: its bridge guard runs in the child before the client's exec)
answers "fallback" and leaves no line behind, and the client does it all again itself."""

from __future__ import annotations

import _socket
import errno
import fcntl
import io
import os
import signal
import sys
import time

from ccswitch_tui.launch import supervise as supervision
from ccswitch_tui.launch.supervise import RunItHere
from ccswitch_tui.resident.client import NAMESPACES, PROTOCOL, identity
from ccswitch_tui.resident.wire import MAX_FDS, WireError, peer, recv, send

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path
    from types import FrameType
    from typing import Any

    from _typeshed import ReadableBuffer


class Held(io.RawIOBase):
    """A standard stream's descriptor whose writes wait in ``HELD`` (in order, across the streams)
    while ``HOLDING``; then they go straight through."""

    def __init__(self, fd: int):
        super().__init__()
        self.fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        return os.isatty(self.fd)

    def write(self, data: ReadableBuffer) -> int:
        if HOLDING:
            chunk = bytes(data)
            HELD.append((self.fd, chunk))
            return len(chunk)
        return os.write(self.fd, data)


HELD: list[tuple[int, bytes]] = []
HOLDING: list[bool] = []  # non-empty while the worker's lines are held


def release() -> None:
    """Write what was held, in order, and let the streams write straight through from now on."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    HOLDING[:] = []  # first: a line another thread writes now goes straight out, after the held ones
    while HELD:
        fd, data = HELD.pop(0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]


def discard() -> None:
    """Forget what was held (the client does the launch itself, or has gone): nothing of it is shown."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    HELD[:] = []


def watch_client(conn: socket.socket) -> None:
    """Until the child's start is handed over, the client says nothing: if its end closes (Ctrl-C,
    SIGTERM, a kill), the worker is interrupted as a ccs would be, so the launch's ``finally`` steps
    run, and what it says is not shown (nobody waits for it)."""
    def gone(_signum: int, _frame: FrameType | None) -> None:
        try:
            alive = conn.recv(1, _socket.MSG_PEEK | _socket.MSG_DONTWAIT) != b""
        except BlockingIOError:
            alive = True
        except OSError:
            alive = False
        if not alive:
            GONE[:] = [True]
            HOLDING[:] = [True]
            raise KeyboardInterrupt

    signal.signal(signal.SIGIO, gone)
    fcntl.fcntl(conn.fileno(), fcntl.F_SETOWN, os.getpid())
    fcntl.fcntl(conn.fileno(), fcntl.F_SETFL, fcntl.fcntl(conn.fileno(), fcntl.F_GETFL) | os.O_ASYNC)


def unwatch_client(conn: socket.socket) -> None:
    fcntl.fcntl(conn.fileno(), fcntl.F_SETFL, fcntl.fcntl(conn.fileno(), fcntl.F_GETFL) & ~os.O_ASYNC)
    signal.signal(signal.SIGIO, signal.SIG_IGN)


GONE: list[bool] = []  # the client went away before the child's start


def _streams(settings: Sequence[object]) -> None:
    """New ``sys.stdin/stdout/stderr`` on descriptors 0-2 (the client's), with its encodings, buffered
    as Python buffers them (stdout by line on a terminal, stderr always by line); writes held."""
    def setting(i: int) -> tuple[str, str]:
        got = settings[i] if i < len(settings) else None
        return (got[0], got[1]) if isinstance(got, (tuple, list)) and len(got) == 2 else ("utf-8", "strict")

    enc, errors = setting(0)
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding=enc, errors=errors)
    for fd, name in ((1, "stdout"), (2, "stderr")):
        enc, errors = setting(fd)
        raw = Held(fd)
        line = fd == 2 or raw.isatty()
        setattr(sys, name, io.TextIOWrapper(io.BufferedWriter(raw), encoding=enc, errors=errors,
                                            line_buffering=line))
    HOLDING[:] = [True]


def _peer_sees_what_we_see(conn: socket.socket) -> bool:
    """The connected process's namespaces and root, read from /proc (what it says of itself is not
    proof: a sandboxed process of the same user that reaches the socket must not get a launch, and
    its keys, done outside its sandbox)."""
    pid, _ = peer(conn)
    if pid <= 0:
        return False
    try:
        for name in NAMESPACES:
            if os.readlink(f"/proc/{pid}/ns/{name}") != os.readlink(f"/proc/self/ns/{name}"):
                return False
        theirs, mine = os.stat(f"/proc/{pid}/root"), os.stat("/")
    except OSError:
        return False
    return (theirs.st_dev, theirs.st_ino) == (mine.st_dev, mine.st_ino)


def refusal(request: Mapping[str, Any], conn: socket.socket) -> str | None:
    """Why this worker cannot do the client's launch faithfully, or None."""
    if request.get("protocol") != PROTOCOL:
        return "another protocol"
    mine = identity()
    for field in ("code", "python", "path", "flags", "root", "uid", "gid", "groups", "fsenc"):
        if _plain(request.get(field)) != _plain(mine[field]):
            return f"another {field}"
    theirs = request.get("ns")
    if not isinstance(theirs, dict) or any(theirs.get(n) != mine["ns"][n] for n in NAMESPACES):
        return "another namespace"
    if not _peer_sees_what_we_see(conn):
        return "a peer in another namespace or root"
    if request.get("kind") not in ("cli", "shim"):
        return "another request"
    argv, environ = request.get("argv"), request.get("environ")
    if not (isinstance(argv, list) and all(isinstance(a, str) for a in argv)):
        return "arguments that are not strings"
    if not (isinstance(environ, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in environ.items())):
        return "an environment that is not strings"
    if not isinstance(request.get("umask"), int):
        return "no umask"
    return None


def _plain(value: object) -> object:
    return list(value) if isinstance(value, (tuple, list)) else value


def remote_supervise(conn: socket.socket) -> Callable[..., int]:
    """``supervise`` done by the client: the child's start handed over, its status waited for."""

    def supervise(argv: Sequence[str], executable: str, env: Mapping[str, str], cwd: Path | str,
                  started: Callable[[int], None] | None = None, before_exec: Callable[[], None] | None = None) -> int:
        if before_exec is not None:  # launcher.execute sent such a launch to the client before its manifest
            raise OSError(errno.ENOTSUP, "a resident launcher's worker cannot run code in the child")
        unwatch_client(conn)  # from here on the client speaks (the child's start, its status)
        if GONE:
            raise KeyboardInterrupt
        release()  # the launch is this worker's now: what it said goes out before the child speaks
        try:
            send(conn, ("spawn", list(argv), executable, dict(env), str(cwd)))
            message, _ = recv(conn)
            if isinstance(message, tuple) and message[:1] == ("failed",) and len(message) == 4:
                raise OSError(*message[1:3], message[3]) if message[3] else OSError(*message[1:3])
            if not (isinstance(message, tuple) and message[:1] == ("started",) and isinstance(message[1], int)):
                raise WireError("an unexpected answer")
            if started is not None:
                started(message[1])
            message, _ = recv(conn)
            if not (isinstance(message, tuple) and message[:1] == ("status",) and isinstance(message[1], int)):
                raise WireError("an unexpected answer")
            return message[1]
        except WireError:
            os._exit(1)  # the client is gone: as a ccs that was killed, the manifest is left "running" (lost)

    return supervise


def serve(conn: socket.socket) -> int:
    """One request, start to end; the worker's exit code."""
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as Python sets it: a closed pipe is BrokenPipeError
    signal.signal(signal.SIGINT, signal.default_int_handler)
    conn.settimeout(10)  # a client that connects and says nothing does not keep a worker
    try:
        request, fds = recv(conn, MAX_FDS)
    except WireError:
        return 1
    conn.settimeout(None)
    if not isinstance(request, dict):
        return 1
    if request.get("kind") in ("status", "stop"):
        return _control(conn, request["kind"])
    why = refusal(request, conn) or (None if len(fds) == 4 else "no standard streams")
    if why is not None:
        _answer(conn, ("refused", why))
        return 0
    _become(request, fds)
    supervision.REMOTE[:] = [remote_supervise(conn)]
    watch_client(conn)
    try:
        code = _launch(request["kind"], request["argv"], request["environ"])
    except RunItHere:
        discard()
        _answer(conn, ("fallback",))
        return 0
    finally:
        unwatch_client(conn)
    if GONE:
        discard()
        return 1
    release()
    _answer(conn, ("exit", code))
    return 0


def _become(request: Mapping[str, Any], fds: Sequence[int]) -> None:
    """Take the client's standard streams, working folder, umask and environment."""
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
    os.fchdir(fds[3])
    for fd in fds:
        os.close(fd)
    os.umask(request["umask"])
    os.environ.clear()
    os.environ.update(request["environ"])
    time.tzset()  # the client's TZ, not the resident's (which has none)
    _streams(request.get("streams") or [])
    supervision.TERMINAL_OWNED[:] = [bool(request.get("terminal"))]


def _launch(kind: str, argv: list[str], environ: dict[str, str]) -> int:
    """What `ccs` (``cli.main``) or a shim (``shims.launch``) does once it knows it launches."""
    from ccswitch_tui.policy.redact import install  # lazy: the worker's imports come from the launch it does

    install()
    if kind == "shim":
        from ccswitch_tui.shims import launch  # lazy: see install

        return launch(argv, environ)
    from ccswitch_tui.cli import run  # lazy: see install

    sys.argv = ["ccs", *argv]
    try:
        return run(argv)
    except RunItHere:
        raise
    except Exception:  # --debug: as cli.main shows it
        import traceback  # lazy: only --debug shows one

        from ccswitch_tui.terminal_text import visible  # lazy: see traceback

        sys.stderr.write(visible(traceback.format_exc()))
        return 1


def _answer(conn: socket.socket, message: object) -> None:
    try:
        send(conn, message)
    except WireError:
        pass


def _control(conn: socket.socket, what: str) -> int:
    parent = os.getppid()
    _answer(conn, {"pid": parent})
    if what == "stop":
        os.kill(parent, signal.SIGTERM)
    return 0

"""The client side of the resident launcher: what `ccs launch`, `ccs run` and a shim do first when the
user turned the resident on. ``ask`` returns the launch's exit status, or None when the launch is to
run here as it does without the resident (off, not running, not trusted, or it said so).

Loaded before anything else of the launch path, so it imports only ``os``, ``sys``, ``_socket`` and
``marshal`` (``wire``), and ``launch.supervise`` once there is a child to start."""

from __future__ import annotations

import _socket
import os
import sys

from ccswitch_tui.folders import ccs_folders
from ccswitch_tui.resident.wire import WireError, at, peer_uid, private_dir, recv, send

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

PROTOCOL = 1
IDLE = 20 * 60.0  # seconds without a request before the resident goes
NAMESPACES = ("mnt", "pid", "net", "user", "ipc")


def state_dir(environ: Mapping[str, str]) -> str | None:
    """ccs's state folder (``folders.ccs_folders``), on Linux; elsewhere None: no resident."""
    found = ccs_folders(environ)
    return found[1] if found is not None and sys.platform.startswith("linux") else None


def identity() -> dict[str, Any]:
    """What a resident must share with this process to work for it: the same ccs and Python (its
    module path and flags), seen from the same namespaces and root, with the same groups and file
    name encoding."""
    import ccswitch_tui  # lazy: the package's own location (it is loaded: no cost)

    ns: dict[str, str | None] = {}
    for name in NAMESPACES:
        try:
            ns[name] = os.readlink(f"/proc/self/ns/{name}")
        except OSError:
            ns[name] = None
    root = os.stat("/")
    return {"code": os.path.dirname(os.path.realpath(ccswitch_tui.__file__)),
            "python": os.path.realpath(sys.executable), "path": list(dict.fromkeys(sys.path)), "flags": list(sys.flags),
            "ns": ns, "root": (root.st_dev, root.st_ino),
            "uid": os.getuid(), "gid": os.getgid(), "groups": sorted(os.getgroups()),
            "fsenc": (sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())}


def _streams() -> list[tuple[str, str] | None]:
    out: list[tuple[str, str] | None] = []
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        enc, errors = getattr(stream, "encoding", None), getattr(stream, "errors", None)
        out.append((enc, errors) if isinstance(enc, str) and isinstance(errors, str) else None)
    return out


def start_resident(folder: str) -> None:
    """Start the resident for ``folder`` (ccs's ``state/resident``) in a session of its own, with the
    same module path as this process and none of the user's environment but the locale; it serves
    from the next launch on. Started from a short-lived child, so that it is nobody's child here (no
    zombie in a long session when it stops); it drops every descriptor and folder of ours itself."""
    program = (f"import sys; sys.path[:] = {sys.path!r}; "
               "from ccswitch_tui.resident.server import main; main()")
    keep = {k: v for k, v in os.environ.items() if k in ("LANG", "LC_ALL", "LC_CTYPE")}
    try:
        pid = os.fork()
    except OSError:
        return  # the launch runs here; the next one tries again
    if pid == 0:
        code = 0
        try:
            os.posix_spawn(sys.executable, [sys.executable, "-I", "-c", program, folder], keep, setsid=True,
                           setsigdef=_SIGNALS, setsigmask=(), file_actions=[
                               (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDWR, 0),
                               (os.POSIX_SPAWN_DUP2, 0, 1), (os.POSIX_SPAWN_DUP2, 0, 2)])
        except BaseException:  # noqa: BLE001 — nothing of this child may run on
            code = 1
        finally:
            os._exit(code)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


_SIGNALS = tuple(range(1, 32))  # back to their defaults in the resident (SIGKILL and SIGSTOP cannot change)


def ask(kind: str, argv: Sequence[str], environ: Mapping[str, str], state: str | None) -> int | None:
    """The exit status of the launch (``kind`` "cli": ccs's arguments; "shim": a shim's) done by the
    resident; None to do it here."""
    if state is None or not sys.platform.startswith("linux"):
        return None
    folder = os.path.join(state, "resident")
    try:
        dir_fd = private_dir(folder)
    except OSError:
        return None  # never turned on (or not safe to use): no resident
    sock = None
    try:
        try:
            os.stat("on", dir_fd=dir_fd)
        except OSError:
            return None
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.connect(at(dir_fd, "sock"))
        except OSError:  # not running (never started, idle, or stopped): start it for the next launch
            start_resident(folder)
            return None
        if peer_uid(sock) != os.getuid():
            return None
        return _converse(sock, folder, kind, argv, environ)
    except WireError:
        return None
    except KeyboardInterrupt:  # before the request went out: nothing was started
        sys.stderr.write("ccs: interrupted\n")
        return 130
    finally:
        if sock is not None:
            sock.close()
        os.close(dir_fd)


def _request(sock: _socket.socket, kind: str, argv: Sequence[str], environ: Mapping[str, str]) -> bool:
    """Send the launch's request with this process's standard streams and working folder; False when
    one of them cannot be sent (a closed stream, a folder gone): the launch here says what is wrong."""
    from ccswitch_tui.launch.supervise import on_terminal  # lazy: only a resident that is on gets a request

    try:
        here = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        request = {"protocol": PROTOCOL, "kind": kind, "argv": list(argv), "environ": dict(environ),
                   "umask": _umask(), "terminal": on_terminal(), "streams": _streams(), **identity()}
        send(sock, request, (0, 1, 2, here))
        return True
    except (OSError, WireError):
        return False
    finally:
        os.close(here)


def _converse(sock: _socket.socket, folder: str, kind: str, argv: Sequence[str],
              environ: Mapping[str, str]) -> int | None:
    if not _request(sock, kind, argv, environ):
        return None
    status: int | None = None  # the child's, once it ran
    while True:
        try:
            got, _ = recv(sock)
        except KeyboardInterrupt:  # Ctrl-C while the worker works: its launch ends with this connection
            sys.stderr.write("ccs: interrupted\n")
            return 130 if status is None else status
        except WireError:
            return _worker_gone(folder, status)
        message = got if isinstance(got, tuple) else ()
        what = message[0] if message else None
        if what == "exit" and len(message) == 2 and isinstance(message[1], int):
            return message[1]
        if status is not None:  # the child ran: nothing the worker says now makes it run again
            return status
        if not _spawn_message(message):  # "fallback", "stale", "refused", or anything unknown: the launch here
            if what == "stale":  # it ran older code than is installed, and has gone: a new one for next time
                start_resident(folder)
            return None
        status = _spawn(sock, *message[1:])
        if status is not None:
            _tell(sock, ("status", status))


def _worker_gone(folder: str, status: int | None) -> int | None:
    """The connection ended without an answer: before a word, the resident was stopping as this
    connected (or its worker failed), and the launch runs here; after the child, its status stands."""
    if status is None:
        start_resident(folder)
        return None
    sys.stderr.write("ccs: warning: the resident launcher's worker stopped while the launch ran; its run "
                     "manifest was not completed\n")
    return status


def _spawn_message(message: object) -> bool:
    """Whether ``message`` is ("spawn", argv, executable, env, cwd) with the types they have."""
    if not (isinstance(message, tuple) and len(message) == 5 and message[0] == "spawn"):
        return False
    _, argv, executable, env, cwd = message
    return (isinstance(argv, list) and all(isinstance(a, str) for a in argv) and isinstance(executable, str)
            and isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
            and isinstance(cwd, str))


def _spawn(sock: _socket.socket, argv: list[str], executable: str, env: dict[str, str], cwd: str) -> int | None:
    """Start and supervise the child the worker planned: its status, or None when it could not start
    (the worker is told why, and answers as a launch that could not start its child)."""
    from ccswitch_tui.launch.supervise import supervise  # lazy: see _request

    try:
        return supervise(argv, executable, env, cwd, started=lambda pgid: _tell(sock, ("started", pgid)))
    except OSError as exc:
        send(sock, ("failed", exc.errno, exc.strerror, exc.filename))
        return None


def _tell(sock: _socket.socket, message: object) -> None:
    try:
        send(sock, message)
    except WireError:
        pass  # the worker is gone: the child runs on, supervised here


def _umask() -> int:
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def control(folder: str, what: str) -> dict | None:
    """Ask the running resident for its ``status`` or to ``stop``; None when none answers."""
    try:
        dir_fd = private_dir(folder)
    except OSError:
        return None
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(5)
        conn.connect(at(dir_fd, "sock"))
        if peer_uid(conn) != os.getuid():
            return None
        send(conn, {"protocol": PROTOCOL, "kind": what})
        answer, _ = recv(conn)
        return answer if isinstance(answer, dict) else None
    except (OSError, WireError):
        return None
    finally:
        conn.close()
        os.close(dir_fd)

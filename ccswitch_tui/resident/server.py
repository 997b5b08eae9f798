"""The resident launcher's server: one per state folder, started by a client (``client.start_resident``)
in a session of its own with an empty environment. It imports the launch path once, then for each
connection of its own user forks a worker (``worker.serve``) and goes back to waiting.

It holds no key and no environment of the user's: those reach only the forked workers, which exit
after their launch. It exits after ``IDLE`` seconds without a request, when a module it loaded
changed on disk (a new version: it answers "stale" and goes, the client starts a new one), when its
socket was replaced or removed, or when the ``on`` file is gone (``ccs resident off``)."""

from __future__ import annotations

import fcntl
import importlib
import os
import select
import signal
import socket
import sys
import time

from ccswitch_tui.resident.client import IDLE
from ccswitch_tui.resident.wire import MAX_FDS, WireError, at, peer_uid, private_dir, recv, send

TICK = 2.0  # how often it looks at its socket and the `on` file when idle
PRELOAD = (
    "ccswitch_tui.cli", "ccswitch_tui.shims", "ccswitch_tui.commands.context", "ccswitch_tui.commands.launching",
    "ccswitch_tui.launch.launcher", "ccswitch_tui.launch.supervise", "ccswitch_tui.tools.registry",
    "ccswitch_tui.tools.index", "ccswitch_tui.keys.secret_service", "ccswitch_tui.profiles.store",
    "ccswitch_tui.resident.client", "ccswitch_tui.resident.worker",
    "tomllib",  # a profile whose parsed text is not cached yet
)


def preload() -> None:
    """Import the launch path and every client's modules (its spec, and the rest of its package: a
    client's launch hooks live there). Imports only: nothing is read, so no state of a user's reaches
    a worker."""
    import pkgutil  # lazy: only a starting resident walks the clients' packages

    from ccswitch_tui import tools  # lazy: the resident's imports are what it preloads, in this order

    for name in (*PRELOAD, *tools.modules().values()):
        module = _load(name)
        for sub in pkgutil.iter_modules(getattr(module, "__path__", None) or []):
            _load(f"{name}.{sub.name}")


def _load(name: str) -> object:
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 — a worker imports it again, and reports what is wrong
        return None


def warm() -> None:
    """Do once what every launch does the same whatever its user, folder or environment: each
    client's spec loaded and checked (``tools.for_launch``), the lazily compiled patterns compiled.
    Workers inherit the results (the ``re`` module's cache, the patterns); nothing here reads a file
    or a variable of the user's."""
    from ccswitch_tui import tools  # lazy: after the preload, as every worker finds it
    from ccswitch_tui.policy.shapes import LazyPattern  # lazy: see above

    for name in tools.names():
        try:
            tools.for_launch(name)
        except Exception:  # noqa: BLE001 — a worker checks it again, and reports what is wrong
            pass
    for name, module in list(sys.modules.items()):
        if name.startswith("ccswitch_tui."):
            for value in list(vars(module).values()):
                if isinstance(value, LazyPattern):
                    value.match("")


def code_stamps() -> dict[str, tuple[int, int, int]]:
    """(inode, size, mtime) of each ccs module this process loaded, of its Python, and of each folder
    on its module path (a package installed, upgraded or removed there changes the folder)."""
    out = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if (name == "ccswitch_tui" or name.startswith("ccswitch_tui.")) and path:
            out[path] = _stamp(path)
    for path in (sys.executable, *sys.path):
        if path:
            out[path] = _stamp(path)
    return out


def _stamp(path: str) -> tuple[int, int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0, 0)
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class Resident:
    def __init__(self, folder: str):
        self.folder = folder
        self.dir_fd = private_dir(folder)
        self.lock = os.open("lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=self.dir_fd)
        fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError: one runs already
        preload()
        warm()
        self.stamps = code_stamps()
        try:
            os.unlink("sock", dir_fd=self.dir_fd)  # a resident that died left it: the lock says none runs
        except FileNotFoundError:
            pass
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(at(self.dir_fd, "sock"))
        self.sock.listen(64)
        self.inode = os.stat("sock", dir_fd=self.dir_fd, follow_symlinks=False).st_ino
        self.last = time.monotonic()

    def still_wanted(self) -> bool:
        try:
            os.stat("on", dir_fd=self.dir_fd)
            return os.stat("sock", dir_fd=self.dir_fd, follow_symlinks=False).st_ino == self.inode
        except OSError:
            return False

    def retire(self) -> None:
        """Stop being the resident: the socket removed (if still this one's) and closed, the lock let go."""
        try:
            if os.stat("sock", dir_fd=self.dir_fd, follow_symlinks=False).st_ino == self.inode:
                os.unlink("sock", dir_fd=self.dir_fd)
        except OSError:
            pass
        self.sock.close()
        os.close(self.lock)
        self.lock = -1

    def stale(self) -> bool:
        return any(_stamp(path) != stamp for path, stamp in self.stamps.items())

    def serve(self) -> None:
        while True:
            ready, _, _ = select.select([self.sock], [], [], TICK)
            _reap()
            if not ready:
                if time.monotonic() - self.last > IDLE or not self.still_wanted():
                    return
                continue
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.last = time.monotonic()
            if self.answer(conn) == "go":
                return

    def answer(self, conn: socket.socket) -> str | None:
        with conn:
            try:
                if peer_uid(conn) != os.getuid():
                    return None  # another user's process: nothing is read, nothing said
            except OSError:
                return None
            if self.stale():  # gone before it says so: the client starts the new version's at once
                self.retire()
                _drain(conn)
                _say(conn, ("stale",))
                return "go"
            try:
                pid = os.fork()
            except OSError:  # no process to spare: the client sees the end, and launches itself
                return None
            if pid == 0:  # the worker: never returns
                code = 1
                try:
                    self.sock.close()
                    os.close(self.lock)  # the lock is the resident's: a worker does not hold it
                    os.close(self.dir_fd)
                    from ccswitch_tui.resident.worker import serve  # lazy: preloaded; the resident itself never serves

                    code = serve(conn)
                finally:
                    os._exit(code)
        return None


def _drain(conn: socket.socket) -> None:
    """Read (and drop) the client's request, so that it is not cut off while it still sends."""
    conn.settimeout(2)
    try:
        _, fds = recv(conn, MAX_FDS)
    except WireError:
        return
    for fd in fds:
        os.close(fd)


def _say(conn: socket.socket, message: tuple) -> None:
    try:
        send(conn, message)
    except WireError:
        pass


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main() -> None:
    folder = sys.argv[1]
    os.chdir("/")  # no folder of the client that started it stays busy
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # nor a descriptor it inherited (a pipe someone waits on)
    os.umask(0o077)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # `ccs resident off`: the socket goes with it
    try:
        resident = Resident(folder)
    except OSError:  # another resident holds the lock, or the folder is not safe to serve from
        return
    try:
        resident.serve()
    finally:
        if resident.lock != -1:
            resident.retire()

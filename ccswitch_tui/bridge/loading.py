"""The bridge started without making the child wait for it.

The child needs only the bridge's address and token. ``LoadingBridge`` binds the listening socket
on 127.0.0.1 and makes the token at once; a thread of its own imports the server (asyncio and
``bridge.wire``: the standard library, some 20-30 ms) as soon as the child is forked (until then the
launch's own work has the interpreter to itself) and starts serving on that socket while the
child starts. A request the child sends meanwhile waits in the socket's listen queue and is
answered as soon as the server is up. A child that ends before the server loaded (``ccs run
--record P -- true``) never waits for it at all.

Why not start the import earlier, beside the launch's own work? Measured (when the server still
imported aiohttp): under load the import thread holds the interpreter while the launch's thread
waits for it, and ``ccs run --record P -- true`` got 1.5x slower than unrecorded, while the first
answer came no sooner.

A failure to bind is the launch's failure (exit 2, nothing launched). A failure of the server
while the child already runs closes the socket, so the child's requests fail at once instead of
waiting, and ``stop()`` says so in one line.
"""

from __future__ import annotations

import binascii
import os
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ccswitch_tui.bridge import records as rec
from ccswitch_tui.bridge.reroute import TOKEN_PREFIX
from ccswitch_tui.errors import CcsError

BACKLOG = 2048


_fork_waiters: list[Callable[[], None]] = []


def _after_fork_in_parent() -> None:
    while _fork_waiters:
        _fork_waiters.pop()()


def _on_next_fork(callback: Callable[[], None]) -> None:
    """``callback()`` in this process right after its next fork (the child's start: it is made
    with a ``preexec_fn``, which runs the fork hooks)."""
    if not _fork_waiters and not _fork_hook:
        os.register_at_fork(after_in_parent=_after_fork_in_parent)
        _fork_hook.append(True)
    _fork_waiters.append(callback)


_fork_hook: list[bool] = []  # not empty once the hook is registered (a process registers it once)


def token_urlsafe(nbytes: int) -> str:
    """``secrets.token_urlsafe(nbytes)`` without loading ``secrets`` (and the ``random`` and
    ``base64`` it loads): ``nbytes`` from ``os.urandom`` in URL-safe base64, unpadded."""
    text = binascii.b2a_base64(os.urandom(nbytes), newline=False).rstrip(b"=")
    return text.translate(_URLSAFE).decode("ascii")


_URLSAFE = bytes.maketrans(b"+/", b"-_")


class BridgeStartError(CcsError):
    """The bridge could not start (exit 2: nothing was launched)."""


class LoadingBridge:
    """The ``Bridge`` interface a launch uses (``url``, ``token``, ``route_url``, ``records_path``,
    ``records()``, ``stop()``), serving once its server has loaded. ``make_config()`` builds the
    ``server.BridgeConfig`` in the loading thread (it needs the server module)."""

    def __init__(self, make_config: Callable[[], Any], records_path: Path):
        self.token = TOKEN_PREFIX + token_urlsafe(24)
        self.records_path = records_path
        self.error: BaseException | None = None
        self._make_config = make_config
        self._bridge: Any = None
        self._stopped = False
        self._lock = threading.Lock()
        try:
            records_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.close(os.open(records_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600))
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        except OSError as exc:
            raise BridgeStartError(f"cannot start the recording bridge ({exc.strerror or exc}); "
                                   "launch without --record") from None
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", 0))
            sock.listen(BACKLOG)
        except OSError as exc:
            sock.close()
            raise BridgeStartError(f"cannot start the recording bridge on 127.0.0.1 ({exc.strerror or exc}); "
                                   "launch without --record") from None
        sock.set_inheritable(False)
        self._sock = sock
        self.port: int = sock.getsockname()[1]
        self._child_started = threading.Event()
        _on_next_fork(self._child_started.set)
        self._thread = threading.Thread(target=self._load, name="ccs-bridge-load", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def child_started(self) -> None:
        """The launch's child runs (said by the launch; the fork hook says it too)."""
        self._child_started.set()

    @property
    def listen_fd(self) -> int:
        """The listening socket's descriptor (for ``bridge.guard``, which holds the port if ccs dies)."""
        return self._sock.fileno()

    def route_url(self, name: str) -> str:
        return f"{self.url}/{name}"

    def records(self) -> list[dict[str, Any]]:
        return rec.read_records(self.records_path)

    @property
    def records_lost(self) -> int:
        return self._bridge.records_lost if self._bridge is not None else 0

    def lost_unreported(self) -> int:
        """Records lost since the last stderr line about them."""
        return self._bridge.lost_unreported() if self._bridge is not None else 0

    def connections_refused(self) -> dict[str, int]:
        return self._bridge.connections_refused() if self._bridge is not None else {}

    def wait_ready(self, timeout: float = 30.0) -> bool:
        """True once the server answers (for tests and benchmarks; a launch never waits)."""
        self._thread.join(timeout)
        return self._bridge is not None

    def _load(self) -> None:
        # Until the child is started, the launch's own work (its files, the manifest, the fork) has
        # the interpreter to itself: the child cannot send a request before it exists. Nor does it
        # load before then, however long that takes: what it imports registers fork hooks (logging,
        # concurrent.futures.thread), and a hook registered between a fork's "before" and "after"
        # hooks would have its "after" release a lock it never took. After the child's fork no
        # launch forks again; the launch says the child started (``child_started``), or ``stop()``.
        self._child_started.wait()
        if self._stopped:
            return
        try:
            # lazy: loaded on the bridge's own thread while the child starts
            from ccswitch_tui.bridge.server import Bridge

            bridge = Bridge(self._make_config(), token=self.token, sock=self._sock)
            with self._lock:
                if self._stopped:
                    return  # the launch ended before the server was up: nothing was waiting for it
                self._bridge = bridge
                bridge.start()
        except BaseException as exc:  # noqa: BLE001 — reported by stop(); the child's requests now fail fast
            self.error = exc
            self._close_socket()

    def _close_socket(self) -> None:
        try:
            self._sock.close()
        except OSError:
            pass

    def stop(self) -> None:
        """Stop serving (requests in flight are recorded as ``bridge-stopped``). A server still
        loading is left to finish in its daemon thread: nothing is waiting for it any more."""
        with self._lock:
            self._stopped = True
            bridge = self._bridge
        self._child_started.set()  # a loading thread still waiting has nothing left to do
        if bridge is not None:
            bridge.stop()
        else:
            self._close_socket()
        if self.error is not None:
            print(f"ccs: warning: the recording bridge failed to start ({type(self.error).__name__}: "
                  f"{self.error}); this launch's requests were not answered", file=sys.stderr)

"""What the resident launcher and its clients say to each other: frames of ``marshal``'d plain
values (tuples, lists, dicts, strings, numbers, None) behind a 4-byte length, over a Unix stream
socket; the client's standard streams and folder travel with its request as descriptors
(SCM_RIGHTS). Both ends are processes of the same user (checked with SO_PEERCRED on both sides),
and a frame over ``MAX_FRAME`` bytes, a truncated one or one with descriptors where none were
expected is an error. Imports only what Python has loaded before any module runs (``_socket`` aside)."""

from __future__ import annotations

import _socket
import marshal
import os
import sys

MAX_FRAME = 16 << 20  # an environment of a few MiB fits
MAX_FDS = 4
_INT = 4  # bytes of a C int (a descriptor in SCM_RIGHTS, the fields of struct ucred)


class WireError(Exception):
    """The other end broke the protocol or went away."""


def _ints(data: bytes) -> list[int]:
    return [int.from_bytes(data[i:i + _INT], sys.byteorder, signed=True) for i in range(0, len(data) - _INT + 1, _INT)]


def peer(sock: _socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process at the other end, as the kernel saw it at connect/listen (the pid as
    this process's pid namespace sees it; 0 when it cannot)."""
    cred = _ints(sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 3 * _INT))
    return cred[0], cred[1]


def peer_uid(sock: _socket.socket) -> int:
    return peer(sock)[1]


def send(sock: _socket.socket, value: object, fds: tuple[int, ...] = ()) -> None:
    data = marshal.dumps(value)  # type: ignore[arg-type]  # plain values, and marshal says so if not
    if len(data) > MAX_FRAME:
        raise WireError(f"a frame of {len(data)} bytes is over the limit")
    frame = memoryview(len(data).to_bytes(4, "big") + data)
    try:
        if fds:
            rights = b"".join(fd.to_bytes(_INT, sys.byteorder, signed=True) for fd in fds)
            sent = sock.sendmsg([frame], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, rights)])
            frame = frame[sent:]
        while frame:
            frame = frame[sock.send(frame):]
    except OSError as exc:
        raise WireError(f"cannot send ({exc.strerror or exc})") from None


def recv(sock: _socket.socket, max_fds: int = 0) -> tuple[object, list[int]]:
    """One value, and the descriptors that came with it (close-on-exec)."""
    fds: list[int] = []
    try:
        flags = getattr(_socket, "MSG_CMSG_CLOEXEC", 0)
        head, ancillary, msg_flags, _ = sock.recvmsg(4, _socket.CMSG_SPACE(MAX_FDS * _INT), flags)
        for level, kind, data in ancillary:
            if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                fds += _ints(data)
        if len(fds) > max_fds or msg_flags & getattr(_socket, "MSG_CTRUNC", 0):
            raise WireError("descriptors where none were expected")
        if not head:
            raise WireError("the other end went away")
        size = int.from_bytes(head + _exactly(sock, 4 - len(head)), "big")
        if size > MAX_FRAME:
            raise WireError(f"a frame of {size} bytes is over the limit")
        return marshal.loads(_exactly(sock, size)), fds
    except BaseException as exc:
        for fd in fds:
            os.close(fd)
        if isinstance(exc, OSError):
            raise WireError(f"cannot receive ({exc.strerror or exc})") from None
        if isinstance(exc, (ValueError, EOFError, TypeError)):
            raise WireError("a frame that is not a value") from None
        raise


def _exactly(sock: _socket.socket, size: int) -> bytes:
    body = bytearray()
    while len(body) < size:
        more = sock.recv(min(size - len(body), 1 << 20))
        if not more:
            raise WireError("the other end went away")
        body += more
    return bytes(body)


def private_dir(path: str) -> int:
    """A descriptor of ``path`` when it is a folder of this user's that no one else may enter (0700,
    not a link); raises ``OSError`` otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    st = os.fstat(fd)
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        os.close(fd)
        raise PermissionError(f"{path} is not a private folder of this user's")
    return fd


def at(dir_fd: int, name: str) -> str:
    """A path to ``name`` in the folder ``dir_fd`` that fits a socket address whatever the folder's
    path length (a socket path is limited to 107 bytes)."""
    return f"/proc/self/fd/{dir_fd}/{name}"

"""Who is at the other end of a connection to the bridge: the user that owns the peer's socket, read
from the kernel's socket table before a byte of the connection is read.

On 127.0.0.1 any local user can connect to any port; only the launch's own user may talk to its
bridge. Unix sockets would say who connects (``SO_PEERCRED``); TCP does not, but on Linux the
kernel's table of sockets does: the peer's socket is the one whose local address is our remote one
and whose remote address is our local one, and its entry names the uid that made it. It is asked
with one netlink ``sock_diag`` request for that exact socket (no listing of every socket, so a flood
of connections costs one lookup each), and read from ``/proc/net/tcp`` where netlink is not allowed.

The standard library alone, nothing of ccs: the port's guard (``bridge.guard``), a small program
of its own, uses it too.

    uid = peer_uid(conn)      # None: it cannot be told (not Linux, or the peer is gone already)
    allowed(conn)             # the peer is this process's own user (on Linux, where it can be told)
"""

from __future__ import annotations

import os
import socket
import struct
import sys

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 1
NLMSG_HEADER = struct.Struct("=IHHII")  # length, type, flags, sequence, port
DIAG_REQUEST = struct.Struct("=BBBBI")  # family, protocol, extensions, pad, states
NO_COOKIE = 0xFFFFFFFF
ALL_STATES = 0xFFFFFFFF
UID_AT = 4 + 48 + 12  # in inet_diag_msg: family/state/timer/retrans, the socket id, expires/rqueue/wqueue
CAN_TELL = sys.platform.startswith("linux")


def _address(family: int, host: str) -> bytes:
    packed = socket.inet_pton(family, host)
    return packed + b"\0" * (16 - len(packed))


def _from_netlink(family: int, local: tuple[str, int], remote: tuple[str, int]) -> int | None:
    """The uid owning the TCP socket whose local address is ``local`` and remote one ``remote``."""
    socket_id = (struct.pack("!HH", local[1], remote[1]) + _address(family, local[0]) + _address(family, remote[0])
                 + struct.pack("=III", 0, NO_COOKIE, NO_COOKIE))
    request = DIAG_REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0, ALL_STATES) + socket_id
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG) as nl:
        nl.settimeout(1.0)
        nl.send(NLMSG_HEADER.pack(NLMSG_HEADER.size + len(request), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, 1, 0)
                + request)
        answer = nl.recv(65536)
    _, kind, _, _, _ = NLMSG_HEADER.unpack_from(answer)
    if kind != SOCK_DIAG_BY_FAMILY or len(answer) < NLMSG_HEADER.size + UID_AT + 4:
        return None  # NLMSG_ERROR: no such socket (the peer is gone)
    return int(struct.unpack_from("=I", answer, NLMSG_HEADER.size + UID_AT)[0])


def _hex_address(family: int, host: str, port: int) -> str:
    packed = socket.inet_pton(family, host)
    words = struct.unpack(f"={len(packed) // 4}I", packed)  # as the kernel prints them: native-order words
    return "".join(f"{w:08X}" for w in words) + f":{port:04X}"


def _from_proc(family: int, local: tuple[str, int], remote: tuple[str, int]) -> int | None:
    table = "/proc/net/tcp" if family == socket.AF_INET else "/proc/net/tcp6"
    want = (_hex_address(family, *local[:2]), _hex_address(family, *remote[:2]))
    with open(table, encoding="ascii") as f:
        next(f, None)
        for line in f:
            fields = line.split()
            if len(fields) > 7 and (fields[1], fields[2]) == want:
                return int(fields[7])
    return None


def peer_uid(conn: socket.socket) -> int | None:
    """The uid that owns the socket at the other end of ``conn`` (an accepted TCP connection), or
    None when that cannot be told."""
    if not CAN_TELL:
        return None
    try:
        ours, theirs = conn.getsockname(), conn.getpeername()
    except OSError:
        return None  # gone already
    for lookup in (_from_netlink, _from_proc):
        try:
            uid = lookup(conn.family, theirs, ours)
        except (OSError, ValueError, struct.error):
            continue
        if uid is not None:
            return uid
    return None


def allowed(conn: socket.socket, uid: int | None = None) -> bool:
    """Whether the peer of ``conn`` may talk to this process: on Linux, only when its socket is this
    process's own user's (a peer that cannot be told, or is gone, is refused); elsewhere, where the
    socket table cannot be read, anyone local."""
    if not CAN_TELL:
        return True
    return peer_uid(conn) == (os.geteuid() if uid is None else uid)

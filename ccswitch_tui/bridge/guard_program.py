"""The port's guard as a program of its own (``python -I -S``, the standard library and
``bridge.peers`` alone): it holds the bridge's listening socket for as long as any process of the
launch may still send to it, so that no other user can listen on that port and receive the
launch's token and prompts. ``bridge.guard`` starts it and talks to it; see there for the whole story.

    python -I -S -c <boot> LISTEN_FD GRACE LAUNCH_ID UID     # its standard input: the pipe from ccs

While ccs runs it only reads the pipe: a line with the child's pid (its process group, and its
session when it leads one), ``done`` when the launch ended normally. Then, however it ended, it
answers every connection on the port with a 503 naming the ended launch (from the launch's user
only; others are closed unread), never forwarding anything, and exits once no process of the
launch remains: none in the child's process group or session, none that carries the launch's
``CCS_LAUNCH_ID`` in its environment (on Linux, read from ``/proc``). When the pipe closed without
``done``, ccs is gone: the guard first ends those processes (SIGTERM, SIGKILL after the grace
period).
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import sys
import time

from ccswitch_tui.bridge import peers

SCAN_FIRST = 0.05  # seconds between looks for the launch's processes, at first
SCAN_MOST = 1.0  # and at most, for a launch that leaves a long-lived process behind
ANSWER_WAIT = 0.2  # seconds a connection may take to send its request, and to read the answer


def launch_processes(group: int | None, launch_id: str, uid: int) -> list[int]:  # noqa: C901
    """The processes of the launch still running (zombies are not: they cannot send anything): in
    the child's process group or session, or, for the user ``uid``, with the launch's marker in
    their environment."""
    if not os.path.isdir("/proc"):  # no process table to read: the group alone
        if not group:
            return []
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return []
        except PermissionError:
            pass  # alive, another user's now
        return [group]
    marker = f"\0CCS_LAUNCH_ID={launch_id}\0".encode()
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            fields = stat[stat.rfind(b")") + 2:].split()
            if fields[0] in (b"Z", b"X"):
                continue
            if group and group in (int(fields[2]), int(fields[3])):
                found.append(int(name))
                continue
            if os.stat(f"/proc/{name}").st_uid != uid:
                continue
            with open(f"/proc/{name}/environ", "rb") as f:
                environ = f.read()
        except (OSError, IndexError, ValueError):
            continue  # gone, or not ours to read
        if marker in b"\0" + environ + b"\0":
            found.append(int(name))
    return found


def ended_answer(launch_id: str) -> bytes:
    body = json.dumps({"error": {
        "message": f"ccs bridge: launch {launch_id} has ended; its bridge forwards nothing more (this port stays "
                   "held, answering this, until no process of the launch is left)",
        "type": "bridge_error", "code": "launch_ended"}}).encode()
    return (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%b" % (len(body), body))


def answer_one(listener: socket.socket, answer: bytes, uid: int) -> None:
    """Accept one connection: another user's is closed unread; the launch's user's gets ``answer``."""
    try:
        conn, _ = listener.accept()
    except OSError:  # nothing waiting after all, or the peer gave up
        return
    with conn:
        if peers.CAN_TELL and peers.peer_uid(conn) != uid:
            try:
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
            return
        conn.settimeout(ANSWER_WAIT)
        try:
            conn.recv(65536)  # the request (its head, at least): read so that closing does not reset the answer
            conn.sendall(answer)
            conn.shutdown(socket.SHUT_WR)
            while conn.recv(65536):
                pass
        except OSError:
            pass


def read_pipe() -> tuple[int | None, bool]:
    """The child's pid as ccs (or the child itself, before it runs) wrote it, and whether the launch
    ended normally (``done``) rather than with ccs gone (the pipe closed without it)."""
    group, data = None, b""
    while True:
        more = os.read(0, 4096)
        if not more:
            return group, False
        data += more
        *lines, data = data.split(b"\n")
        for line in lines:
            if line == b"done":
                return group, True
            if line.isdigit():
                group = int(line)


def main(argv: list[str]) -> None:
    for s in (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU):
        signal.signal(s, signal.SIG_IGN)
    listen_fd, grace, launch_id, uid = int(argv[1]), float(argv[2]), argv[3], int(argv[4])
    listener = socket.socket(fileno=listen_fd)
    group, normal = read_pipe()
    answer = ended_answer(launch_id)
    gone_at = None if normal else time.monotonic()  # ccs is gone: the launch's processes are ended
    terminated = False
    wait = SCAN_FIRST
    while True:
        alive = launch_processes(group, launch_id, uid)
        if not alive:
            return  # closing the socket frees the port: nobody is left to send to it
        if gone_at is not None:
            killing = time.monotonic() - gone_at >= grace  # SIGTERM once, then SIGKILL while any is left
            if killing or not terminated:
                for pid in alive:
                    try:
                        os.kill(pid, signal.SIGKILL if killing else signal.SIGTERM)
                    except OSError:
                        pass
                terminated = True
        deadline = time.monotonic() + wait
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([listener], [], [], left)
            if ready:
                answer_one(listener, answer, uid)
        wait = SCAN_FIRST if gone_at is not None else min(wait * 2, SCAN_MOST)

if __name__ == "__main__":
    main(sys.argv)

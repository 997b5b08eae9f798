"""What another local user, or a flood of connections, can make the bridge do: a connection from any
user but the launch's is closed before a byte of it is read; a head that never ends gets a 408, an idle
connection is closed; past ``MAX_CONNECTIONS`` open at once a connection gets a 503; each kind of
refusal is one record, however many there were, and counted in the manifest; and 10,000 idle
connections keep a real `ccs run --record` small.

Another user is ``nobody``, for real: a forked child of the test that drops to its uid
(``tests/other_user.py``)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from other_user import as_nobody, need_root
from test_bridge import wait_records
from test_bridge_wire import Scripted, bridge_to, head  # noqa: F401 — bridge_to is a fixture

from ccswitch_tui.bridge import serving, wire


def request(token: str) -> bytes:
    return (f"GET /openai/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
            "Connection: close\r\n\r\n").encode()


def everything(s: socket.socket) -> bytes:
    got = b""
    try:
        while more := s.recv(65536):
            got += more
    except (ConnectionResetError, TimeoutError):
        pass
    return got


def test_a_connection_from_another_user_is_closed_before_a_byte_is_read(bridge_to):  # noqa: F811
    need_root()
    upstream = Scripted(lambda n, req: head(Content_Length="2") + b"ok")
    b = bridge_to(upstream)

    def knock() -> list[str]:  # as nobody, with the token (as if it had been stolen)
        replies = []
        for _ in range(3):
            try:
                s = socket.create_connection(("127.0.0.1", b.port), timeout=10)
            except ConnectionResetError:  # closed before the connect even returned
                replies.append("")
                continue
            with s:
                try:
                    s.sendall(request(b.token))
                except OSError:
                    pass
                replies.append(everything(s).decode("latin-1"))
        return replies

    assert as_nobody(knock) == ["", "", ""]  # no answer at all: closed before anything was read
    assert upstream.requests == []
    with socket.create_connection(("127.0.0.1", b.port), timeout=10) as s:  # the launch's own user
        s.sendall(request(b.token))
        assert everything(s).startswith(b"HTTP/1.1 200 OK")
    records = wait_records(b, 2)
    refused = [r for r in records if r["outcome"] == "refused"]
    assert len(refused) == 1 and "uid 65534" in refused[0]["error"] and refused[0]["path"] is None
    assert b.connections_refused() == {wire.OTHER_USER: 3}


def test_a_head_that_never_ends_gets_a_408_and_an_idle_connection_is_closed(bridge_to, monkeypatch):  # noqa: F811
    monkeypatch.setattr(serving, "HEAD_SECONDS", 0.5)
    monkeypatch.setattr(serving, "KEEPALIVE_SECONDS", 0.5)
    upstream = Scripted(lambda n, req: head(Content_Length="2") + b"ok")
    b = bridge_to(upstream)
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", b.port), timeout=10) as slow, \
            socket.create_connection(("127.0.0.1", b.port), timeout=10) as idle, \
            socket.create_connection(("127.0.0.1", b.port), timeout=10) as kept:
        slow.sendall(b"GET /opena")  # ten bytes of a head, and no more
        kept.sendall(request(b.token).replace(b"Connection: close", b"Connection: keep-alive"))
        assert everything(slow).startswith(b"HTTP/1.1 408 Request Timeout")
        assert everything(idle) == b""
        assert everything(kept).startswith(b"HTTP/1.1 200 OK")  # answered, then closed once idle
    assert time.monotonic() - started < 5
    assert len(upstream.requests) == 1


def test_connections_past_the_limit_get_a_503_recorded_once(bridge_to, monkeypatch):  # noqa: F811
    monkeypatch.setattr(serving, "MAX_CONNECTIONS", 4)
    upstream = Scripted(lambda n, req: head(Content_Length="2") + b"ok")
    b = bridge_to(upstream)
    held = [socket.create_connection(("127.0.0.1", b.port), timeout=10) for _ in range(4)]
    deadline = time.monotonic() + 5
    while b._server.open < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", b.port), timeout=10) as s:
                got = everything(s)
                assert got.startswith(b"HTTP/1.1 503 Service Unavailable") and b"more than 4 connections" in got
    finally:
        for s in held:
            s.close()
    deadline = time.monotonic() + 5
    while b._server.open and time.monotonic() < deadline:
        time.sleep(0.01)
    with socket.create_connection(("127.0.0.1", b.port), timeout=10) as s:  # room again
        s.sendall(request(b.token))
        assert everything(s).startswith(b"HTTP/1.1 200 OK")
    records = wait_records(b, 2)
    assert [(r["status"], r["outcome"]) for r in records] == [(503, "refused"), (200, "ok")]
    assert b.connections_refused() == {wire.OVER_LIMIT: 3}


# --- a flood against a real recorded launch --------------------------------------------------------

FLOOD = 10_000
# The bridge's process (ccs itself) while 10,000 connections are held open: measured 28 MB before, 35 MB at
# the peak (it was 275 MB before connections were checked and limited).
RSS_BOUND_MB, RSS_GROWTH_MB = 64, 24


def status_of(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (kB) and the open descriptors of a process."""
    out = {"fds": len(os.listdir(f"/proc/{pid}/fd"))}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            out[name] = int(value.split()[0])
    return out


def flood(port: int, count: int, hold: float) -> dict[str, int]:
    """``count`` connections, every other one sending a 10-byte head, held open ``hold`` seconds."""
    conns, reset, failed = [], 0, 0
    for i in range(count):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
        except ConnectionResetError:  # closed before the connect even returned
            reset += 1
            continue
        except OSError:
            failed += 1
            continue
        try:
            if i % 2:
                s.sendall(b"GET /opena")
        except OSError:
            pass
        conns.append(s)
    time.sleep(hold)  # the flood's length, what the scenario is: not a wait for something to happen
    answered = 0
    for s in conns:
        s.setblocking(False)
        try:
            answered += s.recv(64).startswith(b"HTTP/1.1 503")
        except OSError:
            pass
        s.close()
    return {"connected": len(conns), "reset": reset, "failed": failed, "answered_503": answered}


def test_ten_thousand_idle_connections_keep_a_recorded_launch_small(ccs, base_env, tmp_path):
    need_root()
    profiles = Path(os.environ["CCS_HOME"]) / "profiles"
    profiles.mkdir(parents=True, exist_ok=True)
    (profiles / "p.toml").write_text('schema = 1\n[provider]\nname = "P"\nbase_url = "http://127.0.0.1:9/v1"\n'
                                     'key = "env:FLOOD_KEY"\n[run]\nexport = ["openai"]\nmodel = "m"\n')
    env = {**base_env, "FLOOD_KEY": "flood-key-0123456789abcdef", "CCS_HOME": os.environ["CCS_HOME"]}
    proc = subprocess.Popen([sys.executable, "-m", "ccswitch_tui", "run", "--record", "p", "--", "sleep", "300"],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = {"VmRSS": 0, "fds": 0}
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.is_set():
            try:
                now = status_of(proc.pid)
            except OSError:
                return
            peak.update({k: max(peak[k], now[k]) for k in peak})
            time.sleep(0.05)

    try:
        runs = Path(os.environ["CCS_HOME"]) / "state" / "runs"
        deadline = time.monotonic() + 30
        port = None
        while port is None and time.monotonic() < deadline:
            for m in runs.glob("*.json") if runs.exists() else []:
                port = int(json.loads(m.read_text())["recording"]["bridge"].rsplit(":", 1)[1])
            time.sleep(0.05)
        assert port, "the launch never wrote its manifest"
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:  # the server is up
            s.sendall(b"GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert everything(s).startswith(b"HTTP/1.1 404")
        before = status_of(proc.pid)
        watcher = threading.Thread(target=sample, daemon=True)
        watcher.start()
        other = as_nobody(lambda: flood(port, FLOOD, 3.0))  # another user: every one closed at once
        own = flood(port, FLOOD, 3.0)  # the launch's own user: at most MAX_CONNECTIONS held
        sampling.set()
        watcher.join(5)
        assert other["failed"] == own["failed"] == 0 and other["answered_503"] == 0, other
        assert own["connected"] == FLOOD and own["answered_503"] >= FLOOD - serving.MAX_CONNECTIONS - 50, own
        assert peak["fds"] <= before["fds"] + serving.MAX_CONNECTIONS + 64, (before, peak)
        assert peak["VmRSS"] <= RSS_BOUND_MB * 1024 and peak["VmRSS"] - before["VmRSS"] <= RSS_GROWTH_MB * 1024, \
            (before, peak)
    finally:
        sampling.set()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    (manifest,) = [json.loads(m.read_text()) for m in runs.glob("*.json")]
    refused = manifest["requests"]["connections_refused"]
    assert refused[wire.OTHER_USER] == FLOOD and refused[wire.OVER_LIMIT] >= own["answered_503"], refused
    records = [json.loads(line) for line in (runs / manifest["recording"]["records"]).read_text().splitlines()]
    assert sorted(r["outcome"] for r in records if r["outcome"] == "refused") == ["refused", "refused", "refused"]
    # one per kind: another user, past the limit, and the 404 of the probe above

"""The bridge of a recorded launch starts without making the child wait for it: its socket is
bound and its token made before the child starts, its server loads meanwhile, and a request sent in
between waits in the listen queue and is answered."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from other_user import as_nobody
from provider_stub import ProviderStub

from ccswitch_tui.bridge.guard import Guard
from ccswitch_tui.bridge.loading import LoadingBridge

KEY = "sk-loading-bridge-0123456789abcdef"


@pytest.fixture
def provider():
    s = ProviderStub()
    yield s
    s.close()


def config_for(provider: ProviderStub, records: Path):
    def make():
        from ccswitch_tui.bridge.server import BridgeConfig, Route

        return BridgeConfig(routes=(Route("openai", provider.url + "/v1"),), key=KEY, records_path=records)

    return make


def test_a_request_sent_before_the_server_loaded_is_answered(provider, tmp_path):
    records = tmp_path / "runs" / "L.requests.jsonl"
    bridge = LoadingBridge(config_for(provider, records), records)
    try:
        assert records.exists() and records.stat().st_mode & 0o777 == 0o600  # there from the start
        got: dict = {}

        def child() -> None:  # connects at once, as a fast child would: the server is not up yet
            conn = http.client.HTTPConnection("127.0.0.1", bridge.port, timeout=30)
            conn.request("POST", "/openai/chat/completions", body=json.dumps({"model": "m", "messages": []}),
                         headers={"Authorization": f"Bearer {bridge.token}", "Content-Type": "application/json"})
            r = conn.getresponse()
            got.update(status=r.status, body=r.read())

        requester = threading.Thread(target=child)
        requester.start()
        subprocess.Popen(["true"], preexec_fn=lambda: None).wait()  # the child's fork: the server loads now
        requester.join(30)
        assert got["status"] == 200 and json.loads(got["body"])["model"]
        assert bridge.wait_ready(5)
        assert provider.posts()[0].headers["authorization"] == f"Bearer {KEY}"
    finally:
        bridge.stop()
    (record,) = bridge.records()
    assert record["outcome"] == "ok" and record["path"] == "/chat/completions"


def test_a_bridge_stopped_before_it_loaded_leaves_nothing_running(provider, tmp_path):
    records = tmp_path / "L.requests.jsonl"
    bridge = LoadingBridge(config_for(provider, records), records)
    bridge.stop()  # the child ended before the server was up
    assert not bridge.wait_ready(5)
    with pytest.raises(OSError):
        http.client.HTTPConnection("127.0.0.1", bridge.port, timeout=2).connect()
    assert bridge.records() == [] and provider.posts() == []


@pytest.mark.usefixtures("secret_service")
def test_a_recorded_run_whose_child_ends_at_once_ends_cleanly(ccs, base_env, key_id):
    """`ccs run --record P -- true`: the child is gone before the server loaded; ccs exits with the
    child's status, says nothing, and the manifest records no request."""
    r = ccs("new", "p", "--base-url", "http://127.0.0.1:9/v1", "--key", key_id, env=base_env)
    assert r.returncode == 0, r.stderr
    assert ccs("key", "set", key_id, input=KEY, env=base_env).returncode == 0
    for status in (0, 3):
        r = ccs("run", "--record", "p", "--", sys.executable, "-c", f"raise SystemExit({status})", env=base_env)
        assert (r.returncode, r.stderr) == (status, "")
    manifests = json.loads(ccs("runs", "--json", env=base_env).stdout)["runs"]
    assert len(manifests) == 2 and all(m["requests"]["requests"] == 0 for m in manifests)
    records = Path(os.environ["CCS_HOME"]) / "state" / "runs"
    assert all((records / m["recording"]["records"]).read_text() == "" for m in manifests)


def test_a_released_guard_leaves_the_child_alone_and_holds_the_port_until_it_is_gone(tmp_path):
    """``release()`` returns at once, even while the guard is still starting; the guard still reads
    ``done`` before the pipe's end, so it does not end the child's group: it answers 503 on the port,
    naming the launch, for as long as the child lives, and exits once it is gone."""
    child = subprocess.Popen(["sleep", "30"], start_new_session=True)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    try:
        guard = Guard.start(listener.fileno(), "20990101T000000Z-guarded")
        guard.watch(child.pid)
        guard.release()  # at once: the guard has most likely not even started reading yet
        listener.close()  # ccs's own copy: the guard's alone holds the port now
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"POST /openai/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
            reply = s.makefile("rb").read()
        assert reply.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
        assert b"launch 20990101T000000Z-guarded has ended" in reply
        if os.geteuid() == 0:  # another user gets nothing at all, not even the launch's id

            def knock() -> str:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                        return s.makefile("rb").read().decode("latin-1")
                except ConnectionResetError:
                    return ""

            assert as_nobody(knock) == ""
        # a window, not a wait: nothing is to happen, and a guard that missed "done" would end the group in it
        time.sleep(0.3)
        assert guard.poll() is None and child.poll() is None  # had it missed "done", the group would be gone
        child.kill()
        child.wait()
        deadline = time.monotonic() + 10
        while guard.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert guard.poll() == 0
        with pytest.raises(OSError):  # the port is free again
            socket.create_connection(("127.0.0.1", port), timeout=2)
    finally:
        listener.close()
        if child.poll() is None:
            child.kill()
            child.wait()


def test_the_token_is_secrets_token_urlsafe_without_secrets(monkeypatch):
    """The same bytes give the same text as ``secrets.token_urlsafe(24)``: 32 characters of the
    URL-safe alphabet, no padding, so nothing that reads a launch's token changes."""
    import random
    import re
    import secrets

    from ccswitch_tui.bridge.loading import token_urlsafe

    for raw in (bytes(range(24)), b"\xff" * 24, b"\xfb\xef\xbe" * 8):
        monkeypatch.setattr(os, "urandom", lambda n, raw=raw: raw[:n])
        monkeypatch.setattr(random, "_urandom", lambda n, raw=raw: raw[:n])  # secrets' source
        assert token_urlsafe(24) == secrets.token_urlsafe(24)
    monkeypatch.undo()
    tokens = {token_urlsafe(24) for _ in range(200)}
    assert len(tokens) == 200 and all(re.fullmatch(r"[A-Za-z0-9_-]{32}", t) for t in tokens)

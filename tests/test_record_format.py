"""The records' format does not move: requests relayed by the real bridge (pass-through and
translated, with and without bodies, refused, and a refused connection) are written as the lines in
``fixtures/records/golden.jsonl``, keys, values and key order alike, once the values that change
from run to run (times, ports) are set aside. ``ccs runs``, the manifest's summary and older
records' readers read these keys by name.

``CCS_WRITE_RECORD_GOLDEN=1`` writes the golden file again from the code as it is."""

from __future__ import annotations

import http.client
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from chat_stub import ChatStub, Reply
from provider_stub import ProviderStub

from ccswitch_tui.bridge import wire
from ccswitch_tui.bridge.handler import passthrough
from ccswitch_tui.bridge.server import Bridge, BridgeConfig, Route
from ccswitch_tui.bridge.translate.handler import TranslatingHandler

KEY = "sk-record-format-0123456789abcdef"
GOLDEN = Path(__file__).parent / "fixtures" / "records" / "golden.jsonl"
FIXTURES = Path(__file__).parent / "fixtures" / "chat"
_TIMES = ("started", "ttfb_ms", "duration_ms")


def _call(bridge: Bridge, path: str, body: dict[str, Any], token: str | None, task: str | None = None) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", bridge.port, timeout=10)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if task is not None:
        headers["X-Ccs-Task"] = task
    conn.request("POST", path, body=json.dumps(body), headers=headers)
    r = conn.getresponse()
    r.read()
    conn.close()
    return r.status


def _records(bridge: Bridge, n: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 10
    while len(records := bridge.records()) < n and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(records) == n
    return records


def _steady(record: dict[str, Any]) -> dict[str, Any]:
    """The record with what changes between runs set aside: its times, and loopback ports."""
    out = {}
    for k, v in record.items():
        if k in _TIMES and v is not None:
            v = "<time>"
        elif isinstance(v, str):
            v = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<port>", v)
        out[k] = v
    return out


def _run(tmp_path: Path, bodies: bool) -> list[dict[str, Any]]:
    stub = ProviderStub()
    chat = ChatStub(script=[Reply(raw=(FIXTURES / "openai_refusal.sse").read_bytes())])
    path = tmp_path / f"bodies-{bodies}.requests.jsonl"
    bridge = Bridge(BridgeConfig(routes=(Route("anthropic", stub.url, handler=passthrough("anthropic-messages")),
                                         Route("openai", stub.url + "/v1", handler=passthrough("openai")),
                                         Route("p", f"{chat.url}/v1", handler=TranslatingHandler("Prov"))),
                                 key=KEY, records_path=path, key_fingerprint="fp:0123456789ab",
                                 record_bodies=bodies)).start()
    try:
        assert _call(bridge, "/openai/chat/completions", {"model": "gpt-x", "messages": [{"role": "user",
                                                          "content": "hi"}]}, bridge.token, task="t-1") == 200
        _records(bridge, 1)
        assert _call(bridge, "/anthropic/v1/messages", {"model": "claude-x", "max_tokens": 5, "stream": True},
                     bridge.token, task="") == 200
        _records(bridge, 2)
        assert _call(bridge, "/anthropic/v1/messages", {"model": "claude-x"}, None) == 401
        _records(bridge, 3)
        assert _call(bridge, "/nowhere/x", {}, bridge.token) == 404
        _records(bridge, 4)
        assert _call(bridge, "/p/responses", {"model": "gpt-4o", "input": "hi", "stream": True}, bridge.token) == 200
        _records(bridge, 5)
        bridge._refused(wire.OVER_LIMIT, "more than 4 connections at once")  # as the server calls it
        return [_steady(r) for r in _records(bridge, 6)]
    finally:
        bridge.stop()
        stub.close()
        chat.close()


@pytest.mark.parametrize("bodies", [False, True], ids=["plain", "bodies"])
def test_records_keep_their_keys_values_and_order(tmp_path: Path, bodies: bool) -> None:
    got = _run(tmp_path, bodies)
    golden = [json.loads(line) for line in GOLDEN.read_text().splitlines() if line.strip()]
    part = golden[6:] if bodies else golden[:6]
    if os.environ.get("CCS_WRITE_RECORD_GOLDEN") == "1":
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        lines = [json.dumps(r) for r in (golden[:6] + got if bodies else got + golden[6:])]
        GOLDEN.write_text("\n".join(lines) + "\n")
        return
    assert [list(r) for r in got] == [list(r) for r in part]  # the keys, in their order
    assert got == part


def test_the_golden_records_are_the_shapes_readers_expect() -> None:
    """The golden file itself: a relayed request's 29 fields in their order, then the optional
    ones (task, bodies, a translation's), and a refused connection's short form."""
    golden = [json.loads(line) for line in GOLDEN.read_text().splitlines() if line.strip()]
    base = ["id", "started", "method", "route", "dialect", "path", "upstream_url", "key_fingerprint", "model_requested",
            "model_served", "stream", "status", "upstream_status", "outcome", "ttfb_ms", "duration_ms",
            "in_flight", "retry_of", "input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens",
            "usage_source", "request_bytes", "response_bytes", "provider_headers", "system_fingerprint",
            "error", "error_class"]
    plain, bodies = golden[:6], golden[6:]
    assert list(plain[0]) == [*base, "task"] and plain[0]["task"] == "t-1"
    assert list(plain[1]) == [*base, "task"] and plain[1]["task"] is None
    assert list(plain[2]) == list(plain[3]) == base
    assert list(plain[4]) == [*base, "translated", "upstream_model", "dropped", "refusal"]
    assert list(bodies[0]) == [*base, "task", "request_body", "response_body"]
    assert list(bodies[2]) == list(bodies[3]) == base  # refused before the body was read
    assert list(bodies[4]) == [*base, "request_body", "translated", "upstream_model", "dropped", "response_body",
                               "refusal"]
    short = ["id", "started", "method", "route", "path", "upstream_url", "key_fingerprint", "status", "outcome",
             "duration_ms", "in_flight", "usage_source", "error"]
    assert list(plain[5]) == list(bodies[5]) == short
    # each record names the API its route's handler declares; a path on no route has none
    assert [r["dialect"] for r in plain[:5]] == ["openai", "anthropic-messages", "anthropic-messages", None,
                                                 "openai-responses"]


def _refusal_body(route: Route, records: Path) -> dict[str, Any]:
    """What the bridge answers a request without the launch's token (it never reaches the upstream)."""
    bridge = Bridge(BridgeConfig(routes=(route,), key=KEY, records_path=records)).start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", bridge.port, timeout=10)
        conn.request("POST", f"/{route.name}/v1/messages", body=b"{}", headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        body = json.loads(r.read())
        conn.close()
        assert r.status == 401
        return body
    finally:
        bridge.stop()


def test_the_bridge_answers_its_refusals_in_the_dialect_the_route_declares(tmp_path: Path) -> None:
    """The route's declared API, not its name, says the shape of the bridge's own error."""
    records = tmp_path / "L.requests.jsonl"
    anthropic = _refusal_body(Route("x", "http://127.0.0.1:9", handler=passthrough("anthropic-messages")), records)
    assert anthropic["type"] == "error" and anthropic["error"]["type"] == "invalid_request_error"
    for route in (Route("anthropic", "http://127.0.0.1:9", handler=passthrough("openai")),
                  Route("y", "http://127.0.0.1:9")):
        openai = _refusal_body(route, records)
        assert "type" not in openai and openai["error"]["code"] == "ccs_bridge_refused"


def test_a_plans_routes_declare_the_dialect_of_their_base_url() -> None:
    from ccswitch_tui.bridge.reroute import route_dialect, route_name

    assert [(route_name(loc, "Some Tool"), route_dialect(loc)) for loc in
            ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "model_providers.x.base_url")] == [
        ("anthropic", "anthropic-messages"), ("openai", "openai"), ("some-tool", "unknown")]

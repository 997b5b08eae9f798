"""The recording bridge on its own, against a real loopback provider: forwarding with the real key
swapped in, streaming without buffering, one record per request whatever its end, no secret in
any record, --strict-model, and the per-route rewriting hook."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from pathlib import Path

import pytest
from provider_stub import ProviderStub
from waiting import until

from ccswitch_tui.bridge import records as rec
from ccswitch_tui.bridge.handler import Outgoing
from ccswitch_tui.bridge.server import Bridge, BridgeConfig, Route

KEY = "sk-real-bridge-key-0123456789abcdef"


@pytest.fixture
def stub():
    s = ProviderStub()
    yield s
    s.close()


@pytest.fixture
def make_bridge(tmp_path: Path):
    made: list[Bridge] = []

    def make(*routes: Route, **kw) -> Bridge:
        b = Bridge(BridgeConfig(routes=routes, key=KEY, records_path=tmp_path / "runs" / "L.requests.jsonl",
                                key_fingerprint="fp:0123456789ab", **kw)).start()
        made.append(b)
        return b

    yield make
    for b in made:
        b.stop()


def post(url: str, path: str, body: dict, token: str | None, header: str = "Authorization",
         timeout: float = 10) -> tuple[int, dict[str, str], bytes]:
    host, port = url.split("//")[1].split("/")[0].split(":")
    prefix = "/" + url.split("//")[1].partition("/")[2]
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    headers = {"Content-Type": "application/json"}
    if token:
        headers[header] = f"Bearer {token}" if header == "Authorization" else token
    conn.request("POST", prefix.rstrip("/") + path, body=json.dumps(body), headers=headers)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, data


def wait_records(bridge: Bridge, n: int, timeout: float = 5) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        records = bridge.records()
        if len(records) >= n:
            return records
        time.sleep(0.02)
    return bridge.records()


def test_forwards_with_the_real_key_and_records_what_came_back(stub, make_bridge):
    b = make_bridge(Route("openai", stub.url + "/v1"))
    status, headers, body = post(b.route_url("openai"), "/chat/completions",
                                 {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}, b.token)
    assert status == 200 and json.loads(body)["choices"][0]["message"]["content"] == "reply 1"
    (seen,) = stub.posts()
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == f"Bearer {KEY}"
    assert b.token not in json.dumps(seen.headers)
    (r,) = wait_records(b, 1)
    assert r["method"] == "POST" and r["path"] == "/chat/completions" and r["route"] == "openai"
    assert r["upstream_url"] == stub.url + "/v1/chat/completions"
    assert r["status"] == 200 and r["outcome"] == "ok" and r["stream"] is False
    assert r["model_requested"] == "gpt-4.1" and r["model_served"] == "gpt-4.1"
    assert (r["input_tokens"], r["output_tokens"], r["cached_tokens"], r["reasoning_tokens"]) == (11, 6, 1, 1)
    assert r["usage_source"] == "reported" and r["system_fingerprint"] == "fp_stub"
    assert r["provider_headers"]["x-request-id"] == "req_1"
    assert r["key_fingerprint"] == "fp:0123456789ab" and r["in_flight"] == 0
    assert r["ttfb_ms"] > 0 and r["duration_ms"] >= r["ttfb_ms"]
    assert "request_body" not in r and "response_body" not in r


def test_refuses_a_request_without_the_token(stub, make_bridge):
    b = make_bridge(Route("openai", stub.url))
    for token in (None, "sk-some-other-key-000000000000"):
        status, _, body = post(b.route_url("openai"), "/chat/completions", {"model": "m"}, token)
        assert status == 401 and "token" in json.loads(body)["error"]["message"]
    assert stub.seen == []
    records = wait_records(b, 2)
    assert [(r["status"], r["outcome"]) for r in records] == [(401, "refused")] * 2
    status, _, _ = post(b.url + "/nowhere", "/x", {}, b.token)
    assert status == 404


def test_the_token_is_swapped_in_whichever_header_carries_it(stub, make_bridge):
    b = make_bridge(Route("anthropic", stub.url))
    status, _, _ = post(b.route_url("anthropic"), "/v1/messages", {"model": "claude-x", "max_tokens": 5},
                        b.token, header="x-api-key")
    assert status == 200
    (seen,) = stub.posts()
    assert seen.headers["x-api-key"] == KEY and "authorization" not in seen.headers
    (r,) = wait_records(b, 1)
    assert r["model_served"] == "claude-x" and (r["input_tokens"], r["output_tokens"], r["cached_tokens"]) == (11, 6, 1)
    assert r["provider_headers"] == {"request-id": "req_1"}


def read_stream_timed(url: str, path: str, body: dict, token: str) -> tuple[list[tuple[float, bytes]], int]:
    host, port = url.split("//")[1].split("/")[0].split(":")
    prefix = "/" + url.split("//")[1].partition("/")[2]
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("POST", prefix + path, body=json.dumps(body),
                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    t0 = time.monotonic()
    r = conn.getresponse()
    chunks = []
    while True:
        data = r.read1(65536)
        if not data:
            break
        chunks.append((time.monotonic() - t0, data))
    conn.close()
    return chunks, r.status


def test_streams_chunk_by_chunk_without_buffering(stub, make_bridge):
    stub.fault["/responses"] = ("slow", 0.4)
    b = make_bridge(Route("openai", stub.url))
    chunks, status = read_stream_timed(b.route_url("openai"), "/responses", {"model": "m", "stream": True}, b.token)
    assert status == 200
    assert b"response.created" in chunks[0][1] and chunks[0][0] < 0.3  # not held back until the end
    assert chunks[-1][0] > 0.7
    text = b"".join(c for _, c in chunks)
    assert text.count(b"data: ") == 3 and b"response.completed" in text
    (r,) = wait_records(b, 1)
    assert r["stream"] is True and r["outcome"] == "ok" and r["ttfb_ms"] < 300 and r["duration_ms"] > 700
    assert (r["input_tokens"], r["output_tokens"], r["model_served"]) == (11, 6, "m")


def test_chat_stream_usage_only_when_the_provider_reports_it(stub, make_bridge):
    b = make_bridge(Route("openai", stub.url))
    post(b.route_url("openai"), "/chat/completions", {"model": "m", "stream": True}, b.token)
    post(b.route_url("openai"), "/chat/completions",
         {"model": "m", "stream": True, "stream_options": {"include_usage": True}}, b.token)
    first, second = wait_records(b, 2)
    assert first["usage_source"] == "missing" and first["input_tokens"] is None and first["model_served"] == "m"
    assert second["usage_source"] == "reported" and (second["input_tokens"], second["output_tokens"]) == (12, 7)


def test_upstream_errors_are_forwarded_and_recorded(stub, make_bridge):
    stub.fault["/chat/completions"] = ("status", 429, {"error": {"message": "slow down", "type": "rate_limit"}})
    stub.fault["/responses"] = ("status", 500, {"error": {"message": f"boom for key {KEY}", "type": "server"}})
    b = make_bridge(Route("openai", stub.url))
    status, headers, _ = post(b.route_url("openai"), "/chat/completions", {"model": "m"}, b.token)
    assert status == 429 and headers["retry-after"] == "1"
    status, _, _ = post(b.route_url("openai"), "/responses", {"model": "m"}, b.token)
    assert status == 500
    r429, r500 = wait_records(b, 2)
    assert r429["status"] == 429 and r429["outcome"] == "upstream-error" and "slow down" in r429["error"]
    assert r429["provider_headers"]["retry-after"] == "1"
    assert r500["status"] == 500 and "boom" in r500["error"] and KEY not in r500["error"]
    raw = b.records_path.read_text()
    assert KEY not in raw and b.token not in raw


def test_unreachable_upstream_is_a_502_and_a_record(make_bridge):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    b = make_bridge(Route("openai", f"http://127.0.0.1:{port}/v1"))
    status, _, body = post(b.route_url("openai"), "/chat/completions", {"model": "m"}, b.token)
    assert status == 502 and "unreachable" in json.loads(body)["error"]["message"]
    (r,) = wait_records(b, 1)
    assert r["outcome"] == "unreachable" and r["status"] == 502 and r["upstream_status"] is None


def test_a_stream_the_upstream_cuts_off_is_cut_for_the_child_and_recorded(stub, make_bridge):
    stub.fault["/v1/messages"] = ("cut", 2)
    b = make_bridge(Route("anthropic", stub.url))
    with pytest.raises(http.client.IncompleteRead):
        post(b.route_url("anthropic"), "/v1/messages", {"model": "c", "stream": True}, b.token)
    (r,) = wait_records(b, 1)
    assert r["outcome"] == "upstream-aborted" and r["status"] == 200 and r["model_served"] == "c"
    assert r["input_tokens"] == 11 and "broke off" in r["error"]


def test_a_client_that_goes_away_mid_stream_is_recorded(stub, make_bridge):
    stub.fault["/responses"] = ("slow", 0.3)
    b = make_bridge(Route("openai", stub.url))
    sock = socket.create_connection(("127.0.0.1", b.port))
    body = json.dumps({"model": "m", "stream": True}).encode()
    sock.sendall(b"POST /openai/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Authorization: Bearer " + b.token.encode() + b"\r\nContent-Length: "
                 + str(len(body)).encode() + b"\r\n\r\n" + body)
    got = b""
    while b"response.created" not in got:
        got += sock.recv(65536)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    sock.close()  # a reset, as a killed client leaves
    (r,) = wait_records(b, 1)
    assert r["outcome"] == "client-disconnected" and r["model_served"] == "m"


def test_strict_model_refuses_another_model_and_names_both(stub, make_bridge):
    b = make_bridge(Route("openai", stub.url, models=("gpt-4.1",)), strict_model=True)
    status, _, body = post(b.route_url("openai"), "/chat/completions", {"model": "gpt-4o"}, b.token)
    assert status == 400
    message = json.loads(body)["error"]["message"]
    assert "gpt-4.1" in message and "gpt-4o" in message
    assert post(b.route_url("openai"), "/chat/completions", {"model": "gpt-4.1"}, b.token)[0] == 200
    assert [s.body["model"] for s in stub.posts()] == ["gpt-4.1"]
    refused, ok = wait_records(b, 2)
    assert refused["outcome"] == "refused" and refused["model_requested"] == "gpt-4o" and ok["outcome"] == "ok"


def test_bodies_only_when_asked_and_then_masked(stub, make_bridge):
    b = make_bridge(Route("openai", stub.url), record_bodies=True)
    secret_text = "my other token is ghp_abcdefghijklmnop0123456789"
    post(b.route_url("openai"), "/chat/completions",
         {"model": "m", "messages": [{"role": "user", "content": f"{KEY} {secret_text}"}]}, b.token)
    (r,) = wait_records(b, 1)
    assert "messages" in r["request_body"] and "reply 1" in r["response_body"]
    raw = b.records_path.read_text()
    assert KEY not in raw and "ghp_abcdefghijklmnop0123456789" not in raw and b.token not in raw


STREAMS = 200  # "hundreds of concurrent streams"


def test_hundreds_of_concurrent_streams_each_recorded(stub, make_bridge):
    stub.fault["/responses"] = ("slow", 0.3)  # every stream stays open long enough for all to overlap
    b = make_bridge(Route("openai", stub.url))
    results: list[int] = []
    start = threading.Barrier(STREAMS)

    def one() -> None:
        start.wait()
        chunks, status = read_stream_timed(b.route_url("openai"), "/responses", {"model": "m", "stream": True},
                                           b.token)
        results.append(status if b"response.completed" in b"".join(c for _, c in chunks) else -1)

    threads = [threading.Thread(target=one) for _ in range(STREAMS)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    assert results == [200] * STREAMS
    records = wait_records(b, STREAMS)
    assert len(records) == STREAMS and {r["outcome"] for r in records} == {"ok"}
    assert sorted(r["id"] for r in records) == list(range(1, STREAMS + 1))
    assert sorted(r["input_tokens"] for r in records) == sorted(s.usage["input"] for s in stub.posts())
    summary = rec.summarize(records)
    assert summary["requests"] == STREAMS and summary["max_concurrency"] >= STREAMS // 2, summary["max_concurrency"]
    assert summary["tokens"]["input_tokens"] == sum(s.usage["input"] for s in stub.posts())
    assert elapsed < 15, elapsed  # streamed side by side: one after another they take 200 x 0.6 s


def test_a_retry_points_at_the_first_attempt(stub, make_bridge):
    stub.fault["/chat/completions"] = ("status", 503, {"error": {"message": "busy"}})
    b = make_bridge(Route("openai", stub.url))
    body = {"model": "m", "messages": [{"role": "user", "content": "same"}]}
    post(b.route_url("openai"), "/chat/completions", body, b.token)
    post(b.route_url("openai"), "/chat/completions", body, b.token)
    first, second = wait_records(b, 2)
    assert first["retry_of"] is None and second["retry_of"] == first["id"]


def test_stop_records_requests_still_in_flight(stub, tmp_path):
    stub.fault["/responses"] = ("slow", 2.0)
    b = Bridge(BridgeConfig(routes=(Route("openai", stub.url),), key=KEY,
                            records_path=tmp_path / "r.jsonl")).start()
    cut: list[Exception] = []

    def reader() -> None:
        try:
            read_stream_timed(b.route_url("openai"), "/responses", {"model": "m", "stream": True}, b.token)
        except http.client.IncompleteRead as exc:
            cut.append(exc)

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    until(stub.posts, 10, "the request to reach the provider")  # in flight: the answer has not ended
    b.stop()
    (r,) = b.records()
    assert r["outcome"] == "bridge-stopped"
    t.join(5)
    assert len(cut) == 1  # the child saw its answer cut, not a clean end


class Shouting:
    """A handler that rewrites the path and the answer: the hook a translator plugs into."""

    dialect = "openai"  # what the child speaks (every handler declares it)

    class _Exchange:
        rewrites_body = True

        def request(self, outgoing: Outgoing) -> Outgoing:
            outgoing.path = outgoing.path.replace("/shout", "/chat/completions")
            return outgoing

        def response_head(self, status, headers):
            return status, {**headers, "X-Shouted": "yes"}

        def response_chunk(self, data: bytes) -> bytes:
            return data.upper()

        def response_end(self) -> bytes:
            return b"\n#END"

    def exchange(self, method: str, path: str):
        return self._Exchange()


def test_a_route_handler_rewrites_request_and_answer(stub, make_bridge):
    b = make_bridge(Route("openai", stub.url, handler=Shouting()))
    status, headers, body = post(b.route_url("openai"), "/shout", {"model": "m"}, b.token)
    assert status == 200 and headers["x-shouted"] == "yes" and body.endswith(b"\n#END")
    assert b'"REPLY 1"' in body
    assert stub.posts()[0].path == "/chat/completions"
    (r,) = wait_records(b, 1)
    assert r["path"] == "/shout" and r["upstream_url"].endswith("/chat/completions")
    assert r["model_served"] == "m" and r["input_tokens"] == 11  # read from the upstream's own answer


def test_the_observer_reads_a_stream_however_it_is_cut():
    from ccswitch_tui.bridge.observe import ResponseObserver

    events = (b'event: message_start\r\ndata: {"type":"message_start","message":{"model":"claude-x",'
              b'"usage":{"input_tokens":7,"output_tokens":1,"cache_read_input_tokens":2}}}\r\n\r\n'
              b'data: {"type":"content_block_delta","delta":{"text":"hi"}}\r\n\r\n'
              b'data: {"type":"message_delta","usage":{"output_tokens":9}}\r\n\r\n')
    for size in (1, 2, 7, 64, len(events)):
        o = ResponseObserver(stream=True)
        for i in range(0, len(events), size):
            o.feed(events[i:i + size])
        o.finish()
        assert (o.model, o.usage.input_tokens, o.usage.output_tokens, o.usage.cached_tokens) == ("claude-x", 7, 9, 2)
    o = ResponseObserver(stream=True)
    o.feed(b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"busy"}}\n\n')
    o.finish()
    assert o.error == "overloaded_error: busy" and not o.usage.reported


def test_masking_and_safe_urls():
    m = rec.Masker([KEY])
    assert m(f"key {KEY} and Bearer abcdefghijklmnopqrstuvwxyz") == "key sk-…cdef and Bearer abc…wxyz"
    assert m("Incorrect API key provided: Bearer hunter2-short") == "Incorrect API key provided: Bearer ***"
    assert rec.safe_url("https://user:pw@host/v1/x?api_key=sk-123&beta=true") == \
        "https://host/v1/x?api_key=****&beta=true"


def test_reroute_replaces_urls_and_key_and_refuses_what_it_cannot_reach():
    from ccswitch_tui.bridge.reroute import reroute, route_specs
    from ccswitch_tui.errors import UsageError
    from ccswitch_tui.model import FileToWrite, LaunchPlan

    plan = LaunchPlan(
        profile="p", tool="codex", argv=("codex",), env={"CODEX_HOME": "/h", "CCS_CODEX_API_KEY": KEY,
                                                          "HTTPS_PROXY": "http://proxy:3128"},
        sources={}, secret_names=frozenset({"CCS_CODEX_API_KEY"}), cwd=Path("/"), launch_id="L",
        files=(FileToWrite(Path("/h/config.toml"), 'base_url = "https://up.example/v1"\n'),),
        base_urls={"model_providers.p.base_url": "https://up.example/v1"}, models={"model": "gpt-4.1"})
    specs = route_specs(plan)
    assert [(s.name, s.upstream, s.models, s.proxy) for s in specs] == [
        ("codex", "https://up.example/v1", ("gpt-4.1",), "http://proxy:3128")]
    new = reroute(plan, KEY, "TOKEN", lambda n: f"http://127.0.0.1:5/{n}", specs)
    assert new.files[0].content == 'base_url = "http://127.0.0.1:5/codex"\n'
    assert new.env["CCS_CODEX_API_KEY"] == "TOKEN" and "127.0.0.1" in new.env["NO_PROXY"]
    leaky = LaunchPlan(**{**plan.__dict__, "env": {**plan.env, "OTHER": "see https://up.example/v1/docs"}})
    with pytest.raises(UsageError, match=r"\$OTHER still holds the real base URL"):
        reroute(leaky, KEY, "TOKEN", lambda n: f"http://127.0.0.1:5/{n}", route_specs(leaky))


class Broken:
    """A handler with a bug: the bridge answers 502 and records it, and keeps serving."""

    dialect = "openai"

    def exchange(self, method: str, path: str):
        raise RuntimeError(f"no exchange for {path} (key {KEY})")


def test_a_failing_handler_is_a_502_and_a_record_not_a_crash(stub, make_bridge):
    b = make_bridge(Route("openai", stub.url, handler=Broken()), Route("plain", stub.url))
    status, _, body = post(b.route_url("openai"), "/chat/completions", {"model": "m"}, b.token)
    assert status == 502 and "no exchange for /chat/completions" in json.loads(body)["error"]["message"]
    assert KEY not in body.decode()
    assert post(b.route_url("plain"), "/chat/completions", {"model": "m"}, b.token)[0] == 200
    broken, ok = wait_records(b, 2)
    assert broken["outcome"] == "bridge-error" and KEY not in broken["error"] and ok["outcome"] == "ok"


def test_head_and_get_pass_through(make_bridge):
    from stub_server import StubServer

    stub = StubServer()
    try:
        b = make_bridge(Route("anthropic", stub.url))
        host, port = "127.0.0.1", b.port
        for method, status in (("HEAD", 200), ("GET", 404)):
            conn = http.client.HTTPConnection(host, port, timeout=5)
            conn.request(method, "/anthropic/api/hello", headers={"x-api-key": b.token})
            r = conn.getresponse()
            r.read()
            conn.close()
            assert r.status == status
        assert [(r.method, r.path, r.headers.get("x-api-key")) for r in stub.requests] == [
            ("HEAD", "/api/hello", KEY), ("GET", "/api/hello", KEY)]
        assert [r["status"] for r in wait_records(b, 2)] == [200, 404]
    finally:
        stub.close()

"""The bridge as a filter in both directions, against a hostile loopback provider (tests/hostile_stub.py):
nothing it hands back to the child holds the key or another secret it knows, whatever carries it
(status text, headers, ``Location``, JSON, SSE split across chunks, gzip, HTTP/1.0, the translator's
own events); records mask before they cut; and each record says what the child really got.

The key is GLM-shaped (``<32 hex>.<16 chars>``), the other secret has no shape either: the masker's
shape rules would hide an ``sk-…`` or ``Bearer …`` text without the filter, and prove nothing."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest
from hostile_stub import Got, HostileStub, echo_answers, pieces_of, response
from key_samples import GLM

from ccswitch_tui.bridge import records as rec
from ccswitch_tui.bridge.outbound import SecretFilter
from ccswitch_tui.bridge.server import MAX_RECORDED_BODY, Bridge, BridgeConfig, Route
from ccswitch_tui.bridge.translate.handler import TranslatingHandler

KEY = GLM
OTHER = "gw7Qx2LmPz94RtYvWq3N"  # a [secrets] value: no credential shape


def assert_clean(data: bytes, *secrets: str) -> None:
    """No secret, and no 10-character piece of one, anywhere in ``data``."""
    for s in secrets:
        for i in range(len(s) - 9):
            assert s[i:i + 10].encode() not in data, (s[i:i + 10], data[:3000])


def raw_exchange(port: int, request: bytes, timeout: float = 10) -> bytes:
    """Every byte the child gets back for one request, status line and headers included."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(request)
        out = b""
        while True:
            try:
                more = s.recv(65536)
            except ConnectionResetError:
                break
            if not more:
                break
            out += more
    return out


def dechunked(raw: bytes) -> bytes:
    """The head and the body of a raw answer, the body without its chunk framing (which would cut a
    secret in the raw bytes and hide it from a search)."""
    head, _, body = raw.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" not in head.lower():
        return head + b"\r\n\r\n" + body
    out = b""
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out += rest[:size]
        body = rest[size + 2:]
    return head + b"\r\n\r\n" + out


def http_request(method: str, path: str, token: str, body: bytes = b"", version: str = "HTTP/1.1",
                 extra: str = "") -> bytes:
    return (f"{method} {path} {version}\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n{extra}\r\n"
            ).encode() + body


@pytest.fixture
def hostile():
    s = HostileStub()
    yield s
    s.close()


@pytest.fixture
def make_bridge(tmp_path: Path):
    made: list[Bridge] = []

    def make(*routes: Route, **kw) -> Bridge:
        kw.setdefault("extra_secrets", (OTHER,))
        b = Bridge(BridgeConfig(routes=routes, key=KEY, records_path=tmp_path / "runs" / "L.requests.jsonl",
                                **kw)).start()
        made.append(b)
        return b

    yield make
    for b in made:
        b.stop()


def wait_records(bridge: Bridge, n: int, timeout: float = 10) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        records = bridge.records()
        if len(records) >= n:
            return records
        time.sleep(0.02)
    return bridge.records()


# --- the filter on its own ------------------------------------------------------------------------


def test_the_stream_filter_replaces_secrets_wherever_the_chunks_are_cut():
    f = SecretFilter([(KEY, "TOKEN"), (OTHER, "gw7…Wq3N")])
    text = f'data: {{"a":"{KEY}","b":"{OTHER}{KEY}"}}\n\n{KEY[:20]}x{OTHER[:5]}'.encode()
    want = f.data(text)
    assert KEY.encode() not in want and OTHER.encode() not in want and want.count(b"TOKEN") == 2
    for i in range(len(text) + 1):
        for j in range(i, len(text) + 1, 7):
            s = f.stream()
            out = s.feed(text[:i]) + s.feed(text[i:j]) + s.feed(text[j:]) + s.flush()
            assert out == want, (i, j)
    s = f.stream()  # one byte at a time
    assert b"".join(s.feed(text[k:k + 1]) for k in range(len(text))) + s.flush() == want
    s = f.stream()  # an SSE event ends with a blank line, which starts no secret: nothing is held back
    assert s.feed(b'data: {"x":1}\n\n') == b'data: {"x":1}\n\n'
    assert s.feed(b"data: " + KEY[:10].encode()) == b"data: " and s.flush() == KEY[:10].encode()


# --- what the child gets ---------------------------------------------------------------------------


def test_nothing_the_child_receives_holds_the_key_or_a_secret(hostile, make_bridge):
    echo_answers(hostile, KEY, OTHER)
    b = make_bridge(Route("openai", hostile.url + "/v1"))
    gw = f"X-Gateway-Auth: {OTHER}\r\n"
    got = {}
    for name, method, path, version in (
            ("redirect", "GET", f"/openai/redirect?key={b.token}", "HTTP/1.1"),
            ("elsewhere", "GET", f"/openai/elsewhere?key={b.token}", "HTTP/1.1"),
            ("auth", "POST", "/openai/auth", "HTTP/1.1"),
            ("old", "POST", "/openai/old", "HTTP/1.0"),
            ("stream", "POST", "/openai/chat/completions", "HTTP/1.1"),
            ("gzip", "GET", "/openai/gzip", "HTTP/1.1"),
            ("unknown", "GET", "/openai/unknown", "HTTP/1.1")):
        body = b'{"model":"m","stream":true}' if method == "POST" else b""
        got[name] = dechunked(raw_exchange(b.port, http_request(method, path, b.token, body, version, gw)))
    assert all(KEY in json.dumps(g.headers) or KEY in g.path for g in hostile.seen)  # the provider had it
    everything = b"".join(got.values())
    assert_clean(everything, KEY, OTHER)
    token = b.token.encode()
    # The key became the token the child sent: a redirect into the upstream comes back through the bridge.
    assert f"Location: {b.route_url('openai')}/models/?key={b.token}\r\n".encode() in got["redirect"]
    assert got["redirect"].startswith(b"HTTP/1.1 301 Moved Permanently\r\n")  # the bridge's status text
    assert f"Location: https://login.example/cb?key={b.token}\r\n".encode() in got["elsewhere"]
    assert got["auth"].startswith(b"HTTP/1.1 401 Unauthorized\r\n") and b"X-Echo-Auth: Bearer " + token in got["auth"]
    assert b"Incorrect API key provided: Bearer " + token in got["auth"] and b"gw7\xe2\x80\xa6Wq3N" in got["auth"]
    assert b"you sent Bearer " + token in got["old"]
    assert got["stream"].count(token) == 1 and b"data: [DONE]" in got["stream"]
    assert b'"echo": "Bearer ' + token in got["gzip"]
    assert got["unknown"].startswith(b"HTTP/1.1 502") and b"x-secret" in got["unknown"]
    records = wait_records(b, 7)
    raw = b.records_path.read_bytes()
    assert_clean(raw, KEY, OTHER, b.token)
    outcomes = {r["path"].split("?")[0]: r["outcome"] for r in records}
    assert outcomes["/chat/completions"] == "ok" and outcomes["/unknown"] == "upstream-error"


def test_what_the_translator_builds_never_holds_the_key(hostile, make_bridge):
    """A ``wire_api = "chat"`` route: upstream errors that echo the credential become the error JSON
    and ``response.failed`` events the translator writes for Codex."""
    def http_error(got: Got) -> list[bytes]:
        body = json.dumps({"error": {"message": f"Incorrect API key provided: {got.headers['authorization']} "
                                                f"{got.headers.get('x-gateway-auth')}", "code": "bad_key"}})
        return response("401 Unauthorized", {"Content-Type": "application/json"}, pieces=pieces_of(body, 50, 60))

    def stream_error(got: Got) -> list[bytes]:
        event = "data: " + json.dumps({"error": {"message": f"key {got.headers['authorization']} is revoked, "
                                                            f"{got.headers.get('x-gateway-auth')}"}}) + "\n\n"
        return response("200 OK", {"Content-Type": "text/event-stream"},
                        pieces=pieces_of(event, event.index(KEY) + 9, event.index(OTHER) + 2))

    def reassembled(got: Got) -> list[bytes]:  # the key in two text deltas, which the translator joins
        half = len(KEY) // 2
        chunks = [{"choices": [{"index": 0, "delta": {"content": t}}], "model": "m"} for t in (KEY[:half], KEY[half:])]
        chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "model": "m"})
        return response("200 OK", {"Content-Type": "text/event-stream"},
                        pieces=[f"data: {json.dumps(c)}\n\n".encode() for c in chunks] + [b"data: [DONE]\n\n"])

    answers = iter([http_error, stream_error, reassembled])
    hostile.answers["/chat/completions"] = lambda got: next(answers)(got)
    b = make_bridge(Route("codex", hostile.url + "/v1", handler=TranslatingHandler(provider="P")))
    body = json.dumps({"model": "m", "input": "hi", "stream": True}).encode()
    replies = [dechunked(raw_exchange(b.port, http_request("POST", "/codex/responses", b.token, body,
                                                           extra=f"X-Gateway-Auth: {OTHER}\r\n")))
               for _ in range(3)]
    assert all(KEY in g.headers["authorization"] for g in hostile.seen)
    for reply in replies[:2]:
        assert_clean(reply, KEY, OTHER)
    # Sent in two text deltas, the halves pass as the provider cut them (the child joins them; no filter
    # of bytes can see a key the provider spreads over two events); the text the translator joins is filtered.
    assert KEY.encode() not in replies[2] and OTHER.encode() not in replies[2]
    assert b"Incorrect API key provided: Bearer " + b.token.encode() in replies[0]
    assert b"response.failed" in replies[1] and b"is revoked" in replies[1]
    assert b'"text":"' + b.token.encode() + b'"' in replies[2]  # output_text.done joined the halves
    assert_clean(b.records_path.read_bytes(), KEY, OTHER, b.token)


# --- records ---------------------------------------------------------------------------------------


def test_records_mask_before_they_cut(hostile, make_bridge):
    message = "x" * 480 + KEY + " " + OTHER  # the key right across the 500 characters an error keeps
    hostile.answers["/fail"] = lambda got: response("502 Bad Gateway", {"Content-Type": "text/plain"},
                                                    message.encode())
    big = b"y" * (MAX_RECORDED_BODY - 25) + KEY.encode() + b" " + OTHER.encode() + b"z" * 100
    hostile.answers["/big"] = lambda got: response("200 OK", {"Content-Type": "application/octet-stream"},
                                                   pieces=[big[:700_000], big[700_000:]])
    b = make_bridge(Route("openai", hostile.url), record_bodies=True)
    raw_exchange(b.port, http_request("POST", "/openai/fail", b.token, b"{}"))
    raw_exchange(b.port, http_request("POST", "/openai/big", b.token, b"{}"))
    fail, whole = wait_records(b, 2)
    assert fail["outcome"] == "upstream-error" and fail["error"].startswith("x" * 480)
    assert whole["response_body"].startswith("y" * 1000) and "more bytes not recorded" in whole["response_body"]
    summary = rec.summarize([fail, whole])
    assert_clean(json.dumps(summary).encode() + b.records_path.read_bytes(), KEY, OTHER)


def test_a_token_sent_as_the_model_is_not_recorded(hostile, make_bridge):
    hostile.answers["/chat"] = lambda got: response("200 OK", {"Content-Type": "application/json"},
                                                    json.dumps({"model": json.loads(got.body)["model"]}).encode())
    b = make_bridge(Route("openai", hostile.url))
    raw_exchange(b.port, http_request("POST", "/openai/chat", b.token, json.dumps({"model": b.token}).encode()))
    (r,) = wait_records(b, 1)
    summary = rec.summarize([r], ["m"])
    text = json.dumps([r, summary])
    assert b.token not in text and r["model_requested"] == r["model_served"] == rec.mask_value(b.token)
    assert_clean(text.encode(), b.token)


def test_a_models_list_is_not_missing_its_usage():
    ok = {"outcome": "ok", "usage_source": "missing", "status": 200}
    listed = rec.summarize([{**ok, "method": "GET", "path": "/models"}])
    assert listed["findings"] == []
    asked = rec.summarize([{**ok, "method": "POST", "path": "/chat/completions", "model_requested": "m"}])
    assert [f["code"] for f in asked["findings"]] == ["usage-missing"]


# --- what the child got is what the record says ----------------------------------------------------


def responses_stream() -> list[bytes]:
    events = [{"type": "response.created", "response": {"id": "r", "model": "m"}},
              {"type": "response.completed", "response": {"id": "r", "model": "m",
                                                          "usage": {"input_tokens": 3, "output_tokens": 2}}}]
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]


def test_a_client_that_hangs_up_after_the_terminal_event_is_ok(hostile, make_bridge):
    hostile.answers["/responses"] = lambda got: response("200 OK", {"Content-Type": "text/event-stream"},
                                                         pieces=[*responses_stream(), b"", b""])
    b = make_bridge(Route("openai", hostile.url))
    for _ in range(5):
        with socket.create_connection(("127.0.0.1", b.port)) as s:
            s.sendall(http_request("POST", "/openai/responses", b.token, b'{"model":"m","stream":true}'))
            s.settimeout(10)
            got = b""
            while b"response.completed" not in got:
                more = s.recv(65536)
                assert more, got
                got += more
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        # closed (reset) at once, as Codex does, while the upstream still holds the stream open
    records = wait_records(b, 5)
    assert [(r["status"], r["outcome"], r["input_tokens"]) for r in records] == [(200, "ok", 3)] * 5
    assert rec.summarize(records)["errors"] == 0


def test_a_request_nobody_answers_is_recorded_when_the_child_gives_up_or_the_launch_ends(hostile, make_bridge):
    hostile.answers["/slow"] = lambda got: [b"<hang>"]
    b = make_bridge(Route("openai", hostile.url))
    with pytest.raises(socket.timeout):
        raw_exchange(b.port, http_request("POST", "/openai/slow", b.token, b"{}"), timeout=0.5)
    (gone,) = wait_records(b, 1)  # written when the child gave up, not at the end of the launch
    assert gone["outcome"] == "client-disconnected" and gone["status"] is None
    waiting = threading.Thread(target=raw_exchange, args=(b.port, http_request("POST", "/openai/slow", b.token,
                                                                                b'{"model":"m"}')), daemon=True)
    waiting.start()
    deadline = time.monotonic() + 10
    while len(hostile.seen) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    b.stop()
    _, stopped = b.records()
    assert stopped["outcome"] == "bridge-stopped" and stopped["model_requested"] == "m"


@pytest.mark.parametrize(("kind", "says"), [
    ("empty", "HTTP 200 application/json with an empty body"),
    ("json-as-sse", "without one SSE data line beginning '{\"id\": \"chatcmpl-1\""),
    ("garbage", "text/event-stream, "),
])
def test_a_translation_that_failed_is_recorded_as_the_failure_the_child_got(hostile, make_bridge, kind, says):
    whole = json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                                     "finish_reason": "stop"}]}).encode()
    answer = {"empty": response("200 OK", {"Content-Type": "application/json"}, b""),
              "json-as-sse": response("200 OK", {"Content-Type": "text/event-stream"}, whole),
              "garbage": response("200 OK", {"Content-Type": "text/event-stream"},
                                  pieces=[b"data: {not json\n\n", b"data: \x00\x01\n\n"])}[kind]
    hostile.answers["/chat/completions"] = lambda got: answer
    b = make_bridge(Route("codex", hostile.url + "/v1", handler=TranslatingHandler(provider="P")))
    body = json.dumps({"model": "m", "input": "hi", "stream": True}).encode()
    reply = raw_exchange(b.port, http_request("POST", "/codex/responses", b.token, body))
    assert b"response.failed" in reply
    (r,) = wait_records(b, 1)
    assert (r["status"], r["upstream_status"], r["outcome"]) == (200, 200, "upstream-error")
    assert "without an answer" in r["error"] and says in r["error"], r["error"]


def test_the_secrets_a_recording_knows_besides_the_key():
    from ccswitch_tui.bridge.reroute import route_specs
    from ccswitch_tui.bridge.session import known_secrets
    from ccswitch_tui.model import LaunchPlan

    plan = LaunchPlan(
        profile="p", tool="run", argv=("x",), sources={}, cwd=Path("/"), launch_id="L",
        env={"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "https://up.example/v1", "MY_GATEWAY_AUTH": OTHER,
             "ANTHROPIC_CUSTOM_HEADERS": "x-team: blue-team-secret\nx-auth: hdr-secret-value", "HOME": "/h",
             "HTTPS_PROXY": "http://me:pr%40xy-pass-1234@proxy:3128"},
        secret_names=frozenset({"OPENAI_API_KEY", "MY_GATEWAY_AUTH", "ANTHROPIC_CUSTOM_HEADERS"}),
        base_urls={"OPENAI_BASE_URL": "https://up.example/v1"})
    found = known_secrets(plan, KEY, route_specs(plan))
    assert KEY not in found and OTHER in found and "/h" not in found
    assert {"blue-team-secret", "hdr-secret-value", "pr%40xy-pass-1234", "pr@xy-pass-1234",
            "me:pr%40xy-pass-1234"} <= set(found)


def test_a_streams_end_is_its_terminal_event_not_a_text_that_names_one():
    from ccswitch_tui.bridge.observe import ResponseObserver

    o = ResponseObserver(stream=True)
    text = json.dumps({"type": "response.output_text.delta", "delta": 'say "response.completed" and data: [DONE'})
    o.feed(f"data: {text}\n\n".encode())
    assert not o.terminal
    event = b'data: {"type":"response.completed","response":{"id":"r"}}\n\n'
    o.feed(event[:20])
    o.feed(event[20:])  # the marker across two chunks
    assert o.terminal

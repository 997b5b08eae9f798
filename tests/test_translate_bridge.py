"""The translating route inside the real bridge server, against a scripted loopback Chat provider
(tests/chat_stub.py) replaying streams in the shapes providers send (tests/fixtures/chat): the
record keeps what Codex was told, read off the one parse that made Codex's events."""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path

import pytest
from chat_stub import ChatStub, Reply

from ccswitch_tui.bridge import records as rec
from ccswitch_tui.bridge.server import Bridge, BridgeConfig, Route
from ccswitch_tui.bridge.translate.handler import TranslatingHandler

KEY = "sk-translate-bridge-0123456789abcdef"
FIXTURES = Path(__file__).parent / "fixtures" / "chat"


@pytest.fixture
def translating(tmp_path: Path):
    made: list = []

    def make(*script: Reply) -> tuple[Bridge, ChatStub]:
        stub = ChatStub(script=list(script))
        bridge = Bridge(BridgeConfig(routes=(Route("p", f"{stub.url}/v1", handler=TranslatingHandler("DeepSeek")),),
                                     key=KEY, records_path=tmp_path / "L.requests.jsonl")).start()
        made.append((bridge, stub))
        return bridge, stub

    yield make
    for bridge, stub in made:
        bridge.stop()
        stub.close()


def one_record(bridge: Bridge, timeout: float = 5) -> dict:
    """The request's record (written just after the answer's last byte went out)."""
    deadline = time.monotonic() + timeout
    while not (records := bridge.records()) and time.monotonic() < deadline:
        time.sleep(0.01)
    (record,) = records
    return record


def responses(bridge: Bridge, body: dict) -> tuple[int, list[dict], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", bridge.port, timeout=10)
    conn.request("POST", "/p/responses", body=json.dumps(body),
                 headers={"Authorization": f"Bearer {bridge.token}", "Content-Type": "application/json"})
    r = conn.getresponse()
    raw = r.read()
    conn.close()
    events = [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: ")]
    return r.status, events, raw


def test_the_record_has_the_usage_codex_was_shown(translating):
    bridge, stub = translating(Reply(raw=(FIXTURES / "deepseek_cache_hit.sse").read_bytes()))
    status, events, _ = responses(bridge, {"model": "deepseek-chat", "input": "hi", "stream": True})
    assert status == 200 and events[-1]["type"] == "response.completed"
    shown = events[-1]["response"]["usage"]
    record = one_record(bridge)
    assert (record["outcome"], record["model_served"], record["system_fingerprint"]) == (rec.OK, "deepseek-chat",
                                                                                         "fp_ds01")
    assert (record["input_tokens"], record["output_tokens"], record["cached_tokens"]) == (
        shown["input_tokens"], shown["output_tokens"], shown["input_tokens_details"]["cached_tokens"]) == (65, 3, 1)


def test_a_translated_answer_is_read_once_for_codex_and_the_record(translating, monkeypatch):
    """The upstream's stream is parsed by the translation alone: the record's facts and what the
    server says of a failure come from that one parse, not from a second reading of the bytes."""
    from ccswitch_tui.bridge.observe import ResponseObserver

    fed = []
    real_feed = ResponseObserver.feed
    monkeypatch.setattr(ResponseObserver, "feed", lambda self, chunk: (fed.append(len(chunk)), real_feed(self, chunk)))
    bridge, _ = translating(Reply(raw=(FIXTURES / "deepseek_cache_hit.sse").read_bytes()))
    status, events, _ = responses(bridge, {"model": "deepseek-chat", "input": "hi", "stream": True})
    record = one_record(bridge)
    assert status == 200 and record["outcome"] == rec.OK and record["output_tokens"] == 3
    assert fed == [] and "upstream" not in record


def test_a_refusal_reaches_codex_and_the_record_says_so(translating):
    bridge, _ = translating(Reply(raw=(FIXTURES / "openai_refusal.sse").read_bytes()))
    _, events, _ = responses(bridge, {"model": "gpt-4o", "input": "do the bad thing", "stream": True})
    assert events[-1]["response"]["output"][0]["content"][0]["text"] == "I'm sorry, but I can't help with that."
    record = one_record(bridge)
    assert record["refusal"] is True and record["outcome"] == rec.OK and record["output_tokens"] == 9


def test_an_http_error_is_recorded_with_its_code_once(translating):
    deepseek = {"error": {"message": "Model Not Exist", "type": "invalid_request_error", "param": None,
                          "code": "invalid_request_error"}}
    bridge, _ = translating(Reply(status=400, body=deepseek))
    status, _, raw = responses(bridge, {"model": "deepseek-v9", "input": "hi", "stream": True})
    assert status == 400 and json.loads(raw)["error"]["message"] == "DeepSeek: Model Not Exist"
    record = one_record(bridge)
    assert (record["outcome"], record["status"]) == (rec.UPSTREAM_ERROR, 400)
    assert record["error"] == "invalid_request_error: Model Not Exist"


def test_an_error_inside_the_stream_is_recorded_as_the_providers(translating):
    bridge, _ = translating(Reply(raw=(FIXTURES / "openrouter_midstream_error.sse").read_bytes()))
    _, events, _ = responses(bridge, {"model": "m", "input": "hi", "stream": True})
    assert events[-1]["type"] == "response.failed"
    record = one_record(bridge)
    assert (record["outcome"], record["error"]) == (rec.UPSTREAM_ERROR,
                                                    "server_error: Provider disconnected unexpectedly")


def test_a_stream_that_ends_without_an_answer_is_not_recorded_as_ok(translating):
    bridge, _ = translating(Reply(raw=b'data: {"choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n'))
    _, events, _ = responses(bridge, {"model": "m", "input": "hi", "stream": True})
    assert events[-1]["type"] == "response.failed"
    record = one_record(bridge)
    assert record["outcome"] == rec.UPSTREAM_ERROR
    assert record["error"].startswith("stream_closed: the provider closed the stream without an answer "
                                      "(the upstream sent HTTP 200 ")


def test_an_http_error_codex_would_retry_for_nothing_is_a_400_and_its_record_says_why(translating):
    deepseek = json.loads((FIXTURES / "deepseek_401.json").read_text())
    bridge, _ = translating(Reply(status=401, body=deepseek))
    status, _, raw = responses(bridge, {"model": "deepseek-chat", "input": "hi", "stream": True})
    assert status == 400 and json.loads(raw)["error"]["code"] == "invalid_prompt"
    record = one_record(bridge)
    assert (record["status"], record["upstream_status"], record["outcome"]) == (400, 401, rec.UPSTREAM_ERROR)
    assert (record["error_class"], record["error"]) == (
        "auth", "authentication_error: Authentication Fails, Your api key: ****cdef is invalid")


def test_a_pass_through_error_is_classed_too(tmp_path):
    """A recorded request the bridge does not translate (Claude Code, a Responses provider) keeps the
    provider's status, and its record the class of the provider's error, for the rounds table."""
    stub = ChatStub(script=[Reply(status=429, body={"error": {"message": "Rate limit reached", "type": "requests",
                                                              "code": "rate_limit_exceeded"}}),
                            Reply(status=200, body={"id": "r", "object": "response", "model": "m", "output": []})],
                    any_path=True)
    bridge = Bridge(BridgeConfig(routes=(Route("p", f"{stub.url}/v1"),), key=KEY,
                                 records_path=tmp_path / "P.requests.jsonl")).start()
    try:
        body = {"model": "m", "input": "hi"}
        for _ in range(2):
            conn = http.client.HTTPConnection("127.0.0.1", bridge.port, timeout=10)
            conn.request("POST", "/p/responses", body=json.dumps(body),
                         headers={"Authorization": f"Bearer {bridge.token}", "Content-Type": "application/json"})
            assert conn.getresponse().read() and conn.close() is None
            body = {"input": "hi", "model": "m"}  # the same request, its keys in another order
        deadline = time.monotonic() + 5
        while len(records := bridge.records()) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        first, second = records
        assert (first["status"], first["error_class"], second["error_class"]) == (429, "rate_limit", None)
        assert second["retry_of"] == first["id"]
        assert rec.summarize(records)["error_classes"] == {"rate_limit": 1}
        assert rec.summarize(records)["retries"] == 1
    finally:
        bridge.stop()
        stub.close()


def test_records_from_before_error_classes_are_counted_by_status():
    """A records file an earlier version wrote has no error_class: its summary has no classes, and the
    rounds table's 401/403 and 429 counts come from the statuses, as before."""
    from ccswitch_tui.runs.verdict import failures

    old = [{"method": "POST", "path": "/v1/messages", "status": 401, "outcome": rec.UPSTREAM_ERROR},
           {"method": "POST", "path": "/v1/messages", "status": 429, "outcome": rec.UPSTREAM_ERROR, "retry_of": 1}]
    summary = rec.summarize(old)
    assert "error_classes" not in summary and summary["retries"] == 1
    assert (failures(summary, "auth", "401", "403"), failures(summary, "rate_limit", "429")) == (1, 1)
    new = [{**old[0], "status": 400, "upstream_status": 401, "error_class": "auth"},
           {**old[1], "error_class": "rate_limit"}, {"status": 200, "outcome": rec.OK, "error_class": None}]
    summary = rec.summarize(new)
    assert summary["error_classes"] == {"auth": 1, "rate_limit": 1}
    assert (failures(summary, "auth", "401", "403"), failures(summary, "rate_limit", "429")) == (1, 1)

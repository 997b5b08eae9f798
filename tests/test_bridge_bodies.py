"""--record-bodies masks and writes off the bridge's event loop, a piece at a time, so a big body
never stalls the streams the bridge serves; the masked text is the same as masking it whole."""

from __future__ import annotations

import json
import random
import threading

from provider_stub import ProviderStub
from test_bridge import post, wait_records

from ccswitch_tui.bridge import records as rec
from ccswitch_tui.bridge.server import Bridge, BridgeConfig, Route, mask_in_pieces

KEY = "sk-bodies-bridge-0123456789abcdef"


def test_masking_in_pieces_is_masking_whole():
    mask = rec.Masker([KEY, "odd,key:with{cuts}0123"])
    rng = random.Random(7)
    items = [{"pad": "y" * rng.randint(0, 90), "key": KEY, "auth": "Bearer abcdefghijklmnop0123",
              "gh": "ghp_" + "a" * 24, "odd": "odd,key:with{cuts}0123", "text": "a, b: c"} for _ in range(2000)]
    text = json.dumps(items)
    cuts = "".join(c for c in '",{}[]:' if c not in "odd,key:with{cuts}0123")  # as the bridge picks them
    for size in (50, 333, 4096):
        assert mask_in_pieces(mask, text, cuts, size) == mask(text)
    assert KEY not in mask_in_pieces(mask, text, cuts, 333)
    long_run = "x" * 20000 + KEY  # no cut for a long way: masked in one step, still masked
    assert mask_in_pieces(mask, long_run, cuts, 1000) == mask(long_run)


def test_bodies_are_masked_and_written_off_the_event_loop(tmp_path):
    stub = ProviderStub()
    bridge = Bridge(BridgeConfig(routes=(Route("openai", stub.url),), key=KEY,
                                 records_path=tmp_path / "L.requests.jsonl", record_bodies=True)).start()
    threads: set[str] = set()
    masker = bridge._mask

    class Watched:
        """The bridge's masker, noting which thread masks a body's piece (the loop masks paths and errors)."""

        def __call__(self, text):
            if text and len(text) > 1000:
                threads.add(threading.current_thread().name)
            return masker(text)

        def __getattr__(self, name):  # exact(), clip(): as the masker does
            return getattr(masker, name)

    bridge._mask = Watched()
    try:
        content = f"{KEY} and " + "word, " * 60000  # ~360 kB, masked in many pieces
        status, _, _ = post(bridge.route_url("openai"), "/chat/completions",
                            {"model": "m", "messages": [{"role": "user", "content": content}]}, bridge.token)
        assert status == 200
        wait_records(bridge, 1, timeout=10)
    finally:
        bridge.stop()
        stub.close()
    (record,) = bridge.records()
    assert threads and all(name.startswith("ccs-bridge-bodies") for name in threads)
    assert KEY not in record["request_body"] and "word, word" in record["request_body"]
    assert "reply 1" in record["response_body"] and record["outcome"] == "ok"
    assert KEY not in bridge.records_path.read_text()


def test_records_still_being_masked_when_the_bridge_stops_are_written(tmp_path):
    stub = ProviderStub()
    bridge = Bridge(BridgeConfig(routes=(Route("openai", stub.url),), key=KEY,
                                 records_path=tmp_path / "L.requests.jsonl", record_bodies=True)).start()
    try:
        for _ in range(5):
            post(bridge.route_url("openai"), "/chat/completions",
                 {"model": "m", "messages": [{"role": "user", "content": "word, " * 40000}]}, bridge.token)
    finally:
        bridge.stop()  # at once: some records may still be in the bodies thread
        stub.close()
    assert [r["id"] for r in bridge.records()] == [1, 2, 3, 4, 5]


def test_a_large_json_body_parsed_a_piece_at_a_time_reads_as_json_loads(monkeypatch):
    """``parse_in_steps`` gives what ``json.loads`` gives (the arrays not asked for left empty),
    for objects whole or broken anywhere, as it would give it for a body of a MiB."""
    from ccswitch_tui.bridge import observe

    monkeypatch.setattr(observe, "STEPWISE_FROM", 0)  # every body the piecewise way
    rng = random.Random(11)
    keep = frozenset({"messages"})

    def value(depth: int = 0):
        r = rng.random()
        if depth > 3 or r < 0.3:
            return rng.choice([1, -2.5, 'q"\\', True, False, None, "é\u2028", 1e300, "", 0])
        if r < 0.65:
            return [value(depth + 1) for _ in range(rng.randint(0, 4))]
        return {rng.choice(["model", "stream", "a"]): value(depth + 1) for _ in range(rng.randint(0, 3))}

    checked = 0
    for _ in range(4000):
        text = json.dumps({rng.choice(["model", "stream", "messages", "x"]): value() for _ in range(rng.randint(0, 5))},
                          indent=rng.choice([None, 1]))
        if rng.random() < 0.4:  # broken somewhere
            at = rng.randrange(len(text) + 1)
            text = text[:at] + rng.choice(["", ",", "]", "}", "x", '"', "[", ":", "\\"]) + text[at + rng.randint(0, 1):]
        body = (rng.choice(["", " ", "\n"]) + text + rng.choice(["", " ", "\r\n", " x"])).encode()
        try:
            want = json.loads(body)
        except ValueError:
            want = None
        if isinstance(want, dict):
            want = {k: [] if isinstance(v, list) and k not in keep else v for k, v in want.items()}
        got = observe.finish_steps(observe.parse_in_steps(body, keep))
        assert got == (want if isinstance(want, dict) or body.lstrip()[:1] != b"{" else None), body
        checked += 1
    assert checked == 4000


def test_a_large_request_is_read_in_pieces_and_recorded_right(tmp_path, monkeypatch):
    """A 1 MiB request: its model and stream flag are those of the whole body, read a piece at a
    time with the event loop let go in between."""
    from ccswitch_tui.bridge import observe

    pauses = []
    real = observe.parse_in_steps

    def counted(body, keep=frozenset()):
        steps = real(body, keep)
        result = yield from _count(steps, pauses)
        return result

    monkeypatch.setattr(observe, "parse_in_steps", counted)
    stub = ProviderStub()
    bridge = Bridge(BridgeConfig(routes=(Route("openai", stub.url),), key=KEY,
                                 records_path=tmp_path / "L.requests.jsonl", record_bodies=True)).start()
    try:
        turns = [{"role": "user", "content": "word, " * 2000} for _ in range(90)]  # ~1 MiB
        status, _, _ = post(bridge.route_url("openai"), "/chat/completions",
                            {"messages": turns, "model": "big-model", "stream": False, "n": 1}, bridge.token)
        assert status == 200
        wait_records(bridge, 1, timeout=10)
    finally:
        bridge.stop()
        stub.close()
    (record,) = bridge.records()
    assert record["request_bytes"] > 1_000_000 and record["model_requested"] == "big-model"
    assert record["stream"] is False and record["outcome"] == "ok"
    assert len(pauses) >= 10  # a piece of about 64 KiB at a time


def _count(steps, pauses):
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
        pauses.append(1)
        yield


def test_a_record_with_large_bodies_is_written_in_pieces_as_json_dumps_writes_it(monkeypatch):
    rng = random.Random(3)
    slept = []
    monkeypatch.setattr(rec.time, "sleep", lambda s: slept.append(s))
    for _ in range(30):
        text = "".join(rng.choice(['a', '"', '\\', '\n', 'é', '\u2028', '\x01', '😀', ' ']) for _ in range(200_000))
        record = {"id": 1, "request_body": text, "path": '/x"y', "response_body": text[::-1], "z": [1, None]}
        assert rec.record_line(record, ("request_body", "response_body")) == (
            json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    assert len(slept) >= 30 * 2 * 3


def test_the_bodies_thread_gives_way_to_the_event_loop(tmp_path):
    """With --record-bodies the interpreter hands itself over within half a millisecond while the
    bridge runs (and as before after it stopped), and the bodies thread runs at a lower priority."""
    import os
    import sys

    before = sys.getswitchinterval()
    stub = ProviderStub()
    bridge = Bridge(BridgeConfig(routes=(Route("openai", stub.url),), key=KEY,
                                 records_path=tmp_path / "L.requests.jsonl", record_bodies=True)).start()
    try:
        assert sys.getswitchinterval() <= 0.0005
        nice = bridge._body_pool().submit(lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id())).result()
        assert nice >= os.getpriority(os.PRIO_PROCESS, 0) + 10 or nice == 19
    finally:
        bridge.stop()
        stub.close()
    assert sys.getswitchinterval() == before


def test_a_large_json_answer_is_read_in_pieces_with_the_same_facts():
    from ccswitch_tui.bridge.observe import ResponseObserver

    answer = json.dumps({"id": "c1", "object": "chat.completion", "model": "served-m", "system_fingerprint": "fp_9",
                         "choices": [{"index": i, "message": {"role": "assistant", "content": "word, " * 2000},
                                      "finish_reason": "stop"} for i in range(90)],
                         "usage": {"prompt_tokens": 7, "completion_tokens": 9,
                                   "prompt_tokens_details": {"cached_tokens": 3}}}).encode()
    whole, pieces = ResponseObserver(stream=False), ResponseObserver(stream=False)
    whole.feed(answer)
    whole._object(json.loads(answer))  # what reading it in one go gives
    for at in range(0, len(answer), 65536):
        pieces.feed(answer[at:at + 65536])
    pauses = sum(1 for _ in pieces.finish_in_steps())
    assert pauses >= 10
    assert (pieces.model, pieces.system_fingerprint, pieces.usage) == ("served-m", "fp_9", whole.usage)
    assert pieces.usage.cached_tokens == 3 and pieces.error is None

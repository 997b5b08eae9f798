"""--record-bodies masks and writes off the bridge's event loop, a piece at a time, so a big body
never stalls the streams the bridge serves; the masked text is the same as masking it whole."""

from __future__ import annotations

import json
import random
import threading
import time

from provider_stub import ProviderStub
from test_bridge import post

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
        deadline = time.monotonic() + 10
        while not bridge.records() and time.monotonic() < deadline:
            time.sleep(0.02)
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

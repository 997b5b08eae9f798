"""The translated route is bounded like the pass-through one: against an upstream that never ends (one
SSE event without its blank line, or events without end, small or large, or a JSON body without end),
a bridge in a process of its own keeps its memory under 100 MB, gives the answer up with a
``response.failed`` that says why, and stops reading the upstream. The SSE decoder is linear in what
it is fed."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ccswitch_tui.bridge.translate.sse import SSEDecoder

HERE = Path(__file__).resolve().parent
RSS_BOUND_MB = 100
GIVE_UP_AT = 600 * 1024 * 1024  # the upstream stops after this much, so an unbounded bridge is still measured


def _event(text: str) -> bytes:
    return b"data: " + json.dumps({"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": text}}]},
                                  separators=(",", ":")).encode() + b"\n\n"


ENDLESS = {  # kind: (content type, first bytes, what then repeats)
    "event-without-end": ("text/event-stream", b'data: {"choices":[{"index":0,"delta":{"content":"', b"x" * 65536),
    "small-deltas": ("text/event-stream", _event("hi"), b"".join(_event(f"t{i % 10}") for i in range(600))),
    "large-deltas": ("text/event-stream", _event("hi"), _event("y" * 60000)),
    "json-without-end": ("application/json", b'{"choices":[{"message":{"content":"', b"z" * 65536),
}


class EndlessUpstream:
    """Answers one request with ``kind``'s bytes, chunked, as fast as the bridge takes them, until the
    bridge closes the connection (``cut``) or GIVE_UP_AT bytes went out."""

    def __init__(self, kind: str):
        self.kind = kind
        self.sent = 0
        self.cut = False
        self.done = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self._sock.accept()
        ctype, first, more = ENDLESS[self.kind]
        try:
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nTransfer-Encoding: chunked\r\n\r\n".encode())
                piece = b"%x\r\n%b\r\n" % (len(more), more)
                conn.sendall(b"%x\r\n%b\r\n" % (len(first), first))
                while self.sent < GIVE_UP_AT:
                    conn.sendall(piece)
                    self.sent += len(more)
                conn.sendall(b"0\r\n\r\n")
        except OSError:
            self.cut = True
        finally:
            self.done.set()

    def close(self) -> None:
        self._sock.close()


def peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


@pytest.mark.parametrize("kind", list(ENDLESS))
def test_an_endless_answer_keeps_the_translating_bridge_small(tmp_path, kind):
    upstream = EndlessUpstream(kind)
    bridge = subprocess.Popen([sys.executable, str(HERE / "bridge_process.py"),
                               json.dumps({"upstream": upstream.url, "records": str(tmp_path / "r.jsonl"),
                                           "translate": True})],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        info = json.loads(bridge.stdout.readline())
        body = json.dumps({"model": "m", "input": "hi", "stream": True}).encode()
        got = b""
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", info["port"]), timeout=60) as s:
            s.sendall(f"POST /codex/responses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {info['token']}\r\n"
                      f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                      .encode() + body)
            while time.monotonic() - started < 120 and (more := s.recv(1 << 20)):
                got = (got + more)[-8_000_000:]  # the end of what Codex got is what says how it ended
        peak = peak_mb(info["pid"])
        upstream.done.wait(10)
        assert peak <= RSS_BOUND_MB, f"{kind}: the bridge reached {peak:.0f} MB"
        assert b"response.failed" in got and b"MiB" in got, got[-600:]
        assert upstream.cut and upstream.sent < GIVE_UP_AT / 4, (upstream.cut, upstream.sent)  # reading stopped
        (record,) = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
        assert record["outcome"] == "upstream-error" and "MiB" in record["error"], record
    finally:
        bridge.stdin.close()
        try:
            bridge.wait(15)
        except subprocess.TimeoutExpired:
            bridge.kill()
            bridge.wait()
        upstream.close()


def test_the_sse_decoder_is_linear_and_drops_an_event_that_never_ends():
    """Fed an event 1 KiB at a time, the decoder never copies what it holds (a copy per piece made
    20 MB take 1.16 s); past its limit the event is dropped and the decoder says so."""
    decoder = SSEDecoder(max_event=4 * 1024 * 1024)
    piece = b"x" * 1024
    for _ in range(3 * 1024):
        assert decoder.frames(piece) == []
    assert len(decoder._pending) == 3 * 1024 and sum(map(len, decoder._pending)) == 3 * 1024 * 1024  # no copy
    assert decoder.frames(b"\n\ndata: 1\n\n")[1:] == ["data: 1"]  # joined once, when it ends
    for _ in range(5 * 1024):
        decoder.frames(piece)
    assert decoder.overflowed and decoder._pending == []
    assert decoder.frames(b"\n\ndata: 2\n\n") == []  # the answer is given up: nothing more from it

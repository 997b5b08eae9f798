"""The bridge's HTTP/1.1 (``bridge.wire``) where HTTP is easy to get wrong, against a scripted
upstream on 127.0.0.1 that writes exactly the bytes a test gives it: chunked bodies however they
are cut, deflate both ways servers send it, an idle connection the upstream closed, and what a
child may send (a chunked body, ``Expect: 100-continue``, a body over the limit, a request that
says its length twice)."""

from __future__ import annotations

import asyncio
import gzip
import http.client
import json
import random
import socket
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from test_bridge import wait_records
from waiting import until

from ccswitch_tui.bridge import framing as framing_module
from ccswitch_tui.bridge import server as bridge_server
from ccswitch_tui.bridge import upstream as upstream_side
from ccswitch_tui.bridge import wire
from ccswitch_tui.bridge.server import Bridge, BridgeConfig, Route

KEY = "sk-wire-test-key-0123456789abcdef"
BODY = b'{"id": "c1", "object": "chat.completion", "model": "served-m", "choices": []}'


def chunked(*pieces: bytes, trailer: bytes = b"") -> bytes:
    return b"".join(b"%x\r\n%b\r\n" % (len(p), p) for p in pieces) + b"0\r\n" + trailer + b"\r\n"


def test_a_chunked_body_decodes_the_same_however_it_is_cut():
    pieces = [b"data: one\n\n", b"x" * 300, b"", b"data: three\r\n\r\n"]
    raw = chunked(*[p for p in pieces if p])
    raw = raw.replace(b"12c\r\n", b"12c;name=value\r\n")  # a chunk extension, as the standard allows
    raw = raw[:-2] + b"X-Trailer: t\r\n\r\n"
    whole = b"".join(pieces)
    for cut in range(len(raw) + 1):
        decoder = wire.ChunkedDecoder()
        assert decoder.feed(raw[:cut]) + decoder.feed(raw[cut:]) == whole, cut
        assert decoder.done
    decoder = wire.ChunkedDecoder()
    assert b"".join(decoder.feed(raw[i:i + 1]) for i in range(len(raw))) == whole and decoder.done
    decoder = wire.ChunkedDecoder()
    assert decoder.feed(raw[:40]) and not decoder.done  # what came is handed on before the chunk ends


@pytest.mark.parametrize("raw", [b"zz\r\nab\r\n", b"2\r\nabc\r\n", b"-2\r\nab\r\n", b"\r\nab\r\n"],
                         ids=["not-hex", "longer-than-said", "negative", "empty-size"])
def test_a_broken_chunked_body_is_an_error(raw):
    with pytest.raises(wire.UpstreamBroke):
        wire.ChunkedDecoder().feed(raw + b"0\r\n\r\n")


class Scripted:
    """An upstream that answers each request with ``answer(n, request_bytes)`` (n counts requests
    over all connections): bytes, or a list of bytes and events to wait for in between;
    ``close_after`` closes the connection once the answer is out."""

    def __init__(self, answer: Callable[[int, bytes], bytes], close_after: bool = False):
        self.answer = answer
        self.close_after = close_after
        self.requests: list[bytes] = []
        self.connections = 0
        self.sent = 0  # pieces sent
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while True:
                while b"\r\n\r\n" not in data:
                    try:
                        more = conn.recv(65536)
                    except ConnectionResetError:  # the bridge dropped a connection it would not reuse
                        return
                    if not more:
                        return
                    data += more
                head, _, data = data.partition(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                while len(data) < length:
                    data += conn.recv(65536)
                request, data = head + b"\r\n\r\n" + data[:length], data[length:]
                self.requests.append(request)
                try:
                    answer = self.answer(len(self.requests), request)
                except ConnectionError:
                    return  # an answer that raises drops the connection unanswered
                for piece in answer if isinstance(answer, list) else [answer]:
                    if isinstance(piece, threading.Event):
                        if not piece.wait(10):  # until the test says the child has what came before
                            return
                    else:
                        conn.sendall(piece)
                        self.sent += 1
                if self.close_after:
                    return

    def close(self) -> None:
        self._sock.close()


@pytest.fixture
def bridge_to(tmp_path: Path):
    made: list[tuple[Bridge, Scripted]] = []

    def make(upstream: Scripted) -> Bridge:
        b = Bridge(BridgeConfig(routes=(Route("openai", upstream.url),), key=KEY,
                                records_path=tmp_path / "r.jsonl")).start()
        made.append((b, upstream))
        return b

    yield make
    for b, upstream in made:
        b.stop()
        upstream.close()


def ask(b: Bridge, body: bytes = b'{"model": "m"}', headers: dict[str, str] | None = None,
        conn: http.client.HTTPConnection | None = None) -> tuple[int, bytes]:
    conn = conn or http.client.HTTPConnection("127.0.0.1", b.port, timeout=10)
    conn.request("POST", "/openai/chat/completions", body=body,
                 headers={"Authorization": f"Bearer {b.token}", "Content-Type": "application/json", **(headers or {})})
    r = conn.getresponse()
    return r.status, r.read()


def head(status: str = "200 OK", **fields: str) -> bytes:
    lines = [f"HTTP/1.1 {status}", *(f"{k.replace('_', '-')}: {v}" for k, v in fields.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@pytest.mark.parametrize("how", ["zlib-wrapped", "raw"])
def test_deflate_is_decoded_whichever_way_the_upstream_sends_it(bridge_to, how):
    packed = zlib.compress(BODY) if how == "zlib-wrapped" else zlib.compress(BODY)[2:-4]
    b = bridge_to(Scripted(lambda n, req: head(Content_Type="application/json", Content_Encoding="deflate",
                                               Content_Length=str(len(packed))) + packed))
    assert ask(b) == (200, BODY)
    (record,) = wait_records(b, 1)
    assert record["outcome"] == "ok" and record["model_served"] == "served-m"


def test_gzip_in_chunks_cut_anywhere_is_decoded(bridge_to):
    packed = gzip.compress(BODY * 50)
    pieces = [packed[i:i + 7] for i in range(0, len(packed), 7)]
    b = bridge_to(Scripted(lambda n, req: head(Content_Type="application/json", Content_Encoding="gzip",
                                               Transfer_Encoding="chunked") + chunked(*pieces)))
    assert ask(b) == (200, BODY * 50)


def test_a_connection_the_upstream_closed_while_idle_is_replaced_not_a_failure(bridge_to):
    upstream = Scripted(lambda n, req: head(Content_Type="application/json", Content_Length=str(len(BODY))) + BODY,
                        close_after=True)  # says nothing of closing, then closes
    b = bridge_to(upstream)
    answers = [ask(b) for _ in range(3)]
    assert answers == [(200, BODY)] * 3
    assert upstream.connections == 3
    assert [r["outcome"] for r in wait_records(b, 3)] == ["ok"] * 3


def test_an_upstream_connection_is_kept_for_the_next_request(bridge_to):
    upstream = Scripted(lambda n, req: head(Content_Type="application/json", Content_Length=str(len(BODY))) + BODY)
    b = bridge_to(upstream)
    child = http.client.HTTPConnection("127.0.0.1", b.port, timeout=10)
    assert [ask(b, conn=child) for _ in range(3)] == [(200, BODY)] * 3  # the child's connection is kept too
    assert upstream.connections == 1


def test_an_answer_the_upstream_cuts_inside_a_chunk_is_cut_for_the_child(bridge_to):
    b = bridge_to(Scripted(lambda n, req: head(Content_Type="text/event-stream", Transfer_Encoding="chunked")
                           + b"40\r\ndata: {\"x\": 1}\n\n", close_after=True))
    with pytest.raises(http.client.IncompleteRead):
        ask(b)
    (record,) = wait_records(b, 1)
    assert record["outcome"] == "upstream-aborted" and "broke off" in record["error"]


def test_a_childs_chunked_body_reaches_the_upstream_with_its_length(bridge_to):
    upstream = Scripted(lambda n, req: head(Content_Type="application/json", Content_Length=str(len(BODY))) + BODY)
    b = bridge_to(upstream)
    with socket.create_connection(("127.0.0.1", b.port), timeout=10) as s:
        s.sendall(f"POST /openai/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {b.token}\r\n"
                  "Transfer-Encoding: chunked\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n".encode())
        assert s.recv(100).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        s.sendall(chunked(b'{"model": ', b'"m"}'))
        reply = b""
        while more := s.recv(65536):
            reply += more
    assert reply.startswith(b"HTTP/1.1 200 OK") and BODY in reply and reply.endswith(b"\r\n0\r\n\r\n")
    (request,) = upstream.requests
    assert request.endswith(b'\r\n\r\n{"model": "m"}') and b"Content-Length: 14\r\n" in request
    assert b"chunked" not in request.lower() and KEY.encode() in request


def raw_reply(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        reply = b""
        while more := s.recv(65536):
            reply += more
    return reply


def test_a_request_that_says_its_length_twice_is_refused_and_never_forwarded(bridge_to):
    upstream = Scripted(lambda n, req: head(Content_Length="0"))
    b = bridge_to(upstream)
    reply = raw_reply(b.port, f"POST /openai/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {b.token}\r\n"
                              "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                              "GET /openai/y HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert reply.startswith(b"HTTP/1.1 400 Bad Request") and b"Connection: close" in reply
    assert reply.count(b"HTTP/1.1") == 1 and upstream.requests == []


def test_a_body_over_the_limit_is_a_413_and_a_record(bridge_to, monkeypatch):
    monkeypatch.setattr(bridge_server, "MAX_REQUEST_BODY", 1000)
    upstream = Scripted(lambda n, req: head(Content_Length="0"))
    b = bridge_to(upstream)
    status, body = ask(b, b'{"model": "m", "x": "' + b"y" * 2000 + b'"}')
    assert status == 413 and "over 1000" in json.loads(body)["error"]["message"]
    reply = raw_reply(b.port, f"POST /openai/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {b.token}\r\n"
                              "Content-Length: 5000\r\nExpect: 100-continue\r\n\r\n".encode())
    assert reply.startswith(b"HTTP/1.1 413 ") and b"100 Continue" not in reply  # refused before it was sent
    records = wait_records(b, 2)
    assert [(r["status"], r["outcome"]) for r in records] == [(413, "refused")] * 2
    assert upstream.requests == []


@pytest.mark.parametrize("line", [b"GARBAGE\r\n\r\n", b"GET http://elsewhere/ HTTP/1.1\r\nHost: x\r\n\r\n",
                                  b"GET / HTTP/2\r\n\r\n", b"GET / HTTP/1.1\r\n bad: fold\r\n\r\n"],
                         ids=["no-request-line", "absolute-form", "http2", "folded-header"])
def test_a_request_that_is_not_http_1_gets_one_400(bridge_to, line):
    upstream = Scripted(lambda n, req: head(Content_Length="0"))
    b = bridge_to(upstream)
    reply = raw_reply(b.port, line)
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n") and upstream.requests == []
    assert b"ccs bridge:" in reply


def test_a_header_with_a_lone_line_break_is_refused_not_smuggled_upstream(bridge_to):
    upstream = Scripted(lambda n, req: head(Content_Length="0"))
    b = bridge_to(upstream)
    reply = raw_reply(b.port, f"GET /openai/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {b.token}\r\n"
                              "X-Note: a\nX-Injected: yes\r\n\r\n".encode())
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n") and upstream.requests == []


def test_a_refused_request_whose_body_was_not_read_says_the_connection_closes(bridge_to):
    upstream = Scripted(lambda n, req: head(Content_Length="0"))
    b = bridge_to(upstream)
    reply = raw_reply(b.port, b'POST /openai/x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}')  # no token
    assert reply.startswith(b"HTTP/1.1 401 ") and b"Connection: close\r\n" in reply
    child = http.client.HTTPConnection("127.0.0.1", b.port, timeout=10)
    assert ask(b, conn=child)[0] == 200 and ask(b, conn=child)[0] == 200  # an answered one keeps it open
    assert upstream.connections == 1


def test_the_head_of_a_slow_answer_reaches_the_child_before_its_body(bridge_to):
    seen_head = threading.Event()
    b = bridge_to(Scripted(lambda n, req: [head(Content_Type="text/event-stream", Transfer_Encoding="chunked"),
                                           seen_head, chunked(b"data: [DONE]\n\n")]))
    with socket.create_connection(("127.0.0.1", b.port), timeout=10) as s:
        s.sendall(f"POST /openai/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {b.token}\r\n"
                  "Content-Length: 2\r\n\r\n{}".encode())
        got = b""
        while b"\r\n\r\n" not in got:  # the upstream sends its body only once this came
            got += s.recv(65536)
        assert got.startswith(b"HTTP/1.1 200 OK\r\n") and b"text/event-stream" in got
        seen_head.set()
        while not got.endswith(b"0\r\n\r\n"):
            got += s.recv(65536)
    assert b"data: [DONE]" in got


def test_a_post_is_never_sent_twice_when_a_kept_connection_breaks(bridge_to):
    """An LLM call the upstream may have run already is not resent: the upstream answers the first
    request on a connection, then drops it after reading the second."""
    def answer(n: int, req: bytes) -> bytes:
        if n == 2:
            raise ConnectionResetError  # read, maybe run, never answered
        return head(Content_Type="application/json", Content_Length=str(len(BODY))) + BODY

    upstream = Scripted(answer)
    b = bridge_to(upstream)
    assert ask(b) == (200, BODY)
    assert ask(b)[0] == 502
    assert len(upstream.requests) == 2


def test_bytes_past_an_answers_end_never_become_the_next_answer(bridge_to):
    extra = head(Content_Type="application/json", Content_Length="9") + b'"smuggle"'
    upstream = Scripted(lambda n, req: head(Content_Type="application/json", Transfer_Encoding="chunked")
                        + chunked(BODY) + (extra if n == 1 else b""))
    b = bridge_to(upstream)
    assert ask(b) == (200, BODY)
    assert ask(b) == (200, BODY)  # its own answer, on a new connection
    assert upstream.connections == 2


@pytest.mark.parametrize("when", ["with-the-answer", "after-the-answer"])
def test_an_answer_longer_than_its_content_length_never_becomes_the_next_answer(bridge_to, when):
    """A Content-Length answer the upstream follows with more bytes (with it, or a moment later on
    the idle connection): those bytes are no answer of any request, and the connection is dropped."""
    extra = head(Content_Type="application/json", Content_Length="9") + b'"smuggle"'
    later = threading.Event()
    first = head(Content_Type="application/json", Content_Length=str(len(BODY))) + BODY

    def answer(n: int, req: bytes) -> bytes | list[bytes | threading.Event]:
        if n > 1:
            return first
        return [first + extra] if when == "with-the-answer" else [first, later, extra]

    upstream = Scripted(answer)
    b = bridge_to(upstream)
    assert ask(b) == (200, BODY)
    if when == "after-the-answer":
        later.set()
        deadline = time.monotonic() + 5
        while upstream.sent < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        until(lambda: unread_on_an_idle_connection(b), 5, "the bytes to reach the bridge's idle connection")
    assert ask(b) == (200, BODY)  # its own answer, on a new connection
    assert upstream.connections == 2


def unread_on_an_idle_connection(b: Bridge) -> bool:
    """Whether the bridge's pool holds an idle upstream connection that received bytes no answer read."""
    return any(c.protocol.received != c.consumed for conns in list(b._pool._idle.values()) for c in list(conns))


def test_a_request_right_behind_a_chunked_body_is_answered_too(bridge_to):
    """A child may send its next request in the same segment as the end of a chunked body: reading
    the body must not swallow it."""
    upstream = Scripted(lambda n, req: head(Content_Type="application/json", Content_Length=str(len(BODY))) + BODY)
    b = bridge_to(upstream)
    auth = f"Authorization: Bearer {b.token}\r\n"
    reply = raw_reply(b.port, (f"POST /openai/chat/completions HTTP/1.1\r\nHost: x\r\n{auth}"
                               "Transfer-Encoding: chunked\r\n\r\n").encode() + chunked(b'{"model": "m"}')
                      + f"GET /openai/models HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n".encode())
    assert reply.count(b"HTTP/1.1 200 OK\r\n") == 2
    assert [r.split(b" ", 2)[:2] for r in upstream.requests] == [[b"POST", b"/v1/chat/completions"],
                                                                 [b"GET", b"/v1/models"]]


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_a_small_body_that_inflates_to_a_huge_one_arrives_in_pieces(encoding):
    """A decompression bomb (a few KiB that inflate to 64 MiB) is handed on a bounded piece at a
    time, like any other body, never decoded whole in memory."""
    size = 64 * 1024 * 1024
    packed = gzip.compress(bytes(size), compresslevel=9) if encoding == "gzip" else zlib.compress(bytes(size), 9)
    assert len(packed) < size // 500
    upstream = Scripted(lambda n, req: head(Content_Type="application/json", Content_Encoding=encoding,
                                            Content_Length=str(len(packed))) + packed)

    async def fetch() -> list[int]:
        pool = wire.Pool(5)
        answer = await pool.request("GET", upstream.url + "/x", {}, b"")
        sizes = [len(piece) async for piece in answer.chunks()]
        answer.release()
        await pool.close()
        return sizes

    try:
        sizes = asyncio.run(fetch())
    finally:
        upstream.close()
    assert sum(sizes) == size
    assert max(sizes) <= wire.READ


@pytest.mark.parametrize("why", ["no-token", "over-the-limit"])
def test_a_request_refused_before_its_large_body_came_still_gets_its_answer(bridge_to, monkeypatch, why):
    """The bridge answers a request without reading its body (no token, or a body over the limit)
    while the child is still sending it. The child, like most HTTP clients, sends the whole body
    before it reads an answer: the bridge must not reset the connection under it."""
    monkeypatch.setattr(bridge_server, "MAX_REQUEST_BODY", 1000 if why == "over-the-limit" else 10**9)
    upstream = Scripted(lambda n, req: head(Content_Length="0"))
    b = bridge_to(upstream)
    body = b'{"model": "m", "x": "' + b"y" * (24 * 1024 * 1024) + b'"}'
    conn = http.client.HTTPConnection("127.0.0.1", b.port, timeout=20)
    headers = {"Content-Type": "application/json"}
    if why == "over-the-limit":
        headers["Authorization"] = f"Bearer {b.token}"
    conn.request("POST", "/openai/chat/completions", body=body, headers=headers)
    r = conn.getresponse()
    assert r.status == (401 if why == "no-token" else 413)
    assert b"ccs" in r.read() and upstream.requests == []


def test_an_upstream_error_text_is_masked_before_it_is_cut(bridge_to):
    """An upstream's broken status line that carries the key where an error message would be cut:
    neither the record nor the child's answer may hold a piece of it."""
    line = b"XTTP/1.1 200 " + b"a" * 50 + KEY.encode() + b"\r\n\r\n"
    b = bridge_to(Scripted(lambda n, req: line))
    status, body = ask(b)
    (record,) = wait_records(b, 1)
    assert status == 502 and record["outcome"] == "upstream-aborted"
    for text in (record["error"], body.decode()):
        assert "not HTTP/1.x" in text and KEY[:12] not in text, text


def test_parallel_requests_find_their_upstream_connections_open_again(bridge_to):
    """Forty requests at once, twice: the second forty reuse the first forty's connections."""
    gate = threading.Barrier(40, timeout=10)

    def answer(n: int, req: bytes) -> bytes:
        if n <= 40:
            gate.wait()  # all forty are in flight at once
        return head(Content_Type="application/json", Content_Length=str(len(BODY))) + BODY

    upstream = Scripted(answer)
    b = bridge_to(upstream)
    for _ in range(2):
        threads = [threading.Thread(target=ask, args=(b,)) for _ in range(40)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(15)
    assert len(upstream.requests) == 80
    assert upstream.connections == 40


def test_a_connection_idle_too_long_is_not_reused(bridge_to, monkeypatch):
    skew = [0.0]  # the pool's clock, moved on instead of waiting for it

    class Clock:
        @staticmethod
        def monotonic() -> float:
            return time.monotonic() + skew[0]

    monkeypatch.setattr(upstream_side, "time", Clock)
    upstream = Scripted(lambda n, req: head(Content_Type="application/json", Content_Length=str(len(BODY))) + BODY)
    b = bridge_to(upstream)
    assert ask(b) == (200, BODY) and ask(b) == (200, BODY)
    assert upstream.connections == 1
    # the answer reaches the child before the bridge puts its connection back: wait for that, then age it
    until(lambda: any(b._pool._idle.values()), 5, "the connection to be idle in the pool")
    skew[0] = upstream_side.IDLE_SECONDS + 1  # the idle connection is now older than the pool keeps one
    assert ask(b) == (200, BODY)
    assert upstream.connections == 2


@pytest.mark.parametrize("sweep_left", [0, framing_module._SWEEP_LEFT])
def test_whole_chunks_found_at_once_agree_with_the_careful_way(monkeypatch, sweep_left):
    """The chunks found in one sweep and the careful reading give the same payload, whatever the
    payloads hold (a CRLF of their own, a chunk's framing as text), and however the body is cut."""
    monkeypatch.setattr(framing_module, "_SWEEP_LEFT", sweep_left)
    swept = []
    real = wire.ChunkedDecoder._whole_chunks
    monkeypatch.setattr(wire.ChunkedDecoder, "_whole_chunks",
                        staticmethod(lambda buf, out: swept.append(real(buf, out)) or swept[-1]))
    rng = random.Random(7)
    plain = [b"a" * 30, b"\n\n", b"data: x", b"\r"]
    framing = [b"\r\n", b"5\r\n", b"\r\n0\r\n"]  # a payload holding what looks like chunked framing

    def piece() -> bytes:
        odd = rng.random() < 0.05
        return b"".join(rng.choice(plain + framing if odd else plain) for _ in range(rng.randint(1, 12)))

    for _ in range(600):
        pieces = [piece() for _ in range(rng.randint(1, 60))]
        raw = chunked(*pieces)
        if rng.random() < 0.3:
            raw = raw.replace(b"\r\n", b";ext=1\r\n", 1)
        cut = rng.randint(0, len(raw))
        decoder = wire.ChunkedDecoder()
        assert decoder.feed(raw[:cut]) + decoder.feed(raw[cut:]) == b"".join(pieces), (pieces, cut)
        assert decoder.done and not decoder.leftover
    if not sweep_left:  # the sweep took whole chunks, not only the careful way
        assert sum(1 for n in swept if n) > 200


def test_a_chunk_size_the_sweep_cannot_read_is_still_an_error():
    for raw in (b"5\r\nhello\r\nzz\r\nab\r\n0\r\n\r\n", b"5\r\nhello\r\n-2\r\nab\r\n0\r\n\r\n",
                b"5\r\nhello\r\n2\r\nabc\r\n0\r\n\r\n"):
        with pytest.raises(wire.UpstreamBroke):
            wire.ChunkedDecoder().feed(raw)

"""Strict framing on both sides of the bridge: what one HTTP reader takes and another does not is
where requests and answers get smuggled. A child's request with a chunk size that is not bare
hexadecimal, a ``Transfer-Encoding`` that is not exactly ``chunked`` or lines that end with a bare LF
gets a 400 at once and never reaches the upstream; an upstream's answer framed that way is cut for the
child, never relayed as something it did not say."""

from __future__ import annotations

import socket
import time

import pytest
from test_bridge import wait_records
from test_bridge_wire import Scripted, bridge_to, head  # noqa: F401 — bridge_to is a fixture

from ccswitch_tui.bridge import wire

LOOSE_SIZES = [b"0x5", b"0X5", b"5_0", b" 5", b"+5", b"5 ", b"\x0b5", b"-0", b"5g", b"\xb25"]


def reply_to(port: int, data: bytes, timeout: float = 5) -> bytes:
    """Every byte the bridge answers to ``data`` before it closes; a bridge still waiting for more
    of the request after ``timeout`` fails the test (it would hang the child)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        reply = b""
        try:
            while more := s.recv(65536):
                reply += more
        except TimeoutError:
            pytest.fail(f"no answer within {timeout} s, the bridge waits for more: {reply!r}")
    return reply


@pytest.mark.parametrize("size", LOOSE_SIZES, ids=lambda s: repr(s)[2:-1])
def test_a_childs_chunk_size_that_is_not_bare_hex_is_a_400(bridge_to, size):  # noqa: F811
    upstream = Scripted(lambda n, req: head(Content_Length="0"))
    b = bridge_to(upstream)
    body = size + b"\r\nhello\r\n0\r\n\r\n"
    reply = reply_to(b.port, f"POST /openai/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {b.token}\r\n"
                             "Transfer-Encoding: chunked\r\n\r\n".encode() + body)
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n"), reply
    assert b"chunk size" in reply and upstream.requests == []
    (record,) = wait_records(b, 1)
    assert (record["status"], record["outcome"]) == (400, "refused")


@pytest.mark.parametrize("coding", [b"\x0bchunked", b"chunked\x0c", b"chunked\x0b", b"\xa0chunked", b"chunk",
                                    b"chunked, gzip", b"identity"],
                         ids=["vt-before", "ff-after", "vt-after", "nbsp", "chunk", "two-codings", "identity"])
def test_a_transfer_encoding_that_is_not_exactly_chunked_is_a_400(bridge_to, coding):  # noqa: F811
    upstream = Scripted(lambda n, req: head(Content_Length="0"))
    b = bridge_to(upstream)
    reply = reply_to(b.port, f"POST /openai/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {b.token}\r\n"
                             "Transfer-Encoding: ".encode() + coding + b"\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n"), reply
    assert upstream.requests == []


def test_chunked_in_any_case_with_spaces_around_it_is_still_chunked(bridge_to):  # noqa: F811
    upstream = Scripted(lambda n, req: head(Content_Length="2") + b"ok")
    b = bridge_to(upstream)
    reply = reply_to(b.port, f"POST /openai/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {b.token}\r\n"
                             "Transfer-Encoding: \t ChunKed \r\nConnection: close\r\n\r\n"
                             "5;name=value\r\nhello\r\n0000000000000000005 ;x\r\nworld\r\n0\r\n\r\n".encode())
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n"), reply
    assert upstream.requests[0].endswith(b"Content-Length: 10\r\n\r\nhelloworld")


@pytest.mark.parametrize("request_bytes", [
    b"GET /openai/models HTTP/1.1\nHost: x\n\n",
    b"GET /openai/models HTTP/1.1\r\nHost: x\nAuthorization: Bearer TOKEN\r\n\r\n",
    b"GET /openai/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer TOKEN\r\n\n",
    b"POST /openai/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer TOKEN\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5\nhello\r\n0\r\n\r\n",
    b"POST /openai/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer TOKEN\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5\r\nhello\r\n0\r\n\n",
], ids=["all-bare", "one-header", "blank-line", "chunk-size-line", "last-line"])
def test_a_request_with_bare_lf_line_ends_is_a_400_at_once(bridge_to, request_bytes):  # noqa: F811
    upstream = Scripted(lambda n, req: head(Content_Length="0"))
    b = bridge_to(upstream)
    started = time.monotonic()
    reply = reply_to(b.port, request_bytes.replace(b"TOKEN", b.token.encode()))
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n"), reply
    assert b"bare LF" in reply and upstream.requests == []
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("size", LOOSE_SIZES, ids=lambda s: repr(s)[2:-1])
def test_an_upstreams_chunk_size_that_is_not_bare_hex_cuts_the_answer(bridge_to, size):  # noqa: F811
    """Read one by one, found all at once (the sweep over a read of many chunks), or after a chunk
    cut in the read before: the same refusal everywhere."""
    whole = b"".join(b"%x\r\n%b\r\n" % (len(p), p) for p in [b"data: x\n\n"] * 8)
    for body in (size + b"\r\nhello\r\n0\r\n\r\n", whole + size + b"\r\nhello\r\n0\r\n\r\n"):
        for cut in (len(body), len(whole) + 1, 3):
            decoder = wire.ChunkedDecoder()
            with pytest.raises(wire.UpstreamBroke, match="chunk size"):
                decoder.feed(body[:cut])
                decoder.feed(body[cut:])
    upstream = Scripted(lambda n, req: [head(Transfer_Encoding="chunked", Content_Type="text/plain"),
                                        b"3\r\nok \r\n" + size + b"\r\nhello\r\n0\r\n\r\n"])
    b = bridge_to(upstream)
    reply = reply_to(b.port, f"GET /openai/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {b.token}\r\n"
                             "Connection: close\r\n\r\n".encode())
    assert b"hello" not in reply and not reply.endswith(b"0\r\n\r\n")  # cut: never a clean end
    (record,) = wait_records(b, 1)
    assert record["outcome"] == "upstream-aborted" and "chunk size" in record["error"]


@pytest.mark.parametrize("coding", ["\x0bchunked", "chunked, chunked", "gzip, chunked"])
def test_an_upstreams_transfer_encoding_that_is_not_exactly_chunked_is_a_502(bridge_to, coding):  # noqa: F811
    upstream = Scripted(lambda n, req: [head(Content_Type="text/plain").replace(
        b"\r\n\r\n", f"\r\nTransfer-Encoding: {coding}\r\n\r\n".encode()), b"5\r\nhello\r\n0\r\n\r\n"])
    b = bridge_to(upstream)
    reply = reply_to(b.port, f"GET /openai/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {b.token}\r\n"
                             "Connection: close\r\n\r\n".encode())
    assert reply.startswith(b"HTTP/1.1 502 Bad Gateway\r\n") and b"hello" not in reply

"""HTTP/1.1 for the bridge, both ways, on asyncio streams and the standard library alone.

The bridge needs little of HTTP: one loopback server that reads a request, lets the bridge answer
it (whole, or streamed as it arrives), and a client that sends one request to an upstream (direct,
or through the profile's HTTP proxy) and hands its body back piece by piece as it arrives. Written
here, that is a few hundred lines; an HTTP library would cost every recorded launch its import
(aiohttp's took 150-250 ms, during which the child's first request waited).

    server = await serve(sock, handle, max_body)   # handle(request) answers through request.answer
    pool = Pool(connect_timeout=30)
    upstream = await pool.request("POST", "https://host/v1/x", headers, body, proxy=None)
    async for piece in upstream.chunks(): ...     # the body, decoded (chunked, gzip, deflate)
    upstream.release()                             # back to the pool when it ended cleanly

What the bridge must be able to tell apart is told apart by the exception:
``Unreachable`` (no connection: DNS, refused, timeout, TLS verification, a proxy that refused),
``UpstreamFailed`` (connected, but no readable answer's head), ``UpstreamBroke`` (the answer's
body broke off or could not be decoded). A child that breaks HTTP gets a 400 (413 for a body
over the limit) and the connection closes.

A connection the child drops while its request is handled cancels the handling task, so the
bridge ends (and records) that request at once, even while the upstream has not answered yet.
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import ssl
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from http import HTTPStatus
from itertools import repeat
from typing import Any
from urllib.parse import unquote, urlsplit

MAX_HEAD = 64 * 1024  # a request's or an answer's head
READ = 256 * 1024  # bytes asked for per read of a body
HIGH_WATER = 256 * 1024  # bytes waiting for the child before writing waits for them to drain
# Idle upstream connections kept per host, and for how long: an agent's parallel requests (or a
# benchmark's hundreds of streams) find theirs open again, as aiohttp's pool would keep them.
IDLE_PER_HOST = 256
IDLE_SECONDS = 15.0


class WireError(Exception):
    """The child's request breaks HTTP/1.1 (answered 400 and the connection closed)."""

    status = 400


class BodyTooLarge(WireError):
    status = 413


class UpstreamError(Exception):
    """Talking to the upstream failed; the message names the cause."""


class Unreachable(UpstreamError):
    """No connection to the upstream (or through its proxy)."""


class UpstreamFailed(UpstreamError):
    """Connected, but the upstream sent no answer's head that could be read."""


class UpstreamBroke(UpstreamError):
    """The answer's body broke off, or could not be decoded."""


class Headers(list[tuple[str, str]]):  # of (name, value): a list keeps repeats and order
    """Header fields in the order they came, names as written; ``get`` matches names in any case."""

    def get(self, name: str, default: Any = None) -> Any:
        low = name.lower()
        for k, v in self:
            if k.lower() == low:
                return v
        return default

    def items(self) -> list[tuple[str, str]]:
        return list(self)


_BREAKS = ("\r", "\n", "\0")


def _quote(text: str | bytes, error: type[Exception]) -> str:
    """A piece of what the other side sent, for an error message. The child's own text is cut here;
    the upstream's is kept whole, because the server masks secrets in it before it cuts (a key cut
    in half here would no longer be recognised as the key)."""
    return repr(text[:80] if issubclass(error, WireError) else text)


def _fields(lines: list[str], error: type[Exception]) -> Headers:
    headers = Headers()
    for line in lines:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip() or line[:1] in " \t" or any(c in line for c in _BREAKS):
            # a lone CR or LF would end the line for the next reader: a header smuggled in
            raise error(f"a header line that is not 'name: value': {_quote(line, error)}")
        headers.append((name, value.strip(" \t")))
    return headers


def _content_length(headers: Headers, error: type[Exception]) -> int | None:
    values = {v.strip() for k, v in headers if k.lower() == "content-length"}
    if not values:
        return None
    if len(values) > 1 or not (next(iter(values)).isascii() and next(iter(values)).isdigit()):
        raise error(f"a Content-Length that is not one number: {sorted(values)!r}")
    return int(next(iter(values)))


def _chunked(headers: Headers, error: type[Exception]) -> bool:
    codings = [c.strip().lower() for k, v in headers if k.lower() == "transfer-encoding" for c in v.split(",")]
    codings = [c for c in codings if c]
    if not codings:
        return False
    if codings != ["chunked"]:
        raise error(f"a Transfer-Encoding the bridge does not take: {', '.join(codings)}")
    return True


# --- chunked bodies -------------------------------------------------------------------------


class ChunkedDecoder:
    """The payload of a chunked body, fed in pieces however they were cut."""

    def __init__(self, error: type[Exception] = UpstreamBroke):
        self._error = error
        self._buf = b""
        self._left = 0  # payload bytes of the current chunk still to come
        self._crlf = False  # the CRLF after a chunk's payload is still to come
        self._trailers = False  # the last chunk came: trailer lines until an empty one
        self.done = False
        self.leftover = False  # bytes came after the body's end

    def feed(self, data: bytes) -> bytes:  # noqa: C901
        buf = self._buf + data if self._buf else data
        pos, out = 0, []
        while not self.done:
            if self._left:
                piece = buf[pos:pos + self._left]
                if not piece:
                    break
                out.append(piece)
                pos += len(piece)
                self._left -= len(piece)
                if self._left:
                    break
                self._crlf = True
            if self._crlf:
                if len(buf) - pos < 2:
                    break
                if buf[pos:pos + 2] != b"\r\n":
                    raise self._error("a chunk of the body is longer than its size said")
                pos += 2
                self._crlf = False
            if not self._trailers:  # at the start of a chunk: those that came whole, the quick way
                pos = self._whole(buf, pos, out)
                if self.done:
                    break
            i = buf.find(b"\n", pos)
            if i < 0:
                if len(buf) - pos > 4096:
                    raise self._error("a chunk size line over 4 KiB")
                break
            line = buf[pos:i].rstrip(b"\r")
            pos = i + 1
            if self._trailers:
                if not line:
                    self.done = True
                continue
            size = _chunk_size(line, self._error)
            if size == 0:
                self._trailers = True
            self._left = size
        if self.done:
            self.leftover = pos < len(buf)
            self._buf = b""
        else:
            self._buf = buf[pos:]
        return b"".join(out)

    def _whole(self, buf: bytes, pos: int, out: list[bytes]) -> int:
        """The chunks from ``pos`` on that came whole (a size line with no extension, the payload,
        its CRLF): their payloads to ``out``; where the first that did not starts (the careful way
        reads it). Most chunks come whole. A few are read one by one; when more came in the same
        read, the rest are found all at once (``_whole_chunks``)."""
        find = buf.find
        sweep = _SWEEP_AFTER
        while True:
            sweep -= 1
            if not sweep and len(buf) - pos > _SWEEP_LEFT:
                pos += self._whole_chunks(buf[pos:] if pos else buf, out)
                sweep = _SWEEP_AFTER
            i = find(b"\r\n", pos)
            if i < 0:
                return pos
            try:
                size = int(buf[pos:i], 16)
            except ValueError:
                return pos  # an extension, or a broken size: the careful way says which
            start = i + 2
            end = start + size
            if buf[end:end + 2] != b"\r\n" or size < 0:
                return pos
            if size == 0:  # the last chunk, with no trailer
                self.done = True
                return end + 2
            out.append(buf[start:end])
            pos = end + 2

    @staticmethod
    def _whole_chunks(buf: bytes, out: list[bytes]) -> int:
        """The whole chunks at the start of ``buf``, found all at once (an unpaced stream brings
        hundreds in one read, and a loop in Python costs about half a microsecond a chunk): split
        at every CRLF, sizes come at even places and payloads at odd ones. A chunk counts when its
        payload is as long as its size says and a CRLF follows it; the first that does not (a
        payload with a CRLF of its own, an extension, the last chunk, one cut off at the end of
        ``buf``) and all after it are left to the careful way. Their payloads go to ``out``;
        returns where they end."""
        parts = buf.split(b"\r\n")
        pairs = (len(parts) - 1) // 2  # a (size, payload) pair with something after the payload's CRLF
        if not pairs:
            return 0
        sizes, payloads = parts[0:2 * pairs:2], parts[1:2 * pairs:2]
        lengths = list(map(len, payloads))
        try:
            said = list(map(int, sizes, repeat(16)))
        except ValueError:  # not every size line is a bare number: the careful way reads them
            return 0
        if said != lengths or 0 in said:
            good = 0
            for size, length in zip(said, lengths, strict=True):
                if size != length or size == 0:
                    break
                good += 1
            if not good:
                return 0
            sizes, payloads, lengths = sizes[:good], payloads[:good], lengths[:good]
        out.append(b"".join(payloads))
        return sum(lengths) + sum(map(len, sizes)) + 4 * len(sizes)


# The sweep costs about as much as reading three chunks one by one, then far less a chunk: one
# chunk a read (a paced stream) is read one by one, hundreds (an unpaced one) mostly all at once.
_SWEEP_AFTER = 3
_SWEEP_LEFT = 1024  # bytes: less than this left in the read, and the rest are read one by one too


def _chunk_size(line: bytes, error: type[Exception]) -> int:
    """The size a chunk's size line gives (its extensions ignored)."""
    size_text = line.split(b";", 1)[0].strip()
    try:
        size = int(size_text, 16)
    except ValueError:
        size = -1
    if size < 0 or not size_text or size_text[:1] in b"+-":
        raise error(f"a chunk size that is not a hexadecimal number: {_quote(line, error)}")
    return size


def _decompressor(encoding: str) -> Any:
    if encoding == "gzip":
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return _Deflate()
    return None


class _Deflate:
    """``deflate`` as servers send it: zlib-wrapped as the standard says, or raw as some do."""

    def __init__(self) -> None:
        self._z: Any = None
        self._start = b""

    @property
    def unconsumed_tail(self) -> bytes:
        return self._z.unconsumed_tail if self._z is not None else b""

    def decompress(self, data: bytes, max_length: int = 0) -> bytes:
        if self._z is None:
            self._start += data
            if len(self._start) < 2:
                return b""
            first = self._start[0]
            wrapped = first & 0x0F == 8 and (first << 8 | self._start[1]) % 31 == 0
            self._z = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
            data, self._start = self._start, b""
        return self._z.decompress(data, max_length)

    def flush(self) -> bytes:
        if self._z is None:
            return zlib.decompressobj(-zlib.MAX_WBITS).decompress(self._start) if self._start else b""
        return self._z.flush()


# --- the server: the child's side ---------------------------------------------------------


class _ChildProtocol(asyncio.StreamReaderProtocol):
    """A child's connection: when it drops while a request is handled, the handling stops."""

    task: asyncio.Task[Any] | None = None
    busy = False

    def eof_received(self) -> bool:
        """The child closed its side: it has hung up (a killed process does just that), so the
        connection closes and a request still being handled ends at once."""
        super().eof_received()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self.busy and self.task is not None:
            self.busy = False
            self.task.cancel()


class Request:
    """One request of the child: its head at once, its body when ``read()`` asks for it."""

    def __init__(self, method: str, target: str, version: str, headers: Headers,
                 reader: asyncio.StreamReader, writer: asyncio.StreamWriter, proto: _ChildProtocol, max_body: int):
        self.method = method
        self.raw_path = target
        self.version = version
        self.headers = headers
        self._reader = reader
        self._writer = writer
        self._max_body = max_body
        self._body: bytes | None = None
        connection = (headers.get("Connection") or "").lower()
        self.keep_alive = ("close" not in connection if version == "HTTP/1.1" else "keep-alive" in connection)
        self._length = _content_length(headers, WireError)
        self._chunked = _chunked(headers, WireError)
        if self._chunked and self._length is not None:
            raise WireError("a request with both Content-Length and Transfer-Encoding")
        self.answer = Answer(writer, proto, version, self.keep_alive, head_only=method == "HEAD",
                             body_read=lambda: self.body_read)

    @property
    def query_string(self) -> str:
        return self.raw_path.partition("?")[2]

    @property
    def body_read(self) -> bool:
        return self._body is not None or (not self._chunked and not self._length)

    async def read(self) -> bytes:
        """The whole body (``BodyTooLarge`` over the limit, ``WireError`` if it is broken)."""
        if self._body is not None:
            return self._body
        if (self.headers.get("Expect") or "").lower() == "100-continue" and self.version == "HTTP/1.1":
            if self._length is not None and self._length > self._max_body:
                raise BodyTooLarge(f"a request body of {self._length} bytes, over {self._max_body}")
            self._writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        try:
            if self._length is not None:
                if self._length > self._max_body:
                    raise BodyTooLarge(f"a request body of {self._length} bytes, over {self._max_body}")
                self._body = await self._reader.readexactly(self._length) if self._length else b""
            elif self._chunked:
                self._body = await self._read_chunked()
            else:
                self._body = b""
        except asyncio.IncompleteReadError:
            what = "chunked body" if self._chunked else "body"
            raise WireError(f"the request's {what} ended before its end") from None
        except asyncio.LimitOverrunError:
            raise WireError(f"a chunk size or trailer line over {MAX_HEAD // 1024} KiB") from None
        return self._body

    async def _read_chunked(self) -> bytes:
        """A chunked body, read to its last byte and not one byte further: a request the child
        sent right behind it on the same connection is still there for the next read."""
        reader, parts, size = self._reader, [], 0
        while True:
            chunk = _chunk_size((await reader.readuntil(b"\n")).rstrip(b"\r\n"), WireError)
            if chunk == 0:
                break
            size += chunk
            if size > self._max_body:
                raise BodyTooLarge(f"a request body over {self._max_body} bytes")
            parts.append(await reader.readexactly(chunk))
            if (await reader.readuntil(b"\n")).rstrip(b"\r\n"):
                raise WireError("a chunk of the request's body is longer than its size said")
        trailers = 0
        while True:  # trailer fields, up to an empty line
            line = await reader.readuntil(b"\n")
            if not line.rstrip(b"\r\n"):
                return b"".join(parts)
            trailers += len(line)
            if trailers > MAX_HEAD:
                raise WireError(f"trailer fields over {MAX_HEAD // 1024} KiB")


class Answer:
    """The answer to one request: ``prepare`` the head, ``write`` the body, ``end``; or ``whole``."""

    def __init__(self, writer: asyncio.StreamWriter, proto: _ChildProtocol, version: str, keep_alive: bool,
                 head_only: bool = False, body_read: Callable[[], bool] | None = None):
        self._body_read = body_read
        self._writer = writer
        self._proto = proto
        self._version = version
        self.keep_alive = keep_alive
        self._head_only = head_only
        self._chunked = False
        self._no_body = head_only
        self._head = b""
        self.prepared = False
        self.ended = False

    async def prepare(self, status: int, headers: dict[str, str], length: int | None = None) -> None:
        if self._writer.transport.is_closing():
            raise ConnectionResetError("the child closed its connection")
        if self._body_read is not None and not self._body_read():
            self.keep_alive = False  # a body left unread ends the connection: the child must know
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = "Unknown"
        lines = [f"HTTP/1.1 {status} {reason}"]
        lines += [f"{k}: {v}" for k, v in headers.items() if "\r" not in k + v and "\n" not in k + v]
        if status < 200 or status in (204, 304):
            self._no_body = True
        elif length is not None:
            lines.append(f"Content-Length: {length}")
        elif self._head_only:
            pass
        elif self._version == "HTTP/1.1":
            self._chunked = True
            lines.append("Transfer-Encoding: chunked")
        else:
            self.keep_alive = False  # an HTTP/1.0 child learns the end of the body from the close
        lines.append("Connection: keep-alive" if self.keep_alive else "Connection: close")
        # The head goes out with the body's first bytes when they are there already (one segment,
        # not two), else on its own as soon as the bridge waits for them.
        self._head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
        self.prepared = True
        asyncio.get_running_loop().call_soon(self._flush_head)

    def _flush_head(self) -> None:
        if self._head and not self._writer.transport.is_closing():
            self._writer.write(self._head)
        self._head = b""

    async def write(self, data: bytes) -> None:
        if self._no_body or not data:
            return
        writer = self._writer
        if writer.transport.is_closing():
            raise ConnectionResetError("the child closed its connection")
        if self._chunked:
            data = b"%b%x\r\n%b\r\n" % (self._head, len(data), data)
        elif self._head:
            data = self._head + data
        self._head = b""
        writer.write(data)
        if writer.transport.get_write_buffer_size() > HIGH_WATER:
            await writer.drain()

    async def end(self) -> None:
        last = b"0\r\n\r\n" if self._chunked else b""
        if self._head or last:
            self._writer.write(self._head + last)
            self._head = b""
        self.ended = True
        await self._writer.drain()

    async def whole(self, status: int, body: bytes, content_type: str = "application/json; charset=utf-8") -> None:
        await self.prepare(status, {"Content-Type": content_type}, length=len(body))
        await self.write(body)
        await self.end()

    def abort(self) -> None:
        """Cut the connection: the child sees a broken answer, not a clean end."""
        self._proto.busy = False
        self._writer.transport.abort()


Handle = Callable[[Request], Awaitable[None]]


class Server:
    """The bridge's listening side (``serve``); ``close()`` ends every connection."""

    def __init__(self) -> None:
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[asyncio.Task[Any]] = set()

    async def close(self, timeout: float = 1.0) -> None:
        if self._server is not None:
            self._server.close()
        tasks = list(self._connections)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)


async def serve(sock: socket.socket, handle: Handle, max_body: int) -> Server:  # noqa: C901
    """Serve HTTP/1.1 on a listening socket; each request goes to ``handle``, one at a time per
    connection."""
    loop = asyncio.get_running_loop()
    server = Server()

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        proto = writer.transport.get_protocol()
        assert isinstance(proto, _ChildProtocol)
        sock = writer.get_extra_info("socket")
        if sock is not None:  # asyncio sets it only on sockets made with IPPROTO_TCP, which accept() does not
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        task = asyncio.current_task()
        proto.task = task
        if task is not None:
            server._connections.add(task)
        try:
            while True:
                try:
                    request = await _read_request(reader, writer, proto, max_body)
                except WireError as exc:
                    answer = Answer(writer, proto, "HTTP/1.1", keep_alive=False)
                    error = {"message": f"ccs bridge: {exc}", "type": "invalid_request_error", "code": "bad_http"}
                    await answer.whole(exc.status, json.dumps({"error": error}).encode())
                    await _linger(reader, writer)
                    break
                if request is None:
                    break
                proto.busy = True
                try:
                    await handle(request)
                finally:
                    proto.busy = False
                answer = request.answer
                if not (answer.ended and answer.keep_alive and request.keep_alive and request.body_read):
                    if answer.ended and not request.body_read:
                        await _linger(reader, writer)
                    break
        except (asyncio.CancelledError, ConnectionError, asyncio.IncompleteReadError):
            pass  # the child went away, or the bridge stops: what the request came to is recorded
        finally:
            if task is not None:
                server._connections.discard(task)
            writer.transport.close()

    def protocol() -> _ChildProtocol:
        return _ChildProtocol(asyncio.StreamReader(limit=MAX_HEAD, loop=loop), connection, loop=loop)

    server._server = await loop.create_server(protocol, sock=sock)
    return server


LINGER_SECONDS = 5.0
LINGER_BYTES = 64 * 1024 * 1024


async def _linger(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Close a connection whose child is still sending (a body the bridge refused without reading
    it, or what followed a request that broke HTTP) so that the child reads the answer: closing
    with its bytes unread would make the kernel answer them with a reset, and a reset can destroy
    the answer before the child has read it. So the bridge's side ends first, then what the child
    still sends is read and dropped until it closes too, for a bounded time and amount."""
    transport = writer.transport
    if transport.is_closing() or not transport.can_write_eof():
        return
    try:
        await writer.drain()
        transport.write_eof()
        loop = asyncio.get_running_loop()
        deadline, dropped = loop.time() + LINGER_SECONDS, 0
        while dropped < LINGER_BYTES:
            data = await asyncio.wait_for(reader.read(READ), max(0.0, deadline - loop.time()))
            if not data:
                return
            dropped += len(data)
    except (asyncio.TimeoutError, ConnectionError, OSError):
        return


async def _read_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, proto: _ChildProtocol,
                        max_body: int) -> Request | None:
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial.strip():
            raise WireError("the connection closed inside a request's head") from None
        return None
    except asyncio.LimitOverrunError:
        raise WireError(f"a request head over {MAX_HEAD // 1024} KiB") from None
    lines = raw[:-4].decode("latin-1").lstrip("\r\n").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or parts[2] not in ("HTTP/1.1", "HTTP/1.0") or not parts[0].isalpha() \
            or not parts[1].startswith("/") or not all("!" <= c <= "~" for c in parts[1]):
        raise WireError(f"not an HTTP/1.x request line: {lines[0][:80]!r}")
    return Request(parts[0], parts[1], parts[2], _fields(lines[1:], WireError), reader, writer, proto, max_body)


# --- the client: the upstream's side ------------------------------------------------------


class _Counting(asyncio.StreamReaderProtocol):
    """An upstream connection's protocol, counting the bytes that arrive."""

    received = 0

    def data_received(self, data: bytes) -> None:
        self.received += len(data)
        super().data_received(data)


async def _open(host: str | None = None, port: int | None = None, *, sock: socket.socket | None = None,
                tls: ssl.SSLContext | None = None, server_hostname: str | None = None) -> _Connection:
    """``asyncio.open_connection``, with a protocol that counts what arrives."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_HEAD, loop=loop)
    protocol = _Counting(reader, loop=loop)
    if sock is not None:
        transport, _ = await loop.create_connection(lambda: protocol, sock=sock, ssl=tls,
                                                    server_hostname=server_hostname)
    elif host is not None and port is not None:
        transport, _ = await loop.create_connection(lambda: protocol, host, port, ssl=tls,
                                                    server_hostname=server_hostname)
    else:
        raise ValueError("a connection needs a host and a port, or a socket")
    return _Connection(reader, asyncio.StreamWriter(transport, protocol, reader, loop), protocol)


class _Connection:
    """One upstream connection. ``consumed`` counts the bytes read of it: a connection that has
    received more than the answers it carried were made of holds bytes no request asked for (an
    answer longer than it said, or one sent after it), which would be read as the next request's
    answer. It is not reused."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, protocol: _Counting):
        self.reader = reader
        self.writer = writer
        self.protocol = protocol
        self.consumed = 0
        self.idle_since = 0.0

    def usable(self) -> bool:
        return (not self.writer.transport.is_closing() and not self.reader.at_eof()
                and self.protocol.received == self.consumed)

    def close(self) -> None:
        self.writer.transport.abort()


class Upstream:
    """The upstream's answer: ``status``, ``headers``, ``content_length``; ``chunks()`` its body."""

    def __init__(self, pool: Pool, key: Any, conn: _Connection, method: str, status: int, headers: Headers,
                 version: str = "HTTP/1.1"):
        self._pool = pool
        self._key = key
        self._conn = conn
        self.status = status
        self.headers = headers
        self._chunked = _chunked(headers, UpstreamFailed)
        length = _content_length(headers, UpstreamFailed)
        self.content_length = None if self._chunked else length
        self._doubtful = self._chunked and length is not None  # both: read as chunked, never reused
        self._empty = method == "HEAD" or status in (204, 304)
        connection = (headers.get("Connection") or "").lower()
        self._reusable = ("close" not in connection and not self._doubtful and version == "HTTP/1.1"
                          and (self._empty or self._chunked or self.content_length is not None))
        self._finished = False

    async def chunks(self) -> AsyncIterator[bytes]:  # noqa: C901
        """The body as it arrives, decoded; ``UpstreamBroke`` if it breaks off."""
        if self._empty:
            self._finished = True
            return
        reader = self._conn.reader
        unzip = _decompressor((self.headers.get("Content-Encoding") or "").strip().lower())
        chunked = ChunkedDecoder() if self._chunked else None
        left = self.content_length
        got = 0
        try:
            while True:
                data = await reader.read(READ if left is None else min(READ, left))
                if not data:
                    if chunked is not None or left:
                        raise UpstreamBroke(f"the connection closed after {got} bytes of the body, before its end")
                    break  # a body that ends with the connection
                got += len(data)
                self._conn.consumed += len(data)
                if chunked is not None:
                    data = chunked.feed(data)
                elif left is not None:
                    left -= len(data)
                if unzip is not None:
                    # At most READ decoded bytes at a time: a small body that inflates to a huge
                    # one (a decompression bomb) arrives in pieces like any other, never whole.
                    more = bool(data)
                    while more:
                        piece = unzip.decompress(data, READ)
                        data = unzip.unconsumed_tail
                        if piece:
                            yield piece
                        more = bool(data) or len(piece) == READ  # a full piece: more may wait inside
                elif data:
                    yield data
                if (chunked is not None and chunked.done) or left == 0:
                    if chunked is not None and chunked.leftover:
                        self._reusable = False  # bytes past the end: the next answer would start wrong
                    break
            if unzip is not None:
                rest = unzip.flush()
                if rest:
                    yield rest
        except zlib.error as exc:
            raise UpstreamBroke(f"the body could not be decoded ({exc})") from None
        except (ConnectionError, OSError) as exc:
            raise UpstreamBroke(f"{type(exc).__name__}: {exc}") from None
        self._finished = True

    def release(self) -> None:
        """The connection back to the pool if the answer ended cleanly, else closed."""
        conn, self._conn = self._conn, None  # type: ignore[assignment]  # released once
        if conn is None:
            return
        if self._finished and self._reusable and conn.usable():
            self._pool._put(self._key, conn)  # noqa: SLF001 — the pool's own answer
        else:
            conn.close()


class Pool:
    """Connections to the upstreams, kept open between requests."""

    def __init__(self, connect_timeout: float = 30.0):
        self.connect_timeout = connect_timeout
        self._idle: dict[Any, list[_Connection]] = {}
        self._tls: asyncio.Future[ssl.SSLContext] | None = None

    def prepare_tls(self) -> None:
        """Start building the verifying TLS context (the system's CAs: tens of ms) in a thread."""
        if self._tls is None:
            self._tls = asyncio.get_running_loop().run_in_executor(None, ssl.create_default_context)

    async def _context(self) -> ssl.SSLContext:
        self.prepare_tls()
        assert self._tls is not None
        if self._tls.done() and (self._tls.cancelled() or self._tls.exception() is not None):
            self._tls = None  # a build that failed is tried again, not reused
            self.prepare_tls()
            assert self._tls is not None
        # shielded: a request whose child hung up must not cancel the build every request shares
        return await asyncio.shield(self._tls)

    def _put(self, key: Any, conn: _Connection) -> None:
        idle = self._idle.setdefault(key, [])
        now = time.monotonic()
        while idle and now - idle[0].idle_since > IDLE_SECONDS:  # the oldest first: those idle too long
            idle.pop(0).close()
        if len(idle) < IDLE_PER_HOST:
            conn.idle_since = now
            idle.append(conn)
        else:
            conn.close()

    def _drop(self, key: Any) -> None:
        for conn in self._idle.pop(key, []):
            conn.close()

    def _take(self, key: Any) -> _Connection | None:
        idle = self._idle.get(key)
        now = time.monotonic()
        while idle:
            conn = idle.pop()  # the newest: the likeliest to be open still
            if now - conn.idle_since > IDLE_SECONDS:
                self._drop(key)  # it and all older ones
                conn.close()
                return None
            if conn.usable():
                return conn
            conn.close()
        return None

    async def close(self) -> None:
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()

    async def request(self, method: str, url: str, headers: dict[str, str], body: bytes,  # noqa: C901
                      proxy: str | None = None) -> Upstream:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        try:
            port = parts.port or (443 if scheme == "https" else 80)
        except ValueError:
            port = 0
        host = parts.hostname
        if scheme not in ("http", "https") or not host or not port:
            raise Unreachable(f"InvalidURL: {url}")
        netloc = parts.netloc.rpartition("@")[2]
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        lines = [f"Host: {netloc}"]
        if parts.username is not None and not any(k.lower() == "authorization" for k in headers):
            lines.append("Authorization: Basic " + _basic(parts.username, parts.password or ""))
        # (a header with a line break in it never leaves: the upstream would read a second header)
        lines += [f"{k}: {v}" for k, v in headers.items() if not any(c in k + v for c in _BREAKS)]
        if body or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body)}")
        forward_auth = None
        if proxy and scheme == "http":  # an http upstream through a proxy: the whole URL as the target
            target = f"http://{netloc}{target}"
            forward_auth = _proxy_auth(proxy)
            if forward_auth:
                lines.append(f"Proxy-Authorization: {forward_auth}")
        head = (f"{method} {target} HTTP/1.1\r\n" + "\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
        key = (scheme, host, port, proxy)
        for attempt in (0, 1):
            conn = self._take(key)
            reused = conn is not None
            if conn is None:
                conn = await self._connect(scheme, host, port, proxy)
            try:
                conn.writer.write(head + body)  # one segment for a small request
                await conn.writer.drain()
                status, fields, version = await _read_answer_head(conn)
                return Upstream(self, key, conn, method, status, fields, version)
            except _ClosedUnanswered:
                conn.close()
                if reused and attempt == 0 and method in _REPEATABLE:
                    self._drop(key)  # the upstream closed idle connections: once more on a new one
                    continue
                raise UpstreamFailed("the upstream closed the connection without answering") from None
            except (ConnectionError, OSError) as exc:
                conn.close()
                if reused and attempt == 0 and method in _REPEATABLE:
                    self._drop(key)
                    continue
                raise UpstreamFailed(f"{type(exc).__name__}: {exc}") from None
            except BaseException:
                conn.close()
                raise
        raise AssertionError("unreachable")

    async def _connect(self, scheme: str, host: str, port: int, proxy: str | None) -> _Connection:
        context = await self._context() if scheme == "https" else None
        try:
            if proxy:
                return await asyncio.wait_for(self._through(proxy, scheme, host, port, context), self.connect_timeout)
            return await asyncio.wait_for(_open(host, port, tls=context, server_hostname=host if context else None),
                                          self.connect_timeout)
        except asyncio.TimeoutError:
            raise Unreachable(f"TimeoutError: no connection to {host}:{port} within {self.connect_timeout:g} s") \
                from None
        except ssl.SSLError as exc:
            raise Unreachable(f"{type(exc).__name__}: {host}:{port}: {exc}") from None
        except OSError as exc:
            raise Unreachable(f"{type(exc).__name__}: cannot connect to {host}:{port}: {exc.strerror or exc}") \
                from None

    async def _through(self, proxy: str, scheme: str, host: str, port: int,
                       context: ssl.SSLContext | None) -> _Connection:
        """A connection to ``host`` through an HTTP proxy: to the proxy itself for an http upstream,
        a CONNECT tunnel with TLS inside it for an https one."""
        p = urlsplit(proxy)
        if p.scheme.lower() != "http" or not p.hostname:
            raise Unreachable(f"ProxyError: the bridge goes through http:// proxies only, not {p.scheme}://")
        proxy_port = p.port or 80
        if scheme == "http":
            return await _open(p.hostname, proxy_port)
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(p.hostname, proxy_port, type=socket.SOCK_STREAM)
        error: OSError = OSError(f"no address for {p.hostname}")
        for family, kind, number, _, address in infos:
            sock = socket.socket(family, kind, number)
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                await loop.sock_connect(sock, address)
                break
            except OSError as exc:
                sock.close()
                error = exc
            except BaseException:  # cancelled (the connect timeout, or the child hung up)
                sock.close()
                raise
        else:
            raise error
        try:
            auth = _proxy_auth(proxy)
            connect = f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n"
            connect += f"Proxy-Authorization: {auth}\r\n" if auth else ""
            await loop.sock_sendall(sock, (connect + "\r\n").encode("latin-1", "replace"))
            got = b""
            while b"\r\n\r\n" not in got:
                more = await loop.sock_recv(sock, 4096)
                if not more or len(got) > MAX_HEAD:
                    raise Unreachable(f"ProxyError: the proxy closed the connection to {host}:{port}")
                got += more
            status_line = got.split(b"\r\n", 1)[0].decode("latin-1")
            code = status_line.split(" ")[1] if status_line.count(" ") >= 1 else ""
            if not code.startswith("2"):
                raise Unreachable(f"ProxyError: the proxy answered {status_line!r} to CONNECT {host}:{port}")
            return await _open(sock=sock, tls=context, server_hostname=host)
        except BaseException:
            sock.close()
            raise


# A request the upstream may have run already is never sent twice (an LLM call is billed): only
# these are resent when a kept connection turns out closed.
_REPEATABLE = frozenset({"GET", "HEAD", "OPTIONS"})


class _ClosedUnanswered(Exception):
    pass


async def _read_answer_head(conn: _Connection) -> tuple[int, Headers, str]:
    while True:
        try:
            raw = await conn.reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            if not exc.partial:
                raise _ClosedUnanswered from None
            raise UpstreamFailed("the upstream closed the connection inside its answer's head") from None
        except asyncio.LimitOverrunError:
            raise UpstreamFailed(f"the upstream's answer head is over {MAX_HEAD // 1024} KiB") from None
        conn.consumed += len(raw)
        lines = raw[:-4].decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/1.") or not code.isdigit() or rest[3:4] not in ("", " "):
            raise UpstreamFailed(f"the upstream's answer is not HTTP/1.x: {lines[0]!r}")
        status = int(code)
        if 100 <= status < 200 and status != 101:
            continue  # 100 Continue, 103 Early Hints: the answer comes after
        if status < 100 or status == 101:  # nothing the bridge forwards asked to switch protocols
            raise UpstreamFailed(f"the upstream answered with status {status}, which the bridge does not relay")
        return status, _fields(lines[1:], UpstreamFailed), version


def _basic(user: str, password: str) -> str:
    return base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()


def _proxy_auth(proxy: str) -> str | None:
    p = urlsplit(proxy)
    return "Basic " + _basic(p.username, p.password or "") if p.username is not None else None

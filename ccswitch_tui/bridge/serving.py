"""The bridge's listening side: the child's connections, its requests read, the answers written.

    server = await serve(sock, handle, max_body)   # handle(request) answers through request.answer

A child that breaks HTTP gets a 400 (413 for a body over the limit) and the connection closes. A
connection the child drops while its request is handled cancels the handling task, so the bridge
ends (and records) that request at once, even while the upstream has not answered yet.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import socket
import struct
from collections.abc import Awaitable, Callable
from http import HTTPStatus

from ccswitch_tui.bridge import peers
from ccswitch_tui.bridge.framing import (
    MAX_HEAD,
    READ,
    BodyTooLarge,
    Headers,
    WireError,
    chunk_size,
    content_length_of,
    fields,
    is_chunked,
)
from ccswitch_tui.valueclass import valueclass

HIGH_WATER = 256 * 1024  # bytes waiting for the child before writing waits for them to drain


class _ChildProtocol(asyncio.StreamReaderProtocol):
    """A child's connection: when it drops while a request is handled, the handling stops; while the
    bridge waits for a request's head, a timer runs (``expect_head``)."""

    task: asyncio.Task[None] | None = None
    busy = False
    timed_out = False
    _waiting = ""  # "idle": for the first byte of the next head; "head": for the rest of it
    _deadline: float | None = None  # when the awaited head is late (None: none is awaited)
    # At most one timer, due at or before the deadline: a deadline that moved later is found when it
    # fires and waited for again, so most requests cost no timer at all.
    _timer: asyncio.TimerHandle | None = None
    _connection: asyncio.Transport | None = None  # what a late head closes

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if isinstance(transport, asyncio.Transport):
            self._connection = transport
        super().connection_made(transport)

    def expect_head(self, idle: float) -> None:
        """A head is due: the connection may stay idle ``idle`` seconds, then its head must arrive
        within ``HEAD_SECONDS`` of its first byte. Past either, the connection closes (with a 408
        when a head had begun)."""
        loop = asyncio.get_running_loop()
        self._waiting = "idle"
        self._deadline = loop.time() + idle
        if self._timer is None:
            self._timer = loop.call_at(self._deadline, self._expired)

    def head_read(self) -> None:
        self._waiting = ""
        self._deadline = None  # a timer still due finds nothing to do

    def data_received(self, data: bytes) -> None:
        if self._waiting == "idle" and data:
            loop = asyncio.get_running_loop()
            self._waiting = "head"
            self._deadline = loop.time() + HEAD_SECONDS
            if self._timer is None or self._timer.when() > self._deadline:  # a kept connection's long wait
                if self._timer is not None:
                    self._timer.cancel()
                self._timer = loop.call_at(self._deadline, self._expired)
        super().data_received(data)

    def _expired(self) -> None:
        self._timer = None
        if self._deadline is None:
            return
        loop = asyncio.get_running_loop()
        if loop.time() < self._deadline:  # the deadline moved on since this timer was set
            self._timer = loop.call_at(self._deadline, self._expired)
            return
        transport = self._connection
        if transport is None or transport.is_closing():
            return
        self.timed_out = True
        if self._waiting == "head":  # a head that began and never ended: say why before closing
            transport.write(_bridge_error(408, f"no whole request head within {HEAD_SECONDS:g} s"))
            transport.close()
        else:
            transport.abort()  # idle: close quietly, as any server does with a kept connection

    def eof_received(self) -> bool:
        """The child closed its side: it has hung up (a killed process does just that), so the
        connection closes and a request still being handled ends at once."""
        super().eof_received()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.head_read()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        super().connection_lost(exc)
        if self.busy and self.task is not None:
            self.busy = False
            self.task.cancel()


def _bridge_error(status: int, message: str, code: str = "bad_http") -> bytes:
    """A whole answer of the bridge's own, the connection closing after it."""
    body = json.dumps({"error": {"message": f"ccs bridge: {message}", "type": "invalid_request_error",
                                 "code": code}}).encode()
    return (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: application/json; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


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
        self._length = content_length_of(headers, WireError)
        self._chunked = is_chunked(headers, WireError)
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
            chunk = chunk_size(_line(await reader.readuntil(b"\n"), "a chunk size line"), WireError)
            if chunk == 0:
                break
            size += chunk
            if size > self._max_body:
                raise BodyTooLarge(f"a request body over {self._max_body} bytes")
            parts.append(await reader.readexactly(chunk))
            if await reader.readexactly(2) != b"\r\n":
                raise WireError("a chunk of the request's body is longer than its size said")
        trailers = 0
        while True:  # trailer fields, up to an empty line
            line = _line(await reader.readuntil(b"\n"), "a trailer line")
            if not line:
                return b"".join(parts)
            trailers += len(line)
            if trailers > MAX_HEAD:
                raise WireError(f"trailer fields over {MAX_HEAD // 1024} KiB")


def _line(line: bytes, what: str) -> bytes:
    """A line of the child's request without its CRLF; one that ends with a bare LF is refused (a
    reader that takes a bare LF for a line end and one that does not read two different requests)."""
    if line[-2:-1] != b"\r":
        raise WireError(f"{what} that ends with a bare LF, not CRLF")
    return line[:-2]


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
    """The bridge's listening side (``serve``); ``close()`` ends every connection. ``open`` counts
    the child's connections now open, ``refused`` those turned away, by why."""

    def __init__(self) -> None:
        self._accepting: asyncio.Task[None] | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self.open = 0
        self.refused: dict[str, int] = {}

    async def close(self, timeout: float = 1.0) -> None:
        if self._accepting is not None:
            self._accepting.cancel()
        tasks = list(self._connections)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)


# What any peer can make the bridge hold. A connection's first head must begin within HEAD_SECONDS
# and end within HEAD_SECONDS of its first byte; a kept connection may wait KEEPALIVE_SECONDS for
# its next request (clients' pools give theirs up after a few seconds; Go's after 90). Past
# MAX_CONNECTIONS open at once, a connection is answered 503 and closed.
HEAD_SECONDS = 10.0
KEEPALIVE_SECONDS = 120.0
MAX_CONNECTIONS = 1024
OVER_LIMIT = "over-limit"  # why a connection was refused: too many open
OTHER_USER = "other-user"  # its peer is not the launch's user (or could not be told)
Refused = Callable[[str, str], None]  # (why, one line about it)


async def serve(sock: socket.socket, handle: Handle, max_body: int, refused: Refused | None = None,
                uid: int | None = None) -> Server:
    """Serve HTTP/1.1 on a listening socket; each request goes to ``handle``, one at a time per
    connection. Every connection is checked before a byte of it is read: a peer that is not user
    ``uid`` (this process's by default; ``peers.allowed``) is closed at once, one over
    ``MAX_CONNECTIONS`` is answered 503; ``refused(why, line)`` hears of each."""
    loop = asyncio.get_running_loop()
    server = Server()
    serving = _Serving(loop, sock, server, handle, max_body, refused, os.geteuid() if uid is None else uid)
    sock.setblocking(False)
    server._accepting = loop.create_task(serving.accept())
    return server


@valueclass
class _Serving:
    """One listening socket's work: accepting connections (or turning them away), then serving each."""

    loop: asyncio.AbstractEventLoop
    sock: socket.socket
    server: Server
    handle: Handle
    max_body: int
    refused: Refused | None
    owner: int  # the uid a peer must have

    async def accept(self) -> None:
        loop, sock, server = self.loop, self.sock, self.server
        while True:
            try:
                conn, _ = await loop.sock_accept(sock)
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    await asyncio.sleep(0.05)  # out of descriptors: those open must close first
                    continue
                if sock.fileno() < 0:
                    return
                continue  # the peer gave up between the kernel's accept and ours
            peer = peers.peer_uid(conn)
            if peers.CAN_TELL and peer != self.owner:  # a peer that cannot be told is refused too
                _drop(conn)
                self.turned_away(OTHER_USER, f"a connection from uid {peer if peer is not None else 'unknown'} "
                                             "(not the launch's user) was closed before a byte of it was read")
                continue
            if server.open >= MAX_CONNECTIONS:
                _busy(conn)
                self.turned_away(OVER_LIMIT, f"more than {MAX_CONNECTIONS} connections were open at once: a "
                                             "connection past them was answered 503 and closed")
                continue
            server.open += 1
            try:
                await loop.connect_accepted_socket(self.protocol, conn)
            except OSError:
                server.open -= 1
                conn.close()

    def protocol(self) -> _ChildProtocol:
        return _ChildProtocol(asyncio.StreamReader(limit=MAX_HEAD, loop=self.loop), self.connection, loop=self.loop)

    def turned_away(self, why: str, line: str) -> None:
        self.server.refused[why] = self.server.refused.get(why, 0) + 1
        if self.refused is not None:
            self.refused(why, line)

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        proto = writer.transport.get_protocol()
        assert isinstance(proto, _ChildProtocol)
        sock = writer.get_extra_info("socket")
        if sock is not None:  # asyncio sets it only on sockets made with IPPROTO_TCP, which accept() does not
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        task = asyncio.current_task()
        proto.task = task
        if task is not None:
            self.server._connections.add(task)
        wait = HEAD_SECONDS
        try:
            while await self._one_request(reader, writer, proto, wait):
                wait = KEEPALIVE_SECONDS
        except (asyncio.CancelledError, ConnectionError, asyncio.IncompleteReadError):
            pass  # the child went away, or the bridge stops: what the request came to is recorded
        finally:
            self.server.open -= 1
            if task is not None:
                self.server._connections.discard(task)
            writer.transport.close()

    async def _one_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, proto: _ChildProtocol,
                           wait: float) -> bool:
        """Read one request (its head within ``wait`` seconds) and handle it; whether the connection
        serves another."""
        proto.expect_head(wait)
        try:
            request = await _read_request(reader, writer, proto, self.max_body)
        except WireError as exc:
            if not proto.timed_out:  # else answered 408 already
                answer = Answer(writer, proto, "HTTP/1.1", keep_alive=False)
                error = {"message": f"ccs bridge: {exc}", "type": "invalid_request_error", "code": "bad_http"}
                await answer.whole(exc.status, json.dumps({"error": error}).encode())
                await _linger(reader, writer)
            return False
        finally:
            proto.head_read()
        if request is None:
            return False
        proto.busy = True
        try:
            await self.handle(request)
        finally:
            proto.busy = False
        answer = request.answer
        if answer.ended and answer.keep_alive and request.keep_alive and request.body_read:
            return True
        if answer.ended and not request.body_read:
            await _linger(reader, writer)
        return False


def _drop(conn: socket.socket) -> None:
    """Close at once, reading and writing nothing (a reset: no TIME_WAIT kept for it)."""
    try:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    conn.close()


def _busy(conn: socket.socket) -> None:
    """A 503 for a connection past the limit, without holding it: written at once, whatever the
    peer already sent dropped, closed."""
    conn.setblocking(False)
    try:
        conn.send(_bridge_error(503, f"more than {MAX_CONNECTIONS} connections are open to this launch's bridge; "
                                     "close some and try again", "too_many_connections"))
        conn.recv(65536)
    except OSError:
        pass
    conn.close()


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
    """The next request's head, read a line at a time (a head whose lines end with a bare LF gets its
    400 at its first line, instead of waiting for a CRLF CRLF that never comes); None when the child
    closed the connection between requests."""
    lines: list[str] = []
    size = 0
    readuntil = reader.readuntil
    try:
        while True:
            line = _line(await readuntil(b"\n"), "a request line or header line")
            size += len(line) + 2
            if size > MAX_HEAD:
                raise WireError(f"a request head over {MAX_HEAD // 1024} KiB")
            if line:
                lines.append(line.decode("latin-1"))
            elif lines:
                break
            # an empty line before the request line is skipped, as the standard allows
    except asyncio.IncompleteReadError as exc:
        if lines or exc.partial.strip():
            raise WireError("the connection closed inside a request's head") from None
        return None
    except asyncio.LimitOverrunError:
        raise WireError(f"a request head over {MAX_HEAD // 1024} KiB") from None
    parts = lines[0].split(" ")
    if len(parts) != 3 or parts[2] not in ("HTTP/1.1", "HTTP/1.0") or not parts[0].isalpha() \
            or not parts[1].startswith("/") or not all("!" <= c <= "~" for c in parts[1]):
        raise WireError(f"not an HTTP/1.x request line: {lines[0][:80]!r}")
    return Request(parts[0], parts[1], parts[2], fields(lines[1:], WireError), reader, writer, proto, max_body)

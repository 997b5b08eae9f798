"""The bridge's client: one request at a time to an upstream (direct, or through the profile's HTTP
proxy), its answer's body handed back piece by piece as it arrives, connections kept between
requests.

    pool = Pool(connect_timeout=30)
    upstream = await pool.request("POST", "https://host/v1/x", headers, body, proxy=None)
    async for piece in upstream.chunks(): ...     # the body, decoded (chunked, gzip, deflate)
    upstream.release()                             # back to the pool when it ended cleanly
"""

from __future__ import annotations

import asyncio
import base64
import socket
import ssl
import time
import zlib
from collections.abc import AsyncIterator
from urllib.parse import unquote, urlsplit

from ccswitch_tui.bridge.framing import (
    BREAKS,
    MAX_HEAD,
    READ,
    ChunkedDecoder,
    Headers,
    Unreachable,
    UpstreamBroke,
    UpstreamFailed,
    content_length_of,
    decompressor,
    fields,
    is_chunked,
)

# Idle upstream connections kept per host, and for how long: an agent's parallel requests (or a
# benchmark's hundreds of streams) find theirs open again, as aiohttp's pool would keep them.
IDLE_PER_HOST = 256
IDLE_SECONDS = 15.0


PoolKey = tuple[str, str, int, str | None]  # scheme, host, port, proxy: what a kept connection serves


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

    def __init__(self, pool: Pool, key: PoolKey, conn: _Connection, method: str, status: int, headers: Headers,
                 version: str = "HTTP/1.1"):
        self._pool = pool
        self._key = key
        self._conn = conn
        self.status = status
        self.headers = headers
        self._chunked = is_chunked(headers, UpstreamFailed)
        length = content_length_of(headers, UpstreamFailed)
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
        unzip = decompressor((self.headers.get("Content-Encoding") or "").strip().lower())
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
        self._idle: dict[PoolKey, list[_Connection]] = {}
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

    def _put(self, key: PoolKey, conn: _Connection) -> None:
        idle = self._idle.setdefault(key, [])
        now = time.monotonic()
        while idle and now - idle[0].idle_since > IDLE_SECONDS:  # the oldest first: those idle too long
            idle.pop(0).close()
        if len(idle) < IDLE_PER_HOST:
            conn.idle_since = now
            idle.append(conn)
        else:
            conn.close()

    def _drop(self, key: PoolKey) -> None:
        for conn in self._idle.pop(key, []):
            conn.close()

    def _take(self, key: PoolKey) -> _Connection | None:
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
        lines += [f"{k}: {v}" for k, v in headers.items() if not any(c in k + v for c in BREAKS)]
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
        return status, fields(lines[1:], UpstreamFailed), version


def _basic(user: str, password: str) -> str:
    return base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()


def _proxy_auth(proxy: str) -> str | None:
    p = urlsplit(proxy)
    return "Basic " + _basic(p.username, p.password or "") if p.username is not None else None

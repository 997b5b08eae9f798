"""The bridge server: aiohttp on 127.0.0.1:<random port>, in a thread of its own with its own
event loop, so the supervising main thread keeps its signal handling and its blocking wait for
the child.

A route is a path prefix: the child's base URL ``{bridge.url}/{route.name}`` stands for
``route.upstream``. Every request must carry the launch token (where the child's SDK puts its key:
``Authorization``, ``x-api-key``, any header, or the query); the bridge swaps the real key in for
it, forwards the request, and streams the answer back chunk by chunk as the upstream sends it.
Each request, whatever its end, becomes one record (see ``records``).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from yarl import URL

from ccswitch_tui.bridge import records as rec
from ccswitch_tui.bridge.handler import PASSTHROUGH, Handler, Outgoing
from ccswitch_tui.bridge.observe import ResponseObserver, error_from_body, request_facts
from ccswitch_tui.bridge.reroute import TOKEN_PREFIX
from ccswitch_tui.errors import CcsError

MAX_REQUEST_BODY = 256 * 1024 * 1024
RETRY_MEMORY = 10_000  # request digests kept to recognise a retry
MAX_RECORDED_BODY = 1024 * 1024  # per body, with --record-bodies
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                         "trailer", "trailers", "transfer-encoding", "upgrade", "host", "content-length",
                         "accept-encoding", "content-encoding"})
_AUTH_HEADERS = ("authorization", "x-api-key", "api-key", "x-goog-api-key")


class BridgeError(CcsError):
    """The bridge could not start (exit 2: nothing was launched)."""


@dataclass(frozen=True)
class Route:
    name: str  # path prefix on the bridge: a-z, 0-9, '-'
    upstream: str  # the real base URL
    handler: Handler = PASSTHROUGH
    models: tuple[str, ...] = ()  # the profile's models for this route (--strict-model, findings)
    proxy: str | None = None  # the proxy the profile gives the tool for this upstream, if any


@dataclass(frozen=True)
class BridgeConfig:
    routes: tuple[Route, ...]
    key: str
    records_path: Path
    key_fingerprint: str | None = None
    record_bodies: bool = False
    strict_model: bool = False
    extra_secrets: tuple[str, ...] = ()  # more values no record may hold
    connect_timeout: float = 30.0


def utc_iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class _Stats:
    in_flight: int = 0
    ids: Any = field(default_factory=lambda: itertools.count(1))
    bodies: dict[str, int] = field(default_factory=dict)  # sha256 of a request → its first record id


class Bridge:
    """One launch's bridge: ``start()``, ``url``, ``token``, ``route_url(name)``, ``records()``, ``stop()``."""

    def __init__(self, config: BridgeConfig, token: str | None = None, sock: socket.socket | None = None):
        """``token`` and ``sock`` (a listening socket on 127.0.0.1) when they were made before the
        server loaded (see ``bridge.loading``)."""
        names = [r.name for r in config.routes]
        if len(set(names)) != len(names) or not names:
            raise ValueError(f"bridge routes need distinct names, got {names}")
        self.config = config
        self.token = token or TOKEN_PREFIX + secrets.token_urlsafe(24)
        self._sock = sock
        self._routes = {r.name: r for r in config.routes}
        self._mask = rec.Masker((config.key, self.token, *config.extra_secrets))
        self._stats = _Stats()
        self._writer: rec.RecordWriter | None = None
        self._bodies: Any = None  # with --record-bodies: the thread that masks and writes records
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.port: int | None = None

    # --- the interface ----------------------------------------------------------------------

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("the bridge is not started")
        return f"http://127.0.0.1:{self.port}"

    def route_url(self, name: str) -> str:
        return f"{self.url}/{name}"

    @property
    def records_path(self) -> Path:
        return self.config.records_path

    def records(self) -> list[dict[str, Any]]:
        return rec.read_records(self.config.records_path)

    def start(self, timeout: float = 10.0) -> Bridge:
        # The tool owns the terminal: nothing of the bridge's may print there (a failure is recorded).
        for name in ("aiohttp", "asyncio"):
            logging.getLogger(name).addHandler(logging.NullHandler())
            logging.getLogger(name).propagate = False
        self._writer = rec.RecordWriter(self.config.records_path)
        self._thread = threading.Thread(target=self._run, name="ccs-bridge", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout) or self._error is not None:
            self._writer.close()
            why = f"{type(self._error).__name__}: {self._error}" if self._error else "it did not answer in time"
            raise BridgeError(f"cannot start the recording bridge on 127.0.0.1 ({why}); launch without --record")
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving; requests still in flight are ended and recorded as ``bridge-stopped``."""
        if self._loop is not None and self._stopping is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
            self._thread.join(timeout)
        if self._bodies is not None:
            self._bodies.shutdown(wait=True)  # the records still being masked are written first
        if self._writer is not None:
            self._writer.close()

    def __enter__(self) -> Bridge:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- the loop thread --------------------------------------------------------------------

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except BaseException as exc:  # noqa: BLE001 — reported to start() through _error
            self._error = exc
            self._ready.set()
        finally:
            loop.close()

    async def _serve(self) -> None:
        self._stopping = asyncio.Event()
        connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300, enable_cleanup_closed=True)
        self._session = aiohttp.ClientSession(
            connector=connector, cookie_jar=aiohttp.DummyCookieJar(), trust_env=False, auto_decompress=True,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=self.config.connect_timeout),
            skip_auto_headers=("User-Agent",),
        )
        app = web.Application(client_max_size=MAX_REQUEST_BODY, handler_args={"access_log": None})
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=0.5)
        try:
            await runner.setup()
            site = (web.SockSite(runner, self._sock) if self._sock is not None
                    else web.TCPSite(runner, "127.0.0.1", 0, backlog=2048))
            await site.start()
            self.port = runner.addresses[0][1]
            self._ready.set()
            await self._stopping.wait()
        finally:
            await runner.cleanup()
            await self._session.close()

    # --- one request ------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        now = time.time()
        t0 = time.perf_counter()
        stats = self._stats
        raw = request.raw_path
        name, _, rest = raw[1:].partition("/")
        name, sep, query = name.partition("?")  # a bare /route?x=1
        rest = "/" + rest if not sep else "?" + query
        route = self._routes.get(name)
        record: dict[str, Any] = {
            "id": next(stats.ids), "started": utc_iso(now), "method": request.method,
            "route": name if route else None, "path": self._mask(rec.safe_url(rest if route else raw)),
            "upstream_url": None, "key_fingerprint": self.config.key_fingerprint,
            "model_requested": None, "model_served": None, "stream": False, "status": None,
            "upstream_status": None, "outcome": None, "ttfb_ms": None, "duration_ms": None,
            "in_flight": stats.in_flight, "retry_of": None,
            "input_tokens": None, "output_tokens": None, "cached_tokens": None, "reasoning_tokens": None,
            "usage_source": "missing", "request_bytes": 0, "response_bytes": 0,
            "provider_headers": {}, "system_fingerprint": None, "error": None,
        }
        stats.in_flight += 1
        try:
            return await self._forward(request, route, rest, record, t0)
        except (ConnectionResetError, aiohttp.ClientConnectionResetError) as exc:  # the child left early
            record.update(outcome=rec.CLIENT_GONE, error=f"the client went away ({type(exc).__name__})")
            raise
        except web.HTTPException as exc:  # e.g. a body over MAX_REQUEST_BODY
            record.update(status=exc.status, outcome=rec.REFUSED, error=exc.reason)
            raise
        except Exception as exc:  # noqa: BLE001 — a failure of the bridge itself: answered and recorded
            record.update(status=502, outcome=rec.BRIDGE_ERROR, error=self._mask(f"{type(exc).__name__}: {exc}"))
            return web.json_response({"error": {"message": f"ccs bridge: {record['error']}", "type": "bridge_error",
                                                "code": "bridge_error"}}, status=502)
        except asyncio.CancelledError:
            record["outcome"] = record["outcome"] or rec.STOPPED
            record["error"] = record["error"] or "the launch ended while this request was in flight"
            raise
        finally:
            stats.in_flight -= 1
            record["duration_ms"] = round((time.perf_counter() - t0) * 1000, 3)
            if self._writer is not None:
                if self.config.record_bodies:  # masking a MiB takes long: never on the event loop
                    self._body_pool().submit(self._write_with_bodies, record)
                else:
                    self._writer.write(record)

    def _refuse(self, record: dict[str, Any], status: int, message: str, route: Route | None) -> web.Response:
        record.update(status=status, outcome=rec.REFUSED, error=message)
        anthropic = route is not None and "anthropic" in route.name
        body = ({"type": "error", "error": {"type": "invalid_request_error", "message": message}} if anthropic
                else {"error": {"message": message, "type": "invalid_request_error", "code": "ccs_bridge_refused"}})
        return web.json_response(body, status=status)

    def _carries_token(self, request: web.Request) -> bool:
        token = self.token
        for value in request.headers.values():
            if token in value:
                return True
        return token in request.query_string

    async def _forward(self, request: web.Request, route: Route | None, rest: str, record: dict[str, Any],
                       t0: float) -> web.StreamResponse:
        if route is None:
            return self._refuse(record, 404, f"ccs bridge: no route {record['path']!r}; "
                                f"use one of {', '.join('/' + n for n in self._routes)}", None)
        if not self._carries_token(request):
            return self._refuse(record, 401, "ccs bridge: this request does not carry the launch's token", route)
        body = await request.read()
        record["request_bytes"] = len(body)
        facts = request_facts(body, request.headers.get("Content-Type", ""), rest)
        record["model_requested"] = facts.model
        record["stream"] = facts.stream
        if body:
            import hashlib

            digest = hashlib.sha256(request.method.encode() + rest.encode() + b"\0" + body).hexdigest()
            bodies = self._stats.bodies
            record["retry_of"] = bodies.get(digest)
            bodies.setdefault(digest, record["id"])
            if len(bodies) > RETRY_MEMORY:
                del bodies[next(iter(bodies))]
        if self.config.record_bodies:
            record["request_body"] = body  # raw: masked off the loop, when the record is written
        if self.config.strict_model and facts.model is not None and route.models and facts.model not in route.models:
            return self._refuse(record, 400, f"ccs --strict-model: this launch is pinned to "
                                f"{', '.join(route.models)}; the request asked for {facts.model!r}", route)

        token, key = self.token, self.config.key
        headers: dict[str, str] = {}
        for k, v in request.headers.items():
            low = k.lower()
            if low in _HOP_BY_HOP:
                continue
            if token in v:
                v = v.replace(token, key)
            elif low in _AUTH_HEADERS:
                continue  # a credential that is not the launch's: it never leaves ccs
            headers[k] = v
        headers["Accept-Encoding"] = "gzip, deflate"
        exchange = route.handler.exchange(request.method, rest)
        out = exchange.request(Outgoing(request.method, rest.replace(token, key), headers, body))
        added = getattr(exchange, "record_fields", None)  # optional in the Exchange protocol
        for k, v in (added() if added is not None else {}).items():
            if k not in record:  # the wire facts stay the server's
                record[k] = self._masked(v)
        url = route.upstream.rstrip("/") + out.path
        record["upstream_url"] = self._mask(rec.safe_url(url))

        try:
            upstream_cm = self._session.request(out.method, URL(url, encoded=True), headers=out.headers,
                                                data=out.body or None, allow_redirects=False, proxy=route.proxy)
            upstream = await upstream_cm.__aenter__()
        except (aiohttp.ClientConnectorError, asyncio.TimeoutError, aiohttp.InvalidURL) as exc:
            record.update(status=502, outcome=rec.UNREACHABLE,
                          error=self._mask(f"upstream unreachable: {type(exc).__name__}: {exc}"))
            return web.json_response({"error": {"message": f"ccs bridge: {record['error']}", "type": "bridge_error",
                                                "code": "upstream_unreachable"}}, status=502)
        except aiohttp.ClientError as exc:
            record.update(status=502, outcome=rec.UPSTREAM_ABORTED,
                          error=self._mask(f"upstream failed before answering: {type(exc).__name__}: {exc}"))
            return web.json_response({"error": {"message": f"ccs bridge: {record['error']}", "type": "bridge_error",
                                                "code": "upstream_failed"}}, status=502)
        try:
            return await self._relay(request, upstream, exchange, record, t0)
        finally:
            await upstream_cm.__aexit__(None, None, None)

    async def _relay(self, request: web.Request, upstream: aiohttp.ClientResponse, exchange: Any,
                     record: dict[str, Any], t0: float) -> web.StreamResponse:
        status = upstream.status
        record["upstream_status"] = status
        record["provider_headers"] = rec.provider_headers(upstream.headers)
        is_sse = upstream.headers.get("Content-Type", "").startswith("text/event-stream")
        record["stream"] = record["stream"] or is_sse
        head = {k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_BY_HOP}
        status, head = exchange.response_head(status, head)
        observes = getattr(exchange, "observes", False)  # a translation parses the answer for us: once
        record["status"] = status
        response = web.StreamResponse(status=status, headers=head)
        plain = not exchange.rewrites_body and "Content-Encoding" not in upstream.headers
        if plain and upstream.content_length is not None:
            response.content_length = upstream.content_length
        observer = ResponseObserver(stream=is_sse)
        failing = status >= 400
        error_body = bytearray()
        kept = bytearray() if self.config.record_bodies else None
        received = 0
        try:
            await response.prepare(request)
        except (ConnectionResetError, aiohttp.ClientConnectionResetError) as exc:
            self._client_gone(record, observer, exc, request, exchange)
            return response
        try:
            async for chunk in upstream.content.iter_any():
                if record["ttfb_ms"] is None:
                    record["ttfb_ms"] = round((time.perf_counter() - t0) * 1000, 3)
                received += len(chunk)
                if not observes:
                    observer.feed(chunk)
                if failing and len(error_body) < 8192:
                    error_body += chunk[:8192]
                if kept is not None and len(kept) < MAX_RECORDED_BODY:
                    kept += chunk[:MAX_RECORDED_BODY - len(kept)]
                data = exchange.response_chunk(chunk)
                if data:
                    try:
                        await response.write(data)
                    except (ConnectionResetError, aiohttp.ClientConnectionResetError) as exc:
                        record["response_bytes"] = received
                        self._client_gone(record, observer, exc, request, exchange)
                        return response
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            record["response_bytes"] = received
            self._finish(record, observer, kept, exchange)
            record.update(outcome=rec.UPSTREAM_ABORTED,
                          error=self._mask(f"upstream broke off after {received} bytes: {type(exc).__name__}: {exc}"))
            if request.transport is not None:
                request.transport.abort()  # the child must see a cut answer, not a clean end
            return response
        record["response_bytes"] = received
        if record["ttfb_ms"] is None:
            record["ttfb_ms"] = round((time.perf_counter() - t0) * 1000, 3)
        tail = exchange.response_end()  # before the outcome: a translation's error is known once it ended
        error = self._finish(record, observer, kept, exchange)
        if failing:
            record["outcome"] = rec.UPSTREAM_ERROR
            record["error"] = self._mask(error or (None if observes else error_from_body(bytes(error_body)))) \
                or f"HTTP {status}"
        elif error:
            record["outcome"] = rec.UPSTREAM_ERROR
            record["error"] = self._mask(error)
        else:
            record["outcome"] = rec.OK
        try:
            if tail:
                await response.write(tail)
            await response.write_eof()
        except (ConnectionResetError, aiohttp.ClientConnectionResetError) as exc:
            self._client_gone(record, observer, exc, request, exchange)
        return response

    def _finish(self, record: dict[str, Any], observer: ResponseObserver, kept: bytearray | None,
                exchange: Any = None) -> str | None:
        """The answer's facts into the record; the provider's error, if it sent one."""
        if kept is not None:
            record["response_body"] = bytes(kept)  # raw: masked off the loop, when the record is written
        if getattr(exchange, "observes", False):  # the translation's own reading (see bridge.handler)
            seen = dict(exchange.observed())
            error = seen.pop("error", None)
            record.update({k: self._masked(v) for k, v in seen.items()})
            return error
        observer.finish()
        record["model_served"] = observer.model
        record["system_fingerprint"] = observer.system_fingerprint
        record.update(observer.usage.as_fields())
        return observer.error

    def _client_gone(self, record: dict[str, Any], observer: ResponseObserver, exc: BaseException,
                     request: web.Request, exchange: Any = None) -> None:
        self._finish(record, observer, None, exchange)
        record.update(outcome=rec.CLIENT_GONE, error=f"the client went away mid-answer ({type(exc).__name__})")
        if request.transport is not None:
            request.transport.abort()

    def _masked(self, value: Any) -> Any:
        """A handler's record field with its text masked like every text from outside."""
        if isinstance(value, str):
            return self._mask(value)
        if isinstance(value, (list, tuple)):
            return [self._masked(v) for v in value]
        if isinstance(value, dict):
            return {k: self._masked(v) for k, v in value.items()}
        return value

    def _body_pool(self) -> Any:
        if self._bodies is None:
            from concurrent.futures import ThreadPoolExecutor

            self._bodies = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ccs-bridge-bodies")
        return self._bodies

    def _write_with_bodies(self, record: dict[str, Any]) -> None:
        """In the bodies thread, one record at a time (so in the order they ended)."""
        for k in ("request_body", "response_body"):
            if isinstance(record.get(k), bytes):
                record[k] = self._body_text(record[k])
        if self._writer is not None:
            self._writer.write(record)

    def _body_text(self, body: bytes) -> str:
        text = body[:MAX_RECORDED_BODY].decode("utf-8", "replace")
        if len(body) > MAX_RECORDED_BODY:
            text += f"… [{len(body) - MAX_RECORDED_BODY} more bytes not recorded]"
        return mask_in_pieces(self._mask, text, self._cuts())

    def _cuts(self) -> str:
        """Where a body may be cut for masking: characters no secret of this bridge contains (and
        no credential shape does)."""
        secrets_ = (self.config.key, self.token, *self.config.extra_secrets)
        return "".join(c for c in _CUT_CHARS if not any(c in s for s in secrets_))


_CUT_CHARS = '",{}[]:'
MASK_PIECE = 8192  # characters masked per step; the event loop's thread may run between two steps


def mask_in_pieces(mask: Any, text: str, cuts: str, size: int = MASK_PIECE) -> str:
    """``mask(text)`` a piece at a time, each piece ending at one of ``cuts`` (which nothing to be
    masked contains), yielding the interpreter between pieces: one regex over a MiB holds it for
    about 0.2 s, which would stall every stream the bridge serves."""
    if len(text) <= size or not cuts:
        return mask(text) or ""
    out = []
    start, end = 0, len(text)
    while start < end:
        stop = min(end, start + size)
        if stop < end:
            cut = max(text.rfind(c, start, stop) for c in cuts)
            if cut > start:
                stop = cut + 1
            else:  # no cut in this window: to the next one (or the end)
                found = [i for i in (text.find(c, stop) for c in cuts) if i >= 0]
                stop = min(found) + 1 if found else end
        out.append(mask(text[start:stop]) or "")
        start = stop
        time.sleep(0)  # let the event loop's thread take the interpreter
    return "".join(out)


def routes_json(routes: Sequence[Route]) -> dict[str, str]:
    """Route name → upstream base URL (no secrets), for the manifest."""
    return {r.name: rec.safe_url(r.upstream) for r in routes}

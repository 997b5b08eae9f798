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

    def __init__(self, config: BridgeConfig):
        names = [r.name for r in config.routes]
        if len(set(names)) != len(names) or not names:
            raise ValueError(f"bridge routes need distinct names, got {names}")
        self.config = config
        self.token = TOKEN_PREFIX + secrets.token_urlsafe(24)
        self._routes = {r.name: r for r in config.routes}
        self._mask = rec.Masker((config.key, self.token, *config.extra_secrets))
        self._stats = _Stats()
        self._writer: rec.RecordWriter | None = None
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
            site = web.TCPSite(runner, "127.0.0.1", 0, backlog=2048)
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
            record["request_body"] = self._body_text(body)
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
            self._client_gone(record, observer, exc, request)
            return response
        try:
            async for chunk in upstream.content.iter_any():
                if record["ttfb_ms"] is None:
                    record["ttfb_ms"] = round((time.perf_counter() - t0) * 1000, 3)
                received += len(chunk)
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
                        self._client_gone(record, observer, exc, request)
                        return response
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            record["response_bytes"] = received
            self._finish(record, observer, kept)
            record.update(outcome=rec.UPSTREAM_ABORTED,
                          error=self._mask(f"upstream broke off after {received} bytes: {type(exc).__name__}: {exc}"))
            if request.transport is not None:
                request.transport.abort()  # the child must see a cut answer, not a clean end
            return response
        record["response_bytes"] = received
        if record["ttfb_ms"] is None:
            record["ttfb_ms"] = round((time.perf_counter() - t0) * 1000, 3)
        self._finish(record, observer, kept)
        if failing:
            record["outcome"] = rec.UPSTREAM_ERROR
            record["error"] = self._mask(observer.error or error_from_body(bytes(error_body))) or f"HTTP {status}"
        elif observer.error:
            record["outcome"] = rec.UPSTREAM_ERROR
            record["error"] = self._mask(observer.error)
        else:
            record["outcome"] = rec.OK
        try:
            tail = exchange.response_end()
            if tail:
                await response.write(tail)
            await response.write_eof()
        except (ConnectionResetError, aiohttp.ClientConnectionResetError) as exc:
            self._client_gone(record, observer, exc, request)
        return response

    def _finish(self, record: dict[str, Any], observer: ResponseObserver, kept: bytearray | None) -> None:
        observer.finish()
        record["model_served"] = observer.model
        record["system_fingerprint"] = observer.system_fingerprint
        record.update(observer.usage.as_fields())
        if kept is not None:
            record["response_body"] = self._body_text(bytes(kept))

    def _client_gone(self, record: dict[str, Any], observer: ResponseObserver, exc: BaseException,
                     request: web.Request) -> None:
        self._finish(record, observer, None)
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

    def _body_text(self, body: bytes) -> str:
        text = body[:MAX_RECORDED_BODY].decode("utf-8", "replace")
        if len(body) > MAX_RECORDED_BODY:
            text += f"… [{len(body) - MAX_RECORDED_BODY} more bytes not recorded]"
        return self._mask(text) or ""


def routes_json(routes: Sequence[Route]) -> dict[str, str]:
    """Route name → upstream base URL (no secrets), for the manifest."""
    return {r.name: rec.safe_url(r.upstream) for r in routes}

"""The bridge server: HTTP/1.1 on 127.0.0.1:<random port> (``bridge.wire``, the standard library
alone), in a thread of its own with its own event loop, so the supervising main thread keeps its
signal handling and its blocking wait for the child.

A route is a path prefix: the child's base URL ``{bridge.url}/{route.name}`` stands for
``route.upstream``. Every request must carry the launch token (where the child's SDK puts its key:
``Authorization``, ``x-api-key``, any header, or the query); the bridge swaps the real key in for
it, forwards the request, and streams the answer back chunk by chunk as the upstream sends it.
Each request, whatever its end, becomes one record (see ``records``).

Both directions are filtered: the child's token becomes the key on the way out, and on the way
back every byte (headers, ``Location``, bodies, what a route's handler writes) passes a
``SecretFilter`` (``bridge.outbound``) that turns the key back into the token and every other known
secret into its mask, before the child or a record sees it. A record's outcome is what the child
got: ``ok`` once the answer's end reached it, whatever happens to the last bytes of the chunking.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import secrets
import socket
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from ccswitch_tui.bridge import records as rec
from ccswitch_tui.bridge import wire
from ccswitch_tui.bridge.handler import PASSTHROUGH, Exchange, GivesUp, Handler, Outgoing
from ccswitch_tui.bridge.observe import (
    ResponseObserver,
    error_from_body,
    request_facts_in_steps,
    request_identity_in_steps,
)
from ccswitch_tui.bridge.outbound import MIN_SECRET, SecretFilter
from ccswitch_tui.bridge.provider_errors import classify_text
from ccswitch_tui.bridge.record import BODIES, ConnectionRecord, RequestRecord
from ccswitch_tui.bridge.reroute import TOKEN_PREFIX
from ccswitch_tui.bridge.routes import ANTHROPIC_MESSAGES, Dialect, leaves_route, split_target
from ccswitch_tui.errors import CcsError
from ccswitch_tui.policy.secret_forms import FormStream
from ccswitch_tui.valueclass import field, valueclass

MAX_REQUEST_BODY = 256 * 1024 * 1024
RETRY_MEMORY = 10_000  # request digests kept to recognise a retry
MAX_RECORDED_BODY = 1024 * 1024  # per body, with --record-bodies
MAX_ERROR_BODY = 8192  # of an error answer, read for its message
LOST_EVERY = 10.0  # seconds between two stderr lines about records that could not be written
_BODY_MARGIN = 4096  # read past a cut, so that a secret across it is masked whole before cutting
# The bridge reads (decodes) every answer before the child gets it, to keep secrets out: it asks for
# what it decodes (``bridge.wire``), and answers 502 for any other Content-Encoding.
ACCEPT_ENCODING = "gzip, deflate"
_READABLE_ENCODINGS = frozenset({"", "identity", "gzip", "deflate"})
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                         "trailer", "trailers", "transfer-encoding", "upgrade", "host", "content-length",
                         "accept-encoding", "content-encoding"})
_AUTH_HEADERS = ("authorization", "x-api-key", "api-key", "x-goog-api-key")
# A request's task id, as an agent tags it (``extra_headers`` in the SDKs): recorded as ``task``, and never
# sent upstream.
TASK_HEADER = "x-ccs-task"
MAX_TASK_ID = 200


class BridgeError(CcsError):
    """The bridge could not start (exit 2: nothing was launched)."""


@valueclass(frozen=True)
class Route:
    name: str  # path prefix on the bridge: a-z, 0-9, '-'
    upstream: str  # the real base URL
    handler: Handler = PASSTHROUGH
    models: tuple[str, ...] = ()  # the profile's models for this route (--strict-model, findings)
    proxy: str | None = None  # the proxy the profile gives the tool for this upstream, if any

    @property
    def dialect(self) -> Dialect:
        """The API the child speaks on it, as its handler declares it (bridge.routes): the bridge's
        own errors take its shape, and its records name it."""
        return self.handler.dialect


@valueclass(frozen=True)
class BridgeConfig:
    routes: tuple[Route, ...]
    key: str
    records_path: Path
    key_fingerprint: str | None = None
    record_bodies: bool = False
    strict_model: bool = False
    extra_secrets: tuple[str, ...] = ()  # more values no record may hold and the child never gets back
    connect_timeout: float = 30.0


def utc_iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@valueclass
class _Stats:
    in_flight: int = 0
    ids: Any = field(default_factory=lambda: itertools.count(1))
    bodies: dict[str, int] = field(default_factory=dict)  # a request's identity (its try) → its first record id


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
        self._routes = {r.name: r for r in config.routes}
        extra = tuple(s for s in config.extra_secrets if len(s) >= MIN_SECRET and s != config.key)
        self._mask = rec.Masker((config.key, self.token, *extra))
        # What goes back to the child: the key becomes the token it sent, any other secret its mask.
        self._filter = SecretFilter([(config.key, self.token), *((s, rec.mask_value(s)) for s in extra)])
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stats = _Stats()
        self._writer: rec.RecordWriter | None = None
        self._bodies: Any = None  # with --record-bodies: the thread that masks and writes records
        self._switch: float | None = None  # the interpreter's switch interval before the bridge set its own
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.port: int | None = None
        self._sock: socket.socket | None = sock
        self._server: wire.Server | None = None
        self._refusals: set[str] = set()
        self._lost_said = 0.0
        self._lost_reported = 0

    # --- the interface ----------------------------------------------------------------------

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("the bridge is not started")
        return f"http://127.0.0.1:{self.port}"

    def route_url(self, name: str) -> str:
        return f"{self.url}/{name}"

    @property
    def listen_fd(self) -> int:
        """The listening socket's descriptor (for ``bridge.guard``)."""
        if self._sock is None:
            raise RuntimeError("the bridge is not started")
        return self._sock.fileno()

    @property
    def records_path(self) -> Path:
        return self.config.records_path

    def records(self) -> list[dict[str, Any]]:
        return rec.read_records(self.config.records_path)

    def start(self, timeout: float = 10.0) -> Bridge:
        # The tool owns the terminal: nothing of the bridge's may print there (a failure is recorded).
        logging.getLogger("asyncio").addHandler(logging.NullHandler())
        logging.getLogger("asyncio").propagate = False
        try:
            # Made here (or before the server loaded), so that a guard can share it (``bridge.guard``).
            sock = self._sock or socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            if self._sock is None:
                sock.bind(("127.0.0.1", 0))
                sock.listen(2048)
            sock.setblocking(False)
        except OSError as exc:
            raise BridgeError(f"cannot start the recording bridge on 127.0.0.1 ({exc}); launch without --record") \
                from None
        self._sock = sock
        self._writer = rec.RecordWriter(self.config.records_path, on_lost=self._record_lost)
        if self.config.record_bodies:
            # The bodies thread runs Python for hundreds of ms per MiB (masking). By default the
            # interpreter hands itself to the waiting event loop only every 5 ms, and each stream's
            # next event would wait that long: hand over within half a millisecond instead.
            self._switch = sys.getswitchinterval()
            sys.setswitchinterval(min(self._switch, BODIES_SWITCH_INTERVAL))
        self._thread = threading.Thread(target=self._run, name="ccs-bridge", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout) or self._error is not None:
            self._writer.close()
            sock.close()
            why = f"{type(self._error).__name__}: {self._error}" if self._error else "it did not answer in time"
            raise BridgeError(f"cannot start the recording bridge on 127.0.0.1 ({why}); launch without --record")
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving; requests still in flight are ended and recorded as ``bridge-stopped``."""
        if self._loop is not None and self._stopping is not None and self._thread is not None:
            if self._thread.is_alive():
                self._loop.call_soon_threadsafe(self._stopping.set)
            self._thread.join(timeout)
        if self._bodies is not None:
            self._bodies.shutdown(wait=True)  # the records still being masked are written first
        if self._switch is not None:
            sys.setswitchinterval(self._switch)
            self._switch = None
        if self._writer is not None:
            self._writer.close()
        if self._sock is not None:
            self._sock.close()

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
        # No proxy from the environment, no cookies, no User-Agent of the bridge's own.
        self._pool = wire.Pool(self.config.connect_timeout)
        if any(r.upstream[:6].lower() == "https:" for r in self.config.routes):
            self._pool.prepare_tls()  # the system's CAs are read in a thread while the first request comes
        server: wire.Server | None = None
        try:
            # A child that hangs up ends its request at once (recorded), even while the upstream has
            # not answered yet.
            if self._sock is None:
                raise RuntimeError("the bridge's socket is bound by start(), before the loop serves")
            server = await wire.serve(self._sock, self._handle, MAX_REQUEST_BODY, refused=self._refused)
            self._server = server
            self.port = self._sock.getsockname()[1]
            self._ready.set()
            await self._stopping.wait()
            # Requests still in flight end now, each recorded as bridge-stopped, before the file closes.
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.wait(tasks, timeout=2.0)
        finally:
            if server is not None:
                await server.close(0.5)
            await self._pool.close()

    @property
    def records_lost(self) -> int:
        """Records that could not be written (a full disk): for the manifest."""
        return self._writer.lost if self._writer is not None else 0

    def lost_unreported(self) -> int:
        """Records lost since the last stderr line about them."""
        return self.records_lost - self._lost_reported

    def _record_lost(self, lost: int, why: str) -> None:
        """Said on stderr at the time (the first, then at most every few seconds with the count so
        far); the launch's end says the total (``bridge.session``)."""
        now = time.monotonic()
        if lost > 1 and now - self._lost_said < LOST_EVERY:
            return
        self._lost_said = now
        self._lost_reported = lost
        print(f"ccs: warning: a request record could not be written to {self.config.records_path} ({why}); "
              f"{lost} lost so far: this run's request counts and totals will be short", file=sys.stderr)

    def connections_refused(self) -> dict[str, int]:
        """Connections turned away before a request was read, by why (``wire.OVER_LIMIT``,
        ``wire.OTHER_USER``): for the manifest."""
        return dict(self._server.refused) if self._server is not None else {}

    def _refused(self, why: str, line: str) -> None:
        """A connection turned away: the first of each kind is a record (a flood is not thousands)."""
        if why in self._refusals or self._writer is None:
            return
        self._refusals.add(why)
        self._writer.write(ConnectionRecord(
            id=next(self._stats.ids), started=utc_iso(time.time()), key_fingerprint=self.config.key_fingerprint,
            status=503 if why == wire.OVER_LIMIT else None, in_flight=self._stats.in_flight,
            error=f"ccs bridge: {line}; further ones are counted in the manifest").as_dict())

    # --- one request ------------------------------------------------------------------------

    async def _handle(self, request: wire.Request) -> None:  # noqa: C901
        now = time.time()
        t0 = time.perf_counter()
        stats = self._stats
        raw = request.raw_path
        name, rest = split_target(raw)
        route = self._routes.get(name)
        record = RequestRecord(
            id=next(stats.ids), started=utc_iso(now), method=request.method, route=name if route else None,
            dialect=route.dialect if route else None,
            path=self._mask(rec.safe_url(rest if route else raw)), key_fingerprint=self.config.key_fingerprint,
            in_flight=stats.in_flight)
        task_id = request.headers.get(TASK_HEADER)
        if task_id is not None:
            record.task = self._mask.clip(task_id.strip(), MAX_TASK_ID) or None
        answer = _Answer()
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        stats.in_flight += 1
        try:
            reply = await self._forward(request, route, rest, record, t0, answer)
            if reply is not None:
                await request.answer.whole(reply.status, reply.body)
        except ConnectionError as exc:  # the child left early
            self._ended_early(record, answer, rec.CLIENT_GONE, f"the client went away ({type(exc).__name__})")
            raise
        except wire.WireError as exc:  # a body over MAX_REQUEST_BODY, or one that breaks HTTP
            record.ended(rec.REFUSED, self._mask.clip(str(exc)), status=exc.status)
            reply = self._bridge_answer(exc.status, record.error, "bad_request_body")
            await request.answer.whole(reply.status, reply.body)
        except Exception as exc:  # noqa: BLE001 — a failure of the bridge itself: answered and recorded
            record.ended(rec.BRIDGE_ERROR, self._mask.clip(f"{type(exc).__name__}: {exc}"), status=502)
            if answer.prepared:  # the head went out already: the child must see a cut answer
                request.answer.abort()
                return
            reply = self._bridge_answer(502, record.error, "bridge_error")
            await request.answer.whole(reply.status, reply.body)
        except asyncio.CancelledError:
            # The launch ended (stop) or the child hung up (``bridge.wire`` cancels the handling then).
            if self._stopping is not None and self._stopping.is_set():
                self._ended_early(record, answer, rec.STOPPED, "the launch ended while this request was in flight")
            else:
                self._ended_early(record, answer, rec.CLIENT_GONE, "the client went away before the answer ended")
            raise
        finally:
            stats.in_flight -= 1
            if task is not None:
                self._tasks.discard(task)
            record.duration_ms = round((time.perf_counter() - t0) * 1000, 3)
            if self._writer is not None:
                if self.config.record_bodies:  # masking a MiB takes long: never on the event loop
                    self._body_pool().submit(self._write_with_bodies, record)
                else:
                    self._writer.write(record.as_dict())

    def _bridge_answer(self, status: int, message: str | None, code: str) -> _Reply:
        """An answer made by the bridge itself (its text already masked, and filtered like any other)."""
        text = self._filter.text(f"ccs bridge: {message}")
        return _Reply(status, {"error": {"message": text, "type": "bridge_error", "code": code}})

    def _refuse(self, record: RequestRecord, status: int, message: str, route: Route | None) -> _Reply:
        record.ended(rec.REFUSED, self._mask.clip(message, 2000), status=status)
        message = self._filter.text(message)
        anthropic = route is not None and route.dialect == ANTHROPIC_MESSAGES  # the error in the child's API
        body = ({"type": "error", "error": {"type": "invalid_request_error", "message": message}} if anthropic
                else {"error": {"message": message, "type": "invalid_request_error", "code": "ccs_bridge_refused"}})
        return _Reply(status, body)

    def _carries_token(self, request: wire.Request) -> bool:
        token = self.token
        for _, value in request.headers:
            if token in value:
                return True
        return token in request.query_string or token in unquote(request.query_string)

    async def _forward(self, request: wire.Request, route: Route | None, rest: str, record: RequestRecord,  # noqa: C901
                       t0: float, answer: _Answer) -> _Reply | None:
        """Forward one request and relay its answer (None), or the bridge's own answer to send."""
        if route is None:
            return self._refuse(record, 404, f"ccs bridge: no route {record.path!r}; "
                                f"use one of {', '.join('/' + n for n in self._routes)}", None)
        if leaves_route(rest):
            return self._refuse(record, 400, f"ccs bridge: the path {record.path!r} climbs out of the route "
                                f"/{route.name} (a '..' segment, perhaps encoded); it was not sent upstream", route)
        if not self._carries_token(request):
            return self._refuse(record, 401, "ccs bridge: this request does not carry the launch's token", route)
        body = await request.read()
        record.request_bytes = len(body)
        facts = await _in_steps(request_facts_in_steps(body, request.headers.get("Content-Type", ""), rest))
        # A model name is the child's text: the token sent as a model must not land in a record.
        record.model_requested = self._mask.exact(facts.model)
        record.stream = facts.stream
        if body:  # the same try as an earlier request, by meaning (observe.request_identity_in_steps)
            digest = await _in_steps(request_identity_in_steps(request.method, rest, body))
            bodies = self._stats.bodies
            record.retry_of = bodies.get(digest)
            bodies.setdefault(digest, record.id)
            if len(bodies) > RETRY_MEMORY:
                del bodies[next(iter(bodies))]
        if self.config.record_bodies:
            record.request_body = body  # raw: masked off the loop, when the record is written
        if self.config.strict_model and facts.model is not None and route.models and facts.model not in route.models:
            return self._refuse(record, 400, f"ccs --strict-model: this launch is pinned to "
                                f"{', '.join(route.models)}; the request asked for {facts.model!r}", route)

        token, key = self.token, self.config.key
        headers: dict[str, str] = {}
        for k, v in request.headers.items():
            low = k.lower()
            if low in _HOP_BY_HOP or low == TASK_HEADER:
                continue
            if token in v:
                v = v.replace(token, key)
            elif low in _AUTH_HEADERS:
                continue  # a credential that is not the launch's: it never leaves ccs
            headers[k] = v
        headers["Accept-Encoding"] = ACCEPT_ENCODING
        exchange = route.handler.exchange(request.method, rest)
        # in a URL the key is percent-encoded: a "+" left as it is would reach the upstream as a space
        out = exchange.request(Outgoing(request.method, rest.replace(token, quote(key, safe="")), headers, body))
        added = getattr(exchange, "record_fields", None)  # optional in the Exchange protocol
        for k, v in (added() if added is not None else {}).items():
            record.add_handler_field(k, self._masked(v))  # the wire facts stay the server's
        url = route.upstream.rstrip("/") + out.path
        record.upstream_url = self._mask(rec.safe_url(url))

        try:
            upstream = await self._pool.request(out.method, url, out.headers, out.body, proxy=route.proxy)
        except wire.Unreachable as exc:
            record.ended(rec.UNREACHABLE, self._mask.clip(f"upstream unreachable: {exc}"), status=502)
            return self._bridge_answer(502, record.error, "upstream_unreachable")
        except wire.UpstreamFailed as exc:
            record.ended(rec.UPSTREAM_ABORTED, self._mask.clip(f"upstream failed before answering: {exc}"), status=502)
            return self._bridge_answer(502, record.error, "upstream_failed")
        try:
            return await self._relay(request, route, upstream, exchange, record, t0, answer)
        finally:
            upstream.release()

    def _child_head(self, route: Route, headers: wire.Headers) -> dict[str, str]:
        """The upstream's headers as the child may see them: no hop-by-hop header, no secret in a
        name or a value, and a ``Location`` into the upstream pointed at the bridge's route."""
        f = self._filter
        head = {f.text(k): f.text(v) for k, v in headers.items() if k.lower() not in _HOP_BY_HOP}
        for name in [k for k in head if k.lower() in ("location", "content-location")]:
            head[name] = self._into_route(route, head[name])
        return head

    def _into_route(self, route: Route, location: str) -> str:
        """A redirect into the upstream (absolute, or a path under its base) goes to the bridge route
        that stands for it, so that the child follows it through the bridge with its token."""
        base = route.upstream.rstrip("/")
        base_path = urlsplit(base).path.rstrip("/")
        if location.startswith(base + "/") or location == base:
            return self.route_url(route.name) + location[len(base):]
        if base_path and location.startswith(base_path + "/"):
            return f"/{route.name}" + location[len(base_path):]
        if not base_path and location.startswith("/") and not location.startswith("//"):
            return f"/{route.name}" + location
        return location

    async def _relay(self, request: wire.Request, route: Route, upstream: wire.Upstream, exchange: Exchange,
                     record: RequestRecord, t0: float, answer: _Answer) -> _Reply | None:
        status = upstream.status
        record.upstream_status = status
        upstream_head = {k: self._filter.text(v) for k, v in upstream.headers.items()}
        record.provider_headers = {k: self._mask.exact(v) or "" for k, v in
                                      rec.provider_headers(upstream_head).items()}
        ctype = upstream.headers.get("Content-Type", "")
        is_sse = ctype.startswith("text/event-stream")
        record.stream = record.stream or is_sse
        encoding = upstream.headers.get("Content-Encoding", "").strip().lower()
        if encoding not in _READABLE_ENCODINGS:
            # Bytes the bridge cannot read are bytes it cannot keep secrets out of.
            record.ended(rec.UPSTREAM_ERROR, self._mask.clip(
                f"the upstream answered HTTP {status} in Content-Encoding {encoding!r}, which the bridge cannot "
                "read; answered 502"), status=502)
            return self._bridge_answer(502, record.error, "upstream_encoding")
        status, head = exchange.response_head(status, self._child_head(route, upstream.headers))
        head = {self._filter.text(k): self._filter.text(v) for k, v in head.items()}  # what the handler added
        answer.exchange = exchange
        answer.observes = getattr(exchange, "observes", False)  # a translation parses the answer for us: once
        record.status = status
        child = request.answer
        plain = not exchange.rewrites_body and not encoding and not self._filter
        length = upstream.content_length if plain else None
        observer = ResponseObserver(stream=is_sse)
        answer.observer = observer
        answer.failing = status >= 400
        answer.upstream_type = ctype
        if exchange.rewrites_body and not answer.observes:  # what the child gets is not what the upstream
            # sent: watch it too (a translation says itself what it sent: see bridge.handler)
            child_sse = any(k.lower() == "content-type" and v.startswith("text/event-stream") for k, v in head.items())
            answer.child = ResponseObserver(stream=child_sse)
        kept = bytearray() if self.config.record_bodies else None
        answer.kept = kept
        # What a handler returns is filtered on its way to the child (a translation that joins two
        # halves of a secret writes it whole); what it reads needs no filter of its own then, one
        # pass instead of two, and what a record keeps of it is masked when written.
        upstream_filter = None if exchange.rewrites_body else self._filter.stream()
        child_filter = self._filter.stream() if exchange.rewrites_body else None
        try:
            await child.prepare(status, head, length)
        except ConnectionError as exc:
            gone = f"the client went away mid-answer ({type(exc).__name__})"
            self._ended_early(record, answer, rec.CLIENT_GONE, gone)
            child.abort()
            return None
        answer.prepared = True
        pump = _Pump(child, exchange, answer, upstream_filter, child_filter, kept)
        try:
            try:
                await pump.pour(upstream, record, t0)
            except wire.UpstreamBroke as exc:
                self._finish(record, answer)
                record.ended(rec.UPSTREAM_ABORTED, self._mask.clip(
                    f"upstream broke off after {pump.received} bytes: {exc}"))
                child.abort()  # the child must see a cut answer, not a clean end
                return None
            if record.ttfb_ms is None:
                record.ttfb_ms = round((time.perf_counter() - t0) * 1000, 3)
            await pump.send(pump.take(b""))
            await pump.send(exchange.response_end(), last=True)
            answer.delivered = True  # every byte of the answer is out; only the end of the chunking remains
            await child.end()
            if not answer.observes:  # a large JSON answer is read a piece at a time, the loop serving others
                await _in_steps(observer.finish_in_steps())
            self._finish(record, answer)
            self._conclude(record, answer, pump.error_body)
        except ConnectionError as exc:
            gone = f"the client went away mid-answer ({type(exc).__name__})"
            self._ended_early(record, answer, rec.CLIENT_GONE, gone, pump.error_body)
            child.abort()
        return None

    def _finish(self, record: RequestRecord, answer: _Answer) -> None:
        if answer.finished or answer.observer is None:
            return
        answer.finished = True
        observer = answer.observer
        observer.finish()
        if answer.child is not None:
            answer.child.finish()
        if answer.kept is not None:
            record.response_body = bytes(answer.kept)  # raw: masked off the loop, when the record is written
        if answer.observes:  # the translation's own reading of the answer (see bridge.handler)
            seen = dict(answer.exchange.observed())
            answer.error = seen.pop("error", None)
            answer.upstream = seen.pop("upstream", None) or {}
            for k, v in seen.items():
                record.set_answer_field(k, self._mask.exact(v) if k in ("model_served", "system_fingerprint")
                                        else self._masked(v))
            return
        answer.error = observer.error
        record.model_served = self._mask.exact(observer.model)
        record.system_fingerprint = self._mask.exact(observer.system_fingerprint)
        for k, v in observer.usage.as_fields().items():
            record.set_answer_field(k, v)

    def _conclude(self, record: RequestRecord, answer: _Answer, error_body: bytearray | None = None) -> None:
        """The outcome of an answer whose end reached the child: what the child was told."""
        observer = answer.observer
        assert observer is not None
        status = record.status
        child_error = answer.child.error if answer.child is not None else None
        if answer.failing:
            text = answer.error or (None if answer.observes else error_from_body(bytes(error_body or b""))) \
                or child_error
            record.ended(rec.UPSTREAM_ERROR, self._mask.clip(text) or f"HTTP {status}")
        elif answer.error:
            text = answer.error
            if answer.observes and not answer.upstream.get("said_error"):  # the translation failed on what
                # the upstream sent
                text = f"{text} (the upstream sent {self._describe(record, answer)})"
            record.ended(rec.UPSTREAM_ERROR, self._mask.clip(text, 1000))
        elif child_error:  # the translation failed: say so, and what the upstream sent that it could not use
            record.ended(rec.UPSTREAM_ERROR, self._mask.clip(
                f"{child_error} (the upstream sent {self._describe(record, answer)})", 1000))
        else:
            record.ended(rec.OK, None)
        if record.outcome == rec.UPSTREAM_ERROR and record.error_class is None:  # a translation classes its own
            record.error_class = classify_text(record.upstream_status, record.error)

    def _describe(self, record: RequestRecord, answer: _Answer) -> str:
        """What the upstream answered, in a few words: status, type, size, and how it begins."""
        observer = answer.observer
        size = record.response_bytes
        what = f"HTTP {record.upstream_status} {answer.upstream_type or 'without a Content-Type'}"
        if not size:
            return f"{what} with an empty body"
        stream = observer is not None and observer.stream
        seen = answer.upstream if answer.observes else {"saw_data": observer is not None and observer.saw_data,
                                                          "terminal": observer is not None and observer.terminal}
        if stream and not seen.get("saw_data"):
            what += f", {size} bytes without one SSE data line"
        elif stream and not seen.get("terminal"):
            what += f", {size} bytes that never ended the stream"
        else:
            what += f", {size} bytes"
        begins = " ".join(bytes(answer.sample).decode("utf-8", "replace").split())[:120]
        begins = "".join(c for c in begins if c.isprintable())
        return f"{what} beginning {begins!r}"

    def _ended_early(self, record: RequestRecord, answer: _Answer, outcome: str, why: str,
                     error_body: bytearray | None = None) -> None:
        """The child hung up or the launch ended before the relay finished. An answer whose end had
        reached the child keeps the outcome of what it was told; any other is ``outcome``."""
        if record.outcome is not None and answer.delivered:
            return  # concluded already; only the end of the chunking was lost
        self._finish(record, answer)
        if answer.delivered and answer.observer is not None:
            self._conclude(record, answer, error_body)
            return
        if record.outcome is None:
            record.ended(outcome, why)

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

            self._bodies = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ccs-bridge-bodies",
                                              initializer=_in_the_background)
        return self._bodies

    def _write_with_bodies(self, record: RequestRecord) -> None:
        """In the bodies thread, one record at a time (so in the order they ended)."""
        if isinstance(record.request_body, bytes):
            record.request_body = self._body_text(record.request_body)
        if isinstance(record.response_body, bytes):
            record.response_body = self._body_text(record.response_body)
        if self._writer is not None:
            self._writer.write(record.as_dict(), large=BODIES)

    def _body_text(self, body: bytes) -> str:
        """A body for the record: masked first (with a margin past the cut, so that a secret across it
        is masked whole), cut after; masked a piece at a time, off the event loop."""
        text = body[:MAX_RECORDED_BODY + _BODY_MARGIN].decode("utf-8", "replace")
        text = mask_in_pieces(self._mask, text, self._cuts())
        if len(body) > MAX_RECORDED_BODY:
            head = len(text.encode()[:MAX_RECORDED_BODY].decode("utf-8", "ignore"))
            text = text[:head] + f"… [{len(body) - MAX_RECORDED_BODY} more bytes not recorded]"
        return text

    def _cuts(self) -> str:
        """Where a body may be cut for masking: characters no secret of this bridge contains (and
        no credential shape does)."""
        secrets_ = (self.config.key, self.token, *self.config.extra_secrets)
        return "".join(c for c in _CUT_CHARS if not any(c in s for s in secrets_))


_CUT_CHARS = '",{}[]:'
MASK_PIECE = 8192  # characters masked per step; the event loop's thread may run between two steps


def mask_in_pieces(mask: Callable[[str], str | None], text: str, cuts: str, size: int = MASK_PIECE) -> str:
    """``mask(text)`` a piece at a time, each piece ending at one of ``cuts`` (which nothing to be
    masked contains), giving way to the event loop between pieces: masking a MiB takes about 0.2 s,
    which would stall every stream the bridge serves."""
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
        took = time.perf_counter()
        out.append(mask(text[start:stop]) or "")
        start = stop
        rec.give_way(time.perf_counter() - took)
    return "".join(out)


async def _in_steps(steps: Generator[None, None, Any] | Iterator[None]) -> Any:
    """Run ``steps`` to its end, letting the event loop serve others at each of its pauses."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
        await asyncio.sleep(0)


BODIES_SWITCH_INTERVAL = 0.0005


def _in_the_background() -> None:
    """The bodies thread yields the CPU to the event loop's thread (and to the tool): on Linux a
    thread has a nice value of its own. Where it has not, it runs as it is."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    except (OSError, AttributeError):
        pass


class _Reply:
    """An answer the bridge makes itself: a status and a JSON body."""

    __slots__ = ("status", "body")

    def __init__(self, status: int, body: Any):
        self.status = status
        self.body = json.dumps(body).encode()


@valueclass
class _Answer:
    """How far one answer got: what the server needs to record a request that ended early."""

    observer: ResponseObserver | None = None  # the upstream's answer
    child: ResponseObserver | None = None  # what the child got, when a handler rewrote it
    kept: bytearray | None = None
    sample: bytearray = field(default_factory=bytearray)  # the first bytes of the upstream's answer
    upstream_type: str = ""
    failing: bool = False
    exchange: Any = None
    observes: bool = False  # the exchange reads the answer itself (a translation): its facts are the record's
    error: str | None = None  # the provider's error, as the observer or the exchange read it
    upstream: dict[str, Any] = field(default_factory=dict)  # what a translation saw of the upstream's answer
    prepared: bool = False
    finished: bool = False
    delivered: bool = False  # the answer's end (its terminal event, or its last byte) reached the child


class _Pump:
    """One answer's bytes on their way from the upstream to the child: each read chunk is filtered,
    watched, sampled and kept (``take``), handed to the exchange, then filtered again if the exchange
    rewrote it, watched as the child gets it and written (``send``)."""

    def __init__(self, child: wire.Answer, exchange: Exchange, answer: _Answer, upstream_filter: FormStream | None,
                 child_filter: FormStream | None, kept: bytearray | None) -> None:
        assert answer.observer is not None
        self.child = child
        self.exchange = exchange
        self.answer = answer
        self.upstream_filter = upstream_filter
        self.child_filter = child_filter
        self.kept = kept
        self.observe = None if answer.observes else answer.observer.feed  # a translation reads the bytes itself
        self.gives_up = exchange if isinstance(exchange, GivesUp) else None  # optional (bridge.handler)
        self.error_body = bytearray()
        self.received = 0

    async def pour(self, upstream: wire.Upstream, record: RequestRecord, t0: float) -> None:
        """Every chunk of the upstream's answer, until its end or until the exchange gives it up."""
        async for chunk in upstream.chunks():
            if record.ttfb_ms is None:
                record.ttfb_ms = round((time.perf_counter() - t0) * 1000, 3)
            self.received += len(chunk)
            record.response_bytes = self.received
            await self.send(self.take(chunk))
            if self.gives_up is not None and self.gives_up.done_reading:
                break  # the handler gave the answer up (too large to translate): no more is read

    def take(self, raw: bytes) -> bytes:
        """A chunk the upstream sent (empty: its end) → what the exchange makes of it."""
        answer = self.answer
        if self.upstream_filter is None:
            clean = raw
        else:
            clean = self.upstream_filter.feed(raw) if raw else self.upstream_filter.flush()
        if self.observe is not None:
            self.observe(clean)
        error_body, kept = self.error_body, self.kept
        if answer.failing and len(error_body) < MAX_ERROR_BODY:
            error_body.extend(clean[:MAX_ERROR_BODY - len(error_body)])
        if len(answer.sample) < 200:
            answer.sample.extend(clean[:200 - len(answer.sample)])
        if kept is not None and len(kept) < MAX_RECORDED_BODY + _BODY_MARGIN:
            kept.extend(clean[:MAX_RECORDED_BODY + _BODY_MARGIN - len(kept)])
        return self.exchange.response_chunk(clean) if clean else b""

    async def send(self, data: bytes, last: bool = False) -> None:
        answer = self.answer
        if self.child_filter is not None:
            data = self.child_filter.feed(data) + (self.child_filter.flush() if last else b"")
        if answer.child is not None:
            answer.child.feed(data)
        if data:
            await self.child.write(data)
        if answer.observes:
            if getattr(self.exchange, "ended", False):  # an observing exchange's (see bridge.handler)
                answer.delivered = True
            return
        seen = answer.child or answer.observer
        if seen is not None and seen.terminal and seen.stream:
            answer.delivered = True


def routes_json(routes: Sequence[Route]) -> dict[str, str]:
    """Route name → upstream base URL (no secrets), for the manifest."""
    return {r.name: rec.safe_url(r.upstream) for r in routes}

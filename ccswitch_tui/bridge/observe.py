"""What a request asked for and what the provider answered, read off the bytes as they pass.

Pure functions and small incremental parsers, no sockets: the server feeds them the request body
and each response chunk. They understand the OpenAI Chat Completions and Responses shapes and the
Anthropic Messages shape, streamed (SSE) or not. Anything they do not understand is left out of
the record (``usage_source = "missing"``), never guessed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Generator
from typing import Any, cast

from ccswitch_tui import fast_json
from ccswitch_tui.valueclass import field, valueclass

# Cap on the bytes of a non-streamed response body kept for parsing (the bytes are forwarded anyway).
MAX_JSON_BODY = 16 * 1024 * 1024
_EVENT_SPLIT = re.compile(rb"\r\n\r\n|\n\n|\r\r")
# What ends a stream in the dialects the bridge sees: Responses (completed, incomplete, failed),
# Chat Completions ([DONE]), Anthropic Messages (message_stop, an error event), generateContent
# (the chunk with the finish reason).
# Quoted as JSON strings, so that a model's text quoting them (escaped quotes) does not count.
TERMINAL_MARKERS = (b'"response.completed"', b'"response.incomplete"', b'"response.failed"', b"data: [DONE]",
                    b"data:[DONE]", b'"message_stop"', b"event: error", b'"finishReason"')


@valueclass(frozen=True)
class RequestFacts:
    model: str | None
    stream: bool


_GENERATE = re.compile(r"/models/([^/:?]+):(streamGenerateContent|generateContent)(?:\?|$)")


def request_facts_in_steps(body: bytes, content_type: str, path: str = "") -> Generator[None, None, RequestFacts]:
    """The requested model and whether a stream was asked for, from a JSON request body; for the
    generateContent API (``/models/{model}:streamGenerateContent``) from the path, which names both.
    A large body is read a piece at a time, with a pause (a ``yield``) after each (``parse_in_steps``)."""
    m = _GENERATE.search(path)
    if m:
        return RequestFacts(m.group(1), m.group(2) == "streamGenerateContent")
    if not body or "json" not in content_type.lower():
        return RequestFacts(None, False)
    data = yield from parse_in_steps(body)
    if not isinstance(data, dict):
        return RequestFacts(None, False)
    model = data.get("model")
    return RequestFacts(model if isinstance(model, str) else None, data.get("stream") is True)


# --- the same try, by meaning -------------------------------------------------------------------
#
# A client's retry is the same request sent again, but not always the same bytes (measured):
# Codex 0.171.0 writes ``client_metadata`` in another key order on each of its stream-level
# retries (nothing else changes, ids included); Claude Code 2.1.332 sends its 5xx/429/529 retries
# byte for byte again, but retries a stream broken by an error as a non-streamed request (the
# same body with ``"stream": false``). Two requests are therefore the same try when their method,
# path and body agree, the body compared as JSON (key order aside) without its ``stream`` flag.

RETRY_IGNORED = frozenset({"stream"})  # top-level members a client changes between tries of one request


class _EveryArray(frozenset[str]):  # parse_in_steps's keep_arrays, answering yes to every key
    def __contains__(self, key: object) -> bool:
        return True


_canonical_json = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


def _canonical(value: Any) -> bytes:
    return _canonical_json(value).encode("utf-8", "surrogatepass")


def request_identity_in_steps(method: str, path: str, body: bytes) -> Generator[None, None, str]:
    """A digest two requests share when they are tries of one (see above): over the method, the
    path and the body as canonical JSON (keys sorted, ``RETRY_IGNORED`` left out), or the body's
    bytes when it is not a JSON object. A large body is read and digested a piece at a time, with a
    pause (a ``yield``) after each, so the event loop serves the other requests meanwhile."""
    digest = hashlib.sha256(method.encode() + path.encode() + b"\0")
    start = body[:64].lstrip(b" \t\n\r")[:1]
    data = (yield from parse_in_steps(body, _EveryArray())) if start == b"{" else None
    if not isinstance(data, dict):
        digest.update(body)
        return digest.hexdigest()
    done = 0
    for key in sorted(data):
        if key in RETRY_IGNORED:
            continue
        value = data[key]
        digest.update(_canonical(key) + b":")
        if isinstance(value, list) and len(body) >= STEPWISE_FROM:
            digest.update(b"[")
            for i, item in enumerate(value):
                piece = _canonical(item)
                digest.update(b"," + piece if i else piece)
                done += len(piece)
                if done > STEP:
                    yield
                    done = 0
            digest.update(b"]")
        else:
            digest.update(_canonical(value))
        digest.update(b",")
    return digest.hexdigest()


# --- JSON a piece at a time --------------------------------------------------------------------
#
# ``json.loads`` of a MiB holds the interpreter for 3-6 ms, and the bridge's event loop with it:
# every stream it serves waits that long for its next event. A large body is parsed instead one
# top-level member at a time, and a member that is an array one element at a time, each piece by
# the same C scanner ``json.loads`` uses, with a pause between pieces for the loop to serve the
# others. The result is ``json.loads``'s, except that the arrays not asked for are left empty.

STEPWISE_FROM = 256 * 1024  # bytes: a smaller body is parsed in one go
STEP = 64 * 1024  # characters parsed between two pauses, about 0.2 ms
_scan = fast_json.scan  # what json.loads runs: value, end = _scan(text, start)
_scan_string = fast_json.scan_string
# JSON's whitespace, as json.loads skips it (the pattern matches anywhere, if only the empty string)
_space = cast("Callable[[str, int], re.Match[str]]", re.compile(r"[ \t\n\r]*").match)


class _Invalid(Exception):
    pass


def _value(text: str, i: int) -> tuple[Any, int]:
    try:
        return _scan(text, i)
    except StopIteration:  # the scanner's "no JSON value here" (inside a generator it would be an error)
        raise _Invalid from None


def _next(text: str, i: int, close: str) -> tuple[int, bool]:
    """After a member or an element: where the next one starts, or past ``close`` and True."""
    i = _space(text, i).end()
    c = text[i:i + 1]
    if c == close:
        return i + 1, True
    if c != ",":
        raise _Invalid
    return _space(text, i + 1).end(), False


def finish_steps(steps: Generator[None, None, Any]) -> Any:
    """Run ``steps`` to its end without pausing; its result."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def parse_in_steps(body: bytes, keep_arrays: frozenset[str] = frozenset()) -> Generator[None, None, Any]:
    """``json.loads(body)``, or None where it would fail; a large JSON object a piece at a time,
    pausing (``yield``) between pieces, with its top-level arrays left empty unless their key is in
    ``keep_arrays``."""
    start = len(body) - len(body.lstrip(b" \t\n\r"))
    if len(body) < STEPWISE_FROM or body[start:start + 1] != b"{" or b"\0" in body[:4]:
        # small, or not an object in UTF-8 (json.loads reads UTF-16 and UTF-32 too)
        try:
            return json.loads(body)
        except (ValueError, RecursionError):  # not JSON, or nested past the interpreter's depth
            return None
    try:
        text = body.decode("utf-8", "surrogatepass")  # as json.loads decodes UTF-8
        return (yield from _object_in_steps(text, start, keep_arrays))
    except (_Invalid, ValueError, RecursionError):
        return None


def _object_in_steps(text: str, i: int, keep_arrays: frozenset[str]) -> Generator[None, None, dict[str, Any]]:  # noqa: C901
    out: dict[str, Any] = {}
    paused = i
    i = _space(text, i + 1).end()
    if text[i:i + 1] == "}":
        i += 1
    else:
        while True:
            if text[i:i + 1] != '"':
                raise _Invalid
            key, i = _scan_string(text, i + 1)
            i = _space(text, i).end()
            if text[i:i + 1] != ":":
                raise _Invalid
            i = _space(text, i + 1).end()
            if text[i:i + 1] == "[":  # an array: one element at a time
                items: list[Any] = []
                keep = key in keep_arrays
                i = _space(text, i + 1).end()
                if text[i:i + 1] == "]":
                    i += 1
                else:
                    while True:
                        value, i = _value(text, i)
                        if keep:
                            items.append(value)
                        if i - paused > STEP:
                            yield
                            paused = i
                        i, ended = _next(text, i, "]")
                        if ended:
                            break
                out[key] = items
            else:
                out[key], i = _value(text, i)
            if i - paused > STEP:
                yield
                paused = i
            i, ended = _next(text, i, "}")
            if ended:
                break
    if _space(text, i).end() != len(text):  # anything after the object: json.loads refuses it too
        raise _Invalid
    return out


@valueclass
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None

    @property
    def reported(self) -> bool:
        return self.input_tokens is not None or self.output_tokens is not None

    def as_fields(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "usage_source": "reported" if self.reported else "missing",
        }


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def merge_usage(usage: Usage, raw: Any) -> None:
    """Fold one provider usage object into ``usage``; later reports win (Anthropic sends the output
    count again, cumulative, in ``message_delta``)."""
    if not isinstance(raw, dict):
        return
    inp = _int(raw.get("input_tokens", raw.get("prompt_tokens")))
    out = _int(raw.get("output_tokens", raw.get("completion_tokens")))
    if inp is not None:
        usage.input_tokens = inp
    if out is not None:
        usage.output_tokens = out
    details_in = raw.get("input_tokens_details") or raw.get("prompt_tokens_details")
    cached = _int(details_in.get("cached_tokens")) if isinstance(details_in, dict) else None
    if cached is None:
        cached = _int(raw.get("cache_read_input_tokens"))
    if cached is not None:
        usage.cached_tokens = cached
    details_out = raw.get("output_tokens_details") or raw.get("completion_tokens_details")
    reasoning = _int(details_out.get("reasoning_tokens")) if isinstance(details_out, dict) else None
    if reasoning is not None:
        usage.reasoning_tokens = reasoning


def merge_generate_usage(usage: Usage, raw: Any) -> None:
    """The generateContent API's ``usageMetadata`` (each streamed chunk carries the totals so far)."""
    if not isinstance(raw, dict):
        return
    for attr, name in (("input_tokens", "promptTokenCount"), ("output_tokens", "candidatesTokenCount"),
                       ("cached_tokens", "cachedContentTokenCount"), ("reasoning_tokens", "thoughtsTokenCount")):
        value = _int(raw.get(name))
        if value is not None:
            setattr(usage, attr, value)


@valueclass
class ResponseObserver:
    """Fed every response chunk; at the end knows the served model, the usage, the system
    fingerprint and the provider's error message, if it sent one."""

    stream: bool
    model: str | None = None
    system_fingerprint: str | None = None
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    saw_data: bool = False  # a stream with at least one ``data:`` line
    terminal: bool = False  # the stream's own end was seen (completed, failed, [DONE], message_stop, ...)
    _buffer: bytearray = field(default_factory=bytearray)
    _overflow: bool = False
    _carry: bytes = b""
    _at_boundary: bool = False  # the last chunk ended with a blank line (a whole event)

    def feed(self, chunk: bytes) -> None:
        if self.stream and self._plain(chunk):
            return
        if self.stream:
            self._look_for_end(chunk)
        if not self.stream:
            if len(self._buffer) + len(chunk) > MAX_JSON_BODY:
                self._overflow = True
            elif not self._overflow:
                self._buffer += chunk
            return
        # Events end with a blank line; a chunk may hold several events or part of one. Only the
        # complete events are looked at, and only those that can hold something we keep: an
        # unpaced stream arrives in chunks of tens of KiB, so each search counts (a stream without
        # a carriage return, the usual one, is never searched for the CR forms of a blank line).
        data = bytes(self._buffer) + chunk if self._buffer else chunk
        cr = b"\r" in data
        end = max(data.rfind(b"\n\n"), data.rfind(b"\r\n\r\n"), data.rfind(b"\r\r")) if cr else data.rfind(b"\n\n")
        if end < 0:
            if len(data) <= MAX_JSON_BODY:  # a stream that never ends an event: stop looking
                self._buffer[:] = data
            return
        cut = end + (4 if cr and data.startswith(b"\r\n\r\n", end) else 2)
        complete = data[:cut] if cut < len(data) else data
        self._buffer[:] = data[cut:]
        self._at_boundary = not self._buffer and data.endswith(b"\n\n")
        for event in self._marked_events(complete, cr):
            self._event(event)

    def _plain(self, chunk: bytes) -> bool:
        """True for the chunk that most of a stream is made of: whole events after whole events,
        none of which can end the stream or carry usage or an error, once the model is known. Such a
        chunk changes nothing here, and costs a few substring searches instead of the full reading.
        (No marker contains a blank line, so none can straddle the end of the chunk before it.)"""
        if self._buffer or self.model is None or not self.saw_data or self.terminal or not self._at_boundary:
            return False
        if not chunk.endswith(b"\n\n"):
            self._at_boundary = False
            return False
        # bytes.find, not ``in``: ``in`` takes the needle through the buffer protocol, half again as long
        find = chunk.find
        if (find(b'"usage') >= 0 or find(b'"error"') >= 0 or find(b"[DONE]") >= 0 or find(b'.completed"') >= 0
                or find(b'.incomplete"') >= 0 or find(b'.failed"') >= 0 or find(b'"message_stop"') >= 0
                or find(b"event: error") >= 0 or find(b'"finishReason"') >= 0):
            return False
        self._carry = b""
        return True

    def _marked_events(self, data: bytes, cr: bool = True) -> list[bytes]:
        """The complete events in ``data`` that can hold something we keep, in order, found from
        their markers (a chunk may hold hundreds of events, of which one carries the usage):
        ``"usage`` (``usage``, ``usageMetadata``) and ``"error"`` in every event, and until the
        model is known the first event naming it (``"model"``, ``"modelVersion"``; a Responses
        event names it inside its ``response``). ``cr``: ``data`` may hold a carriage return."""
        spans = set()
        for marker, every in ((b'"usage', True), (b'"error"', True), (b'"model', False)):
            if not every and self.model is not None:
                break
            at = data.find(marker)
            while at >= 0:
                if not every and not data.startswith((b'"model"', b'"modelVersion"'), at):
                    at = data.find(marker, at + 1)  # "model_x": not the model
                    continue
                start = data.rfind(b"\n\n", 0, at)
                stop = data.find(b"\n\n", at)
                if cr:  # the CR forms of a blank line, searched only between the LF ones
                    start = max(start, data.rfind(b"\r\n\r\n", start + 1, at), data.rfind(b"\r\r", start + 1, at))
                    bound = len(data) if stop < 0 else stop
                    ends = [i for i in (stop, data.find(b"\r\n\r\n", at, bound), data.find(b"\r\r", at, bound))
                            if i >= 0]
                    stop = min(ends) if ends else -1
                start = 0 if start < 0 else start
                stop = len(data) if stop < 0 else stop
                spans.add((start, stop))
                at = data.find(marker, stop) if every else -1
        return [data[start:stop] for start, stop in sorted(spans)]

    def _look_for_end(self, chunk: bytes) -> None:
        """Whether ``chunk`` (with the end of the one before, for a marker cut in two) ends the
        stream. A stream's end is at its end, so each marker is searched from the back (and the two
        ``[DONE]`` forms by their common part first)."""
        if self.terminal:
            return
        window = self._carry + chunk if self._carry else chunk
        if not self.saw_data and b"data:" in window:
            self.saw_data = True
        found = window.rfind
        if (found(b"[DONE]") >= 0 and (found(b"data: [DONE]") >= 0 or found(b"data:[DONE]") >= 0)) \
                or found(b'"response.completed"') >= 0 or found(b'"response.incomplete"') >= 0 \
                or found(b'"response.failed"') >= 0 \
                or found(b'"message_stop"') >= 0 or found(b"event: error") >= 0 or found(b'"finishReason"') >= 0:
            self.terminal = True
            return
        self._carry = window[-24:]

    def finish(self) -> None:
        finish_steps(self.finish_in_steps())

    def finish_in_steps(self) -> Generator[None, None, None]:
        """``finish``, pausing (a ``yield``) between the pieces of a large answer (``parse_in_steps``)."""
        if self.stream:
            if self._buffer.strip():
                self._event(bytes(self._buffer))
            self._buffer.clear()
            return
        if self._overflow or not self._buffer:
            return
        body = bytes(self._buffer)
        self._buffer.clear()
        data = yield from parse_in_steps(body, _READ_ARRAYS)
        self._object(data)

    def _event(self, event: bytes) -> None:
        lines = [line[5:].lstrip() for line in event.splitlines() if line.startswith(b"data:")]
        if not lines:
            return
        payload = b"\n".join(lines)
        if payload.strip() == b"[DONE]":
            return
        try:
            data = json.loads(payload)
        except ValueError:
            return
        self._object(data)

    def _object(self, data: Any) -> None:
        if not isinstance(data, dict):
            return
        kind = data.get("type")
        if kind == "message_start" and isinstance(data.get("message"), dict):  # Anthropic stream
            data = data["message"]
        elif isinstance(data.get("response"), dict):  # Responses stream: response.created/.completed/...
            data = data["response"]
        if isinstance(data.get("model"), str) and data["model"]:
            self.model = data["model"]
        if isinstance(data.get("system_fingerprint"), str):
            self.system_fingerprint = data["system_fingerprint"]
        if "usage" in data:
            merge_usage(self.usage, data["usage"])
        if isinstance(data.get("modelVersion"), str) and data["modelVersion"]:  # generateContent API
            self.model = data["modelVersion"]
        if "usageMetadata" in data:
            merge_generate_usage(self.usage, data["usageMetadata"])
        err = data.get("error")
        if err:
            self.error = error_text(err)


# The members ``ResponseObserver._object`` reads: kept whole by ``parse_in_steps`` even when arrays.
_READ_ARRAYS = frozenset({"type", "message", "response", "model", "system_fingerprint", "usage", "modelVersion",
                          "usageMetadata", "error"})

# Texts are kept whole up to this many characters: the server masks them and only then cuts them to
# their recorded length, so that a secret across the cut is masked whole.
MAX_TEXT = 8192


def error_text(err: Any) -> str:
    """One line from a provider's error object or string (not yet masked, so not yet cut short)."""
    if isinstance(err, dict):
        parts = [str(err[k]) for k in ("type", "code", "message") if err.get(k)]
        text = ": ".join(parts) if parts else json.dumps(err)[:MAX_TEXT]
    else:
        text = str(err)
    return " ".join(text[:MAX_TEXT].split())


def error_from_body(body: bytes) -> str | None:
    """The provider's message from an error response body (JSON or text), one line, not yet masked."""
    if not body:
        return None
    try:
        data = json.loads(body)
    except ValueError:
        return " ".join(body[:MAX_TEXT].decode("utf-8", "replace").split()) or None
    if isinstance(data, dict) and data.get("error"):
        return error_text(data["error"])
    if isinstance(data, dict) and data.get("message"):
        return error_text(data["message"])
    return " ".join(json.dumps(data)[:MAX_TEXT].split())

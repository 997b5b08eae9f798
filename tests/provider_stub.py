"""A loopback provider for the bridge tests: OpenAI Chat Completions and Responses, Anthropic
Messages, streamed or not, each answer with the usage and served model the stub chose, a log of
every request it saw, and faults on demand (an error status, a stream cut off midway, a slow
stream)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    usage: dict[str, int] | None = None  # what the stub reported for it
    served: str | None = None


def _sse(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512


@dataclass
class ProviderStub:
    """``fault`` maps a path suffix to what to do instead of answering: ("status", code, body),
    ("cut", n_chunks) to send n chunks of a stream and drop the connection, ("slow", seconds) to
    pause that long between stream chunks. ``served`` overrides the model it says it served."""

    served: str | None = None
    fault: dict[str, tuple] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    counter: int = 0

    def __post_init__(self) -> None:
        stub = self
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                self._seen(None)
                self._json(200, {"object": "list", "data": [{"id": "stub-model", "object": "model"}]})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                with lock:
                    stub.counter += 1
                    n = stub.counter
                seen = self._seen(body)
                path = self.path.split("?")[0]
                for suffix, what in stub.fault.items():
                    if path.endswith(suffix) and what[0] == "status":
                        self._json(what[1], what[2], extra={"x-request-id": f"req_err_{n}", "retry-after": "1"})
                        return
                model = body.get("model", "?") if isinstance(body, dict) else "?"
                served = stub.served or model
                usage = {"input": 10 + n, "output": 5 + n, "cached": n % 3, "reasoning": n % 2}
                seen.usage, seen.served = usage, served
                stream = isinstance(body, dict) and body.get("stream") is True
                fault = next((w for s, w in stub.fault.items() if path.endswith(s)), None)
                if path.endswith("/chat/completions"):
                    self._chat(n, served, usage, stream, body, fault)
                elif path.endswith("/responses"):
                    self._responses(n, served, usage, stream, fault)
                elif path.endswith("/v1/messages"):
                    self._messages(n, served, usage, stream, fault)
                else:
                    self._json(404, {"error": {"message": "no such path", "type": "not_found"}})

            def _seen(self, body: Any) -> Seen:
                s = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with lock:
                    stub.seen.append(s)
                return s

            def _json(self, status: int, data: Any, extra: dict[str, str] | None = None) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)

            def _stream(self, n: int, events: list[bytes], fault: tuple | None) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("x-request-id", f"req_{n}")
                self.send_header("x-ratelimit-remaining-requests", "99")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    self._events(events, fault)
                except (BrokenPipeError, ConnectionResetError):  # the client went away: part of some tests
                    self.close_connection = True

            def _events(self, events: list[bytes], fault: tuple | None) -> None:
                for i, ev in enumerate(events):
                    if fault and fault[0] == "cut" and i == fault[1]:
                        self.wfile.flush()
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                    if fault and fault[0] == "slow" and i:
                        time.sleep(fault[1])
                    self.wfile.write(f"{len(ev):x}\r\n".encode() + ev + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

            def _chat(self, n, served, usage, stream, body, fault) -> None:
                u = {"prompt_tokens": usage["input"], "completion_tokens": usage["output"],
                     "total_tokens": usage["input"] + usage["output"],
                     "prompt_tokens_details": {"cached_tokens": usage["cached"]},
                     "completion_tokens_details": {"reasoning_tokens": usage["reasoning"]}}
                if not stream:
                    self._json(200, {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1, "model": served,
                                     "system_fingerprint": "fp_stub",
                                     "choices": [{"index": 0, "finish_reason": "stop",
                                                  "message": {"role": "assistant", "content": f"reply {n}"}}],
                                     "usage": u}, extra={"x-request-id": f"req_{n}"})
                    return
                base = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 1, "model": served,
                        "system_fingerprint": "fp_stub"}
                events = [_sse({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})]
                events += [_sse({**base, "choices": [{"index": 0, "delta": {"content": w}}]})
                           for w in ("reply ", str(n))]
                events.append(_sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
                if (body.get("stream_options") or {}).get("include_usage"):
                    events.append(_sse({**base, "choices": [], "usage": u}))
                events.append(b"data: [DONE]\n\n")
                self._stream(n, events, fault)

            def _responses(self, n, served, usage, stream, fault) -> None:
                u = {"input_tokens": usage["input"], "output_tokens": usage["output"],
                     "total_tokens": usage["input"] + usage["output"],
                     "input_tokens_details": {"cached_tokens": usage["cached"]},
                     "output_tokens_details": {"reasoning_tokens": usage["reasoning"]}}
                msg = {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": f"reply {n}", "annotations": []}]}
                resp = {"id": f"resp_{n}", "object": "response", "created_at": 1, "model": served,
                        "status": "completed", "output": [msg], "usage": u, "parallel_tool_calls": True,
                        "tool_choice": "auto", "tools": []}
                if not stream:
                    self._json(200, resp, extra={"x-request-id": f"req_{n}"})
                    return
                start = {**resp, "status": "in_progress", "output": [], "usage": None}
                events = [
                    _sse({"type": "response.created", "sequence_number": 0, "response": start}, "response.created"),
                    _sse({"type": "response.output_item.done", "sequence_number": 1, "output_index": 0, "item": msg},
                         "response.output_item.done"),
                    _sse({"type": "response.completed", "sequence_number": 2, "response": resp}, "response.completed"),
                ]
                self._stream(n, events, fault)

            def _messages(self, n, served, usage, stream, fault) -> None:
                if not stream:
                    self._json(200, {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": served,
                                     "content": [{"type": "text", "text": f"reply {n}"}], "stop_reason": "end_turn",
                                     "usage": {"input_tokens": usage["input"], "output_tokens": usage["output"],
                                               "cache_read_input_tokens": usage["cached"]}},
                               extra={"request-id": f"req_{n}"})
                    return
                events = [
                    _sse({"type": "message_start", "message": {
                        "id": f"msg_{n}", "type": "message", "role": "assistant", "model": served, "content": [],
                        "stop_reason": None, "stop_sequence": None,
                        "usage": {"input_tokens": usage["input"], "output_tokens": 1,
                                  "cache_read_input_tokens": usage["cached"]}}}, "message_start"),
                    _sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                         "content_block_start"),
                    _sse({"type": "content_block_delta", "index": 0,
                          "delta": {"type": "text_delta", "text": f"reply {n}"}}, "content_block_delta"),
                    _sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
                    _sse({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                          "usage": {"output_tokens": usage["output"]}}, "message_delta"),
                    _sse({"type": "message_stop"}, "message_stop"),
                ]
                self._stream(n, events, fault)

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def posts(self) -> list[Seen]:
        return [s for s in self.seen if s.method == "POST"]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

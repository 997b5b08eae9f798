"""A scripted loopback Chat Completions provider: each POST to ``.../chat/completions`` takes the
next scripted reply (a stream of chunks, one JSON body, or an HTTP error), and every request is
kept, so a test can assert what the provider was sent and compare it with ccs's records."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


@dataclass
class Reply:
    status: int = 200
    chunks: list[dict[str, Any]] | None = None  # streamed as SSE, then [DONE]
    body: dict[str, Any] | None = None  # answered as one JSON body
    raw: bytes | None = None  # streamed as these exact SSE bytes (a recorded stream's shape), event by event
    page: bytes | None = None  # answered as these exact bytes, with ``content_type`` (an HTML error page, say)
    content_type: str = "text/html"
    headers: dict[str, str] = field(default_factory=dict)  # more response headers (Retry-After, say)
    check: Callable[[dict[str, Any]], str | None] | None = None  # a reason to answer 400 instead


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any
    status: int = 0


def chunk(delta: dict[str, Any], finish: str | None = None, model: str = "stub-served") -> dict[str, Any]:
    return {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 1, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def usage_chunk(usage: dict[str, Any] | None = None, model: str = "stub-served") -> dict[str, Any]:
    return {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 1, "model": model, "choices": [],
            "usage": usage or USAGE}


def text_reply(text: str, usage: dict[str, Any] | None = None, reasoning: str | None = None) -> Reply:
    chunks = [chunk({"role": "assistant", "content": ""})]
    if reasoning:
        chunks.append(chunk({"reasoning_content": reasoning}))
    words = text.split(" ")
    chunks += [chunk({"content": w + (" " if i < len(words) - 1 else "")}) for i, w in enumerate(words)]
    chunks += [chunk({}, "stop"), usage_chunk(usage)]
    return Reply(chunks=chunks)


def tool_reply(call_id: str, name: str, arguments: dict[str, Any], *, index: bool = True, split: bool = True,
               reasoning: str | None = None, usage: dict[str, Any] | None = None) -> Reply:
    args = json.dumps(arguments)
    pieces = [args[: len(args) // 2], args[len(args) // 2:]] if split else [args]
    head: dict[str, Any] = {"id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
    if index:
        head["index"] = 0
    chunks = [chunk({"role": "assistant", "content": None})]
    if reasoning:
        chunks.append(chunk({"reasoning_content": reasoning}))
    chunks.append(chunk({"tool_calls": [head]}))
    for piece in pieces:
        tail: dict[str, Any] = {"function": {"arguments": piece}}
        if index:
            tail["index"] = 0
        chunks.append(chunk({"tool_calls": [tail]}))
    chunks += [chunk({}, "tool_calls"), usage_chunk(usage)]
    return Reply(chunks=chunks)


def completion_body(text: str, model: str = "stub-served", usage: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"id": "chatcmpl-stub", "object": "chat.completion", "created": 1, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": usage or USAGE}


@dataclass
class ChatStub:
    script: list[Reply] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    repeat_last: bool = False  # once the script ran out, answer with its last reply again
    any_path: bool = False  # answer every POST from the script (a Responses provider, say), not only chat
    times: list[float] = field(default_factory=list)  # when each scripted POST arrived (time.monotonic)

    def __post_init__(self) -> None:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes, ctype: str = "application/json",
                      headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("x-request-id", f"stub-{len(stub.seen)}")
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802
                stub.seen.append(Seen(self.path, dict(self.headers), None, 404))
                self._send(404, b'{"error":{"message":"not found"}}')

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                seen = Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                stub.seen.append(seen)
                if not (stub.any_path or self.path.split("?")[0].endswith("/chat/completions")):
                    seen.status = 404
                    self._send(404, b'{"error":{"message":"no such path on a chat provider"}}')
                    return
                stub.times.append(time.monotonic())
                reply = stub.next_reply()
                problem = reply.check(body) if reply.check and isinstance(body, dict) else None
                if problem:
                    seen.status = 400
                    self._send(400, json.dumps({"error": {"message": problem, "type": "invalid_request_error",
                                                          "code": "invalid_request"}}).encode())
                    return
                seen.status = reply.status
                if reply.raw is not None:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    for event in reply.raw.split(b"\n\n"):
                        if event.strip():
                            self.wfile.write(event + b"\n\n")
                            self.wfile.flush()
                            time.sleep(0.002)
                    self.close_connection = True
                    return
                if reply.page is not None:
                    self._send(reply.status, reply.page, ctype=reply.content_type, headers=reply.headers)
                    return
                if reply.chunks is None:
                    self._send(reply.status, json.dumps(reply.body or {}).encode(), headers=reply.headers)
                    return
                self.send_response(reply.status)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("x-request-id", f"stub-{len(stub.seen)}")
                self.send_header("Connection", "close")
                self.end_headers()
                for c in reply.chunks:
                    self.wfile.write(f"data: {json.dumps(c)}\n\n".encode())
                    self.wfile.flush()
                    time.sleep(0.002)
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def next_reply(self) -> Reply:
        with self._lock:
            if len(self.script) > 1 or (self.script and not self.repeat_last):
                return self.script.pop(0)
            if self.script:
                return self.script[0]
        return Reply(status=500, body={"error": {"message": "the stub's script ran out"}})

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def chats(self) -> list[Seen]:
        return [s for s in self.seen if s.path.split("?")[0].endswith("/chat/completions")]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

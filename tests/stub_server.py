"""A loopback HTTP server speaking just enough of the Anthropic Messages, OpenAI Responses, Gemini
generateContent and Chat Completions streaming protocols for one `claude -p` / `codex exec` /
`gemini -p` / `opencode run` turn, recording every request it gets."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def anthropic_stream(model: str, text: str) -> bytes:
    usage = {"input_tokens": 3, "output_tokens": 1}
    return b"".join([
        _sse("message_start", {"type": "message_start", "message": {
            "id": "msg_stub", "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": usage}}),
        _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}}),
        _sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "text_delta", "text": text}}),
        _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                               "usage": {"output_tokens": 1}}),
        _sse("message_stop", {"type": "message_stop"}),
    ])


def responses_stream(text: str) -> bytes:
    return b"".join([
        _sse("response.created", {"type": "response.created", "response": {"id": "resp_stub"}}),
        _sse("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": {
            "type": "message", "role": "assistant", "id": "msg_stub",
            "content": [{"type": "output_text", "text": text}]}}),
        _sse("response.completed", {"type": "response.completed", "response": {
            "id": "resp_stub", "usage": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4,
                                         "input_tokens_details": None, "output_tokens_details": None}}}),
    ])


def gemini_answer(model: str, text: str, body: Any) -> dict[str, Any]:
    """One generateContent answer. Gemini CLI's model router asks for JSON matching a schema: give it
    an object of that shape (a plain answer there makes the CLI retry)."""
    config = (body or {}).get("generationConfig") or {} if isinstance(body, dict) else {}
    if config.get("responseMimeType") == "application/json":
        schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
        text = json.dumps({k: (1 if v.get("type") in ("integer", "number") else "simple")
                           for k, v in (schema.get("properties") or {}).items()})
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP",
                            "index": 0}],
            "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 1, "totalTokenCount": 6},
            "modelVersion": model, "responseId": "stub-gemini"}


def chat_stream(model: str, text: str) -> bytes:
    base = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 0, "model": model}
    chunks = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}},
    ]
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


@dataclass
class StubServer:
    name: str = "stub"
    reply: str = "stub reply"
    requests: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _record(self) -> Request:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                req = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                stub.requests.append(req)
                return req

            def _send(self, status: int, body: bytes, ctype: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def do_HEAD(self) -> None:  # noqa: N802
                self._record()
                self._send(200, b"", "text/plain")

            def do_GET(self) -> None:  # noqa: N802
                self._record()
                self._send(404, b'{"error":"not found"}', "application/json")

            def do_POST(self) -> None:  # noqa: N802
                req = self._record()
                path = req.path.split("?")[0]
                model = req.body.get("model", "?") if isinstance(req.body, dict) else "?"
                if path.endswith("/v1/messages"):
                    self._send(200, anthropic_stream(model, stub.reply), "text/event-stream")
                elif path.endswith("/responses"):
                    self._send(200, responses_stream(stub.reply), "text/event-stream")
                elif ":streamGenerateContent" in path:
                    gmodel = path.rsplit("/models/", 1)[-1].split(":")[0]
                    data = json.dumps(gemini_answer(gmodel, stub.reply, req.body))
                    self._send(200, f"data: {data}\n\n".encode(), "text/event-stream")
                elif ":generateContent" in path:
                    gmodel = path.rsplit("/models/", 1)[-1].split(":")[0]
                    self._send(200, json.dumps(gemini_answer(gmodel, stub.reply, req.body)).encode(),
                               "application/json")
                elif path.endswith("/chat/completions"):
                    if isinstance(req.body, dict) and req.body.get("stream"):
                        self._send(200, chat_stream(model, stub.reply), "text/event-stream")
                    else:
                        self._send(200, json.dumps({"id": "chatcmpl-stub", "object": "chat.completion",
                                                    "model": model, "choices": [{"index": 0, "finish_reason": "stop",
                                                    "message": {"role": "assistant", "content": stub.reply}}],
                                                    "usage": {"prompt_tokens": 5, "completion_tokens": 1,
                                                              "total_tokens": 6}}).encode(), "application/json")
                else:
                    self._send(404, b'{"error":"not found"}', "application/json")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def posts(self) -> list[Request]:
        return [r for r in self.requests if r.method == "POST"]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

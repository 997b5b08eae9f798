"""One translated request/response exchange, the way a server drives it, whatever its transport:

    x = Exchange.start(responses_body, memory, provider="Kimi")
    upstream gets x.chat_body (POST {base_url}/chat/completions)
    upstream answered an error    → status, body = x.error(status, raw_body)
    upstream streams              → for each chunk of bytes: send x.feed(chunk); at the end: x.end()
    upstream answered JSON        → send x.whole(raw_body)
    upstream broke mid-stream     → send x.broken("why")

Everything sent to Codex is already SSE bytes. ``x.served_model``, ``x.usage``, ``x.error_text``
are what the record keeps.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ccswitch_tui.bridge.translate.errors import error_body, provider_message
from ccswitch_tui.bridge.translate.reasoning import ReasoningMemory
from ccswitch_tui.bridge.translate.request import ChatRequest, chat_request
from ccswitch_tui.bridge.translate.sse import DONE, SSEDecoder, encode
from ccswitch_tui.bridge.translate.stream import ResponsesStream, Usage

CHAT_PATH = "chat/completions"


@dataclass
class Exchange:
    request: ChatRequest
    stream: ResponsesStream
    provider: str
    decoder: SSEDecoder
    error_text: str | None = None

    @classmethod
    def start(cls, body: Mapping[str, Any], memory: ReasoningMemory | None = None,
              provider: str = "provider") -> Exchange:
        request = chat_request(body, memory)
        stream = ResponsesStream(model=str(body.get("model") or ""), tools=request.tools, memory=memory,
                                provider=provider)
        return cls(request=request, stream=stream, provider=provider, decoder=SSEDecoder())

    @property
    def chat_body(self) -> dict[str, Any]:
        return self.request.body

    @property
    def requested_model(self) -> str | None:
        model = self.request.body.get("model")
        return model if isinstance(model, str) else None

    @property
    def served_model(self) -> str | None:
        return self.stream.served_model

    @property
    def usage(self) -> Usage | None:
        return self.stream.usage

    def opening(self) -> bytes:
        """response.created and response.in_progress, sent as soon as the provider accepted."""
        return _join(self.stream.start())

    def feed(self, chunk: bytes) -> bytes:
        events = []
        for data in self.decoder.feed(chunk):
            events += self.stream.finish() if data is DONE else self.stream.feed(data)
        self._note_error()
        return _join(events)

    def end(self) -> bytes:
        events = []
        for data in self.decoder.close():
            events += self.stream.finish() if data is DONE else self.stream.feed(data)
        events += self.stream.finish()
        self._note_error()
        return _join(events)

    def whole(self, raw: bytes) -> bytes:
        """A provider that answered one JSON body although the request asked for a stream."""
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if isinstance(body, Mapping) and body.get("error") is not None:
            events = self.stream.fail(body["error"])
        elif isinstance(body, Mapping) and isinstance(body.get("choices"), list):
            events = self.stream.from_completion(body)
        elif isinstance(body, Mapping):  # no answer in it, e.g. MiniMax's 200 with only base_resp
            events = self.stream.fail({"message": provider_message(body), "code": "provider_error"})
        else:  # perhaps SSE after all, sent without the event-stream content type
            return self.feed(raw) + self.end()
        self._note_error()
        return _join(events)

    def broken(self, why: str) -> bytes:
        events = self.stream.fail({"message": why, "code": "stream_error"})
        self._note_error()
        return _join(events)

    def error(self, status: int, raw: bytes) -> tuple[int, bytes]:
        """The provider answered an HTTP error: same status, its message in the OpenAI error shape."""
        self.error_text = provider_message(raw, status)
        return status, json.dumps(error_body(status, raw, self.provider), ensure_ascii=False).encode()

    def _note_error(self) -> None:
        if self.stream.error and not self.error_text:
            self.error_text = self.stream.error.get("message")

    def record_fields(self) -> dict[str, Any]:
        """What a request record adds in translating mode."""
        return {"translated": "responses->chat", "upstream_model": self.requested_model,
                "dropped": list(self.request.dropped)}


def _join(events: list[dict[str, Any]]) -> bytes:
    return b"".join(encode(e) for e in events)

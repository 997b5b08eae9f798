"""The bridge's translating route: Codex posts Responses requests to ``{route}/responses``; the
provider gets Chat Completions requests at ``{base_url}/chat/completions``, and its answer goes
back to Codex as Responses events. Any other request (a models list, say) passes unchanged.

One ``TranslatingHandler`` serves one launch: the reasoning text a provider returned is kept in
it, per tool call, for the rest of the launch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ccswitch_tui.bridge.handler import PASSTHROUGH, Exchange, Handler, Outgoing
from ccswitch_tui.bridge.observe import MAX_JSON_BODY
from ccswitch_tui.bridge.routes import Dialect
from ccswitch_tui.bridge.translate.errors import responses_status
from ccswitch_tui.bridge.translate.exchange import CHAT_PATH
from ccswitch_tui.bridge.translate.exchange import Exchange as Translation
from ccswitch_tui.bridge.translate.reasoning import ReasoningMemory
from ccswitch_tui.model import LaunchPlan
from ccswitch_tui.valueclass import field, valueclass

RESPONSES_PATH = "/responses"
MAX_ERROR_BODY = 64 * 1024  # of an error answer, kept for its message


def translated_path(path: str) -> str | None:
    """``/responses?x`` → ``/chat/completions?x``; None for a path that is not the Responses API."""
    bare, sep, query = path.partition("?")
    if not bare.rstrip("/").endswith(RESPONSES_PATH):
        return None
    return bare.rstrip("/")[: -len(RESPONSES_PATH)] + "/" + CHAT_PATH + sep + query


TRANSLATIONS = ("responses-to-chat",)  # what a client spec may ask for (``ToolSpec.translations``)


def translation_handlers(plan: LaunchPlan, wanted: Mapping[str, str]) -> dict[str, Handler]:
    """The bridge handlers a launch needs, by base-URL location in the plan: ``wanted`` maps each
    location the client's spec names to a translation; the others pass through."""
    provider = plan.client.provider_name or plan.profile
    out: dict[str, Handler] = {}
    for loc, name in wanted.items():
        if name not in TRANSLATIONS:
            raise ValueError(f"unknown translation {name!r}")
        out[loc] = TranslatingHandler(provider=provider)
    return out


@valueclass
class TranslatingHandler:
    provider: str = "provider"
    memory: ReasoningMemory = field(default_factory=ReasoningMemory)
    dialect: Dialect = "openai-responses"  # the child (Codex) speaks Responses; the provider gets Chat Completions

    def exchange(self, method: str, path: str) -> Exchange:
        if method.upper() == "POST" and translated_path(path) is not None:
            return ChatExchange(self)
        return PASSTHROUGH.exchange(method, path)


class ChatExchange:
    """One Responses request answered through Chat Completions (see ``bridge.handler`` for the order
    of the calls)."""

    rewrites_body = True

    def __init__(self, handler: TranslatingHandler):
        self.handler = handler
        self.translation: Translation | None = None
        self.status = 0
        self.mode = "stream"  # stream | whole (one JSON body) | error | raw (not ours to translate)
        self.buffer = bytearray()  # an error's body, or an answer that is one JSON body (bounded)
        self.overflow = False  # ... which went on past its bound
        self.opened = False

    def request(self, outgoing: Outgoing) -> Outgoing:
        try:
            body = json.loads(outgoing.body or b"{}")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self.mode = "raw"  # not a Responses request: let the provider say what is wrong with it
            return outgoing
        self.translation = Translation.start(body, self.handler.memory, provider=self.handler.provider)
        headers = {k: v for k, v in outgoing.headers.items()
                   if k.lower() not in ("content-type", "accept", "content-length")}
        headers["Content-Type"] = "application/json"
        headers["Accept"] = "text/event-stream"
        # a lone surrogate (JSON allows "\\ud800", UTF-8 cannot hold it) goes on as that escape
        data = json.dumps(self.translation.chat_body, ensure_ascii=False).encode("utf-8", "backslashreplace")
        return Outgoing(outgoing.method, translated_path(outgoing.path) or outgoing.path, headers, data)

    def record_fields(self) -> dict[str, Any]:
        """The translation's facts for the record (translated, upstream_model, dropped); none for a
        request left untranslated."""
        return self.translation.record_fields() if self.translation is not None else {}

    def response_head(self, status: int, headers: dict[str, str]) -> tuple[int, dict[str, str]]:
        self.status = status
        if self.mode == "raw" or self.translation is None:
            self.mode = "raw"
            return status, headers
        ctype = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
        kept = {k: v for k, v in headers.items() if k.lower() not in ("content-type", "content-length")}
        if status >= 400:  # an error a retry cannot fix reaches Codex as the status it does not retry
            self.mode = "error"
            return responses_status(status), {**kept, "Content-Type": "application/json"}
        self.mode = "stream" if ctype.startswith("text/event-stream") else "whole"
        return status, {**kept, "Content-Type": "text/event-stream", "Cache-Control": "no-cache"}

    @property
    def observes(self) -> bool:
        """True once the answer is being translated: the record's facts then come from
        ``observed()`` (the translation's own parse), not from a second parse of the same bytes."""
        return self.mode != "raw" and self.translation is not None

    def observed(self) -> dict[str, Any]:
        return self.translation.observed() if self.translation is not None else {}

    @property
    def done_reading(self) -> bool:
        """True once the answer was given up (too large to translate), or an error's body went past
        what is kept of it: the server reads no more of it."""
        return self.overflow or (self.translation is not None and self.translation.gave_up is not None)

    @property
    def ended(self) -> bool:
        """True once what this exchange returned holds the Responses stream's terminal event
        (completed, incomplete or failed); never for an error answer, which is one JSON body."""
        return self.mode in ("stream", "whole") and self.translation is not None and self.translation.stream.ended

    def response_chunk(self, data: bytes) -> bytes:
        if self.mode == "raw" or self.translation is None:
            return data
        if self.mode == "stream":
            return self._open() + self.translation.feed(data)
        room = (MAX_ERROR_BODY if self.mode == "error" else MAX_JSON_BODY) - len(self.buffer)
        if len(data) > room:  # a provider cannot make the bridge hold more than that
            self.overflow = True  # and no more of it is read (``done_reading``): its end may never come
        self.buffer += data[:max(room, 0)]
        return b""

    def response_end(self) -> bytes:
        if self.mode == "raw" or self.translation is None:
            return b""
        if self.mode == "stream":
            return self._open() + self.translation.end()
        if self.mode == "error":
            return self.translation.error(self.status, bytes(self.buffer))[1]  # its message is at its start
        if self.overflow:
            return self._open() + self.translation.too_large(MAX_JSON_BODY)
        return self._open() + self.translation.whole(bytes(self.buffer))

    def _open(self) -> bytes:
        if self.opened or self.translation is None:
            return b""
        self.opened = True
        return self.translation.opening()

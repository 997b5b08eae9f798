"""Responses ↔ Chat Completions, as pure functions over requests and events (no sockets): Codex
speaks only the Responses API, many providers only Chat Completions. ``request`` turns what Codex
sends into a Chat request, ``stream`` turns the provider's Chat chunks into Responses events,
``errors`` turns a provider's error into one Codex shows, ``reasoning`` keeps reasoning text that
providers want back with the tool calls it led to."""

from ccswitch_tui.bridge.translate.errors import error_body, provider_message
from ccswitch_tui.bridge.translate.reasoning import ReasoningMemory
from ccswitch_tui.bridge.translate.request import ChatRequest, chat_request
from ccswitch_tui.bridge.translate.sse import DONE, SSEDecoder, encode
from ccswitch_tui.bridge.translate.stream import ResponsesStream, Usage, chat_usage

__all__ = ["DONE", "ChatRequest", "ReasoningMemory", "ResponsesStream", "SSEDecoder", "Usage", "chat_request",
           "chat_usage", "encode", "error_body", "provider_message"]

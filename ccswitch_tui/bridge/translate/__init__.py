"""Responses ↔ Chat Completions, as pure functions over requests and events (no sockets): Codex
speaks only the Responses API, many providers only Chat Completions. ``request`` turns what Codex
sends into a Chat request, ``stream`` turns the provider's Chat chunks into Responses events
(``parts`` reads what a chunk holds), ``errors`` reads a provider's error, classes it, and turns it
into the one Codex acts on as it should, ``reasoning`` keeps reasoning text that providers want
back with the tool calls it led to."""

from ccswitch_tui.bridge.provider_errors import ProviderError, provider_message, read_error
from ccswitch_tui.bridge.translate.errors import error_body
from ccswitch_tui.bridge.translate.parts import Usage, chat_usage
from ccswitch_tui.bridge.translate.reasoning import ReasoningMemory
from ccswitch_tui.bridge.translate.request import ChatRequest, chat_request
from ccswitch_tui.bridge.translate.sse import DONE, SSEDecoder, encode
from ccswitch_tui.bridge.translate.stream import ResponsesStream

__all__ = ["DONE", "ChatRequest", "ProviderError", "ReasoningMemory", "ResponsesStream", "SSEDecoder", "Usage",
           "chat_request", "chat_usage", "encode", "error_body", "provider_message", "read_error"]

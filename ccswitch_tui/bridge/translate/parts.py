"""What one Chat Completions delta (or a whole message) holds, in each provider's dialect: usage,
reasoning, content given as a string or as a list of parts, tool calls in the current and the
legacy (``function_call``) form, and the arguments of a freeform tool."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ccswitch_tui.bridge.translate.tools import CUSTOM_INPUT
from ccswitch_tui.valueclass import valueclass


@valueclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    def as_responses(self) -> dict[str, Any]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "total_tokens": self.total_tokens or self.input_tokens + self.output_tokens,
                "input_tokens_details": {"cached_tokens": self.cached_tokens},
                "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens}}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def chat_usage(usage: Mapping[str, Any]) -> Usage:
    """Chat usage in its provider dialects: OpenAI's ``*_details``, DeepSeek's
    ``prompt_cache_hit_tokens``, Kimi's top-level ``cached_tokens``."""
    prompt = got if isinstance(got := usage.get("prompt_tokens_details"), Mapping) else {}
    completion = done if isinstance(done := usage.get("completion_tokens_details"), Mapping) else {}
    cached = (_int(prompt.get("cached_tokens")) or _int(usage.get("prompt_cache_hit_tokens"))
              or _int(usage.get("cached_tokens")))
    return Usage(input_tokens=_int(usage.get("prompt_tokens")), output_tokens=_int(usage.get("completion_tokens")),
                 total_tokens=_int(usage.get("total_tokens")), cached_tokens=cached,
                 reasoning_tokens=_int(completion.get("reasoning_tokens")))


def reasoning_text(delta: Mapping[str, Any]) -> str:
    """The reasoning in a delta, whatever its dialect: ``reasoning_content`` (DeepSeek, Kimi),
    ``reasoning`` (OpenRouter, vLLM), ``reasoning_details`` (OpenRouter's list), each a string, an
    object with its text, or a list of those."""
    for key in ("reasoning_content", "reasoning", "reasoning_details"):
        value = delta.get(key)
        if value is not None:
            text = text_of(value)
            if text:
                return text
    return ""


def text_of(value: Any) -> str:
    """The text in a string, an object holding it (``text``, ``content``, ``thinking``, ``summary``,
    ``reasoning``), or a list of those, joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for key in ("text", "content", "thinking", "summary", "reasoning"):
            inner = value.get(key)
            if isinstance(inner, (str, list, Mapping)):
                text = text_of(inner)
                if text:
                    return text
        return ""
    if isinstance(value, list):
        return "".join(text_of(v) for v in value)
    return ""


# What a content part is, read off a list of parts.
TEXT, REASONING, REFUSAL, SKIPPED = "text", "reasoning", "refusal", "skipped"
_TEXT_PARTS = ("text", "output_text")
_REASONING_PARTS = ("thinking", "reasoning", "reasoning_text", "summary_text")


def content_parts(content: list[Any]) -> list[tuple[str, str]]:
    """A content given as a list of parts (Mistral's magistral models: ``[{"type": "thinking",
    "thinking": [{"type": "text", "text": ...}]}, {"type": "text", "text": ...}]``), in order, as
    (``text`` | ``reasoning`` | ``refusal``, its text), or (``skipped``, the part's type) for a part
    the Responses API has no place for (an image, a reference), which the record names."""
    out: list[tuple[str, str]] = []
    for part in content:
        kind, text = _part(part)
        if text or kind == SKIPPED:
            out.append((kind, text))
    return out


def _part(part: object) -> tuple[str, str]:
    """One part as (its kind, its text); an empty text is no part."""
    if isinstance(part, str):
        return TEXT, part
    if not isinstance(part, Mapping):
        return SKIPPED, type(part).__name__
    kind = part.get("type")
    if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
        return TEXT, part["text"]
    if kind in _REASONING_PARTS:
        return REASONING, text_of({k: v for k, v in part.items() if k != "type"})
    if kind == "refusal" and isinstance(part.get("refusal"), str):
        return REFUSAL, part["refusal"]
    return SKIPPED, kind[:64] if isinstance(kind, str) and kind else "untyped"


def legacy_call(delta: Mapping[str, Any]) -> dict[str, Any] | None:
    """A legacy ``function_call`` delta (``{"name", "arguments"}``, the form before ``tool_calls``,
    still in OpenAI's SDK types and sent by some servers) as a ``tool_calls`` entry: one call per
    answer, its pieces with neither index nor id, so each continues the call the first one began."""
    call = delta.get("function_call")
    if not isinstance(call, Mapping):
        return None
    return {"function": dict(call)}


def custom_input(arguments: str) -> str:
    """A freeform tool's raw input from the function arguments the model wrote: ``{"input": ...}``,
    or, when the model wrote the raw text itself, that text."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    if isinstance(value, Mapping):
        inner = value.get(CUSTOM_INPUT)
        if isinstance(inner, str):
            return inner
        strings = [v for v in value.values() if isinstance(v, str)]
        if len(strings) == 1:
            return strings[0]
    return value if isinstance(value, str) else arguments


def json_arguments(arguments: str) -> Any:
    try:
        return json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {}

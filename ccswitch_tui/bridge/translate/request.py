"""A Responses request (what Codex sends) → a Chat Completions request (what the provider takes).

Messages: ``instructions`` and the leading developer/system messages become one system message;
a developer message later in the conversation becomes a user message (several providers accept a
system message only first). User and assistant text keeps its role; images become ``image_url``
parts. Tool calls (``function_call``, ``custom_tool_call``, ``tool_search_call``) become assistant
``tool_calls``; consecutive calls share one assistant message, together with the assistant text
just before them. Each call's result follows its call directly, whatever the order Codex sent
them in (the Chat API rejects anything else); a call without a result (an interrupted turn) gets a
placeholder result, and a result without its call is kept as user text.

Parameters: ``reasoning.effort`` → ``reasoning_effort`` (none: left out; minimal → low; xhigh →
high), ``max_output_tokens`` → ``max_tokens``, ``tool_choice`` and ``parallel_tool_calls`` kept
when there are tools, ``text.format`` → ``response_format``, ``temperature``/``top_p`` kept.
Dropped, because a Chat provider has no use for them or rejects unknown fields: ``store``,
``include``, ``prompt_cache_key``, ``client_metadata``, ``service_tier``, ``text.verbosity``,
``reasoning.summary``, ``previous_response_id``, ``truncation``, ``metadata``, ``user``.
The upstream request always streams, with ``stream_options.include_usage``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ccswitch_tui.bridge.translate.reasoning import ReasoningMemory
from ccswitch_tui.bridge.translate.tools import CUSTOM_INPUT, ToolTable, add_tool, chat_name, convert_tools
from ccswitch_tui.valueclass import field, valueclass

INTERRUPTED = "aborted: this tool call was interrupted before it returned a result"
EFFORTS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}
DROPPED_FIELDS = ("store", "include", "prompt_cache_key", "client_metadata", "service_tier", "previous_response_id",
                  "truncation", "metadata", "user", "background", "safety_identifier", "prompt", "stream_options")
_CALLS = ("function_call", "custom_tool_call", "tool_search_call", "local_shell_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output", "tool_search_output", "local_shell_call_output")


@valueclass
class ChatRequest:
    body: dict[str, Any]
    tools: ToolTable
    dropped: list[str] = field(default_factory=list)  # what had no Chat equivalent, for the record


def chat_request(body: Mapping[str, Any], memory: ReasoningMemory | None = None) -> ChatRequest:  # noqa: C901
    """Translate one Responses request body. Never raises on odd input: unknown items are skipped."""
    table = convert_tools(body.get("tools") if isinstance(body.get("tools"), list) else None)
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    elif not isinstance(items, list):
        items = []
    for item in items:  # tools a tool search found are callable from then on
        if isinstance(item, Mapping) and item.get("type") == "tool_search_output":
            for tool in item.get("tools") or ():
                add_tool(table, tool)
    messages = chat_messages(body.get("instructions"), items, memory)
    out: dict[str, Any] = {"model": body.get("model"), "messages": messages, "stream": True,
                           "stream_options": {"include_usage": True}}
    dropped = [f for f in DROPPED_FIELDS if f in body] + table.dropped
    if table.tools:
        out["tools"] = table.tools
        choice = tool_choice(body.get("tool_choice"))
        if choice is not None:
            out["tool_choice"] = choice
        if isinstance(body.get("parallel_tool_calls"), bool):
            out["parallel_tool_calls"] = body["parallel_tool_calls"]
    reasoning = body.get("reasoning")
    if isinstance(reasoning, Mapping):
        effort = EFFORTS.get(str(reasoning.get("effort")))
        if effort:
            out["reasoning_effort"] = effort
        elif reasoning.get("effort") not in (None, "none"):
            dropped.append(f"reasoning.effort {reasoning.get('effort')}")
    if isinstance(body.get("max_output_tokens"), int):
        out["max_tokens"] = body["max_output_tokens"]
    for key in ("temperature", "top_p"):
        if isinstance(body.get(key), (int, float)):
            out[key] = body[key]
    text = body.get("text")
    if isinstance(text, Mapping):
        fmt = response_format(text.get("format"))
        if fmt is not None:
            out["response_format"] = fmt
        if "verbosity" in text:
            dropped.append("text.verbosity")
    return ChatRequest(body=out, tools=table, dropped=dropped)


def tool_choice(choice: Any) -> Any:
    if choice in ("auto", "none", "required"):
        return choice
    if isinstance(choice, Mapping) and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": chat_name(choice["name"], choice.get("namespace"))}}
    return None


def response_format(fmt: Any) -> dict[str, Any] | None:
    if not isinstance(fmt, Mapping):
        return None
    if fmt.get("type") == "json_schema":
        schema = {k: fmt[k] for k in ("name", "schema", "strict", "description") if k in fmt}
        schema.setdefault("name", "output")
        return {"type": "json_schema", "json_schema": schema}
    if fmt.get("type") == "json_object":
        return {"type": "json_object"}
    return None


# --- messages --------------------------------------------------------------------------------

def content_parts(content: Any) -> tuple[str, list[dict[str, Any]]]:
    """(text, parts): the text of a Responses content list, and Chat parts when it has images."""
    if isinstance(content, str):
        return content, []
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    images = False
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text", "summary_text", "reasoning_text") and isinstance(
                part.get("text"), str):
            texts.append(part["text"])
            parts.append({"type": "text", "text": part["text"]})
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            texts.append(part["refusal"])
            parts.append({"type": "text", "text": part["refusal"]})
        elif kind == "input_image" and (part.get("image_url") or part.get("file_id")):
            images = True
            url = part.get("image_url") or part.get("file_id")
            image: dict[str, Any] = {"url": url}
            if part.get("detail") in ("low", "high", "auto"):
                image["detail"] = part["detail"]
            parts.append({"type": "image_url", "image_url": image})
    return "\n".join(texts), (parts if images else [])


def output_text(output: Any) -> str:
    """A tool result as text: a string as it is, a content list joined, anything else as JSON."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        text, _ = content_parts(output)
        return text
    if isinstance(output, Mapping) and isinstance(output.get("content"), str):
        return output["content"]
    return json.dumps(output, ensure_ascii=False)


@valueclass
class _Call:
    call_id: str
    name: str
    arguments: str
    reasoning: str | None


def _as_call(item: Mapping[str, Any]) -> _Call | None:
    call_id = item.get("call_id") or item.get("id")
    if not isinstance(call_id, str):
        return None
    kind = item.get("type")
    if kind == "function_call":
        args = item.get("arguments")
        return _Call(call_id, chat_name(str(item.get("name") or ""), item.get("namespace")),
                     args if isinstance(args, str) else json.dumps(args or {}), None)
    if kind == "custom_tool_call":
        return _Call(call_id, chat_name(str(item.get("name") or ""), item.get("namespace")),
                     json.dumps({CUSTOM_INPUT: str(item.get("input") or "")}, ensure_ascii=False), None)
    if kind == "tool_search_call":
        return _Call(call_id, "tool_search", json.dumps(item.get("arguments") or {}, ensure_ascii=False), None)
    if kind == "local_shell_call":
        action = item.get("action") if isinstance(item.get("action"), Mapping) else {}
        return _Call(call_id, "local_shell", json.dumps(action, ensure_ascii=False), None)
    return None


def _output_of(item: Mapping[str, Any]) -> str:
    if item.get("type") == "tool_search_output":
        return json.dumps({"tools": item.get("tools") or []}, ensure_ascii=False)
    return output_text(item.get("output"))


def _reasoning_text(item: Mapping[str, Any]) -> str:
    texts = [p.get("text") for p in (item.get("content") or []) if isinstance(p, Mapping)]
    if not any(texts):
        texts = [p.get("text") for p in (item.get("summary") or []) if isinstance(p, Mapping)]
    return "\n".join(t for t in texts if isinstance(t, str) and t)


def chat_messages(instructions: Any, items: Sequence[Any], memory: ReasoningMemory | None = None
                  ) -> list[dict[str, Any]]:
    outputs, images = _tool_results(items)
    called = {c.call_id for c in (_as_call(i) for i in items if isinstance(i, Mapping) and i.get("type") in _CALLS)
              if c is not None}
    conversation = _Conversation(outputs, images, called, memory)
    if isinstance(instructions, str) and instructions.strip():
        conversation.system.append(instructions)
    for item in items:
        if isinstance(item, Mapping):
            conversation.add(item)
    return conversation.finish()


def _tool_results(items: Sequence[object]) -> tuple[dict[str, str], dict[str, list[dict[str, Any]]]]:
    """Each call's result text, and its images (view_image): a tool message holds text only."""
    outputs: dict[str, str] = {}
    images: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        if isinstance(item, Mapping) and item.get("type") in _OUTPUTS and isinstance(item.get("call_id"), str):
            outputs.setdefault(item["call_id"], _output_of(item))
            _, parts = content_parts(item.get("output")) if isinstance(item.get("output"), list) else ("", [])
            if parts:
                images.setdefault(item["call_id"], [p for p in parts if p["type"] == "image_url"])
    return outputs, images


@valueclass
class _Conversation:
    """The Chat messages, built item by item: calls wait in ``pending`` (with the assistant text
    just before them) until something else comes, then go out as one assistant message followed by
    their results."""

    outputs: dict[str, str]
    images: dict[str, list[dict[str, Any]]]
    called: set[str]  # the calls the input holds: their results are placed after them
    memory: ReasoningMemory | None
    system: list[str] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    pending: list[_Call] = field(default_factory=list)
    pending_text: str | None = None
    last_reasoning: str | None = None
    answered: bool = False  # a result for the pending calls came: the next call starts a new turn
    leading: bool = True

    def add(self, item: Mapping[str, Any]) -> None:
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            self._message(item)
        elif kind == "reasoning":
            self.last_reasoning = _reasoning_text(item) or None
        elif kind in _CALLS:
            self._call(item)
        elif kind in _OUTPUTS:
            self._output(item)

    def _message(self, item: Mapping[str, Any]) -> None:
        role = item.get("role")
        text, parts = content_parts(item.get("content"))
        if role in ("developer", "system"):
            if self.leading:
                if text.strip():
                    self.system.append(text)
                return
            self.flush()
            self.messages.append({"role": "user", "content": text})
        elif role == "assistant":
            if self.pending:
                self.flush()
            if self.pending_text is not None:
                self.messages.append({"role": "assistant", "content": self.pending_text})
            self.pending_text = text
        else:
            self.flush()
            self.messages.append({"role": "user", "content": parts or text})
        self.leading = False

    def _call(self, item: Mapping[str, Any]) -> None:
        call = _as_call(item)
        if call is None:
            return
        if self.answered:
            self.flush()
        call.reasoning = self.last_reasoning
        self.last_reasoning = None
        self.pending.append(call)
        self.leading = False

    def _output(self, item: Mapping[str, Any]) -> None:
        call_id = item.get("call_id")
        if call_id in self.called:
            self.answered = self.answered or any(c.call_id == call_id for c in self.pending)
            return  # placed right after its call, wherever it came
        self.flush()
        self.messages.append({"role": "user", "content": f"Result of tool call {call_id}:\n{_output_of(item)}"})
        self.leading = False

    def flush(self) -> None:
        self.answered = False
        if not self.pending:
            if self.pending_text is not None:
                self.messages.append({"role": "assistant", "content": self.pending_text})
            self.pending_text = None
            return
        pending = self.pending
        message: dict[str, Any] = {
            "role": "assistant", "content": self.pending_text or None,
            "tool_calls": [{"id": c.call_id, "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments}} for c in pending],
        }
        ids = [c.call_id for c in pending]
        reasoning = (self.memory.recall(ids) if self.memory else None) or next(
            (c.reasoning for c in pending if c.reasoning), None)
        if reasoning:
            message["reasoning_content"] = reasoning
        self.messages.append(message)
        for c in pending:
            content = self.outputs.get(c.call_id, INTERRUPTED) or (
                "(the result is the image below)" if self.images.get(c.call_id) else "(no output)")  # some reject ""
            self.messages.append({"role": "tool", "tool_call_id": c.call_id, "content": content})
        for c in pending:
            if self.images.get(c.call_id):
                self.messages.append({"role": "user", "content": [
                    {"type": "text", "text": f"The image(s) returned by tool call {c.call_id}:"},
                    *self.images[c.call_id]]})
        self.pending, self.pending_text = [], None

    def finish(self) -> list[dict[str, Any]]:
        self.flush()
        messages = self.messages
        if self.system:
            messages.insert(0, {"role": "system", "content": "\n\n".join(self.system)})
        if not any(m["role"] != "system" for m in messages):
            messages.append({"role": "user", "content": ""})
        return messages

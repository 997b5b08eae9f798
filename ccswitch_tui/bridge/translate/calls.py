"""The tool calls of one answer: Chat ``tool_calls`` deltas (with or without ``index``, arguments in
pieces or whole, as a string or an object) → Responses call items (``function_call``,
``custom_tool_call``, ``tool_search_call``), each added as soon as its name is known, its arguments
sent as they come (a freeform tool's input whole, at the end), and done only when the response
completed (``close``)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any

from ccswitch_tui.bridge.translate.parts import custom_input, json_arguments
from ccswitch_tui.bridge.translate.tools import CUSTOM, TOOL_SEARCH, ToolTable
from ccswitch_tui.valueclass import valueclass

Event = dict[str, Any]


def new_id(prefix: str) -> str:
    return f"{prefix}_{os.urandom(12).hex()}"


@valueclass
class ToolCall:
    key: Any
    call_id: str | None = None
    name: str = ""
    arguments: str = ""
    item_id: str = ""
    output_index: int | None = None  # set once output_item.added went out
    sent: int = 0  # how much of ``arguments`` went out as deltas


class ToolCalls:
    """The calls of one response. ``event`` makes a numbered event, ``next_index`` reserves an
    output index, ``done`` makes an item's ``output_item.done`` (all the response's own)."""

    def __init__(self, tools: ToolTable, event: Callable[..., Event], next_index: Callable[[], int],
                 done: Callable[[int, dict[str, Any]], Event]):
        self.tools = tools
        self.calls: list[ToolCall] = []
        self._event, self._next_index, self._done = event, next_index, done

    def named(self) -> list[ToolCall]:
        """The calls that can be run: a call without a name cannot, and Codex is told nothing of it."""
        return [c for c in self.calls if c.name]

    def _find(self, raw: Mapping[str, Any]) -> ToolCall:
        index = raw.get("index")
        call_id = raw.get("id") if isinstance(raw.get("id"), str) and raw.get("id") else None
        if isinstance(index, int):
            for call in self.calls:
                if call.key == index:
                    if call_id and call.call_id and call_id != call.call_id:
                        break  # a provider reusing index 0 for every call: a new id is a new call
                    return call
        elif call_id is not None:
            for call in self.calls:
                if call.call_id == call_id:
                    return call
        elif self.calls:
            return self.calls[-1]  # no index, no id: the rest of the last call
        call = ToolCall(key=index if isinstance(index, int) else f"#{len(self.calls)}")
        self.calls.append(call)
        return call

    def delta(self, raw: Mapping[str, Any]) -> list[Event]:
        """One ``tool_calls`` entry of a delta."""
        call = self._find(raw)
        if isinstance(raw.get("id"), str) and raw["id"] and not call.call_id:
            call.call_id = raw["id"]
        function = got if isinstance(got := raw.get("function"), Mapping) else {}
        if isinstance(name := function.get("name"), str) and name and not call.name:
            call.name = name
        args = function.get("arguments")
        if isinstance(args, str):
            call.arguments += args
        elif isinstance(args, Mapping):  # a provider that sends the arguments as an object
            call.arguments += json.dumps(args, ensure_ascii=False)
        out: list[Event] = []
        if call.output_index is None and call.name:
            call.call_id = call.call_id or new_id("call")
            call.output_index = self._next_index()
            call.item_id = new_id("fc")
            out.append(self._event("response.output_item.added", output_index=call.output_index,
                                   item=self.item(call, "in_progress", arguments="")))
        if call.output_index is not None and self._kind(call) != CUSTOM and len(call.arguments) > call.sent:
            out.append(self._event("response.function_call_arguments.delta", item_id=call.item_id,
                                   output_index=call.output_index, delta=call.arguments[call.sent:]))
            call.sent = len(call.arguments)
        return out

    def _kind(self, call: ToolCall) -> str:
        return self.tools.ref(call.name).kind

    def item(self, call: ToolCall, status: str, arguments: str | None = None) -> dict[str, Any]:
        ref = self.tools.ref(call.name)
        args = call.arguments if arguments is None else arguments
        if ref.kind == CUSTOM:
            item: dict[str, Any] = {"type": "custom_tool_call", "id": call.item_id, "status": status,
                                    "call_id": call.call_id, "name": ref.name, "input": custom_input(args)}
        elif ref.kind == TOOL_SEARCH:
            item = {"type": "tool_search_call", "id": call.item_id, "status": status, "call_id": call.call_id,
                    "execution": "client", "arguments": json_arguments(args)}
        else:
            item = {"type": "function_call", "id": call.item_id, "status": status, "call_id": call.call_id,
                    "name": ref.name, "arguments": args}
        if ref.namespace:
            item["namespace"] = ref.namespace
        return item

    def close(self, call: ToolCall) -> list[Event]:
        """A call's closing events: its item (if it was not added yet), its arguments whole, done."""
        out: list[Event] = []
        if call.output_index is None:
            call.call_id = call.call_id or new_id("call")
            call.output_index, call.item_id = self._next_index(), new_id("fc")
            out.append(self._event("response.output_item.added", output_index=call.output_index,
                                   item=self.item(call, "in_progress", arguments="")))
        if self._kind(call) != CUSTOM:
            if not call.arguments.strip():
                call.arguments = "{}"
            if len(call.arguments) > call.sent:
                out.append(self._event("response.function_call_arguments.delta", item_id=call.item_id,
                                       output_index=call.output_index, delta=call.arguments[call.sent:]))
                call.sent = len(call.arguments)
            out.append(self._event("response.function_call_arguments.done", item_id=call.item_id,
                                   output_index=call.output_index, arguments=call.arguments))
        out.append(self._done(call.output_index, self.item(call, "completed")))
        return out


"""Responses tools → Chat Completions function tools, and the names that lead back.

Codex declares three kinds of tools the model calls and Codex runs: ``function`` tools, ``custom``
(freeform) tools such as ``apply_patch`` whose input is raw text, and ``namespace`` groups (MCP
servers, sub-agents) whose functions are called with a namespace. Chat Completions knows only
functions, so a custom tool becomes a function taking one string ``input``, and a namespaced
function is named ``<namespace>__<name>``. ``tool_search`` (run by Codex itself) is a function too.
Hosted tools the provider would have to run (``web_search``, ``image_generation``, ...) cannot be
served through Chat Completions and are dropped.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from ccswitch_tui.valueclass import valueclass

FUNCTION = "function"
CUSTOM = "custom"
TOOL_SEARCH = "tool_search"
NAMESPACE_SEP = "__"
MAX_NAME = 64  # the Chat Completions limit on a function name
CUSTOM_INPUT = "input"


@valueclass(frozen=True)
class ToolRef:
    """What a Chat function name stands for on the Responses side."""

    kind: str  # function | custom | tool_search
    name: str
    namespace: str | None = None


@valueclass
class ToolTable:
    """The Chat tools of one request, and the way from each Chat name back to the Responses tool."""

    tools: list[dict[str, Any]]
    refs: dict[str, ToolRef]
    dropped: list[str]

    def ref(self, chat_name: str) -> ToolRef:
        """The Responses tool behind a name the model called; an unknown name stays a plain function."""
        known = self.refs.get(chat_name)
        if known is not None:
            return known
        namespace, sep, name = chat_name.partition(NAMESPACE_SEP)
        if sep and namespace and name:
            return ToolRef(FUNCTION, name, namespace)
        return ToolRef(FUNCTION, chat_name)


def chat_name(name: str, namespace: str | None = None) -> str:
    full = f"{namespace}{NAMESPACE_SEP}{name}" if namespace else name
    return full[:MAX_NAME]


def convert_tools(tools: Iterable[Any] | None) -> ToolTable:
    table = ToolTable(tools=[], refs={}, dropped=[])
    for tool in tools or ():
        add_tool(table, tool)
    return table


def add_tool(table: ToolTable, tool: Any, namespace: str | None = None) -> None:
    if not isinstance(tool, Mapping):
        return
    kind = tool.get("type")
    name = tool.get("name")
    if kind == "namespace" and isinstance(name, str):
        for inner in tool.get("tools") or ():
            add_tool(table, inner, namespace=name)
        return
    if kind == FUNCTION and isinstance(name, str):
        _add(table, ToolRef(FUNCTION, name, namespace), tool.get("description"), tool.get("parameters"))
    elif kind == CUSTOM and isinstance(name, str):
        _add(table, ToolRef(CUSTOM, name, namespace), custom_description(tool), custom_parameters(tool))
    elif kind == TOOL_SEARCH:
        _add(table, ToolRef(TOOL_SEARCH, TOOL_SEARCH), tool.get("description"), tool.get("parameters"))
    else:
        table.dropped.append(f"tool {kind or '?'}{(' ' + name) if isinstance(name, str) else ''}")


def _add(table: ToolTable, ref: ToolRef, description: Any, parameters: Any) -> None:
    name = chat_name(ref.name, ref.namespace)
    if name in table.refs:
        return
    table.refs[name] = ref
    function: dict[str, Any] = {"name": name, "parameters": normalise_schema(parameters)}
    if isinstance(description, str) and description:
        function["description"] = description
    table.tools.append({"type": "function", "function": function})


def custom_description(tool: Mapping[str, Any]) -> str:
    """A freeform tool's description, with its grammar spelled out: the model must still write
    input the tool accepts, and the grammar is all it has to go on."""
    text = str(tool.get("description") or "")
    fmt = tool.get("format")
    if isinstance(fmt, Mapping) and fmt.get("type") == "grammar" and fmt.get("definition"):
        text += (f"\n\nPut the raw text in the `{CUSTOM_INPUT}` argument. It must follow this "
                 f"{fmt.get('syntax') or ''} grammar:\n{fmt['definition']}")
    else:
        text += f"\n\nPut the raw text in the `{CUSTOM_INPUT}` argument."
    return text.strip()


def custom_parameters(tool: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {CUSTOM_INPUT: {"type": "string", "description": "the raw input text"}},
            "required": [CUSTOM_INPUT], "additionalProperties": False}


# --- JSON schemas ------------------------------------------------------------------------------

_NESTED_MAPS = ("properties", "patternProperties", "$defs", "definitions")
_NESTED_ONE = ("items", "additionalProperties", "not", "contains")
_NESTED_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_DROPPED_KEYS = ("$schema", "$id")
_JSON_TYPES = ("object", "array", "string", "number", "integer", "boolean")


def normalise_schema(schema: Any) -> dict[str, Any]:
    """A parameters schema every OpenAI-compatible provider accepts: an object at the top, no
    ``type: null`` or type lists (DeepSeek, GLM and others reject them), no null in an enum,
    no ``$schema``. The meaning stays: a nullable field is simply an optional one."""
    root = _normalise(copy.deepcopy(dict(schema))) if isinstance(schema, Mapping) else {}
    if root.get("type") != "object":
        root = {"type": "object", "properties": {}} if not root.get("properties") else {**root, "type": "object"}
    root.setdefault("properties", {})
    return root


def _normalise(node: dict[str, Any]) -> dict[str, Any]:  # noqa: C901
    for key in _DROPPED_KEYS:
        node.pop(key, None)
    kind = node.get("type")
    if isinstance(kind, list):
        real = [t for t in kind if t in _JSON_TYPES]
        if real:
            node["type"] = real[0]
        else:
            node.pop("type")
    elif kind == "null" or (kind is not None and kind not in _JSON_TYPES):
        node.pop("type")
    if isinstance(node.get("enum"), list):
        values = [v for v in node["enum"] if v is not None]
        if values:
            node["enum"] = values
        else:
            node.pop("enum")
    for key in _NESTED_MAPS:
        inner = node.get(key)
        if isinstance(inner, Mapping):
            node[key] = {k: _normalise(dict(v)) if isinstance(v, Mapping) else v for k, v in inner.items()}
    for key in _NESTED_ONE:
        if isinstance(node.get(key), Mapping):
            node[key] = _normalise(dict(node[key]))
    for key in _NESTED_LISTS:
        inner = node.get(key)
        if isinstance(inner, list):
            kept = [_normalise(dict(v)) for v in inner if isinstance(v, Mapping) and v.get("type") != "null"]
            if key != "allOf" and len(kept) == 1 and set(node) == {key}:
                return kept[0]  # {"anyOf": [X, {"type": "null"}]} is just an optional X
            node[key] = kept
    if node.get("type") == "object" and "properties" in node and not isinstance(node["properties"], Mapping):
        node["properties"] = {}
    return node

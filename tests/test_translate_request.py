"""Responses request → Chat Completions request: messages, tool adjacency, tools, schemas, params."""

from __future__ import annotations

import json

from ccswitch_tui.bridge.translate import ReasoningMemory, chat_request
from ccswitch_tui.bridge.translate.request import INTERRUPTED
from ccswitch_tui.bridge.translate.tools import convert_tools, normalise_schema


def msg(role: str, text: str) -> dict:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def call(call_id: str, name: str = "exec_command", args: str = '{"cmd":"ls"}', **extra) -> dict:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": args, **extra}


def result(call_id: str, text: str = "ok") -> dict:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def roles(messages: list[dict]) -> list[str]:
    return [m["role"] for m in messages]


def test_instructions_and_leading_developer_messages_become_one_system_message() -> None:
    body = {"model": "m", "instructions": "be brief",
            "input": [msg("developer", "rules"), msg("developer", "skills"), msg("user", "hi"),
                      msg("assistant", "hello"), msg("developer", "later note"), msg("user", "again")]}
    messages = chat_request(body).body["messages"]
    assert messages[0] == {"role": "system", "content": "be brief\n\nrules\n\nskills"}
    assert roles(messages) == ["system", "user", "assistant", "user", "user"]
    assert messages[3]["content"] == "later note"  # a system message later on is refused by some providers


def test_tool_results_follow_their_calls_even_when_sent_out_of_order() -> None:
    items = [msg("user", "go"), call("c1"), call("c2", args='{"cmd":"pwd"}'),
             msg("user", "a message that came between"), result("c2", "two"), result("c1", "one")]
    messages = chat_request({"model": "m", "input": items}).body["messages"]
    assert roles(messages) == ["user", "assistant", "tool", "tool", "user"]
    assert [c["id"] for c in messages[1]["tool_calls"]] == ["c1", "c2"]
    assert [(m["tool_call_id"], m["content"]) for m in messages[2:4]] == [("c1", "one"), ("c2", "two")]


def test_an_interrupted_call_gets_a_placeholder_result_and_an_orphan_result_becomes_text() -> None:
    items = [msg("user", "go"), call("c1"), msg("user", "stop that"), result("ghost", "late")]
    messages = chat_request({"model": "m", "input": items}).body["messages"]
    assert roles(messages) == ["user", "assistant", "tool", "user", "user"]
    assert messages[2] == {"role": "tool", "tool_call_id": "c1", "content": INTERRUPTED}
    assert "ghost" in messages[4]["content"] and "late" in messages[4]["content"]


def test_assistant_text_before_calls_shares_their_message() -> None:
    items = [msg("user", "go"), msg("assistant", "Let me look."), call("c1"), result("c1"),
             msg("user", "and now?"), msg("assistant", "Again."), call("c2"), result("c2")]
    messages = chat_request({"model": "m", "input": items}).body["messages"]
    assert roles(messages) == ["user", "assistant", "tool", "user", "assistant", "tool"]
    assert messages[1]["content"] == "Let me look." and messages[1]["tool_calls"][0]["id"] == "c1"
    assert messages[4]["content"] == "Again." and messages[4]["tool_calls"][0]["id"] == "c2"


def test_custom_and_namespaced_calls_and_tool_output_lists() -> None:
    items = [msg("user", "patch"),
             {"type": "custom_tool_call", "call_id": "p1", "name": "apply_patch", "input": "*** Begin Patch\n"},
             {"type": "custom_tool_call_output", "call_id": "p1", "output": "Success"},
             call("n1", name="close_agent", args='{"target":"a"}', namespace="multi_agent_v1"),
             {"type": "function_call_output", "call_id": "n1",
              "output": [{"type": "input_text", "text": "closed"}, {"type": "input_text", "text": "ok"}]}]
    messages = chat_request({"model": "m", "input": items}).body["messages"]
    patch = messages[1]["tool_calls"][0]["function"]
    assert patch["name"] == "apply_patch" and json.loads(patch["arguments"]) == {"input": "*** Begin Patch\n"}
    assert messages[2]["content"] == "Success"
    assert messages[3]["tool_calls"][0]["function"]["name"] == "multi_agent_v1__close_agent"
    assert messages[4]["content"] == "closed\nok"


def test_reasoning_goes_back_on_the_assistant_tool_call_turn() -> None:
    memory = ReasoningMemory()
    memory.remember(["c1"], "I will list files")
    items = [msg("user", "go"), call("c1"), result("c1"), msg("assistant", "done"), msg("user", "more"),
             {"type": "reasoning", "summary": [{"type": "summary_text", "text": "from the item"}]}, call("c2"),
             result("c2")]
    messages = chat_request({"model": "m", "input": items}, memory).body["messages"]
    turns = [m for m in messages if m.get("tool_calls")]
    assert turns[0]["reasoning_content"] == "I will list files"  # remembered for the launch
    assert turns[1]["reasoning_content"] == "from the item"  # or read back from Codex's reasoning item
    assert "reasoning_content" not in messages[3]  # a plain answer does not need it


def test_images_become_image_url_parts() -> None:
    items = [{"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "what is this"},
        {"type": "input_image", "image_url": "data:image/png;base64,AA"}]}]
    content = chat_request({"model": "m", "input": items}).body["messages"][0]["content"]
    assert content == [{"type": "text", "text": "what is this"},
                       {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]


def test_images_a_tool_returned_follow_its_result_as_user_content() -> None:
    items = [msg("user", "look"), call("v1", name="view_image", args='{"path":"a.png"}'),
             {"type": "function_call_output", "call_id": "v1",
              "output": [{"type": "input_image", "image_url": "data:image/png;base64,QQ"}]}]
    messages = chat_request({"model": "m", "input": items}).body["messages"]
    assert roles(messages) == ["user", "assistant", "tool", "user"]
    assert messages[2]["content"] == "(the result is the image below)"
    assert messages[3]["content"][1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,QQ"}}


def test_tools_function_custom_namespace_and_search_map_to_functions_and_hosted_ones_are_dropped() -> None:
    table = convert_tools([
        {"type": "function", "name": "exec_command", "description": "run", "strict": False,
         "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}},
        {"type": "custom", "name": "apply_patch", "description": "edit files",
         "format": {"type": "grammar", "syntax": "lark", "definition": "start: begin_patch"}},
        {"type": "namespace", "name": "mcp__docs", "tools": [{"type": "function", "name": "search", "parameters": {}}]},
        {"type": "tool_search", "execution": "client", "parameters": {"type": "object", "properties": {}}},
        {"type": "web_search", "external_web_access": False},
    ])
    names = [t["function"]["name"] for t in table.tools]
    assert names == ["exec_command", "apply_patch", "mcp__docs__search", "tool_search"]
    assert table.dropped == ["tool web_search"]
    patch = table.tools[1]["function"]
    assert patch["parameters"]["required"] == ["input"] and "start: begin_patch" in patch["description"]
    assert "strict" not in table.tools[0]["function"]
    assert table.ref("apply_patch").kind == "custom"
    assert (table.ref("mcp__docs__search").namespace, table.ref("mcp__docs__search").name) == ("mcp__docs", "search")


def test_schemas_providers_reject_are_normalised() -> None:
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {
        "a": {"type": ["string", "null"]},
        "b": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "c": {"type": "null"},
        "d": {"type": "string", "enum": ["x", None]},
        "e": {"type": "array", "items": {"type": ["null", "number"]}},
    }}
    out = normalise_schema(schema)
    props = out["properties"]
    assert "$schema" not in out
    assert props["a"] == {"type": "string"}
    assert props["b"] == {"type": "integer"}
    assert "type" not in props["c"]
    assert props["d"]["enum"] == ["x"]
    assert props["e"]["items"] == {"type": "number"}
    assert schema["properties"]["a"]["type"] == ["string", "null"]  # the input is not changed
    assert normalise_schema(None) == {"type": "object", "properties": {}}
    assert normalise_schema({"type": "object"}) == {"type": "object", "properties": {}}


def test_parameters_are_mapped_or_dropped_knowingly() -> None:
    body = {"model": "kimi", "input": "hi", "tools": [{"type": "function", "name": "f", "parameters": {}}],
            "tool_choice": "auto", "parallel_tool_calls": True, "reasoning": {"effort": "xhigh", "summary": "auto"},
            "max_output_tokens": 300, "store": False, "include": ["reasoning.encrypted_content"],
            "prompt_cache_key": "k", "client_metadata": {"a": "b"}, "text": {"verbosity": "low"}, "stream": True}
    req = chat_request(body)
    out = req.body
    assert out["model"] == "kimi" and out["messages"] == [{"role": "user", "content": "hi"}]
    assert out["stream"] is True and out["stream_options"] == {"include_usage": True}
    assert (out["tool_choice"], out["parallel_tool_calls"], out["reasoning_effort"], out["max_tokens"]) == (
        "auto", True, "high", 300)
    for gone in ("store", "include", "prompt_cache_key", "client_metadata", "text", "reasoning", "max_output_tokens"):
        assert gone not in out
    assert {"store", "include", "prompt_cache_key", "client_metadata", "text.verbosity"} <= set(req.dropped)
    bare = chat_request({"model": "m", "input": [], "reasoning": {"effort": "none"}, "parallel_tool_calls": True}).body
    assert "reasoning_effort" not in bare and "parallel_tool_calls" not in bare and "tools" not in bare
    assert bare["messages"] == [{"role": "user", "content": ""}]


def test_a_captured_codex_request_translates_whole() -> None:
    """The shape of what codex 0.171 sends (instructions as developer messages, namespaced and
    custom tools, a hosted tool)."""
    body = {"model": "gpt-5.5", "stream": True, "tool_choice": "auto", "parallel_tool_calls": True,
            "reasoning": {"effort": "medium"}, "store": False, "include": ["reasoning.encrypted_content"],
            "prompt_cache_key": "x", "text": {"verbosity": "low"},
            "input": [msg("developer", "You are a coding agent"), msg("user", "<environment_context/>"),
                      msg("user", "say hi")],
            "tools": [{"type": "function", "name": "exec_command", "strict": False,
                       "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}},
                      {"type": "custom", "name": "apply_patch", "format": {"type": "grammar", "syntax": "lark",
                                                                          "definition": "start: x"}},
                      {"type": "namespace", "name": "multi_agent_v1",
                       "tools": [{"type": "function", "name": "spawn_agent", "parameters": {"type": "object"}}]},
                      {"type": "web_search", "external_web_access": False}]}
    out = chat_request(body).body
    assert roles(out["messages"]) == ["system", "user", "user"]
    assert [t["function"]["name"] for t in out["tools"]] == [
        "exec_command", "apply_patch", "multi_agent_v1__spawn_agent"]
    json.dumps(out)  # serialisable as it is

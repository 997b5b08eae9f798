"""What the translation tests share: the recorded provider streams (tests/fixtures/chat), a replay
of one through the decoder and the state machine, and the checks every Responses event sequence
must pass (the validator)."""

from __future__ import annotations

from pathlib import Path

from ccswitch_tui.bridge.translate import ReasoningMemory
from ccswitch_tui.bridge.translate.sse import DONE, SSEDecoder
from ccswitch_tui.bridge.translate.stream import ResponsesStream
from ccswitch_tui.bridge.translate.tools import convert_tools

FIXTURES = Path(__file__).parent / "fixtures" / "chat"
TOOLS = [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
         {"type": "custom", "name": "apply_patch", "format": {"type": "text"}},
         {"type": "namespace", "name": "mcp__files", "tools": [{"type": "function", "name": "read"}]}]


def run(name: str, *, memory: ReasoningMemory | None = None, split: int = 7) -> tuple[list[dict], ResponsesStream]:
    """Replay a recorded stream in awkward pieces (split mid-line) through the decoder and machine."""
    stream = ResponsesStream(model="requested-model", tools=convert_tools(TOOLS), memory=memory)
    decoder = SSEDecoder()
    raw = (FIXTURES / name).read_bytes()
    events: list[dict] = []
    for i in range(0, len(raw), split):
        for data in decoder.feed(raw[i:i + split]):
            events += stream.finish() if data is DONE else stream.feed(data)
    for data in decoder.close():
        events += stream.feed(data)
    events += stream.finish()
    return events, stream


def types(events: list[dict]) -> list[str]:
    return [e["type"].removeprefix("response.") for e in events]


def done_items(events: list[dict]) -> list[dict]:
    return [e["item"] for e in events if e["type"] == "response.output_item.done"]


def assert_well_formed(events: list[dict]) -> None:
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert types(events)[:2] == ["created", "in_progress"]
    assert types(events)[-1] in ("completed", "incomplete", "failed")
    assert sum(t in ("completed", "incomplete", "failed") for t in types(events)) == 1
    added = [e["output_index"] for e in events if e["type"] == "response.output_item.added"]
    finished = [e["output_index"] for e in events if e["type"] == "response.output_item.done"]
    assert sorted(added) == list(range(len(added)))
    if types(events)[-1] == "failed":  # what was open stays unfinished: Codex keeps none of it
        assert set(finished) <= set(added)
    else:
        assert sorted(finished) == sorted(added)


CLOSING = ("output_item.done", "output_item.added", "function_call_arguments.delta", "function_call_arguments.done",
           "completed", "incomplete", "failed")


def assert_done_only_at_the_end(events: list[dict]) -> None:
    """Codex keeps every item done before a response.failed and sends it again on its retry
    (measured with 0.171.0): no item is done until the response's end is known, each in output
    order, and a failure Codex retries leaves every item open (nothing of the try is kept)."""
    kinds = types(events)
    first = kinds.index("output_item.done") if "output_item.done" in kinds else len(kinds) - 1
    assert all(k in CLOSING for k in kinds[first:]), kinds[first:]
    finished = [e["output_index"] for e in events if e["type"] == "response.output_item.done"]
    assert finished == sorted(finished)
    if kinds[-1] == "failed" and events[-1]["response"]["error"]["code"] in RETRIED_CODES:
        assert finished == [] and events[-1]["response"]["output"] == []


RETRIED_CODES = ("rate_limit_exceeded", "overloaded", "server_error")  # codes Codex 0.171.0 retries (measured)

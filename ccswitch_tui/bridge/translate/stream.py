"""Chat Completions stream chunks → the Responses events Codex reads.

``ResponsesStream`` is a small state machine: feed it each parsed chunk of the provider's stream
(``feed``), then ``finish`` when the stream ends; each call returns the Responses events to send,
numbered by ``sequence_number``. The sequence is the one the Responses API itself sends:

    response.created, response.in_progress,
    per reasoning item: output_item.added, reasoning_summary_part.added,
        reasoning_summary_text.delta..., reasoning_summary_text.done, reasoning_summary_part.done,
        output_item.done
    per message: output_item.added, content_part.added, output_text.delta...,
        output_text.done, content_part.done, output_item.done
    per function call: output_item.added, function_call_arguments.delta...,
        function_call_arguments.done, output_item.done
    response.completed (usage), or response.incomplete (finish_reason length), or response.failed
    (an error inside the stream, a content filter, a stream cut before it finished).

Codex keeps in its history every item whose ``response.output_item.done`` it got, even when the
response then fails, and sends it again on its retry (measured with Codex 0.171.0: a partial
answer closed before ``response.failed`` came back in each of the five retries, one more copy each
time, and a closed tool call was run). So no item is done before the response's end is known: a
reasoning or message item that ends mid-response gets its ``*.done`` text and part events at once,
its ``output_item.done`` with the terminal event. A failure Codex will retry (rate limit, overload,
a server error, a cut stream) closes nothing, and the retry starts from the same history; one it
does not retry (context window, a refused key, an invalid request, a content filter) first closes
the reasoning and the message, so the user sees the answer so far once, with the provider's error.
A tool call is done only when the response completed: its arguments may be cut, and Codex runs a
call as soon as it is done.

Providers differ: tool-call deltas may come without ``index`` (a new ``id`` starts a new call, no
id continues the last one), arguments may come whole in one chunk, a call may come in the legacy
``function_call`` form, reasoning may be ``reasoning_content``, ``reasoning`` or
``reasoning_details``, as a string or as an object (``{"text": ...}``), content may be a list of
text and thinking parts (Mistral), usage may come in the last chunk or with the finish reason.
A ``refusal`` delta (OpenAI) becomes the message's text: Codex (0.171.0) knows no refusal content
and drops a message that carries one, so the user would see an empty turn. A provider that
ignored ``stream: true`` answers one chat.completion body: ``from_completion`` turns it into the
same events.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ccswitch_tui.bridge.provider_errors import CONTENT_FILTER, SERVER, ProviderError, read_error
from ccswitch_tui.bridge.translate.calls import Event, ToolCalls, new_id
from ccswitch_tui.bridge.translate.errors import responses_code
from ccswitch_tui.bridge.translate.parts import (
    REASONING,
    REFUSAL,
    SKIPPED,
    Usage,
    chat_usage,
    content_parts,
    legacy_call,
    reasoning_text,
)
from ccswitch_tui.bridge.translate.reasoning import ReasoningMemory
from ccswitch_tui.bridge.translate.tools import ToolTable
from ccswitch_tui.valueclass import field, valueclass

MAX_SKIPPED = 16  # part types a record names: a provider cannot make the list grow without end
FILTERED = ("content_filter", "sensitive")  # finish reasons of a content filter (OpenAI, Azure; GLM)


@valueclass
class ResponsesStream:
    model: str
    tools: ToolTable
    memory: ReasoningMemory | None = None
    provider: str = ""  # named in error messages, so the user sees whose error it is
    response_id: str = field(default_factory=lambda: new_id("resp"))
    created_at: int = field(default_factory=lambda: int(time.time()))
    # what was observed, for the record
    served_model: str | None = None
    usage: Usage | None = None
    finish_reason: str | None = None
    error: dict[str, Any] | None = None  # the error Codex got: its code and message
    problem: ProviderError | None = None  # ... and what it was
    refused: bool = False
    error_message: str | None = None  # the provider's own words, without the provider's name
    provider_failed: bool = False  # the failure is the provider's own error event, not a stream that made no sense
    skipped_parts: list[str] = field(default_factory=list)  # content parts with no place in the Responses API
    _seq: int = 0
    _started: bool = False
    _ended: bool = False
    _output: list[dict[str, Any]] = field(default_factory=list)  # an item once its output_item.done went out
    _ended_items: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # ended, not yet done
    _reasoning: list[str] | None = None  # the open reasoning item's pieces (joined once, when it ends)
    _reasoning_item: str = ""
    _reasoning_index: int = -1
    _all_reasoning: list[str] = field(default_factory=list)
    _text: list[str] | None = None  # the open message's pieces
    _text_item: str = ""
    _text_index: int = -1
    _calls: ToolCalls = field(init=False)

    def __post_init__(self) -> None:
        self._calls = ToolCalls(self.tools, self._event, self._next_index, self._done)

    # --- public ------------------------------------------------------------------------------

    def start(self) -> list[Event]:
        if self._started:
            return []
        self._started = True
        return [self._event("response.created", response=self._response("in_progress")),
                self._event("response.in_progress", response=self._response("in_progress"))]

    def feed(self, chunk: Any) -> list[Event]:  # noqa: C901
        """One parsed chunk of the provider's stream (a dict, as JSON gives it; anything else is
        skipped)."""
        out = self.start() if not self._started else []
        if self._ended or not isinstance(chunk, dict):
            return out
        get = chunk.get
        if get("error") is not None:
            self.provider_failed = True
            return out + self.fail(read_error({"error": chunk["error"]}))
        base = get("base_resp")  # MiniMax reports errors this way, even inside a 200 stream
        if base is not None and isinstance(base, dict) and base.get("status_code") not in (None, 0):
            self.provider_failed = True
            return out + self.fail(read_error(chunk))
        model = get("model")
        if model and isinstance(model, str):
            self.served_model = model
        usage = get("usage")
        if usage is not None and isinstance(usage, dict):
            self.usage = chat_usage(usage)
        for choice in get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) not in (0, None):
                continue
            delta = choice.get("delta")
            if not isinstance(delta, dict):
                delta = message if isinstance(message := choice.get("message"), dict) else {}
            content = delta.get("content")
            if self._text is not None and self._reasoning is None and content and type(content) is str \
                    and len(delta) <= 2 and (len(delta) == 1 or "role" in delta):
                out.append(self._text_more(content))  # most of a stream: more text for the open message
            else:
                out += self._delta(delta)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
                if isinstance(choice.get("usage"), Mapping):
                    self.usage = chat_usage(choice["usage"])
        return out

    def more_text(self, chunk: Any) -> tuple[int, str] | None:
        """Most of a stream, the short way: when ``chunk`` only adds text to the message already
        open (no usage, no finish, no error, nothing else in its delta), the sequence number and
        text of its ``response.output_text.delta`` (item ``text_item``, output index ``text_index``,
        content index 0): the chunk is then taken (the served model noted), and the caller sends
        the same event ``feed`` would have made. None for any other chunk, which goes to ``feed``."""
        if self._text is None or self._reasoning is not None or self._ended or type(chunk) is not dict:
            return None
        choices = chunk.get("choices")
        if type(choices) is not list or len(choices) != 1 or "usage" in chunk or "error" in chunk \
                or "base_resp" in chunk:
            return None
        choice = choices[0]
        if type(choice) is not dict or choice.get("finish_reason") or choice.get("index", 0) not in (0, None) \
                or "usage" in choice:
            return None
        delta = choice.get("delta")
        if type(delta) is not dict or not (len(delta) == 1 or (len(delta) == 2 and "role" in delta)):
            return None
        content = delta.get("content")
        if not content or type(content) is not str:
            return None
        model = chunk.get("model")
        if model and isinstance(model, str):
            self.served_model = model
        self._text.append(content)
        self._seq += 1
        return self._seq - 1, content

    def same_again(self, text: str) -> int:
        """The chunk ``more_text`` took last, again, with another (non-empty) text: the text is
        taken and the sequence number of its delta returned. Only right after ``more_text`` took a
        chunk (nothing else in between), so the message is still open and the served model known."""
        assert self._text is not None and self._reasoning is None and not self._ended
        self._text.append(text)
        self._seq += 1
        return self._seq - 1

    def same_again_each(self, texts: list[str]) -> int:
        """``same_again`` for each text in turn: the sequence number of the first one's delta."""
        assert self._text is not None and self._reasoning is None and not self._ended
        self._text += texts
        self._seq += len(texts)
        return self._seq - len(texts)

    @property
    def ended(self) -> bool:
        """The terminal event (completed, incomplete or failed) was made."""
        return self._ended

    @property
    def text_item(self) -> str:
        return self._text_item

    @property
    def text_index(self) -> int:
        return self._text_index

    def finish(self) -> list[Event]:
        """The provider's stream ended ([DONE] or the connection closed)."""
        out = self.start()
        if self._ended:
            return out
        if self.finish_reason is None and not (self._output or self._ended_items or self._text or self._reasoning
                                               or self._calls.calls):
            return out + self.fail(ProviderError("the provider closed the stream without an answer", SERVER,
                                                 code="stream_closed"))
        if self.finish_reason in FILTERED:  # Codex would retry it, with the answer so far in its history
            self.provider_failed = True
            return out + self.fail(ProviderError(
                f"the provider's content filter stopped the answer (finish_reason {self.finish_reason})",
                CONTENT_FILTER, code=self.finish_reason))
        out += self._end_reasoning() + self._end_text()
        out += self._close_all()
        self._ended = True
        if self.finish_reason == "length":
            response = self._response("incomplete")
            response["incomplete_details"] = {"reason": "max_output_tokens"}
            return out + [self._event("response.incomplete", response=response)]
        return out + [self._event("response.completed", response=self._response("completed"))]

    def fail(self, problem: ProviderError) -> list[Event]:
        """The response failed: ``response.failed`` with the provider's message and the code of
        its class. One Codex does not retry shows the reasoning and the answer so far first; one it
        retries closes nothing (see the module's docstring)."""
        out = self.start()
        if self._ended:
            return out
        if not problem.retryable:
            out += self._end_reasoning() + self._end_text("incomplete") + self._done_ended()
        self._ended = True
        self.problem = problem
        self.error = {"code": responses_code(problem), "message": problem.named(self.provider)}
        self.error_message = problem.message
        response = self._response("failed")
        response["error"] = dict(self.error)
        return out + [self._event("response.failed", response=response)]

    def from_completion(self, body: Mapping[str, Any]) -> list[Event]:
        """A whole chat.completion (a provider that does not stream) as the full event sequence."""
        choices = []
        for choice in body.get("choices") or ():
            if isinstance(choice, Mapping):
                message = dict(choice.get("message") or {})
                calls = [dict(c, index=i) for i, c in enumerate(message.get("tool_calls") or ())
                         if isinstance(c, Mapping)]
                if calls:
                    message["tool_calls"] = calls
                choices.append({"index": choice.get("index", 0), "delta": message,
                                "finish_reason": choice.get("finish_reason") or "stop"})
        return self.feed({**body, "choices": choices}) + self.finish()

    @property
    def output(self) -> list[dict[str, Any]]:
        return list(self._output)

    # --- deltas ------------------------------------------------------------------------------

    def _delta(self, delta: Mapping[str, Any]) -> list[Event]:
        out: list[Event] = []
        reasoning = reasoning_text(delta)
        if reasoning:
            out += self._reasoning_delta(reasoning)
        content = delta.get("content")
        if isinstance(content, str) and content:
            out += self._end_reasoning()
            out += self._text_delta(content)
        elif isinstance(content, list):
            out += self._parts(content)
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            self.refused = True
            out += self._end_reasoning()
            out += self._text_delta(refusal)
        calls = delta.get("tool_calls")
        if "function_call" in delta:  # the legacy form: one call, in pieces
            legacy = legacy_call(delta)
            calls = [*(calls or ()), legacy] if legacy is not None else calls
        for raw in calls or ():
            if isinstance(raw, Mapping):
                out += self._end_reasoning()
                out += self._end_text()
                out += self._calls.delta(raw)
        return out

    def _parts(self, content: list[Any]) -> list[Event]:
        """Content as a list of parts, in order: text and refusals add to the message, thinking to
        the reasoning (which then comes before the text it interrupts, as its own item)."""
        out: list[Event] = []
        for kind, text in content_parts(content):
            if kind == SKIPPED:
                if text not in self.skipped_parts and len(self.skipped_parts) < MAX_SKIPPED:
                    self.skipped_parts.append(text)
            elif kind == REASONING:
                out += self._end_text()
                out += self._reasoning_delta(text)
            else:
                self.refused = self.refused or kind == REFUSAL
                out += self._end_reasoning()
                out += self._text_delta(text)
        return out

    def _reasoning_delta(self, text: str) -> list[Event]:
        out: list[Event] = []
        if self._reasoning is None:
            self._reasoning, self._reasoning_item = [], new_id("rs")
            self._reasoning_index = self._next_index()
            out.append(self._event("response.output_item.added", output_index=self._reasoning_index,
                                   item={"type": "reasoning", "id": self._reasoning_item, "summary": []}))
            out.append(self._event("response.reasoning_summary_part.added", item_id=self._reasoning_item,
                                   output_index=self._reasoning_index, summary_index=0,
                                   part={"type": "summary_text", "text": ""}))
        self._reasoning.append(text)
        out.append(self._event("response.reasoning_summary_text.delta", item_id=self._reasoning_item,
                               output_index=self._reasoning_index, summary_index=0, delta=text))
        return out

    def _end_reasoning(self) -> list[Event]:
        """The open reasoning item ends: its text and part are done now, the item with the response."""
        if self._reasoning is None:
            return []
        text, self._reasoning = "".join(self._reasoning), None
        self._all_reasoning.append(text)
        item = {"type": "reasoning", "id": self._reasoning_item, "summary": [{"type": "summary_text", "text": text}]}
        common = {"item_id": self._reasoning_item, "output_index": self._reasoning_index, "summary_index": 0}
        self._ended_items.append((self._reasoning_index, item))
        return [self._event("response.reasoning_summary_text.done", **common, text=text),
                self._event("response.reasoning_summary_part.done", **common,
                            part={"type": "summary_text", "text": text})]

    def _text_delta(self, text: str) -> list[Event]:
        out: list[Event] = []
        if self._text is None:
            self._text, self._text_item = [], new_id("msg")
            self._text_index = self._next_index()
            out.append(self._event("response.output_item.added", output_index=self._text_index, item={
                "type": "message", "id": self._text_item, "role": "assistant", "status": "in_progress",
                "content": []}))
            out.append(self._event("response.content_part.added", item_id=self._text_item,
                                   output_index=self._text_index, content_index=0,
                                   part={"type": "output_text", "text": "", "annotations": []}))
        out.append(self._text_more(text))
        return out

    def _text_more(self, text: str) -> Event:
        assert self._text is not None  # a text delta only ever follows the message it opened
        self._text.append(text)
        return self._event("response.output_text.delta", item_id=self._text_item, output_index=self._text_index,
                           content_index=0, delta=text)

    def _end_text(self, status: str = "completed") -> list[Event]:
        """The open message ends: its text and part are done now, the item with the response."""
        if self._text is None:
            return []
        text, self._text = "".join(self._text), None
        part = {"type": "output_text", "text": text, "annotations": []}
        common = {"item_id": self._text_item, "output_index": self._text_index, "content_index": 0}
        item = {"type": "message", "id": self._text_item, "role": "assistant", "status": status,
                "content": [part]}
        self._ended_items.append((self._text_index, item))
        return [self._event("response.output_text.done", **common, text=text),
                self._event("response.content_part.done", **common, part=part)]

    def _done_ended(self) -> list[Event]:
        """``output_item.done`` for each item that ended, in output order."""
        ended, self._ended_items = sorted(self._ended_items, key=lambda pair: pair[0]), []
        return [self._done(index, item) for index, item in ended]

    def _close_all(self) -> list[Event]:
        """Every item done, in output order: the reasoning and messages that ended and the calls
        (a call without a name cannot be run, and Codex is told nothing of it)."""
        ended = dict(self._ended_items)
        self._ended_items = []
        calls = self._calls.named()
        placed = {c.output_index: c for c in calls if c.output_index is not None}
        out: list[Event] = []
        for index in sorted([*ended, *placed]):
            out += [self._done(index, ended[index])] if index in ended else self._calls.close(placed[index])
        for call in calls:
            if call.output_index is None:
                out += self._calls.close(call)
        if self.memory is not None and self._all_reasoning:
            self.memory.remember([c.call_id for c in calls if c.call_id], "".join(self._all_reasoning))
        self._calls.calls = []
        return out

    # --- helpers -----------------------------------------------------------------------------

    def _next_index(self) -> int:
        self._output.append({})  # reserved; filled by _done
        return len(self._output) - 1

    def _done(self, index: int, item: dict[str, Any]) -> Event:
        self._output[index] = item
        return self._event("response.output_item.done", output_index=index, item=item)

    def _response(self, status: str) -> dict[str, Any]:
        response: dict[str, Any] = {
            "id": self.response_id, "object": "response", "created_at": self.created_at, "status": status,
            "model": self.model, "output": [o for o in self._output if o] if status != "in_progress" else [],
        }
        if status in ("completed", "incomplete") and self.usage is not None:
            response["usage"] = self.usage.as_responses()
        return response

    def _event(self, kind: str, **fields: Any) -> Event:
        event = {"type": kind, "sequence_number": self._seq, **fields}
        self._seq += 1
        return event

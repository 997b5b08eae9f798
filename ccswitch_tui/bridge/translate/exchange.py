"""One translated request/response exchange, the way a server drives it, whatever its transport:

    x = Exchange.start(responses_body, memory, provider="Kimi")
    upstream gets x.chat_body (POST {base_url}/chat/completions)
    upstream answered an error    → status, body = x.error(status, raw_body)
    upstream streams              → for each chunk of bytes: send x.feed(chunk); at the end: x.end()
    upstream answered JSON        → send x.whole(raw_body), or x.too_large(limit) past the limit
    upstream broke mid-stream     → send x.broken("why")

Everything sent to Codex is already SSE bytes. ``x.observed()`` is what the request's record keeps
of the answer (served model, usage, the provider's error): read off the same parse that made
Codex's events, so the record and Codex never disagree and the stream is parsed once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ccswitch_tui.bridge.provider_errors import INVALID_REQUEST, SERVER, ProviderError, read_error
from ccswitch_tui.bridge.translate.errors import responses_error, responses_status
from ccswitch_tui.bridge.translate.parts import Usage
from ccswitch_tui.bridge.translate.reasoning import ReasoningMemory
from ccswitch_tui.bridge.translate.request import ChatRequest, chat_request
from ccswitch_tui.bridge.translate.sse import DONE, MAX_EVENT, RepeatedText, SSEDecoder, TextDeltas, encode, parse
from ccswitch_tui.bridge.translate.stream import ResponsesStream
from ccswitch_tui.valueclass import valueclass

CHAT_PATH = "chat/completions"
_RUNS_PER_READ = 4
# What one answer's translation may hold, estimated as it grows: each delta it keeps (text,
# reasoning, a tool call's arguments) costs DELTA_COST (a string and its place in a list) plus
# TEXT_WEIGHT a character of what it carries (an event's size past ENVELOPE, when not read as plain
# text): at the end the whole text is written out in four events, and copied on its way to the child
# about ten times over. Past MAX_HELD the answer is given up (``response.failed``) and no more of it
# is read, so an endless stream keeps memory flat (under 100 MB measured: 32 MiB is some 300,000 text
# deltas, or 3 MiB of text, far more than any model answers at once).
MAX_HELD = 32 * 1024 * 1024
DELTA_COST = 64
TEXT_WEIGHT = 10
ENVELOPE = 160  # bytes of a Chat Completions chunk around what it carries


@valueclass
class Exchange:
    request: ChatRequest
    stream: ResponsesStream
    provider: str
    decoder: SSEDecoder
    problem: ProviderError | None = None  # the provider's error, read and classed
    system_fingerprint: str | None = None
    saw_data: bool = False  # the upstream's stream held a ``data:`` line
    saw_done: bool = False  # ... and its ``data: [DONE]``
    _deltas: TextDeltas | None = None  # the open message's text delta template
    _repeated: RepeatedText | None = None  # the last event, when it was plain text (see sse.RepeatedText)
    held: int = 0  # what the translation holds of this answer, estimated (MAX_HELD)
    gave_up: str | None = None  # why the answer was given up (too large): no more of it is read

    @classmethod
    def start(cls, body: Mapping[str, Any], memory: ReasoningMemory | None = None,
              provider: str = "provider") -> Exchange:
        request = chat_request(body, memory)
        stream = ResponsesStream(model=str(body.get("model") or ""), tools=request.tools, memory=memory,
                                provider=provider)
        return cls(request=request, stream=stream, provider=provider, decoder=SSEDecoder())

    @property
    def chat_body(self) -> dict[str, Any]:
        return self.request.body

    @property
    def requested_model(self) -> str | None:
        model = self.request.body.get("model")
        return model if isinstance(model, str) else None

    @property
    def served_model(self) -> str | None:
        return self.stream.served_model

    @property
    def usage(self) -> Usage | None:
        return self.stream.usage

    def opening(self) -> bytes:
        """response.created and response.in_progress, sent as soon as the provider accepted."""
        return _join(self.stream.start())

    def feed(self, chunk: bytes) -> bytes:  # noqa: C901
        if self.gave_up is not None:
            return b""
        held = 0
        out: list[bytes] = []
        stream = self.stream
        more_text = stream.more_text
        deltas, repeated = self._deltas, self._repeated
        frames = self.decoder.frames(chunk)
        if not self.saw_data and frames:
            self.saw_data = any(f.startswith("data:") or "\ndata:" in f for f in frames)
        i, n = 0, len(frames)
        runs = _RUNS_PER_READ  # a bound on the runs looked for: a stream that keeps breaking them costs no more
        while i < n:
            if repeated is not None and deltas is not None and n - i > 1 and runs:
                runs -= 1
                i, run = repeated.run(frames, i)  # the same event with other texts, read at once
                if run is not None:
                    out.append(deltas.encode_each(stream.same_again_each(run.texts), run.written))
                    held += TEXT_WEIGHT * sum(map(len, run.texts)) + DELTA_COST * len(run.texts)
                    if i == n:
                        break
            frame = frames[i]
            i += 1
            if repeated is not None:  # the last event again with another text: no parse, no dict
                text = repeated.text(frame)
                if text is not None and deltas is not None:  # deltas: set with `repeated`, for its message
                    out.append(deltas.encode(stream.same_again(text), text))
                    held += TEXT_WEIGHT * len(text) + DELTA_COST
                    continue
                repeated = None
            for data in parse(frame):
                if data is DONE:
                    self.saw_done = True
                    out += [encode(e) for e in stream.finish()]
                    continue
                if self.system_fingerprint is None and type(data) is dict and "system_fingerprint" in data:
                    self._fingerprint(data)
                more = more_text(data)
                if more is not None:  # the common case: more text for the open message, no dict in between
                    seq, text = more
                    if deltas is None or deltas.item_id != stream.text_item:
                        deltas = self._deltas = TextDeltas(stream.text_item, stream.text_index)
                    out.append(deltas.encode(seq, text))
                    repeated = RepeatedText.of(frame, text)
                    held += TEXT_WEIGHT * len(text) + DELTA_COST
                else:
                    out += [encode(e) for e in stream.feed(data)]
                    held += DELTA_COST + TEXT_WEIGHT * max(0, len(frame) - ENVELOPE)
        self._repeated = repeated
        self.held += held
        if self.decoder.overflowed:
            out.append(self.give_up(f"the provider sent an SSE event of over {MAX_EVENT >> 20} MiB that did not end"))
        elif self.held > MAX_HELD:
            out.append(self.give_up(f"the provider's answer grew past the {MAX_HELD >> 20} MiB a translation holds"))
        if stream.error is not None:
            self._note_error()
        return b"".join(out)

    def give_up(self, why: str) -> bytes:
        """The answer is too large to translate: Codex gets ``response.failed`` saying why, and no
        more of the answer is read (``gave_up``)."""
        self.gave_up = why
        self._repeated = None
        failed = _join(self.stream.fail(ProviderError(why, INVALID_REQUEST, code="answer_too_large")))
        self._note_error()
        return failed

    def end(self) -> bytes:
        if self.gave_up is not None:
            return b""
        events = []
        self.saw_data = self.saw_data or self.decoder.holds(b"data:")
        for data in self.decoder.close():
            self.saw_done = self.saw_done or data is DONE
            events += self.stream.finish() if data is DONE else self.stream.feed(data)
        events += self.stream.finish()
        self._note_error()
        return _join(events)

    def _fingerprint(self, data: Mapping[str, Any]) -> None:
        if isinstance(data.get("system_fingerprint"), str):
            self.system_fingerprint = data["system_fingerprint"]

    def whole(self, raw: bytes) -> bytes:
        """A provider that answered one JSON body although the request asked for a stream."""
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if isinstance(body, Mapping):
            self._fingerprint(body)
        if isinstance(body, Mapping) and body.get("error") is not None:
            self.stream.provider_failed = True
            events = self.stream.fail(read_error(body))
        elif isinstance(body, Mapping) and isinstance(body.get("choices"), list):
            events = self.stream.from_completion(body)
        elif isinstance(body, Mapping) and isinstance(body.get("base_resp"), Mapping):
            self.stream.provider_failed = True  # MiniMax's 200 with only its status: a failure it names
            events = self.stream.fail(read_error(body))
        elif isinstance(body, Mapping):  # no answer in it
            events = self.stream.fail(ProviderError(read_error(body).message, SERVER, code="provider_error"))
        else:  # perhaps SSE after all, sent without the event-stream content type
            return self.feed(raw) + self.end()
        self._note_error()
        return _join(events)

    def too_large(self, limit: int) -> bytes:
        """An answer of one JSON body larger than ``limit`` bytes: not read, and not one a retry fixes."""
        events = self.stream.fail(ProviderError(f"the provider's answer (one JSON body) is over {limit // 2**20} MiB",
                                                INVALID_REQUEST, code="answer_too_large"))
        self._note_error()
        return _join(events)

    def broken(self, why: str) -> bytes:
        events = self.stream.fail(ProviderError(why, SERVER, code="stream_error"))
        self._note_error()
        return _join(events)

    def error(self, status: int, raw: bytes) -> tuple[int, bytes]:
        """The provider answered an HTTP error: the status Codex acts on as it should
        (``errors.responses_status``), the provider's message in the OpenAI error shape with the code of
        its class."""
        self.problem = read_error(raw, status)
        shown = responses_status(status)
        return shown, json.dumps(responses_error(self.problem, self.provider, shown), ensure_ascii=False).encode(
            "utf-8", "backslashreplace")

    def _note_error(self) -> None:
        if self.stream.problem is not None and self.problem is None:
            self.problem = self.stream.problem

    def observed(self) -> dict[str, Any]:
        """The record's fields for the answer: the served model and the usage exactly as Codex got
        them, and the provider's error in one line (its code once, then its message), if any."""
        usage = self.stream.usage
        fields: dict[str, Any] = {"model_served": self.stream.served_model,
                                  "system_fingerprint": self.system_fingerprint}
        if usage is None:
            fields.update(input_tokens=None, output_tokens=None, cached_tokens=None, reasoning_tokens=None,
                          usage_source="missing")
        else:
            fields.update(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                          cached_tokens=usage.cached_tokens, reasoning_tokens=usage.reasoning_tokens,
                          usage_source="reported")
        fields["error"] = self.record_error
        fields["error_class"] = self.problem.error_class if self.problem is not None else None
        # not for the record: what the server says of the upstream's answer when the translation failed
        fields["upstream"] = {"saw_data": self.saw_data, "terminal": self.saw_done,
                              "said_error": self.stream.provider_failed}
        if self.stream.refused:
            fields["refusal"] = True
        if self.stream.skipped_parts:
            fields["skipped_parts"] = list(self.stream.skipped_parts)
        return fields

    @property
    def record_error(self) -> str | None:
        """The provider's error as the record keeps it: ``code: message`` on one line, the code of
        its class where the provider's says nothing of it, left out when the message says it."""
        return self.problem.record_text()[:500] if self.problem is not None else None

    def record_fields(self) -> dict[str, Any]:
        """What a request record adds in translating mode."""
        return {"translated": "responses->chat", "upstream_model": self.requested_model,
                "dropped": list(self.request.dropped)}


def _join(events: list[dict[str, Any]]) -> bytes:
    return b"".join([encode(e) for e in events])

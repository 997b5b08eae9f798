"""Server-sent events: a decoder for the provider's Chat Completions stream and an encoder for the
Responses events Codex reads."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from itertools import repeat
from json import decoder, encoder, scanner
from operator import getitem
from typing import Any

DONE = object()  # the ``data: [DONE]`` sentinel


class SSEDecoder:
    """Feed bytes as they arrive; get each complete event's ``data`` parsed (JSON), or DONE.
    Lines that are not JSON are skipped (some gateways send keep-alive text)."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[Any]:
        out: list[Any] = []
        for frame in self.frames(chunk):
            out += parse(frame)
        return out

    def frames(self, chunk: bytes) -> list[str]:
        """The complete events ``chunk`` ends, decoded at once (a blank line never falls inside a
        UTF-8 character), each as its text without the blank line; ``parse`` reads one."""
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        data = self._buffer + chunk if self._buffer else chunk
        cut = data.rfind(b"\n\n")
        if cut < 0:
            self._buffer = data
            return []
        self._buffer = data[cut + 2:]
        return data[:cut].decode("utf-8", "replace").split("\n\n")

    def holds(self, marker: bytes) -> bool:
        """Whether what waits for its blank line holds ``marker``."""
        return marker in self._buffer

    def close(self) -> list[Any]:
        """Whatever a stream that ended without a blank line left behind."""
        frame, self._buffer = self._buffer, b""
        return list(_parse(frame)) if frame.strip() else []


def parse(frame: str) -> list[Any]:
    """One event's ``data`` parsed: [value], [DONE], or [] (not JSON, or no data line)."""
    # the common case first: one "data: {...}" line, parsed where it stands (no copy)
    if frame.startswith("data: {") and "\n" not in frame:
        try:
            value, end = _scan(frame, 6)
        except (StopIteration, ValueError):  # not JSON
            return []
        return [value] if end == len(frame) or not frame[end:].strip() else []
    return list(_parse(frame.encode())) if frame else []


def _parse(frame: bytes) -> Iterator[Any]:
    data = [line[5:].lstrip(b" ") if line.startswith(b"data:") else None for line in frame.split(b"\n")]
    lines = [d for d in data if d is not None]
    if not lines:
        return
    text = b"\n".join(lines).strip()
    if text == b"[DONE]":
        yield DONE
        return
    try:
        yield json.loads(text)
    except ValueError:
        return


def _make_dumps() -> Callable[[Any], str]:
    """Compact JSON, non-ASCII kept: the C encoder made once (``json.dumps`` with options builds a
    new encoder for every call, a tenth of a translation's time per event)."""

    if encoder.c_make_encoder is None:  # an interpreter without the C accelerator
        return json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    make = encoder.c_make_encoder(None, None, encoder.encode_basestring, None, ":", ",", False, False, True)
    return lambda value: "".join(make(value, 0))


_dumps = _make_dumps()
_scan = scanner.make_scanner(decoder.JSONDecoder())  # the C scanner, straight: value, end = _scan(text, start)
scan_string = decoder.scanstring  # a JSON string's value from just after its opening quote: value, end
_NOT_PLAIN = re.compile(r'["\\\x00-\x1f]')  # what a JSON string's text cannot hold as it is


class RepeatedText:
    """Most of a provider's stream is one event repeated with only its text changed: the same id,
    model, creation time and fingerprint around ``"content":"<text>"``. Once such an event was
    parsed whole and found to be plain text (``ResponsesStream.more_text``), the next one is read
    by checking that everything around its text is byte for byte the same, and reading the text
    alone; it is then the same event with another text. Anything else is parsed whole."""

    __slots__ = ("prefix", "suffix", "_start", "_raw", "_joint")

    MARK = '"content":"'

    def __init__(self, prefix: str, suffix: str):
        self.prefix = prefix  # up to the text's opening quote, included
        self.suffix = suffix  # from the text's closing quote, excluded
        self._start = len(prefix)
        self._raw = slice(len(prefix), -len(suffix) - 1)  # an event's text as written, without its quotes
        self._joint = f'"{suffix}\n\n{prefix}'  # from one event's text to the next one's

    @classmethod
    def of(cls, frame: str, text: str) -> RepeatedText | None:
        """The template of ``frame``, a plain text event whose text is ``text`` (as parsed), when
        the event names ``"content"`` once, as the key of that text (``"content"`` cannot occur
        inside a JSON string: its quotes would be escaped). Whatever a provider writes around its
        text, what Codex gets is text the provider chose: the check is for honest encoders."""
        if frame.count('"content"') != 1:
            return None
        at = frame.find(cls.MARK)
        if at < 0:
            return None
        start = at + len(cls.MARK)
        try:
            value, end = scan_string(frame, start)
        except ValueError:
            return None
        return cls(frame[:start], frame[end:]) if value == text else None

    def text(self, frame: str) -> str | None:
        """``frame``'s text when ``frame`` is this event with another (non-empty) text, else None."""
        if not (frame.startswith(self.prefix) and frame.endswith(self.suffix)):
            return None
        try:
            value, end = scan_string(frame, self._start)
        except ValueError:
            return None
        return value if value and end == len(frame) - len(self.suffix) else None

    def texts(self, frames: list[str]) -> list[str] | None:
        """Every text of ``frames`` at once, when each frame is this event with another non-empty
        text written plainly (no escape, quote or control character: the text is then the bytes
        between its quotes), else None. Most of a fast stream's read is such a run: one check of the
        whole run against the texts put back into the template replaces a check per event."""
        raws = list(map(getitem, frames, repeat(self._raw)))
        joined = "".join(raws)
        if _NOT_PLAIN.search(joined) or not all(raws):
            return None
        rebuilt = f'{self.prefix}{self._joint.join(raws)}"{self.suffix}'
        return raws if rebuilt == "\n\n".join(frames) else None


def _make_quote() -> Callable[[str], str]:
    fast: Callable[[str], str] | None = getattr(encoder, "c_encode_basestring", None)
    return fast or encoder.py_encode_basestring


_quote = _make_quote()
_TEXT_DELTA = "response.output_text.delta"


class TextDeltas:
    """The ``response.output_text.delta`` events of one message (content index 0), from a template:
    all but the sequence number and the text is the same in each, so only those two are written per
    event (the same bytes ``encode`` writes for the event's dict)."""

    __slots__ = ("item_id", "output_index", "_head", "_middle")

    def __init__(self, item_id: str, output_index: int):
        self.item_id = item_id
        self.output_index = output_index
        self._head = f'event: {_TEXT_DELTA}\ndata: {{"type":"{_TEXT_DELTA}","sequence_number":'
        self._middle = f',"item_id":{_quote(item_id)},"output_index":{output_index:d},"content_index":0,"delta":'

    def encode(self, seq: int, text: str) -> bytes:
        return f"{self._head}{seq:d}{self._middle}{_quote(text)}}}\n\n".encode("utf-8", "backslashreplace")

    def encode_plain(self, seq: int, texts: list[str]) -> bytes:
        """``encode`` of each text in turn, numbered from ``seq``, for texts that JSON writes as they
        are (``RepeatedText.texts``: no escape, quote or control character)."""
        head, middle = self._head, self._middle
        return "".join([f'{head}{n:d}{middle}"{text}"}}\n\n' for n, text in enumerate(texts, seq)]).encode(
            "utf-8", "backslashreplace")


def text_delta(seq: int, item_id: str, output_index: int, text: str) -> bytes:
    """``encode`` of a ``response.output_text.delta`` (content index 0), from its parts."""
    return TextDeltas(item_id, output_index).encode(seq, text)


def encode(event: Mapping[str, Any]) -> bytes:
    """One Responses event as SSE: ``event: <type>`` and its JSON. The text delta, most of what a
    stream is, is written from a template (the same bytes the encoder writes for its six keys, in
    the order ``ResponsesStream`` makes them) rather than walked as a dict. A lone surrogate (JSON
    allows ``"\\ud800"``, UTF-8 cannot hold it) is written as that escape again."""
    if event["type"] == _TEXT_DELTA and len(event) == 6:
        return (f'event: {_TEXT_DELTA}\ndata: {{"type":"{_TEXT_DELTA}","sequence_number":{event["sequence_number"]:d},'
                f'"item_id":{_quote(event["item_id"])},"output_index":{event["output_index"]:d},'
                f'"content_index":{event["content_index"]:d},"delta":{_quote(event["delta"])}}}\n\n'
                ).encode("utf-8", "backslashreplace")
    return f"event: {event['type']}\ndata: {_dumps(event)}\n\n".encode("utf-8", "backslashreplace")

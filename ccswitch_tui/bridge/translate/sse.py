"""Server-sent events: a decoder for the provider's Chat Completions stream and an encoder for the
Responses events Codex reads."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from json import decoder, scanner
from typing import Any

DONE = object()  # the ``data: [DONE]`` sentinel


class SSEDecoder:
    """Feed bytes as they arrive; get each complete event's ``data`` parsed (JSON), or DONE.
    Lines that are not JSON are skipped (some gateways send keep-alive text)."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[Any]:
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        data = self._buffer + chunk if self._buffer else chunk
        cut = data.rfind(b"\n\n")
        if cut < 0:
            self._buffer = data
            return []
        self._buffer = data[cut + 2:]
        # The complete events, decoded at once (a blank line never falls inside a UTF-8 character),
        # each parsed where it stands: no copy per event.
        out: list[Any] = []
        for frame in data[:cut].decode("utf-8", "replace").split("\n\n"):
            # the common case first: one "data: {...}" line
            if frame.startswith("data: {") and "\n" not in frame:
                try:
                    value, end = _scan(frame, 6)
                except (StopIteration, ValueError):  # not JSON
                    continue
                if end == len(frame) or not frame[end:].strip():
                    out.append(value)
            elif frame:
                out.extend(_parse(frame.encode()))
        return out

    def close(self) -> list[Any]:
        """Whatever a stream that ended without a blank line left behind."""
        frame, self._buffer = self._buffer, b""
        return list(_parse(frame)) if frame.strip() else []


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
    from json import encoder

    if encoder.c_make_encoder is None:  # an interpreter without the C accelerator
        return json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    make = encoder.c_make_encoder(None, None, encoder.encode_basestring, None, ":", ",", False, False, True)
    return lambda value: "".join(make(value, 0))


_dumps = _make_dumps()
_scan = scanner.make_scanner(decoder.JSONDecoder())  # the C scanner, straight: value, end = _scan(text, start)


def _make_quote() -> Callable[[str], str]:
    from json import encoder

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

"""Server-sent events: a decoder for the provider's Chat Completions stream and an encoder for the
Responses events Codex reads."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from json import decoder, encoder, scanner
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
        if b"\n\n" not in data:
            self._buffer = data
            return []
        frames = data.split(b"\n\n")
        self._buffer = frames.pop()
        out: list[Any] = []
        for frame in frames:
            # the common case first: one "data: {...}" line
            if frame.startswith(b"data: {") and b"\n" not in frame:
                try:
                    out.append(_loads(frame[6:]))
                except ValueError:
                    pass
            elif frame:
                out.extend(_parse(frame))
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

    if encoder.c_make_encoder is None:  # an interpreter without the C accelerator
        return json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    make = encoder.c_make_encoder(None, None, encoder.encode_basestring, None, ":", ",", False, False, True)
    return lambda value: "".join(make(value, 0))


def _make_loads() -> Callable[[bytes], Any]:
    """``json.loads`` for one event's bytes, straight to the C scanner."""

    scan = scanner.make_scanner(decoder.JSONDecoder())

    def loads(data: bytes) -> Any:
        text = data.decode("utf-8", "replace")
        try:
            value, end = scan(text, 0)
        except StopIteration:
            raise ValueError("not JSON") from None
        if end != len(text) and text[end:].strip():
            raise ValueError("extra data")
        return value

    return loads


_dumps = _make_dumps()
_loads = _make_loads()


def _make_quote() -> Callable[[str], str]:

    fast: Callable[[str], str] | None = getattr(encoder, "c_encode_basestring", None)
    return fast or encoder.py_encode_basestring


_quote = _make_quote()
_TEXT_DELTA = "response.output_text.delta"


def text_delta(seq: int, item_id: str, output_index: int, text: str) -> bytes:
    """``encode`` of a ``response.output_text.delta`` (content index 0), from its parts."""
    return (f'event: {_TEXT_DELTA}\ndata: {{"type":"{_TEXT_DELTA}","sequence_number":{seq:d},'
            f'"item_id":{_quote(item_id)},"output_index":{output_index:d},"content_index":0,'
            f'"delta":{_quote(text)}}}\n\n').encode()


def encode(event: Mapping[str, Any]) -> bytes:
    """One Responses event as SSE: ``event: <type>`` and its JSON. The text delta, most of what a
    stream is, is written from a template (the same bytes the encoder writes for its six keys, in
    the order ``ResponsesStream`` makes them) rather than walked as a dict."""
    if event["type"] == _TEXT_DELTA and len(event) == 6:
        return (f'event: {_TEXT_DELTA}\ndata: {{"type":"{_TEXT_DELTA}","sequence_number":{event["sequence_number"]:d},'
                f'"item_id":{_quote(event["item_id"])},"output_index":{event["output_index"]:d},'
                f'"content_index":{event["content_index"]:d},"delta":{_quote(event["delta"])}}}\n\n').encode()
    return f"event: {event['type']}\ndata: {_dumps(event)}\n\n".encode()

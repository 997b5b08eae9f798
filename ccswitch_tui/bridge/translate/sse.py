"""Server-sent events: a decoder for the provider's Chat Completions stream and an encoder for the
Responses events Codex reads."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

DONE = object()  # the ``data: [DONE]`` sentinel


class SSEDecoder:
    """Feed bytes as they arrive; get each complete event's ``data`` parsed (JSON), or DONE.
    Lines that are not JSON are skipped (some gateways send keep-alive text)."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> Iterator[Any]:
        self._buffer += chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        while b"\n\n" in self._buffer:
            frame, self._buffer = self._buffer.split(b"\n\n", 1)
            yield from _parse(frame)

    def close(self) -> Iterator[Any]:
        """Whatever a stream that ended without a blank line left behind."""
        frame, self._buffer = self._buffer, b""
        if frame.strip():
            yield from _parse(frame)


def _parse(frame: bytes) -> Iterator[Any]:
    data = [line[5:].lstrip(b" ") if line.startswith(b"data:") else None for line in frame.split(b"\n")]
    lines = [d for d in data if d is not None]
    if not lines:
        return
    text = b"\n".join(lines).decode("utf-8", "replace").strip()
    if text == "[DONE]":
        yield DONE
        return
    try:
        yield json.loads(text)
    except ValueError:
        return


def encode(event: Mapping[str, Any]) -> bytes:
    """One Responses event as SSE: ``event: <type>`` and its JSON."""
    return f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()

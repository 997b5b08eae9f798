"""What the bridge hands back to the child never holds a secret it knows.

The child holds the launch token, not the key; a provider that echoes the key (a redirect built
from the query, an error quoting the credential, a reflected header) would hand it over. Every
byte the bridge returns passes through ``SecretFilter``: the key becomes the launch token (the
exact inverse of the swap on the way in, so an echoed URL still works through the bridge), every
other secret it knows (``[secrets]`` values, proxy credentials) becomes its mask.

Streams are filtered as they pass, never buffered whole: ``StreamFilter.feed`` replaces every
complete secret and holds back only the end of the data that could be the start of one (at most
``len(longest secret) - 1`` bytes, usually none: an SSE event ends with a blank line, which starts
no secret). The cost per chunk is one substring search per secret, plus one ``replace`` for a hit:
a few µs for an SSE event, under 0.2 ms for 64 KiB (measured on a busy 2-core machine).

    f = SecretFilter([(key, token), (other, "oth…cret")])
    s = f.stream()
    out = s.feed(chunk1) + s.feed(chunk2) + s.flush()
    f.text(header_value)
"""

from __future__ import annotations

from collections.abc import Iterable

# A secret shorter than this cannot be told apart from ordinary text: replacing every "abc" in an
# answer would corrupt it. The key is always filtered; see ``SecretFilter``.
MIN_SECRET = 8


class SecretFilter:
    """Replaces each ``(secret, replacement)`` pair, longest secret first."""

    def __init__(self, pairs: Iterable[tuple[str, str]]):
        unique: dict[str, str] = {}
        for secret, replacement in pairs:
            if secret and secret not in unique:
                unique[secret] = replacement
        ordered = sorted(unique.items(), key=lambda p: len(p[0]), reverse=True)
        self._text = ordered
        self._bytes = [(s.encode(), r.encode()) for s, r in ordered]
        self._chars = frozenset(b"".join(s for s, _ in self._bytes))

    def __bool__(self) -> bool:
        return bool(self._bytes)

    def text(self, value: str) -> str:
        for secret, replacement in self._text:
            if secret in value:
                value = value.replace(secret, replacement)
        return value

    def data(self, value: bytes) -> bytes:
        for secret, replacement in self._bytes:
            if secret in value:
                value = value.replace(secret, replacement)
        return value

    def stream(self) -> StreamFilter:
        return StreamFilter(self._bytes, self._chars)


class StreamFilter:
    """One stream's filter: ``feed`` each chunk, ``flush`` at the end."""

    __slots__ = ("_pairs", "_chars", "_held")

    def __init__(self, pairs: list[tuple[bytes, bytes]], chars: frozenset[int] = frozenset()):
        self._pairs = pairs
        self._chars = chars or frozenset(b"".join(s for s, _ in pairs))
        self._held = b""

    def feed(self, chunk: bytes) -> bytes:
        if not self._pairs:
            return chunk
        data = self._held + chunk if self._held else chunk
        for secret, replacement in self._pairs:
            if secret in data:
                data = data.replace(secret, replacement)
        # An end that is no byte of any secret starts none (an SSE event ends with a blank line).
        hold = _partial_end(data, self._pairs) if data and data[-1] in self._chars else 0
        if hold:
            self._held = data[-hold:]
            return data[:-hold]
        self._held = b""
        return data

    def flush(self) -> bytes:
        """The bytes held back: the stream ended, so they cannot become a secret any more."""
        held, self._held = self._held, b""
        return held


def _partial_end(data: bytes, pairs: list[tuple[bytes, bytes]]) -> int:
    """The length of the longest end of ``data`` that is the start (not the whole) of a secret."""
    longest = 0
    size = len(data)
    for secret, _ in pairs:
        span = min(len(secret) - 1, size)
        if span <= longest:
            continue
        start = size - span
        first = secret[0]
        i = data.find(first, start)
        while i >= 0 and size - i > longest:
            if secret.startswith(data[i:]):
                longest = size - i
                break
            i = data.find(first, i + 1)
    return longest

"""HTTP/1.1 framing, as both sides of the bridge read it: the errors that tell a broken request
from a broken answer, header fields, ``Content-Length`` and ``Transfer-Encoding``, chunked bodies,
and the content codings the bridge decodes (gzip, deflate).

Strict where a lenient reader would let two readers disagree: a header line is ``name: value``
with no control character in it, a ``Content-Length`` one decimal number, ``Transfer-Encoding``
exactly ``chunked``, a chunk size hexadecimal digits alone.
"""

from __future__ import annotations

import re
import zlib
from itertools import repeat
from typing import Any

MAX_HEAD = 64 * 1024  # a request's or an answer's head
READ = 256 * 1024  # bytes asked for per read of a body


class WireError(Exception):
    """The child's request breaks HTTP/1.1 (answered 400 and the connection closed)."""

    status = 400


class BodyTooLarge(WireError):
    status = 413


class UpstreamError(Exception):
    """Talking to the upstream failed; the message names the cause."""


class Unreachable(UpstreamError):
    """No connection to the upstream (or through its proxy)."""


class UpstreamFailed(UpstreamError):
    """Connected, but the upstream sent no answer's head that could be read."""


class UpstreamBroke(UpstreamError):
    """The answer's body broke off, or could not be decoded."""


class Headers(list[tuple[str, str]]):  # of (name, value): a list keeps repeats and order
    """Header fields in the order they came, names as written; ``get`` matches names in any case."""

    def get(self, name: str, default: Any = None) -> Any:
        low = name.lower()
        for k, v in self:
            if k.lower() == low:
                return v
        return default

    def items(self) -> list[tuple[str, str]]:
        return list(self)


BREAKS = ("\r", "\n", "\0")


def quoted(text: str | bytes, error: type[Exception]) -> str:
    """A piece of what the other side sent, for an error message. The child's own text is cut here;
    the upstream's is kept whole, because the server masks secrets in it before it cuts (a key cut
    in half here would no longer be recognised as the key)."""
    return repr(text[:80] if issubclass(error, WireError) else text)


# A header line: a token, a colon, and a value without control characters (a horizontal tab apart),
# whitespace around the value being only spaces and tabs. A vertical tab or a lone CR would be
# whitespace or a line end to some other reader: a header read two ways is a header smuggled in.
_FIELD = re.compile(r"([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*([^\x00-\x08\x0a-\x1f\x7f]*?)[ \t]*")
_OWS = " \t"


def fields(lines: list[str], error: type[Exception]) -> Headers:
    headers = Headers()
    match = _FIELD.fullmatch
    for line in lines:
        m = match(line)
        if m is None:
            raise error(f"a header line that is not 'name: value': {quoted(line, error)}")
        headers.append((m[1], m[2]))
    return headers


def content_length_of(headers: Headers, error: type[Exception]) -> int | None:
    values = {v.strip(_OWS) for k, v in headers if k.lower() == "content-length"}
    if not values:
        return None
    if len(values) > 1 or not (next(iter(values)).isascii() and next(iter(values)).isdigit()):
        raise error(f"a Content-Length that is not one number: {sorted(values)!r}")
    return int(next(iter(values)))


def is_chunked(headers: Headers, error: type[Exception]) -> bool:
    """Whether the body is chunked: ``Transfer-Encoding`` says exactly ``chunked`` (in any case,
    list elements separated by commas and spaces or tabs alone), or it says nothing."""
    codings = [c.strip(_OWS).lower() for k, v in headers if k.lower() == "transfer-encoding" for c in v.split(",")]
    codings = [c for c in codings if c]
    if not codings:
        return False
    if codings != ["chunked"]:
        raise error(f"a Transfer-Encoding the bridge does not take: {', '.join(map(repr, codings))}")
    return True


# --- chunked bodies -------------------------------------------------------------------------


class ChunkedDecoder:
    """The payload of a chunked body, fed in pieces however they were cut."""

    def __init__(self, error: type[Exception] = UpstreamBroke):
        self._error = error
        self._buf = b""
        self._left = 0  # payload bytes of the current chunk still to come
        self._crlf = False  # the CRLF after a chunk's payload is still to come
        self._trailers = False  # the last chunk came: trailer lines until an empty one
        self.done = False
        self.leftover = False  # bytes came after the body's end

    def feed(self, data: bytes) -> bytes:  # noqa: C901
        buf = self._buf + data if self._buf else data
        pos, out = 0, []
        while not self.done:
            if self._left:
                piece = buf[pos:pos + self._left]
                if not piece:
                    break
                out.append(piece)
                pos += len(piece)
                self._left -= len(piece)
                if self._left:
                    break
                self._crlf = True
            if self._crlf:
                if len(buf) - pos < 2:
                    break
                if buf[pos:pos + 2] != b"\r\n":
                    raise self._error("a chunk of the body is longer than its size said")
                pos += 2
                self._crlf = False
            if not self._trailers:  # at the start of a chunk: those that came whole, the quick way
                pos = self._whole(buf, pos, out)
                if self.done:
                    break
            i = buf.find(b"\n", pos)
            if i < 0:
                if len(buf) - pos > 4096:
                    raise self._error("a chunk size line over 4 KiB")
                break
            if buf[i - 1:i] != b"\r" or i == pos:
                raise self._error("a chunk size or trailer line that does not end with CRLF: "
                                  f"{quoted(buf[pos:i + 1], self._error)}")
            line = buf[pos:i - 1]
            pos = i + 1
            if self._trailers:
                if not line:
                    self.done = True
                continue
            size = chunk_size(line, self._error)
            if size == 0:
                self._trailers = True
            self._left = size
        if self.done:
            self.leftover = pos < len(buf)
            self._buf = b""
        else:
            self._buf = buf[pos:]
        return b"".join(out)

    def _whole(self, buf: bytes, pos: int, out: list[bytes]) -> int:
        """The chunks from ``pos`` on that came whole (a size line with no extension, the payload,
        its CRLF): their payloads to ``out``; where the first that did not starts (the careful way
        reads it). Most chunks come whole. A few are read one by one; when more came in the same
        read, the rest are found all at once (``_whole_chunks``)."""
        find = buf.find
        sweep = _SWEEP_AFTER
        while True:
            sweep -= 1
            if not sweep and len(buf) - pos > _SWEEP_LEFT:
                pos += self._whole_chunks(buf[pos:] if pos else buf, out)
                sweep = _SWEEP_AFTER
            i = find(b"\r\n", pos)
            if i < 0:
                return pos
            text = buf[pos:i]
            if not text.isalnum() or (len(text) > 1 and text[1] in b"xX"):  # see chunk_size
                return pos  # an extension, or a broken size: the careful way says which
            try:
                size = int(text, 16)
            except ValueError:
                return pos
            start = i + 2
            end = start + size
            if buf[end:end + 2] != b"\r\n" or size < 0:
                return pos
            if size == 0:  # the last chunk, with no trailer
                self.done = True
                return end + 2
            out.append(buf[start:end])
            pos = end + 2

    @staticmethod
    def _whole_chunks(buf: bytes, out: list[bytes]) -> int:
        """The whole chunks at the start of ``buf``, found all at once (an unpaced stream brings
        hundreds in one read, and a loop in Python costs about half a microsecond a chunk): split
        at every CRLF, sizes come at even places and payloads at odd ones. A chunk counts when its
        payload is as long as its size says and a CRLF follows it; the first that does not (a
        payload with a CRLF of its own, an extension, the last chunk, one cut off at the end of
        ``buf``) and all after it are left to the careful way. Their payloads go to ``out``;
        returns where they end."""
        parts = buf.split(b"\r\n")
        pairs = (len(parts) - 1) // 2  # a (size, payload) pair with something after the payload's CRLF
        if not pairs:
            return 0
        sizes, payloads = parts[0:2 * pairs:2], parts[1:2 * pairs:2]
        lengths = list(map(len, payloads))
        joined = b"".join(sizes)  # (an empty size adds nothing here, and int() refuses it)
        if not joined.isalnum() or b"x" in joined or b"X" in joined:  # see chunk_size
            return 0  # not every size line is a bare number: the careful way reads them
        try:
            said = list(map(int, sizes, repeat(16)))
        except ValueError:
            return 0
        if said != lengths or 0 in said:
            good = 0
            for size, length in zip(said, lengths, strict=True):
                if size != length or size == 0:
                    break
                good += 1
            if not good:
                return 0
            sizes, payloads, lengths = sizes[:good], payloads[:good], lengths[:good]
        out.append(b"".join(payloads))
        return sum(lengths) + sum(map(len, sizes)) + 4 * len(sizes)


# The sweep costs about as much as reading three chunks one by one, then far less a chunk: one
# chunk a read (a paced stream) is read one by one, hundreds (an unpaced one) mostly all at once.
_SWEEP_AFTER = 3
_SWEEP_LEFT = 1024  # bytes: less than this left in the read, and the rest are read one by one too


def chunk_size(line: bytes, error: type[Exception]) -> int:
    """The size a chunk's size line (without its CRLF) gives: hexadecimal digits alone (no sign, no
    ``0x``, no ``_``, no space), then perhaps extensions after a ``;``, which are ignored (spaces or
    tabs may come before the ``;``)."""
    size_text, sep, _ = line.partition(b";")
    if sep:
        size_text = size_text.rstrip(b" \t")
    # int(x, 16) also takes "0x5", "5_0", " 5", "+5": letters and digits alone, no "0x", and int()'s
    # own refusal of the letters past f leave hexadecimal digits alone (its "x" can only be second)
    if size_text.isalnum() and not (len(size_text) > 1 and size_text[1] in b"xX"):
        try:
            return int(size_text, 16)
        except ValueError:
            pass
    raise error(f"a chunk size that is not a hexadecimal number: {quoted(line, error)}")


def decompressor(encoding: str) -> Any:
    if encoding == "gzip":
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return _Deflate()
    return None


class _Deflate:
    """``deflate`` as servers send it: zlib-wrapped as the standard says, or raw as some do."""

    def __init__(self) -> None:
        self._z: Any = None
        self._start = b""

    @property
    def unconsumed_tail(self) -> bytes:
        return self._z.unconsumed_tail if self._z is not None else b""

    def decompress(self, data: bytes, max_length: int = 0) -> bytes:
        if self._z is None:
            self._start += data
            if len(self._start) < 2:
                return b""
            first = self._start[0]
            wrapped = first & 0x0F == 8 and (first << 8 | self._start[1]) % 31 == 0
            self._z = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
            data, self._start = self._start, b""
        return self._z.decompress(data, max_length)

    def flush(self) -> bytes:
        if self._z is None:
            return zlib.decompressobj(-zlib.MAX_WBITS).decompress(self._start) if self._start else b""
        return self._z.flush()


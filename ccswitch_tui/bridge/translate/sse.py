"""Server-sent events: a decoder for the provider's Chat Completions stream and an encoder for the
Responses events Codex reads."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from itertools import repeat
from operator import and_, getitem
from typing import Any, NamedTuple, cast

from ccswitch_tui import fast_json

DONE = object()  # the ``data: [DONE]`` sentinel


MAX_EVENT = 8 * 1024 * 1024  # bytes of one SSE event: one that grows past this without ending is dropped


class SSEDecoder:
    """Feed bytes as they arrive; get each complete event's ``data`` parsed (JSON), or DONE.
    Lines that are not JSON are skipped (some gateways send keep-alive text).

    Linear in what it is fed: the part of an event still waiting for its blank line is kept as the
    pieces it came in, searched only where a new piece joins them, and joined once, when the event
    ends. An event that grows past ``max_event`` bytes without ending is dropped, with all that
    follows it, and ``overflowed`` says so (the translation then gives the answer up: ``Exchange.feed``)."""

    def __init__(self, max_event: int = MAX_EVENT) -> None:
        self._pending: list[bytes] = []  # the start of an event that has not ended yet
        self._size = 0
        self._cr = False  # the last piece ended with a CR, which may be half of a CRLF
        self._max = max_event
        self.overflowed = False

    def feed(self, chunk: bytes) -> list[Any]:
        out: list[Any] = []
        for frame in self.frames(chunk):
            out += parse(frame)
        return out

    def frames(self, chunk: bytes) -> list[str]:
        """The complete events ``chunk`` ends, decoded at once (a blank line never falls inside a
        UTF-8 character), each as its text without the blank line; ``parse`` reads one."""
        if self.overflowed:
            return []
        if self._cr:
            chunk = b"\r" + chunk
            self._cr = False
        if b"\r" in chunk:
            if chunk.endswith(b"\r"):  # the LF of its CRLF may come in the next piece
                chunk, self._cr = chunk[:-1], True
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if not chunk:
            return []
        pending = self._pending
        cut = chunk.rfind(b"\n\n")
        if cut < 0 and pending and chunk[:1] == b"\n" and pending[-1][-1:] == b"\n":
            cut = -1  # the blank line is the last piece's LF and this one's
        elif cut < 0:
            self._size += len(chunk)
            if self._size > self._max:  # an event that never ends: dropped, never held whole
                self._pending, self._size, self.overflowed = [], 0, True
            else:
                pending.append(chunk)
            return []
        if pending:
            data = b"".join(pending) + chunk[:cut] if cut >= 0 else b"".join(pending)[:-1]
        else:
            data = chunk[:cut]
        rest = chunk[cut + 2:] if cut >= 0 else chunk[1:]
        self._pending, self._size = ([rest], len(rest)) if rest else ([], 0)
        return data.decode("utf-8", "replace").split("\n\n") if data else []

    def holds(self, marker: bytes) -> bool:
        """Whether what waits for its blank line holds ``marker``."""
        return marker in b"".join(self._pending)

    def close(self) -> list[Any]:
        """Whatever a stream that ended without a blank line left behind."""
        frame = b"".join(self._pending)
        self._pending, self._size = [], 0
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


# compact JSON, non-ASCII kept, the encoder made once (json.dumps with options builds one per call, a
# tenth of a translation's time per event)
_dumps = fast_json.dumps
_scan = fast_json.scan  # the C scanner, straight: value, end = _scan(text, start)
scan_string = fast_json.scan_string  # a JSON string's value from just after its opening quote: value, end
_NOT_PLAIN = re.compile(r'["\\\x01-\x1f]')  # what a JSON string's text cannot hold as it is (NUL apart)
_TRAILING = 4  # events after a run that a run's end is first looked for among
# well-formed JSON string bodies, NUL between two (a NUL inside one is not well-formed: JSON escapes it)
_STRINGS = re.compile(r'(?:[^"\\\x00-\x1f]++|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4}|\x00)*+')


class RepeatedText:
    """Most of a provider's stream is one event repeated with only its text changed: the same id,
    model, creation time and fingerprint around ``"content":"<text>"``. Once such an event was
    parsed whole and found to be plain text (``ResponsesStream.more_text``), the next one is read
    by checking that everything around its text is byte for byte the same, and reading the text
    alone; it is then the same event with another text. Anything else is parsed whole."""

    __slots__ = ("prefix", "suffix", "_start", "_end", "_raw", "_joint")

    MARK = '"content":"'

    def __init__(self, prefix: str, suffix: str):
        self.prefix = prefix  # up to the text's opening quote, included
        self.suffix = suffix  # from the text's closing quote, excluded
        self._start = len(prefix)
        self._end = f'"{suffix}'  # how each event of a run ends
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

    def texts(self, frames: list[str]) -> Texts | None:
        """Every text of ``frames`` at once, when each frame is this event with another non-empty
        text, else None. Most of a fast stream's read is such a run: one check of the whole run
        (each text a well-formed JSON string, then the texts put back into the template give the
        run byte for byte) replaces a check per event."""
        # each text as written, without its quotes
        raws = cast("list[str]", list(map(getitem, frames, repeat(self._raw))))
        joined = "\x00".join(raws)  # NUL: in no well-formed text, so it cannot join two into one
        if not all(raws) or joined.count("\x00") != len(raws) - 1:
            return None
        if _NOT_PLAIN.search(joined) is None:
            texts = written = raws  # no escape, quote or control character: the text is what is written
        elif _STRINGS.fullmatch(joined) is None:
            return None
        else:
            try:
                texts = json.loads('["' + '","'.join(raws) + '"]')
            except ValueError:  # an escape JSON does not allow (a lone surrogate escape is allowed)
                return None
            written = [_quote(text)[1:-1] for text in texts]  # each as ``encode`` writes it
        rebuilt = f'{self.prefix}{self._joint.join(raws)}"{self.suffix}'
        return Texts(texts, written) if rebuilt == "\n\n".join(frames) else None

    def run(self, frames: list[str], start: int) -> tuple[int, Texts | None]:
        """The run of such events that begins at ``frames[start]``: where it ends, and its texts
        (None when it is not there: the events from ``start`` are then read one at a time). A run
        usually fills a read; the first read of a stream begins with the events that made the
        template and the last ends with the finish, the usage and ``[DONE]``."""
        rest = frames[start:] if start else frames
        prefix, end = self.prefix, self._end
        size = len(rest)
        while size and not (rest[size - 1].startswith(prefix) and rest[size - 1].endswith(end)) \
                and len(rest) - size < _TRAILING:
            size -= 1  # the events a stream ends with (finish, usage, [DONE]), looked at from the back
        tried = size
        texts = self.texts(rest[:size] if size < len(rest) else rest) if size > 1 else None
        if texts is None:  # something else in between: where the run ends, an event at a time in C
            fits = list(map(and_, map(str.startswith, rest, repeat(prefix)), map(str.endswith, rest, repeat(end))))
            size = fits.index(False) if False in fits else len(fits)
            texts = self.texts(rest[:size]) if 1 < size != tried else None  # the same events fail the same way
        return (start + size, texts) if texts is not None else (start, None)


class Texts(NamedTuple):
    """A run's texts, and each as the JSON of its delta writes it (without the quotes)."""

    texts: list[str]
    written: list[str]


_quote = fast_json.quote
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

    def encode_each(self, seq: int, written: list[str]) -> bytes:
        """``encode`` of each text in turn, numbered from ``seq``, from each as JSON writes it
        (``RepeatedText.texts``)."""
        head, middle = self._head, self._middle
        return "".join([f'{head}{n:d}{middle}"{text}"}}\n\n' for n, text in enumerate(written, seq)]).encode(
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

"""A run's request records read as untrusted input: streamed (memory does not grow with the number of
records), regular files only, each line type-checked before it is counted.

A FIFO or a link to ``/dev/zero`` planted as ``X.requests.jsonl``, a line nested thousands of levels
deep or a record whose fields have the wrong types gives one problem line naming the file (and the
first bad line); the good records still count.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ccswitch_tui.bridge.records import summarize
from ccswitch_tui.fast_json import loads_json_line
from ccswitch_tui.safe_read import iter_numbered_lines
from ccswitch_tui.valueclass import field, valueclass

# Fields a summary hashes or splits: they must be text (or absent).
_TEXT = ("model_requested", "model_served", "upstream_url", "path", "method", "outcome", "usage_source", "task")
_INT = ("status", "in_flight", "input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens")


@valueclass
class Reading:
    """What reading one records file gave: the summary and, when some lines were bad, why."""

    summary: dict[str, Any]
    bad_lines: int = 0
    first_bad: str | None = None
    error: str | None = None  # the file itself could not be read
    problems: list[str] = field(default_factory=list)


def record_problem(data: Any) -> str | None:
    """Why a parsed line is not a record ccs can count, or None."""
    if not isinstance(data, dict):
        return "not a JSON object"
    for k in _TEXT:
        if data.get(k) is not None and not isinstance(data[k], str):
            return f"{k} is {type(data[k]).__name__}, not text"
    for k in _INT:
        v = data.get(k)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
            return f"{k} is {type(v).__name__}, not a whole number"
    return None


def iter_records(path: Path, reading: Reading | None = None) -> Iterator[dict[str, Any]]:
    """The good records of ``path``, one at a time; bad lines are counted in ``reading``."""
    try:
        for number, line in iter_numbered_lines(path):
            if not line.strip():
                continue
            try:
                data = loads_json_line(line)
                why = record_problem(data)
            except ValueError as exc:
                why = f"not JSON ({str(exc).split(':')[0]})"
            if why is None:
                yield data
            elif reading is not None:
                reading.bad_lines += 1
                reading.first_bad = reading.first_bad or f"line {number}: {why}"
    except FileNotFoundError:
        return
    except OSError as exc:
        if reading is not None:
            reading.error = str(exc)


class _Counted:
    """An iterable that knows, once iterated, how many items it gave (``summarize`` asks ``len``)."""

    def __init__(self, items: Iterable[dict[str, Any]]):
        self._items, self.n = items, 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for item in self._items:
            self.n += 1
            yield item

    def __len__(self) -> int:
        return self.n


def read_summary(path: Path, expected_models: Iterable[str] = ()) -> Reading:
    """The summary of a records file, streamed."""

    reading = Reading({})
    counted = _Counted(iter_records(path, reading))
    reading.summary = summarize(counted, expected_models, usage=False)  # `ccs usage` reads records itself
    if reading.error:
        reading.problems.append(f"{path}: {reading.error}; its requests are not counted")
    elif reading.bad_lines:
        reading.problems.append(f"{path}: {reading.bad_lines} damaged record line(s) left out "
                                f"(first: {reading.first_bad})")
    return reading


def read_list(path: Path, limit: int = 5000) -> tuple[list[dict[str, Any]], list[str]]:
    """The last ``limit`` good records of a file (for a view that lists them), and the problems."""

    reading = Reading({})
    last = deque(iter_records(path, reading), maxlen=limit)
    problems = [f"{path}: {reading.error}"] if reading.error else []
    if reading.bad_lines:
        problems.append(f"{path}: {reading.bad_lines} damaged record line(s) left out (first: {reading.first_bad})")
    return list(last), problems

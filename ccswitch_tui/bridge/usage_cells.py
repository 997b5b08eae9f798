"""What `ccs usage` sums, per run: its requests in cells of (day, model), each with its request count,
its plausible token counts, its errors and the requests whose token counts no request can have used.

The bridge keeps the cells in a run's summary (``summary["usage"]``) when the run ends, so that
`ccs usage` answers from the manifests; for a run still going (or recorded before the cells were kept)
`ccs usage` reads the records and fills the same cells (``runs.usage``), so both answers are one
computation. Records are read as untrusted: a field of the wrong type counts as absent, and the
cells stay bounded (past ``MAX_CELLS`` cells, or a model id past ``MAX_MODEL``, the run's cells are
"incomplete" and `ccs usage` reads its records instead).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TOKENS = ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens")
MAX_REQUEST_TOKENS = 10**12  # a count past this is no real request's (as runs.cells says)
MAX_CELLS = 1000
MAX_MODEL = 500
# a cell: [requests, input, output, cached, reasoning, errors, implausible]
REQUESTS, INPUT, OUTPUT, CACHED, REASONING, ERRORS, IMPLAUSIBLE = range(7)


def record_model(record: Mapping[str, Any]) -> str:
    """The model a request is counted under: the one served, else the one asked for, else "?"."""
    served = record.get("model_served")
    if isinstance(served, str) and served:
        return served
    requested = record.get("model_requested")
    return requested if isinstance(requested, str) and requested else "?"


class UsageCells:
    """Fed one record at a time (``add``); ``result()`` gives the summary's ``usage`` part. ``day`` is
    the record's ``started[:10]``; a record without a text ``started`` goes to the day ``None`` (the
    reader gives it the run's)."""

    def __init__(self) -> None:
        self.cells: dict[tuple[str | None, str], list[int]] = {}
        self.first: str | None = None  # the earliest ``started[:19]`` of the dated records
        self.undated = 0

    def add(self, record: Mapping[str, Any]) -> None:
        started = record.get("started")
        if isinstance(started, str):
            day: str | None = started[:10]
            second = started[:19]
            if self.first is None or second < self.first:
                self.first = second
        else:
            day = None
            self.undated += 1
        key = (day, record_model(record))
        cell = self.cells.get(key)
        if cell is None:
            cell = self.cells[key] = [0, 0, 0, 0, 0, 0, 0]
        cell[REQUESTS] += 1
        implausible = False
        for i, name in enumerate(TOKENS, INPUT):
            value = record.get(name)
            if type(value) is int:  # noqa: E721 — a bool is no count
                if 0 <= value <= MAX_REQUEST_TOKENS:
                    cell[i] += value
                else:
                    implausible = True
        cell[IMPLAUSIBLE] += implausible
        cell[ERRORS] += record.get("outcome") != "ok"

    def result(self) -> dict[str, Any]:
        """``{"cells": [[day, model, requests, input, output, cached, reasoning, errors, implausible], …],
        "first": …, "undated": …}``, or ``{"incomplete": true}`` when they would not stay small."""
        if len(self.cells) > MAX_CELLS or any(len(model) > MAX_MODEL for _, model in self.cells):
            return {"incomplete": True}
        return {"cells": [[day, model, *cell] for (day, model), cell in self.cells.items()],
                "first": self.first, "undated": self.undated}


def read_cells(usage: Any) -> list[tuple[str | None, str, list[int]]] | None:
    """The cells of a summary's ``usage`` part, checked (a manifest is read as untrusted), or None when
    there are none to trust (absent, incomplete, damaged): then the records are read instead."""
    if not isinstance(usage, Mapping) or usage.get("incomplete") or not isinstance(usage.get("cells"), list):
        return None
    out = []
    for item in usage["cells"]:
        if not isinstance(item, list) or len(item) != 9:
            return None
        day, model, *counts = item
        if not (day is None or isinstance(day, str)) or not isinstance(model, str):
            return None
        if not all(type(n) is int and 0 <= n <= MAX_REQUEST_TOKENS * 10**6 for n in counts):  # noqa: E721
            return None
        out.append((day, model, counts))
    return out

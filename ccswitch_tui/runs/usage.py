"""Usage totals across runs, from the request records (``runs/<launch-id>.requests.jsonl``).

Per profile, model, day, label or machine (where the run ran: imported runs keep theirs): requests,
input/output/cached/reasoning tokens, errors, and the cost where the run's profile prices the model
(``[pricing]``, see pricing.py). Only recorded runs
have records: the others are listed, so a total never looks complete when it is not.

A run that has ended has its requests summed in its manifest, in cells of (day, model)
(``bridge/usage_cells.py``): those are read instead of the records, unless ``--since`` falls inside
the run. The records of the other runs (still going, recorded before the cells were kept) are read
into the same cells, so both answers are one computation.

Records are read streaming and bounded (``safe_read.iter_lines``): a file that is not a regular
file, is too large, or has damaged lines costs one line of notes, never the whole report. Fields a
record does not have, or has with another type, count as missing; unknown fields are ignored.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccswitch_tui.bridge.usage_cells import (
    CACHED,
    ERRORS,
    IMPLAUSIBLE,
    INPUT,
    OUTPUT,
    REASONING,
    REQUESTS,
    UsageCells,
    read_cells,
)
from ccswitch_tui.errors import CcsError, UsageError
from ccswitch_tui.fast_json import loads_json_line
from ccswitch_tui.paths import Paths
from ccswitch_tui.runs.cells import csv_cell, finite
from ccswitch_tui.runs.manifests import load_manifests, lost_note
from ccswitch_tui.runs.origin import machine_here, machine_of
from ccswitch_tui.safe_read import iter_lines
from ccswitch_tui.valueclass import field, valueclass

if TYPE_CHECKING:
    from ccswitch_tui.profiles.pricing import Price
    from ccswitch_tui.profiles.store import Store

TOKENS = ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens")
GROUPS = ("profile", "model", "day", "label", "machine")
MAX_RECORDS_BYTES = 256 * 1024 * 1024  # far above the records of any run; a larger file is left out
MAX_LINE_BYTES = 4 * 1024 * 1024
_DAYS = re.compile(r"(\d{1,4})d")


@valueclass
class Row:
    key: str
    runs: set[str] = field(default_factory=set)
    requests: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKENS, 0))
    errors: int = 0
    cost: float = 0.0
    unpriced: set[str] = field(default_factory=set)  # models of this row that have no price
    implausible: int = 0  # requests whose reported token counts no request can have used (left out)
    machines: set[str] = field(default_factory=set)  # where its runs ran (runs.origin)

    def add(self, cell: Sequence[int], launch_id: str, price: Price | None, model: str, machine: str = "") -> None:
        """One cell of a run's requests (``bridge.usage_cells``): one model on one day."""
        self.runs.add(launch_id)
        if machine:
            self.machines.add(machine)
        self.requests += cell[REQUESTS]
        for k, i in zip(TOKENS, (INPUT, OUTPUT, CACHED, REASONING), strict=True):
            self.tokens[k] += cell[i]
        self.implausible += cell[IMPLAUSIBLE]
        self.errors += cell[ERRORS]
        if price is None:
            self.unpriced.add(model)
        else:
            self.cost += price.cost(cell[INPUT], cell[OUTPUT])

    def to_dict(self) -> dict[str, Any]:
        cost = None if self.unpriced or not self.requests else finite(self.cost)
        return {"key": self.key, "runs": len(self.runs), "requests": self.requests, **self.tokens,
                "errors": self.errors, "cost": None if cost is None else round(cost, 6),
                "cost_implausible": not self.unpriced and bool(self.requests) and cost is None,
                "unpriced_models": sorted(self.unpriced), "implausible_tokens": self.implausible,
                "machines": sorted(self.machines)}


def parse_since(text: str, today: date | None = None) -> str:
    """``YYYY-MM-DD``, an ISO date-time (UTC), or ``Nd`` (the last N days, today included) → the
    UTC ``YYYY-MM-DDTHH:MM:SS`` that records' ``started`` are compared with."""

    text = text.strip()
    if m := _DAYS.fullmatch(text):
        start = (today or datetime.now(timezone.utc).date()) - timedelta(days=int(m.group(1)) - 1)
        return f"{start.isoformat()}T00:00:00"
    try:
        if len(text) == 10:
            return f"{date.fromisoformat(text).isoformat()}T00:00:00"
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--since {text[:40]!r} is not a date; use YYYY-MM-DD, an ISO date-time or Nd "
                         "(e.g. 7d)") from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


def read_records(path: Path, notes: list[str], since: str | None = None,
                 cells: UsageCells | None = None) -> UsageCells:
    """The records of one file summed into ``cells`` (those that started at or after ``since``: a
    record without ``started`` counts as the run's start, which the caller checked); what cannot be
    read becomes one note for the file."""

    cells = cells if cells is not None else UsageCells()
    add = cells.add
    damaged = 0
    try:
        for line in iter_lines(path, MAX_RECORDS_BYTES, MAX_LINE_BYTES):
            if line is None:
                damaged += 1
                continue
            try:
                data = loads_json_line(line)
            except (ValueError, RecursionError):
                if line.strip():
                    damaged += 1
                continue
            if type(data) is not dict:  # noqa: E721
                damaged += 1
            elif since is None or not isinstance(started := data.get("started"), str) or started[:19] >= since:
                add(data)
    except FileNotFoundError:
        notes.append(f"{path.name}: the records file is missing; its run is left out")
    except OSError as exc:
        notes.append(f"{path.name}: {exc}; its run is left out")
    if damaged:
        notes.append(f"{path.name}: {damaged} damaged line(s) skipped")
    return cells


def run_cells(paths: Paths, manifest: Mapping[str, Any], records: str, since: str | None,
              notes: list[str]) -> list[tuple[str | None, str, list[int]]]:
    """A recorded run's cells: from its summary when it has ended with one (and ``since`` does not fall
    inside it), else from its records."""
    summary = manifest.get("requests")
    usage = summary.get("usage") if isinstance(summary, Mapping) else None
    cells = read_cells(usage)
    if cells is not None and since is not None:
        first = usage.get("first") if isinstance(usage, Mapping) else None
        if first is not None and not (isinstance(first, str) and first >= since):
            cells = None  # the period begins inside the run: its records say which requests count
    if cells is None:
        read = read_records(paths.runs / Path(records).name, notes, since)
        cells = [(day, model, cell) for (day, model), cell in read.cells.items()]
    return cells


@valueclass
class Usage:
    by: str
    since: str | None
    rows: list[dict[str, Any]]
    totals: dict[str, Any]
    not_recorded: list[dict[str, Any]]
    notes: list[str]

    @property
    def several_machines(self) -> bool:
        """Whether the runs counted ran on more than one machine: then a MACHINES column shows which."""
        return len(self.totals.get("machines") or []) > 1

    @property
    def priced(self) -> bool:
        """Whether a cost column is shown: some row has a cost (a row without one shows '-')."""
        return any(r["cost"] is not None or r.get("cost_implausible") for r in self.rows)

    def to_dict(self) -> dict[str, Any]:
        return {"by": self.by, "since": self.since, "rows": self.rows, "totals": self.totals,
                "not_recorded": self.not_recorded, "notes": self.notes}


def totals(paths: Paths, *, by: str = "profile", profile: str | None = None, since: str | None = None,  # noqa: C901
           prices: Callable[[str], Mapping[str, Any]] | None = None,
           manifests: Sequence[Mapping[str, Any]] | None = None) -> Usage:
    """Sum the records of every recorded run (of ``profile``, started at or after ``since``).
    ``prices(profile_name)`` gives that profile's ``[pricing]`` (model → Price); None: no costs.
    ``manifests`` (newest first, as ``runs.load_manifests`` gives them): already loaded ones."""

    if manifests is None:
        manifests = load_manifests(paths, profile)
    if by not in GROUPS:
        raise ValueError(by)
    rows: dict[str, Row] = {}
    total = Row("total")
    not_recorded: list[dict[str, Any]] = []
    notes: list[str] = []
    price_cache: dict[str, Mapping[str, Any]] = {}
    here = machine_here()
    for m in reversed(manifests):  # oldest first
        if profile is not None and m.get("profile") != profile:
            continue
        launch_id = str(m.get("launch_id"))
        prof = str(m.get("profile") or "?")
        recording = m.get("recording")
        ended = m.get("ended") if isinstance(m.get("ended"), str) else None
        if since and ended and ended[:19] < since:
            continue  # over before the period began
        if not isinstance(recording, dict) or not isinstance(recording.get("records"), str):
            if not since or str(m.get("started") or "")[:19] >= since:
                not_recorded.append({"launch_id": launch_id, "profile": prof, "tool": m.get("tool"),
                                     "started": m.get("started")})
            continue
        if prof not in price_cache:
            price_cache[prof] = prices(prof) if prices else {}
        table = price_cache[prof]
        label = m.get("label") if isinstance(m.get("label"), str) else "-"
        if (lost := lost_note(m)) is not None:
            notes.append(lost)  # its records are fewer than its requests: these totals are short
        machine = machine_of(m, here)
        run_start = str(m.get("started") or "")
        undated_count = not since or run_start[:19] >= since  # a request without its own start: the run's
        for day, model, cell in run_cells(paths, m, recording["records"], since, notes):
            if day is None:
                if not undated_count:
                    continue
                day = run_start[:10]
            key = {"profile": prof, "model": model, "day": day or "?", "label": label, "machine": machine}[by]
            price = table.get(model)
            rows.setdefault(key, Row(key)).add(cell, launch_id, price, model, machine)
            total.add(cell, launch_id, price, model, machine)
    return Usage(by, since, [rows[k].to_dict() for k in sorted(rows)], total.to_dict(), not_recorded, notes)


def profile_prices(store: Store) -> Callable[[str], Mapping[str, Any]]:
    """``[pricing]`` of a profile by name; a profile that is gone or invalid has none."""

    def prices(name: str) -> Mapping[str, Any]:
        try:
            return store.load(name).pricing
        except (CcsError, OSError):
            return {}

    return prices


HEADERS = ("RUNS", "REQUESTS", "INPUT", "OUTPUT", "CACHED", "REASONING", "ERRORS")


def printable(text: str) -> str:
    """A key that came from a record (a model id a provider sent) without its control characters."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def cells(row: Mapping[str, Any], priced: bool, machines: bool = False) -> list[str]:
    out = [printable(row["key"]), str(row["runs"]), str(row["requests"]), *(str(row[k]) for k in TOKENS),
           str(row["errors"])]
    if priced:
        out.append("implausible" if row.get("cost_implausible") else "-" if row["cost"] is None
                   else f"{row['cost']:.4f}")
    if machines:
        out.append(",".join(row.get("machines") or []) or "-")
    return out


def table_rows(u: Usage) -> tuple[list[str], list[list[str]]]:
    several = u.several_machines and u.by != "machine"
    headers = [u.by.upper(), *HEADERS, *(["COST"] if u.priced else []), *(["MACHINES"] if several else [])]
    body = [cells(r, u.priced, several) for r in u.rows]
    if len(u.rows) > 1:
        body.append(cells(u.totals, u.priced, several))
    return headers, body


def to_csv(u: Usage) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([u.by, "runs", "requests", *TOKENS, "errors", *(["cost"] if u.priced else [])])
    for r in u.rows:  # a model or label named like a formula stays text in a spreadsheet
        line = [csv_cell(r["key"]), r["runs"], r["requests"], *(r[k] for k in TOKENS), r["errors"]]
        if u.priced:
            line.append("" if r["cost"] is None else r["cost"])
        w.writerow(line)
    return buf.getvalue()


def summary_lines(u: Usage) -> list[str]:
    """What the table does not say: unpriced models, runs that were not recorded, unreadable files."""
    out = []
    unpriced = sorted({m for r in u.rows for m in r["unpriced_models"]})
    if u.priced and unpriced:
        out.append(f"no price for {printable(', '.join(unpriced))}: add them to the profile's [pricing] table")
    if u.not_recorded:
        by_profile: dict[str, int] = {}
        for r in u.not_recorded:
            by_profile[r["profile"]] = by_profile.get(r["profile"], 0) + 1
        which = ", ".join(f"{p}: {n}" for p, n in sorted(by_profile.items()))
        out.append(f"not recorded, so not counted: {len(u.not_recorded)} run(s) ({which}); set [policy] "
                   "record = true in a profile (or launch with --record) for complete totals")
    if u.totals.get("implausible_tokens"):
        out.append(f"{u.totals['implausible_tokens']} request(s) reported a token count no request can use "
                   "(negative, or over 10^12): those counts are left out of the totals")
    costly = [printable(r["key"]) for r in u.rows if r.get("cost_implausible")]
    if costly:
        out.append(f"cost of {', '.join(costly)} is past any real bill (a [pricing] price too high?): shown as "
                   "implausible, not counted")
    out += [f"note: {n}" for n in u.notes]
    return out

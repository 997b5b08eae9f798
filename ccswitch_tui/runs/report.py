"""`ccs runs report`: one row per rerun of an experiment, with the columns that drifted from the
first run marked. Pure functions over manifests (and their records, for runs still going); what
drifted is ``ccswitch_tui.runs.verdict``'s judgement, the same as `ccs runs diff`'s."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ccswitch_tui.paths import Paths
from ccswitch_tui.runs.cells import csv_cell, md_cell, total
from ccswitch_tui.runs.manifests import lost_note, records_lost
from ccswitch_tui.runs.origin import machine_of
from ccswitch_tui.runs.verdict import FIELDS, RunView, compare_views, view

COLUMNS = ("launch_id", "label", "tool", "started", "base_url", "key_fingerprint", "models", "models_requested",
           "models_served", "tool_version", "requests", "input_tokens", "output_tokens", "errors", "duration_s",
           "exit_status")
# The column that shows each compared field (the others are named in the footer only).
COLUMN_OF = {"tool": "tool", "base_urls": "base_url", "key_fingerprint": "key_fingerprint", "models": "models",
             "models_requested": "models_requested", "models_served": "models_served",
             "tool_version": "tool_version", "request_counts": "requests", "errors": "errors",
             "exit_status": "exit_status"}


def _duration(m: Mapping[str, Any]) -> float | None:
    try:
        a = datetime.fromisoformat(str(m["started"]).replace("Z", "+00:00"))
        b = datetime.fromisoformat(str(m["ended"]).replace("Z", "+00:00"))
    except (KeyError, TypeError, ValueError):
        return None
    return round((b - a).total_seconds(), 3)


def row_for(paths: Paths | None, m: Mapping[str, Any], v: RunView | None = None) -> dict[str, Any]:
    obs = (v or view(m, paths)).summary
    tokens = (obs or {}).get("tokens") or {}
    return {
        "launch_id": m.get("launch_id"),
        "label": m.get("label"),
        "tool": m.get("tool"),
        "started": m.get("started"),
        "base_url": " ".join(sorted(set((m.get("base_urls") or {}).values()))) or None,
        "key_fingerprint": m.get("key_fingerprint"),
        "models": " ".join(sorted(set((m.get("models") or {}).values()))) or None,
        "models_requested": " ".join(sorted((obs or {}).get("models_requested") or {})) if obs else None,
        "models_served": " ".join(sorted((obs or {}).get("models_served") or {})) if obs else None,
        "tool_version": m.get("tool_version"),
        # A count no run can reach (a provider's 401 digits) is shown as unknown, not as a number.
        "requests": total(obs.get("requests")) if obs else None,
        "input_tokens": total(tokens.get("input_tokens")) if obs else None,
        "output_tokens": total(tokens.get("output_tokens")) if obs else None,
        "errors": obs.get("errors") if obs else None,
        "duration_s": _duration(m),
        "exit_status": m.get("exit_status"),
        "recorded": obs is not None,
        "records_lost": records_lost(m),  # the REQS cell says so: the counts are that much short
        "machine": machine_of(m),
    }


def _order(field: str) -> tuple[int, int]:
    """Fields shown in a column first, in the columns' order; the rest after, in the verdict's."""
    col = COLUMN_OF.get(field)
    if col is not None:
        return 0, COLUMNS.index(col)
    return 1, [f for f, _ in FIELDS].index(field)


def report(manifests: Sequence[Mapping[str, Any]], paths: Paths | None = None) -> dict[str, Any]:
    """Rows in the given order; each names the fields that drifted from the first run (the verdict
    `ccs runs diff` gives), with their kind and cause."""
    views = [view(m, paths) for m in manifests]
    rows = [row_for(paths, m, v) for m, v in zip(manifests, views, strict=True)]
    drifted: set[str] = set()
    for i, (v, r) in enumerate(zip(views, rows, strict=True)):
        if i == 0:
            r["drifted"], r["differences"] = [], []
            continue
        verdict = compare_views(views[0], v)
        r["drifted"] = sorted(verdict.drifted, key=_order)
        r["differences"] = [d.to_dict() for d in verdict.differences]
        drifted.update(r["drifted"])
    problems = [p for v in views for p in v.problems]
    for v in views:
        s = v.summary or {}
        raw = [s.get("requests"), *((s.get("tokens") or {}).get(k) for k in ("input_tokens", "output_tokens"))]
        if any(x is not None and total(x) is None for x in raw):
            problems.append(f"run {v.launch_id}: its summary holds an implausible count (not a whole number from 0 "
                            "to 10^18): shown as -")
    problems += [n for m in manifests if (n := lost_note(m))]
    return {"rows": rows, "drifted_columns": sorted(drifted, key=_order), "problems": problems,
            "machines": sorted({r["machine"] for r in rows})}


def _columns(data: Mapping[str, Any], columns: Sequence[str]) -> list[str]:
    """The columns shown: with MACHINE after the launch id when the runs ran on more than one machine."""
    out = list(columns)
    if len(data.get("machines") or []) > 1:
        out.insert(1, "machine")
    return out


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    return str(value)


HEADERS = {"machine": "MACHINE",
           "launch_id": "LAUNCH ID", "label": "LABEL", "tool": "TOOL", "started": "STARTED", "base_url": "BASE URL",
           "key_fingerprint": "KEY", "models": "MODELS", "models_requested": "REQUESTED", "models_served": "SERVED",
           "tool_version": "VERSION", "requests": "REQS", "input_tokens": "IN TOK", "output_tokens": "OUT TOK",
           "errors": "ERRS", "duration_s": "SECS", "exit_status": "EXIT"}
TABLE_COLUMNS = ("launch_id", "label", "base_url", "key_fingerprint", "models_requested", "models_served",
                 "tool_version", "requests", "input_tokens", "output_tokens", "errors", "duration_s", "exit_status")


def table_rows(data: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Headers and cells for the terminal table; a drifted cell (and its header) ends in '*'."""
    drifted = {COLUMN_OF.get(f) for f in data["drifted_columns"]}
    columns = _columns(data, TABLE_COLUMNS)
    headers = [HEADERS[c] + ("*" if c in drifted else "") for c in columns]
    cells = []
    for r in data["rows"]:
        marked = {COLUMN_OF.get(f) for f in r["drifted"]}
        cells.append([_cell(r[c]) + (f" (+{r['records_lost']} lost)" if c == "requests" and r.get("records_lost")
                                     else "") + ("*" if c in marked else "") for c in columns])
    return headers, cells


def to_csv(data: Mapping[str, Any]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    columns = _columns(data, COLUMNS)
    w.writerow([*columns, "drifted"])
    for r in data["rows"]:
        w.writerow([csv_cell("" if r[c] is None else r[c]) for c in columns] + [" ".join(r["drifted"])])
    return out.getvalue()


def markdown(data: Mapping[str, Any]) -> str:
    """The report as a Markdown table (drifted cells end in '*')."""
    headers, cells = table_rows(data)
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in cells]
    return "\n".join(out) + "\n"

"""`ccs runs report`: one row per rerun of an experiment, with the columns that drifted from the
first run marked. Pure functions over manifests (and their records, for runs still going)."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ccswitch_tui.paths import Paths
from ccswitch_tui.runs.manifests import compare, observed

COLUMNS = ("launch_id", "label", "tool", "started", "base_url", "key_fingerprint", "models", "models_requested",
           "models_served", "tool_version", "requests", "input_tokens", "output_tokens", "errors", "duration_s",
           "exit_status")
# A column is marked when its value differs from the first run's.
COMPARED = ("tool", "base_url", "key_fingerprint", "models", "models_requested", "models_served", "tool_version")


def _duration(m: Mapping[str, Any]) -> float | None:
    try:
        a = datetime.fromisoformat(str(m["started"]).replace("Z", "+00:00"))
        b = datetime.fromisoformat(str(m["ended"]).replace("Z", "+00:00"))
    except (KeyError, TypeError, ValueError):
        return None
    return round((b - a).total_seconds(), 3)


def row_for(paths: Paths | None, m: Mapping[str, Any]) -> dict[str, Any]:
    obs = observed(paths, m)
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
        "requests": obs.get("requests") if obs else None,
        "input_tokens": tokens.get("input_tokens") if obs else None,
        "output_tokens": tokens.get("output_tokens") if obs else None,
        "errors": obs.get("errors") if obs else None,
        "duration_s": _duration(m),
        "exit_status": m.get("exit_status"),
        "recorded": obs is not None,
    }


def report(manifests: Sequence[Mapping[str, Any]], paths: Paths | None = None) -> dict[str, Any]:
    """Rows in the given order; each names the columns (and, through `ccs runs diff`'s comparison,
    the other fields such as the environment) that drifted from the first run."""
    rows = [row_for(paths, m) for m in manifests]
    drifted_columns: set[str] = set()
    for i, (m, r) in enumerate(zip(manifests, rows, strict=True)):
        if i == 0:
            r["drifted"] = []
            continue
        cols = [c for c in COMPARED if r[c] != rows[0][c] and not (c.startswith("models_") and r[c] is None)]
        other = [f for f in compare(manifests[0], m, paths)["drifted"] if f == "env"]
        r["drifted"] = cols + other
        drifted_columns.update(r["drifted"])
    return {"rows": rows, "drifted_columns": [c for c in (*COMPARED, "env") if c in drifted_columns]}


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    return str(value)


HEADERS = {"launch_id": "LAUNCH ID", "label": "LABEL", "tool": "TOOL", "started": "STARTED", "base_url": "BASE URL",
           "key_fingerprint": "KEY", "models": "MODELS", "models_requested": "REQUESTED", "models_served": "SERVED",
           "tool_version": "VERSION", "requests": "REQS", "input_tokens": "IN TOK", "output_tokens": "OUT TOK",
           "errors": "ERRS", "duration_s": "SECS", "exit_status": "EXIT"}
TABLE_COLUMNS = ("launch_id", "label", "base_url", "key_fingerprint", "models_requested", "models_served",
                 "tool_version", "requests", "input_tokens", "output_tokens", "errors", "duration_s", "exit_status")


def table_rows(data: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Headers and cells for the terminal table; a drifted cell (and its header) ends in '*'."""
    drifted = set(data["drifted_columns"])
    headers = [HEADERS[c] + ("*" if c in drifted else "") for c in TABLE_COLUMNS]
    cells = []
    for r in data["rows"]:
        cells.append([_cell(r[c]) + ("*" if c in r["drifted"] else "") for c in TABLE_COLUMNS])
    return headers, cells


def to_csv(data: Mapping[str, Any]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow([*COLUMNS, "drifted"])
    for r in data["rows"]:
        w.writerow([("" if r[c] is None else r[c]) for c in COLUMNS] + [" ".join(r["drifted"])])
    return out.getvalue()

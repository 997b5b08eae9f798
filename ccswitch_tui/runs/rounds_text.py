"""The consistency table as text: the terminal's (80 columns: the scores, the flips and a short verdict;
everything with ``--wide``), Markdown and CSV. Under the terminal's table and in the other formats,
each round's verdict, what changed since the round before (with a warning when more than one thing
did) and its notes.

Cells hold texts from elsewhere (labels, model names, URLs): Markdown cells are escaped, CSV cells
that a spreadsheet would run as a formula are neutralised (``runs.cells``).
"""

from __future__ import annotations

import csv
import io
import textwrap
from collections.abc import Mapping
from typing import Any

from ccswitch_tui.runs.cells import csv_cell, md_cell
from ccswitch_tui.terminal_text import visible

SCORE_COLUMNS = (("round", "ROUND"), ("k", "K"), ("tasks", "TASKS"), ("pass_at_1", "PASS@1"),
                 ("pass_hat_k", "PASS^K"), ("pass_at_k", "PASS@K"), ("gap", "GAP"), ("flips", "FLIPS"))
ROUTING_COLUMNS = (("base_urls", "BASE URLS"), ("key_strategy", "KEY"), ("models_requested", "REQUESTED"),
                   ("models_served", "SERVED"), ("peak_concurrency", "CONC"), ("tokens_per_task", "TOK/TASK"),
                   ("tokens_per_request", "TOK/REQ"), ("retries", "RETRIES"), ("auth_failures", "401/403"),
                   ("rate_limited", "429"))
COLUMNS = SCORE_COLUMNS + ROUTING_COLUMNS
MIN_LABEL = 8
LEGEND = ("pass@1: mean success over all runs; pass^k: tasks solved in every run; pass@k: solved in at least "
          "one; gap = pass@1 − pass^k (percentage points); flips: tasks solved in some reruns and not in others.")


def cell(row: Mapping[str, Any], key: str) -> str:
    v = row.get(key)
    if v is None:
        return "-"
    if isinstance(v, list):
        return " ".join(str(x) for x in v) or "-"
    if key in ("pass_at_1", "pass_hat_k", "pass_at_k"):
        return f"{v:.1f}%"
    if key == "gap":
        return f"{v:.1f} pp"
    return str(v)


def with_machines(data: Mapping[str, Any], columns: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """``columns`` with MACHINES before the routing ones when a round's runs ran on more than one machine
    (imported runs, ``runs.origin``)."""
    if not any(len(r.get("machines") or []) > 1 for r in data["rounds"]):
        return columns
    at = next((i for i, (k, _) in enumerate(columns) if k == ROUTING_COLUMNS[0][0]), len(columns))
    return (*columns[:at], ("machines", "MACHINES"), *columns[at:])


def verdict_cell(row: Mapping[str, Any]) -> str:
    return "clean" if row.get("comparable") else "NOT COMPARABLE"


def round_lines(row: Mapping[str, Any]) -> list[str]:
    """What a round's row does not say: its verdict, what changed since the round before, its notes."""
    name = row["round"]
    out = [f"{name}: {row['verdict']}"]
    if len(row.get("machines") or []) > 1:
        out.append(f"{name}: ran on {len(row['machines'])} machines: {', '.join(row['machines'])}")
    if row.get("changed_since") is not None:
        changed = row.get("changed") or []
        what = "; ".join(c["text"] for c in changed) if changed else "nothing"
        out.append(f"{name}: changed since {row['changed_since']}: {what}")
    if row.get("changed_warning"):
        out.append(f"{name}: warning: {row['changed_warning']}")
    out += [f"{name}: note: {n}" for n in row.get("notes", [])]
    return out


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def terminal(data: Mapping[str, Any], width: int = 80, wide: bool = False) -> tuple[list[str], list[list[str]],
                                                                                   list[str]]:
    """Headers, cells and the lines printed under the table. The table fits ``width`` columns (labels
    are shortened with '…' when they do not); ``wide`` adds the routing columns."""
    columns = with_machines(data, COLUMNS) if wide else SCORE_COLUMNS
    headers = [h for _, h in columns] + ["VERDICT"]
    cells = [[visible(cell(r, k)) for k, _ in columns] + [verdict_cell(r)] for r in data["rounds"]]
    if not wide and cells:
        others = sum(max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers) if i)
        room = max(width - others - 2 * (len(headers) - 1), MIN_LABEL)
        for c in cells:
            c[0] = _clip(c[0], room)
    lines = []
    for r in data["rounds"]:
        for line in round_lines(r):
            lines += textwrap.wrap(visible(line), max(width, 40), subsequent_indent="  ", break_on_hyphens=False,
                                   break_long_words=True) or [""]
    return headers, cells, lines


def markdown(data: Mapping[str, Any]) -> str:
    """A Markdown table to paste into an experiment report: every column, what changed since the round
    before, and the verdict in the last column."""
    columns = with_machines(data, COLUMNS)
    headers = [h for _, h in columns] + ["CHANGED SINCE PREVIOUS", "ROUTING VERDICT"]
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for r in data["rounds"]:
        changed = "; ".join(c["text"] for c in r.get("changed") or []) or ("-" if r.get("changed_since") is None
                                                                            else "nothing")
        cells = [cell(r, k) for k, _ in columns] + [changed, str(r["verdict"])]
        out.append("| " + " | ".join(md_cell(c) for c in cells) + " |")
    extra = [f"- {md_cell(str(r['round']))}: warning: {md_cell(r['changed_warning'])}" for r in data["rounds"]
             if r.get("changed_warning")]
    extra += [f"- {md_cell(str(r['round']))}: {md_cell(str(n))}" for r in data["rounds"] for n in r.get("notes", [])]
    out += ["", LEGEND]
    return "\n".join(out + ([""] + extra if extra else [])) + "\n"


def to_csv(data: Mapping[str, Any]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    columns = with_machines(data, COLUMNS)
    keys = [k for k, _ in columns] + ["changed_since", "changed", "changed_warning", "comparable", "verdict"]
    w.writerow(keys)
    for r in data["rounds"]:
        line: list[Any] = [("" if cell(r, k) == "-" else cell(r, k)) for k, _ in columns]
        line += [r.get("changed_since") or "", "; ".join(c["text"] for c in r.get("changed") or []),
                 r.get("changed_warning") or "", r.get("comparable"), r.get("verdict")]
        w.writerow([csv_cell(c) for c in line])
    return out.getvalue()

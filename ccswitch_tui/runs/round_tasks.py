"""A round's tasks, rerun by rerun: which were solved, which flipped, and what their requests went
through.

- The **matrix**: a row per task, a cell per rerun: solved (a full score), failed (a lower score) or
  no result. Tasks that flipped (solved in some reruns, not in others: the ones that make the gap)
  come first, then those never solved, then those solved in every rerun (pass^k's tasks).
- **Per-task routing**: when the agent tagged its requests (the ``X-CCS-Task`` header), each rerun's
  summary counts them per task (``bridge.tally``): requests, tokens, retries, 401/403, 429, errors
  and the models served, shown next to the task's results.
- **Timelines**: per rerun, its requests over time with their 401/403, 429, retries and changes of
  the model served (the summary's ``timeline``).

Summaries come from manifests, which are read as untrusted: an entry of the wrong shape is left out.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ccswitch_tui.runs.cells import total

SOLVED = 1.0  # a task counts as solved in a run when its score is full
MAX_MATRIX_TASKS = 1000  # rows a round's matrix keeps (flipped tasks first); the rest are counted
ROUTING_FIELDS = ("requests", "tokens", "retries", "auth_failures", "rate_limited", "errors")
SLICE_FIELDS = ("requests", "auth_failures", "rate_limited", "retries", "errors")


_DIGITS = re.compile(r"(\d+)")
NATURAL_UP_TO = 20_000  # tasks a group sorts in natural order; a larger one by length, then text


def _natural(task: str) -> tuple[Any, ...]:
    """``task-2`` before ``task-10``."""
    return tuple((1, p) if n % 2 == 0 else (0, int(p[:30])) for n, p in enumerate(_DIGITS.split(task)) if p)


def _ordered(tasks: list[str], room: int) -> list[str]:
    """The first ``room`` tasks in order (natural for a usual benchmark, plain for a huge one)."""
    if room <= 0:
        return []
    if len(tasks) > NATURAL_UP_TO:  # a benchmark of a million tasks: only the rows shown are sorted
        return heapq.nsmallest(room, tasks)
    return sorted(tasks, key=_natural)[:room]


def task_routing(summary: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """A rerun's per-task counts, shape-checked: ``{task: {requests, tokens, …, models_served}}``."""
    by_task = (summary or {}).get("by_task")
    if not isinstance(by_task, dict):
        return {}
    out = {}
    for task, entry in by_task.items():
        if not isinstance(entry, dict):
            continue
        clean: dict[str, Any] = {f: total(entry.get(f)) or 0 for f in ROUTING_FIELDS}
        models = entry.get("models_served")
        clean["models_served"] = sorted(str(m) for m in models) if isinstance(models, dict) else []
        out[str(task)] = clean
    return out


def matrix(launch_ids: Sequence[str], results: Sequence[Mapping[str, float] | None],
           summaries: Sequence[Mapping[str, Any] | None]) -> dict[str, Any]:
    """The round's task × rerun matrix. ``results[i]`` is rerun i's scores (None: no outcomes attached),
    ``summaries[i]`` its request summary (None: not recorded)."""
    tasks = {t for r in results if r for t in r}
    routing = [task_routing(s) for s in summaries]
    flipped: list[str] = []
    never: list[str] = []
    every: list[str] = []
    for task in tasks:
        solved = [r is not None and r.get(task, 0.0) >= SOLVED for r in results if r is not None]
        (every if all(solved) else never if not any(solved) else flipped).append(task)
    order = _ordered(flipped, MAX_MATRIX_TASKS)
    order += _ordered(never, MAX_MATRIX_TASKS - len(order))
    order += _ordered(every, MAX_MATRIX_TASKS - len(order))
    flipped_set, every_set = set(flipped), set(every)
    rows = []
    for task in order:
        cells = [None if r is None or task not in r else r[task] for r in results]
        row: dict[str, Any] = {"task": task, "results": cells, "flipped": task in flipped_set,
                               "every": task in every_set}
        per_rerun = [rt.get(task) for rt in routing]
        if any(per_rerun):
            row["routing"] = per_rerun
        rows.append(row)
    tagged = {t for rt in routing for t in rt}
    return {"reruns": list(launch_ids), "tasks": rows, "tasks_left_out": len(tasks) - len(rows),
            "flips": len(flipped), "solved_every": len(every), "solved_none": len(never),
            "tagged_tasks": len(tagged), "tagged_without_result": len(tagged - tasks)}


def timeline(launch_id: str, summary: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A rerun's requests over time (shape-checked), with its totals; None when it has none."""
    t = (summary or {}).get("timeline")
    if not isinstance(t, dict) or not isinstance(t.get("slices"), list):
        return None
    slices = [[total(n) or 0 for n in s[:len(SLICE_FIELDS)]] + [0] * (len(SLICE_FIELDS) - len(s[:5]))
              for s in t["slices"][:200] if isinstance(s, list)]
    changes = [{"at": total(c.get("at")) or 0, "from": str(c.get("from")), "to": str(c.get("to"))}
               for c in (t.get("model_changes") or [])[:50] if isinstance(c, dict)]
    totals = {f: sum(s[i] for s in slices) for i, f in enumerate(SLICE_FIELDS)}
    return {"launch_id": launch_id, "start": str(t.get("start") or ""), "seconds": total(t.get("seconds")) or 0,
            "slice_seconds": total(t.get("slice_seconds")) or 0, "fields": list(SLICE_FIELDS), "slices": slices,
            "model_changes": changes, "more_model_changes": total(t.get("more_model_changes")) or 0, **totals}

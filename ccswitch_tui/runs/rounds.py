"""The consistency table: one row per round of reruns (the runs launched with one ``--label``).

Scores come from the runs' outcomes (``ccswitch_tui.runs.outcomes``): over the tasks of the round,

- pass@1: the mean success over all runs (every run × task);
- pass^k: the share of tasks solved in every one of the k runs;
- pass@k: the share of tasks solved in at least one run;
- the consistency gap: pass@1 − pass^k, in percentage points (77.4 % mean success with 53.0 % of
  tasks solved in all five runs is a 24.4-point gap).

Next to them, how the round was routed, and the verdict (``ccswitch_tui.runs.verdict``) on whether its
reruns are comparable: "clean: the gap is the agent's", or "not comparable" with what drifted and
why. Everything is read from the manifests' summaries; records are streamed only for a run that
is still going, so the table costs the same for 15 or 15,000 requests per run.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from ccswitch_tui.paths import Paths
from ccswitch_tui.runs.outcomes import results_of
from ccswitch_tui.runs.verdict import RunView, compare_views, failures, view

SOLVED = 1.0  # a task counts as solved in a run when its score is full
INFRA_OUTCOMES = ("auth_failures", "rate_limited")


def gap_points(pass_at_1: float, pass_hat_k: float) -> float:
    """The consistency gap in percentage points, from two shares (0..1)."""
    return round((pass_at_1 - pass_hat_k) * 100, 1)


def scores(results: Sequence[Mapping[str, float]]) -> dict[str, Any]:
    """pass@1, pass^k, pass@k (shares, 0..1) and the gap over the union of the runs' tasks; a task a run
    has no result for counts as not solved in that run."""
    tasks = sorted({t for r in results for t in r})
    if not results or not tasks:
        return {"tasks": 0, "pass_at_1": None, "pass_hat_k": None, "pass_at_k": None, "gap": None}
    solved = [[r.get(t, 0.0) >= SOLVED for t in tasks] for r in results]
    k, n = len(results), len(tasks)
    p1 = sum(map(sum, solved)) / (k * n)
    every = sum(all(run[i] for run in solved) for i in range(n)) / n
    some = sum(any(run[i] for run in solved) for i in range(n)) / n
    return {"tasks": n, "pass_at_1": p1, "pass_hat_k": every, "pass_at_k": some, "gap": gap_points(p1, every)}


def _base_urls_seen(v: RunView) -> list[str]:
    """The base URLs requests went to: per request for a recorded run (each endpoint reached, under the
    base URL of the profile that it starts with, else its own origin), else the manifest's."""
    configured = sorted({u for u in (v.manifest.get("base_urls") or {}).values() if isinstance(u, str)})
    endpoints = (v.summary or {}).get("endpoints") or {}
    if not endpoints:
        return configured
    seen = set()
    for url in endpoints:
        base = next((b for b in sorted(configured, key=len, reverse=True) if url.startswith(b.rstrip("/"))), None)
        if base is None:
            parts = urlsplit(url)
            base = f"{parts.scheme}://{parts.netloc}"
        seen.add(base)
    return sorted(seen)


def _why(field: str, diffs: Sequence[Any], fps: int) -> str:
    d = diffs[0]
    if field == "key_fingerprint":
        return f"key rotated ({fps} fingerprints): {d.cause}" if d.cause else f"key rotated ({fps} fingerprints)"
    if field == "base_urls":
        urls = sorted({str(u) for x in diffs for side in (x.base, x.run) for u in (side or {}).values()})
        return f"base URLs {', '.join(urls)}" + (f" ({d.cause})" if d.cause else "")
    what = f"{field} ({d.kind})"
    if field in INFRA_OUTCOMES:
        return f"{what} in {len(diffs)} rerun(s)" + (f": {d.cause}" if d.cause else "")
    return f"{what}: {d.cause}" if d.cause else f"{what}: {d.base} -> {d.run}"


def round_row(label: str, manifests: Sequence[Mapping[str, Any]], paths: Paths | None = None) -> dict[str, Any]:
    """One round's row; ``manifests`` oldest first."""
    views = [view(m, paths) for m in manifests]
    results = [results_of(m) for m in manifests]
    with_results = [r for r in results if r is not None]
    row: dict[str, Any] = {"round": label, "k": len(manifests), "runs": [v.launch_id for v in views]}
    row.update(scores(with_results))
    for f in ("pass_at_1", "pass_hat_k", "pass_at_k"):
        row[f] = None if row[f] is None else round(row[f] * 100, 1)
    notes = []
    task_sets = {frozenset(r) for r in with_results}
    if len(task_sets) > 1:
        notes.append(f"the reruns scored different task sets ({min(map(len, task_sets))} to "
                     f"{max(map(len, task_sets))} tasks); a task without a result counts as not solved")
    if len(with_results) < len(manifests):
        notes.append(f"{len(manifests) - len(with_results)} of {len(manifests)} run(s) have no outcomes "
                     "(`ccs runs attach ID FILE`)")

    urls = sorted({u for v in views for u in _base_urls_seen(v)})
    fps = sorted({str(v.manifest.get("key_fingerprint")) for v in views if v.manifest.get("key_fingerprint")})
    summaries = [v.summary for v in views if v.summary is not None]
    tokens = sum(int(t) for s in summaries for k, t in (s.get("tokens") or {}).items()
                 if k in ("input_tokens", "output_tokens") and isinstance(t, int))
    requests = sum(s.get("requests") or 0 for s in summaries if isinstance(s.get("requests"), int))
    task_runs = sum(len(r) for r in with_results)

    def failed(error_class: str, *codes: str) -> int | None:
        return sum(failures(s, error_class, *codes) for s in summaries) if summaries else None

    row.update({
        "base_urls": urls,
        "key_strategy": f"fixed: {fps[0]}" if len(fps) == 1 else f"rotated: {len(fps)}" if fps else "unknown",
        "key_fingerprints": fps,
        "models_requested": sorted({m for s in summaries for m in (s.get("models_requested") or {})}),
        "models_served": sorted({m for s in summaries for m in (s.get("models_served") or {})}),
        "models_pinned": sorted({str(x) for v in views for x in (v.manifest.get("models") or {}).values()}),
        "peak_concurrency": max((s.get("max_concurrency") or 0 for s in summaries), default=None),
        "requests": requests if summaries else None,
        "tokens_per_task": round(tokens / task_runs, 1) if summaries and task_runs else None,
        "tokens_per_request": round(tokens / requests, 1) if requests else None,
        "retries": sum(s.get("retries") or 0 for s in summaries) if summaries else None,
        "auth_failures": failed("auth", "401", "403"),
        "rate_limited": failed("rate_limit", "429"),
        "recorded": f"{len(summaries)}/{len(views)}",
    })

    by_field: dict[str, list[Any]] = {}
    for v in views[1:]:
        verdict = compare_views(views[0], v)
        # Besides drift, auth failures and rate limits that differ between reruns: the provider, not the
        # agent, failed some of them.
        for d in [*verdict.routing_differences, *(x for x in verdict.differences if x.field in INFRA_OUTCOMES)]:
            by_field.setdefault(d.field, []).append(d)
    if "base_urls" in by_field:
        by_field.pop("endpoints", None)  # what a changed base URL implies
    if len(urls) > 1 and "base_urls" not in by_field and "endpoints" not in by_field:
        notes.append(f"requests went to {len(urls)} base URLs within a run: {', '.join(urls)}")
        by_field["endpoints"] = []
    reasons = [(_why(f, ds, len(fps)) if ds else f"requests to {', '.join(urls)}") for f, ds in by_field.items()]
    row["comparable"] = not reasons
    row["drifted"] = list(by_field)
    row["verdict"] = "clean: the gap is the agent's" if not reasons else "not comparable: " + "; ".join(reasons)
    row["notes"] = notes + [p for v in views for p in v.problems]
    return row


def rounds_table(labels: Sequence[str], manifests: Sequence[Mapping[str, Any]],
                 paths: Paths | None = None) -> dict[str, Any]:
    """A row per label, in the order given; ``manifests`` newest first (as ``load_manifests`` gives)."""
    rows = []
    for label in labels:
        mine = [m for m in reversed(manifests) if m.get("label") == label]
        rows.append(round_row(label, mine, paths) if mine else
                    {"round": label, "k": 0, "runs": [], "comparable": False, "drifted": [],
                     "verdict": f"no run has the label {label!r}", "notes": []})
    return {"rounds": rows}


# --- output ----------------------------------------------------------------------------------------

COLUMNS = (("round", "ROUND"), ("k", "K"), ("tasks", "TASKS"), ("pass_at_1", "PASS@1"), ("pass_hat_k", "PASS^K"),
           ("pass_at_k", "PASS@K"), ("gap", "GAP"), ("base_urls", "BASE URLS"), ("key_strategy", "KEY"),
           ("models_requested", "REQUESTED"), ("models_served", "SERVED"), ("peak_concurrency", "CONC"),
           ("tokens_per_task", "TOK/TASK"), ("tokens_per_request", "TOK/REQ"), ("retries", "RETRIES"),
           ("auth_failures", "401/403"), ("rate_limited", "429"))


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


def terminal(data: Mapping[str, Any]) -> tuple[list[str], list[list[str]], list[str]]:
    """Headers, cells and the verdict lines printed under the table."""
    headers = [h for _, h in COLUMNS] + ["VERDICT"]
    cells = [[cell(r, k) for k, _ in COLUMNS] + ["clean" if r.get("comparable") else "NOT COMPARABLE"]
             for r in data["rounds"]]
    lines = [f"{r['round']}: {r['verdict']}" for r in data["rounds"]]
    lines += [f"{r['round']}: note: {n}" for r in data["rounds"] for n in r.get("notes", [])]
    return headers, cells, lines


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(data: Mapping[str, Any]) -> str:
    """A Markdown table to paste into an experiment report, the verdict in its last column."""
    headers = [h for _, h in COLUMNS] + ["ROUTING VERDICT"]
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for r in data["rounds"]:
        out.append("| " + " | ".join(_md(cell(r, k)) for k, _ in COLUMNS) + f" | {_md(r['verdict'])} |")
    notes = [f"- {r['round']}: {_md(n)}" for r in data["rounds"] for n in r.get("notes", [])]
    out += ["", "pass@1: mean success over all runs; pass^k: tasks solved in every run; pass@k: solved in at "
            "least one; gap = pass@1 − pass^k (percentage points)."]
    return "\n".join(out + ([""] + notes if notes else [])) + "\n"


def to_csv(data: Mapping[str, Any]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    keys = [k for k, _ in COLUMNS] + ["comparable", "verdict"]
    w.writerow(keys)
    for r in data["rounds"]:
        w.writerow([("" if cell(r, k) == "-" else cell(r, k)) if k not in ("comparable", "verdict") else r.get(k)
                    for k in keys])
    return out.getvalue()

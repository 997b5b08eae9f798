"""The consistency table: one row per round of reruns (the runs launched with one ``--label``).

Scores come from the runs' outcomes (``ccswitch_tui.runs.outcomes``): over the tasks of the round,

- pass@1: the mean success over all runs (every run × task);
- pass^k: the share of tasks solved in every one of the k runs;
- pass@k: the share of tasks solved in at least one run;
- the consistency gap: pass@1 − pass^k, in percentage points (77.4 % mean success with 53.0 % of
  tasks solved in all five runs is a 24.4-point gap).

Next to them, how the round was routed, and the verdict (``ccswitch_tui.runs.verdict``) on whether its
reruns are comparable: "clean: the gap is the agent's", or "not comparable" with what drifted and
why. Beside them, for the board (``runs.board``) and ``--json``: the round's task × rerun matrix with
per-task routing and each rerun's timeline (``runs.round_tasks``), and what changed since the round
before (``runs.round_changes``). Everything is read from the manifests' summaries; records are
streamed only for a run that is still going, so the table costs the same for 15 or 15,000 requests
per run. The rounds take a list of manifests, wherever they came from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from ccswitch_tui.paths import Paths
from ccswitch_tui.runs import round_changes, round_tasks
from ccswitch_tui.runs.cells import total
from ccswitch_tui.runs.origin import machines
from ccswitch_tui.runs.outcomes import results_of
from ccswitch_tui.runs.round_tasks import SOLVED
from ccswitch_tui.runs.verdict import RunView, compare_views, failures, salt_of, view

INFRA_OUTCOMES = ("auth_failures", "rate_limited")


def gap_points(pass_at_1: float, pass_hat_k: float) -> float:
    """The consistency gap in percentage points, from two shares (0..1)."""
    return round((pass_at_1 - pass_hat_k) * 100, 1)


def scores(results: Sequence[Mapping[str, float]]) -> dict[str, Any]:
    """pass@1, pass^k, pass@k (shares, 0..1) and the gap over the union of the runs' tasks; a task a run
    has no result for counts as not solved in that run."""
    tasks = list({t for r in results for t in r})
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


def _why(field: str, diffs: Sequence[Any], fps: int, used: Sequence[str] = ()) -> str:
    """``used``: the base URLs requests went to (recorded runs); a changed base URL no request used (an
    Anthropic export beside the OpenAI one the program called) is not named."""
    d = diffs[0]
    if field == "fingerprint_salt":
        return str(d.cause)
    if field == "key_fingerprint":
        return f"key rotated ({fps} fingerprints): {d.cause}" if d.cause else f"key rotated ({fps} fingerprints)"
    if field == "base_urls":
        urls = sorted({str(u) for x in diffs for side in (x.base, x.run) for u in (side or {}).values()})
        urls = [u for u in urls if u in used] or urls
        return f"base URLs {', '.join(urls)}" + (f" ({d.cause})" if d.cause else "")
    what = f"{field} ({d.kind})"
    if field in INFRA_OUTCOMES:
        return f"{what} in {len(diffs)} rerun(s)" + (f": {d.cause}" if d.cause else "")
    return f"{what}: {d.cause}" if d.cause else f"{what}: {d.base} -> {d.run}"


def _retries(summary: Mapping[str, Any]) -> int:
    """A run's retries: its summary's count, else those its timeline counted."""
    if "retries" in summary:
        return total(summary.get("retries")) or 0
    t = round_tasks.timeline("", summary)
    return t["retries"] if t else 0


def round_row(label: str, manifests: Sequence[Mapping[str, Any]], paths: Paths | None = None) -> dict[str, Any]:  # noqa: C901
    """One round's row; ``manifests`` oldest first."""
    views = [view(m, paths) for m in manifests]
    results = [results_of(m, paths) for m in manifests]
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
    for m, r in zip(manifests, results, strict=True):
        out = m.get("outcomes")
        if r is None and isinstance(out, dict) and isinstance(out.get("results_file"), str) and paths is not None:
            notes.append(f"run {m.get('launch_id')}: its results file {out['results_file']!r} is missing or damaged; "
                         "attach the outcomes again (`ccs runs attach ID FILE`)")
    if len(with_results) < len(manifests):
        notes.append(f"{len(manifests) - len(with_results)} of {len(manifests)} run(s) have no outcomes "
                     "(`ccs runs attach ID FILE`)")

    urls = sorted({u for v in views for u in _base_urls_seen(v)})
    fps = sorted({str(v.manifest.get("key_fingerprint")) for v in views if v.manifest.get("key_fingerprint")})
    summaries = [v.summary for v in views if v.summary is not None]
    # Totals a provider or a hand-edited manifest made implausible (401 digits) are left out, and said so.
    token_values = [t for s in summaries for k, t in (s.get("tokens") or {}).items()
                    if k in ("input_tokens", "output_tokens")]
    request_values = [s.get("requests") for s in summaries if s.get("requests") is not None]
    implausible = [x for x in (*token_values, *request_values) if total(x) is None]
    if implausible:
        notes.append(f"{len(implausible)} implausible count(s) in the runs' summaries (not a whole number from 0 "
                     "to 10^18): left out of the token and request columns")
    tokens = sum(total(t) or 0 for t in token_values)
    requests = sum(total(n) or 0 for n in request_values)
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
        "peak_concurrency": max((total(s.get("max_concurrency")) or 0 for s in summaries), default=None),
        "requests": requests if summaries else None,
        "tokens_per_task": round(tokens / task_runs, 1) if summaries and task_runs else None,
        "tokens_per_request": round(tokens / requests, 1) if requests else None,
        "retries": sum(_retries(s) for s in summaries) if summaries else None,
        "auth_failures": failed("auth", "401", "403"),
        "rate_limited": failed("rate_limit", "429"),
        "recorded": f"{len(summaries)}/{len(views)}",
        "machines": machines(manifests),
        "key_salts": sorted({salt for v in views if v.manifest.get("key_fingerprint") and (salt := salt_of(v))}),
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
    used = urls if summaries else ()
    reasons = [(_why(f, ds, len(fps), used) if ds else f"requests to {', '.join(urls)}") for f, ds in by_field.items()]
    if "fingerprint_salt" in by_field:  # fingerprints that cannot be compared tell no key strategy
        row["key_strategy"] = "salts differ"
    row["comparable"] = not reasons
    row["drifted"] = list(by_field)
    row["verdict"] = "clean: the gap is the agent's" if not reasons else "not comparable: " + "; ".join(reasons)
    row["notes"] = notes + [p for v in views for p in v.problems]
    row["clients"] = round_changes.clients(manifests)
    row["command"] = round_changes.round_command(manifests)
    ids = [v.launch_id for v in views]
    matrix = round_tasks.matrix(ids, results, [v.summary for v in views])
    row["flips"] = matrix["flips"] if with_results else None
    row["matrix"] = matrix
    row["timelines"] = [t for v in views if (t := round_tasks.timeline(v.launch_id, v.summary)) is not None]
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
    round_changes.annotate(rows)
    return {"rounds": rows}

"""The consistency board: ``ccs runs report --rounds L1 L2 … --html FILE``, one self-contained HTML page
that puts the gap, the route and the tasks that flipped together.

- the gap per round as a chart (rounds in the order given), each round's routing verdict as a badge
  and the routing columns of the consistency table;
- what changed since the previous round (routing and the rerun command), with a warning when more
  than one thing changed between two consecutive rounds;
- per round, the task × rerun matrix (flipped tasks first, pass^k's tasks marked), each flipped task
  linked to what its requests went through when the agent tagged them (``X-CCS-Task``);
- per rerun, a small timeline of its requests: 401/403, 429, retries, changes of the model served.

The page loads nothing: no script at all, styles inline, drawings as inline SVG, and a Content
Security Policy that forbids any request, so it opens the same from ``file://``, a CI artifact or a
mail attachment. Every number is written as text. Every text from elsewhere (labels, task ids,
model names, URLs) is escaped, its control and bidi characters shown as escapes, and cut when long.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ccswitch_tui import __version__
from ccswitch_tui.atomic import atomic_write
from ccswitch_tui.errors import UsageError
from ccswitch_tui.runs.board_charts import gap_chart, percent, points, text, timeline_chart
from ccswitch_tui.runs.rounds_text import ROUTING_COLUMNS, cell, with_machines

MAX_DETAIL_TASKS = 200  # flipped tasks per round with their per-rerun routing written out
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
STYLE = """
:root{--fg:#1d2330;--muted:#5b6475;--line:#d9dde5;--ok:#1a7f37;--bad:#c62828;--warn:#9a6700;--p1:#3f6fd8;
--pk:#1a7f37;--pak:#9aa3b5;--gap:#e8710a;--bg:#fff;--soft:#f5f7fa}
*{box-sizing:border-box}body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg);margin:0 auto;padding:24px;max-width:1400px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid var(--line);
padding-bottom:4px}h3{font-size:15px;margin:18px 0 6px}h1,h2,h3,p,li,div{overflow-wrap:anywhere}
.muted{color:var(--muted)}
table{border-collapse:collapse;margin:6px 0}th,td{border:1px solid var(--line);padding:3px 7px;text-align:left;
vertical-align:top;overflow-wrap:break-word;max-width:420px}tbody th{min-width:90px}
th{background:var(--soft);font-weight:600}
thead th{white-space:nowrap}td.verdict{min-width:280px}td.route{min-width:140px}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.scroll{overflow-x:auto;max-width:100%}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;color:#fff;
white-space:nowrap}.badge.clean{background:var(--ok)}.badge.drift{background:var(--bad)}
.badge.none{background:var(--muted)}
.warning{border-left:4px solid var(--warn);background:#fff8e1;padding:6px 10px;margin:6px 0;
overflow-wrap:anywhere}
.chart .grid{stroke:var(--line)}.chart .axis{font-size:11px;fill:var(--muted)}
.chart .round-name{font-size:12px;fill:var(--fg)}.chart .value{font-size:12px;font-weight:600;fill:var(--gap)}
.bar.p1{fill:var(--p1)}.bar.pk{fill:var(--pk)}.bar.pak{fill:var(--pak)}.bar.gap{fill:var(--gap)}
.gap-line{fill:none;stroke:var(--gap);stroke-width:2;stroke-dasharray:4 3}
table.matrix td.cell{text-align:center;width:34px;font-weight:600}.matrix-wrap{display:flex;flex-wrap:wrap;
gap:0 18px;align-items:flex-start}td.rt{font-size:12px;min-width:150px}.alarm{color:var(--bad);font-weight:600}
span.solved{color:var(--ok);font-weight:700}span.failed{color:var(--bad);font-weight:700}
td.solved{background:#dff3e4;color:var(--ok)}td.failed{background:#fde0de;color:var(--bad)}
td.noresult{background:#eceff3;color:var(--muted)}tr.flipped th{background:#fff1e0}
.mark{color:var(--pk);font-weight:700}
.timeline{display:block;background:var(--soft)}.timeline .req{fill:#8a94a8}.timeline .bad{fill:var(--bad)}
.timeline .retry{fill:var(--gap)}.timeline .model-change{stroke:#7b3fc4;stroke-width:2}
.reruns{display:flex;flex-wrap:wrap;gap:14px}.rerun{border:1px solid var(--line);padding:6px 8px;max-width:420px}
code{font-size:12px;overflow-wrap:anywhere}
"""


def _badge(r: Mapping[str, Any]) -> str:
    if not r.get("k"):
        return '<span class="badge none">no runs</span>'
    return ('<span class="badge clean">clean</span>' if r.get("comparable")
            else '<span class="badge drift">not comparable</span>')


def _td(value: str, num: bool = False) -> str:
    return f'<td class="num">{value}</td>' if num else f"<td>{value}</td>"


def _rounds_table(rounds: Sequence[Mapping[str, Any]]) -> str:
    routing = with_machines({"rounds": rounds}, ROUTING_COLUMNS)  # MACHINES when a round spans machines
    heads = ["round", "routing verdict", "k", "tasks", "pass@1", "pass^k", "pass@k", "gap", "flips",
             *(h.lower() for _, h in routing)]
    out = ['<div class="scroll"><table class="rounds" id="rounds-table"><thead><tr>',
           *(f"<th>{h}</th>" for h in heads), "</tr></thead><tbody>"]
    for i, r in enumerate(rounds):
        out.append(f'<tr><th><a href="#round-{i}">{text(r["round"], 80)}</a></th>'
                   f'<td class="verdict">{_badge(r)} {text(r.get("verdict", ""), 600)}</td>')
        out += [_td(text(cell(r, "k")), True), _td(text(cell(r, "tasks")), True),
                _td(percent(r.get("pass_at_1")), True), _td(percent(r.get("pass_hat_k")), True),
                _td(percent(r.get("pass_at_k")), True), _td(points(r.get("gap")), True),
                _td(text(cell(r, "flips")), True)]
        out += [_td(text(cell(r, k), 400), True) if isinstance(r.get(k), (int, float)) else
                f'<td class="route">{text(cell(r, k), 400)}</td>' for k, _ in routing]
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _changes(rounds: Sequence[Mapping[str, Any]]) -> str:
    out = []
    for i, r in enumerate(rounds):
        if r.get("changed_since") is None:
            continue
        head = f"<h3>{text(r['round'], 80)} <span class=\"muted\">since {text(r['changed_since'], 80)}</span></h3>"
        changed = r.get("changed") or []
        items = "".join(f'<li data-field="{text(c["field"])}">{text(c["text"], 600)}</li>' for c in changed)
        body = f"<ul>{items}</ul>" if changed else '<p class="muted">nothing changed</p>'
        warn = (f'<div class="warning changed-warning" role="alert" id="changed-warning-{i}">⚠ '
                f'{text(r["changed_warning"], 600)}</div>') if r.get("changed_warning") else ""
        out.append(f'<div class="change" id="changes-{i}">{head}{warn}{body}</div>')
    if not out:
        return '<p class="muted">One round only: nothing to compare with.</p>'
    return "".join(out)


CELL = {"solved": "✓", "failed": "✗", "noresult": "–"}


def _state(score: Any) -> str:
    if score is None:
        return "noresult"
    return "solved" if score >= 1.0 else "failed"


MATRIX_CHUNK = 25  # rows per column of the matrix: a hundred tasks read side by side, not one long list


def _matrix(i: int, r: Mapping[str, Any]) -> str:
    m = r.get("matrix") or {}
    rows = m.get("tasks") or []
    if not rows:
        return '<p class="muted">No outcomes attached: <code>ccs runs attach ID FILE</code>.</p>'
    reruns = m.get("reruns") or []
    detail = [row["task"] for row in rows if row.get("flipped") and row.get("routing")][:MAX_DETAIL_TASKS]
    linked = set(detail)
    head = ("<thead><tr><th>task</th>" + "".join(f'<th title="{text(lid, 80)}">#{n + 1}</th>'
                                                  for n, lid in enumerate(reruns)) + "</tr></thead>")
    out = [f'<p>{m.get("flips", 0)} flipped, {m.get("solved_every", 0)} solved in every rerun '
           f'(<span class="mark">★</span> pass^k), {m.get("solved_none", 0)} in none. ✓ solved, ✗ failed, – no '
           "result; flipped tasks first, shaded.</p>", f'<div class="matrix-wrap" id="matrix-{i}">']
    for start in range(0, len(rows), MATRIX_CHUNK):
        out.append(f'<table class="matrix">{head}<tbody>')
        for j, row in enumerate(rows[start:start + MATRIX_CHUNK], start):
            cls = "flipped" if row.get("flipped") else "every" if row.get("every") else "never"
            name = text(row["task"], 120)
            if row["task"] in linked:
                name = f'<a href="#task-{i}-{j}">{name}</a>'
            mark = ' <span class="mark" title="solved in every rerun">★</span>' if row.get("every") else ""
            cells = "".join(f'<td class="cell {_state(s)}" title="{_score(s)}">{CELL[_state(s)]}</td>'
                            for s in row.get("results") or [])
            out.append(f'<tr class="{cls}"><th>{name}{mark}</th>{cells}</tr>')
        out.append("</tbody></table>")
    out.append("</div>")
    if m.get("tasks_left_out"):
        out.append(f'<p class="muted">{m["tasks_left_out"]} more task(s) not shown (solved in every rerun or in '
                   "none come last); <code>--json</code> counts them.</p>")
    if linked:
        out.append(_task_detail(i, rows, reruns, linked))
    elif m.get("flips"):
        out.append('<p class="muted">The agent did not tag its requests with <code>X-CCS-Task</code>: the flipped '
                   "tasks' requests cannot be told apart.</p>")
    return "".join(out)


def _score(score: Any) -> str:
    return "no result" if score is None else f"score {score:g}"


def _routing_cell(score: Any, rt: Mapping[str, Any] | None) -> str:
    """One flipped task in one rerun: its result, then what its requests went through, in words."""
    mark = f'<span class="{_state(score)}">{CELL[_state(score)]}</span>'
    if not rt:
        return f'<td class="rt">{mark} <span class="muted">no tagged request</span></td>'
    parts = [f"{rt.get('requests', 0)} req", f"{rt.get('tokens', 0):,} tok"]
    bad = [f"{name} ×{rt[f]}" for f, name in (("rate_limited", "429"), ("auth_failures", "401/403"),
                                               ("retries", "retry"), ("errors", "error")) if rt.get(f)]
    models = " ".join(rt.get("models_served") or [])
    return (f'<td class="rt">{mark} {" · ".join(parts)}'
            + (f' <span class="alarm">{" · ".join(bad)}</span>' if bad else "")
            + (f'<br><span class="muted">{text(models, 200)}</span>' if models else "") + "</td>")


def _task_detail(i: int, rows: Sequence[Mapping[str, Any]], reruns: Sequence[str], linked: set[str]) -> str:
    out = ["<h3>What the flipped tasks' requests went through</h3>",
           '<div class="scroll"><table class="task-routing"><thead><tr><th>task</th>',
           *(f'<th title="{text(lid, 80)}">#{n + 1}</th>' for n, lid in enumerate(reruns)), "</tr></thead><tbody>"]
    for j, row in enumerate(rows):
        if row["task"] not in linked:
            continue
        routing = list(row.get("routing") or [])
        results = list(row.get("results") or [])
        cells = "".join(_routing_cell(results[n] if n < len(results) else None,
                                      routing[n] if n < len(routing) else None) for n in range(len(reruns)))
        out.append(f'<tr id="task-{i}-{j}"><th>{text(row["task"], 120)}</th>{cells}</tr>')
    out.append("</tbody></table></div>")
    return "".join(out)


def _timelines(r: Mapping[str, Any]) -> str:
    ts = r.get("timelines") or []
    if not ts:
        return '<p class="muted">Not recorded (<code>--record</code>): no requests to draw.</p>'
    out = ['<div class="reruns">']
    for t in ts:
        changes = t.get("model_changes") or []
        said = "; ".join(f"{text(c['from'], 60)} → {text(c['to'], 60)} at {c['at']} s" for c in changes[:3])
        out.append(f'<div class="rerun"><div><b>{text(t["launch_id"], 80)}</b></div>{timeline_chart(t)}'
                   f'<div class="muted">{t.get("requests", 0)} requests over {t.get("seconds", 0)} s; '
                   f'401/403: {t.get("auth_failures", 0)}; 429: {t.get("rate_limited", 0)}; retries: '
                   f'{t.get("retries", 0)}; errors: {t.get("errors", 0)}; served model changes: '
                   f'{len(changes) + (t.get("more_model_changes") or 0)}{" (" + said + ")" if said else ""}</div>'
                   "</div>")
    out.append("</div>")
    return "".join(out)


def _round(i: int, r: Mapping[str, Any]) -> str:
    notes = "".join(f"<li>{text(n, 600)}</li>" for n in r.get("notes") or [])
    cmd = r.get("command")
    return "".join([
        f'<section class="round" id="round-{i}"><h2>Round {text(r["round"], 120)} {_badge(r)}</h2>',
        f'<p class="verdict">{text(r.get("verdict", ""), 1000)}</p>',
        f'<p class="muted">k = {text(cell(r, "k"))}; pass@1 {percent(r.get("pass_at_1"))}, pass^k '
        f'{percent(r.get("pass_hat_k"))}, gap {points(r.get("gap"))}'
        + (f"; command <code>{text(' '.join(cmd), 400)}</code>" if cmd else "") + "</p>",
        f"<ul class=\"notes\">{notes}</ul>" if notes else "",
        "<h3>Tasks × reruns</h3>", _matrix(i, r) if r.get("k") else "",
        "<h3>Routing per rerun</h3>", _timelines(r) if r.get("k") else "", "</section>"])


def render(data: Mapping[str, Any], generated: datetime | None = None) -> str:
    """The board as one HTML document."""
    rounds = list(data.get("rounds") or [])
    when = (generated or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M UTC")
    names = ", ".join(text(r["round"], 60) for r in rounds)
    return "".join([
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>Consistency board: {names}</title><style>{STYLE}</style></head><body>",
        "<h1>Consistency board</h1>",
        f'<p class="muted">{len(rounds)} round(s): {names}. Made by ccs {text(__version__)} on {when}. '
        "pass@1: mean success over all reruns × tasks; pass^k: tasks solved in every rerun; pass@k: solved in at "
        "least one; gap = pass@1 − pass^k in percentage points; flips: tasks solved in some reruns and not in "
        "others.</p>",
        '<h2 id="gap">The gap per round</h2>', f'<div class="scroll">{gap_chart(rounds)}</div>',
        _rounds_table(rounds),
        '<h2 id="changes">What changed since the previous round</h2>', _changes(rounds),
        *(_round(i, r) for i, r in enumerate(rounds)),
        "</body></html>\n"])


def write_board(data: Mapping[str, Any], target: str) -> Path | None:
    """Write the board to ``target`` (atomically; '-' is stdout, then None is returned)."""
    page = render(data)
    if target == "-":
        sys.stdout.write(page)
        sys.stdout.flush()
        return None
    path = Path(target)
    if not path.parent.is_dir():
        raise UsageError(f"--html {target}: no folder {str(path.parent)!r}; give a file in a folder that exists")
    try:
        atomic_write(path, page, mode=0o600, durable=False)
    except OSError as exc:
        raise UsageError(f"--html {target}: cannot write the board ({exc.strerror or exc}); give a file in a folder "
                         "that exists and that you can write") from None
    return path

"""The board's drawings, as inline SVG: the scores and the gap per round, and a rerun's requests over
time. Every number a bar stands for is also written as text beside it (and in the board's tables),
so the drawings need no script and no hover to be read.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from ccswitch_tui.terminal_text import visible

CHART_HEIGHT = 200  # pixels for 100 %
SERIES = (("pass_at_1", "pass@1", "p1"), ("pass_hat_k", "pass^k", "pk"), ("pass_at_k", "pass@k", "pak"),
          ("gap", "gap", "gap"))


def text(value: Any, limit: int = 300) -> str:
    """Text from elsewhere as HTML text: control and bidi characters shown as escapes, markup as
    entities, cut to ``limit`` characters."""
    shown = visible(str(value))
    if len(shown) > limit:
        shown = shown[:limit - 1] + "…"
    return html.escape(shown, quote=True)


def percent(value: Any) -> str:
    return "-" if value is None else f"{value:.1f}%"


def points(value: Any) -> str:
    return "-" if value is None else f"{value:.1f} pp"


def gap_chart(rounds: Sequence[Mapping[str, Any]]) -> str:
    """Per round, in the order given: bars for pass@1, pass^k and pass@k (0–100 %) and the gap (points
    on the same scale), the gap's value above its bar and a line through the gaps, so a narrowing
    (24.4 → 12.0) reads as one."""
    group, bar, left, top = 150, 24, 44, 24
    width = left + group * max(len(rounds), 1) + 10
    height = top + CHART_HEIGHT + 44
    base = top + CHART_HEIGHT
    out = [f'<svg class="chart" id="gap-chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           'role="img" aria-label="pass@1, pass^k, pass@k and the consistency gap per round">']
    for pct in (0, 25, 50, 75, 100):
        y = base - pct * CHART_HEIGHT / 100
        out.append(f'<line class="grid" x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}"/>'
                   f'<text class="axis" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{pct}</text>')
    gap_points = []
    for i, r in enumerate(rounds):
        x0 = left + i * group + 14
        for j, (key, name, cls) in enumerate(SERIES):
            value = r.get(key)
            x = x0 + j * (bar + 6)
            if value is None:
                out.append(f'<text class="none" x="{x + bar / 2}" y="{base - 4}" text-anchor="middle">–</text>')
                continue
            h = max(min(float(value), 100.0), 0.0) * CHART_HEIGHT / 100
            label = points(value) if key == "gap" else percent(value)
            out.append(f'<rect class="bar {cls}" data-round="{text(r["round"], 80)}" data-value="{value}" '
                       f'x="{x}" y="{base - h:.2f}" width="{bar}" height="{h:.2f}">'
                       f'<title>{text(r["round"], 80)}: {name} {label}</title></rect>')
            if key == "gap":
                gap_points.append((x + bar / 2, base - h))
                out.append(f'<text class="value gap-value" x="{x + bar / 2}" y="{base - h - 6:.1f}" '
                           f'text-anchor="middle">{value:.1f}</text>')
        out.append(f'<text class="round-name" x="{x0 + 2 * (bar + 6) - 3}" y="{base + 18}" text-anchor="middle">'
                   f'{text(r["round"], 18)}</text>')
    if len(gap_points) > 1:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in gap_points)
        out.append(f'<polyline class="gap-line" points="{path}"/>')
    legend_y = height - 8
    for j, (_, name, cls) in enumerate(SERIES):
        x = left + j * 110
        out.append(f'<rect class="bar {cls}" x="{x}" y="{legend_y - 10}" width="12" height="12"/>'
                   f'<text class="axis" x="{x + 16}" y="{legend_y}">{name}{" (pp)" if cls == "gap" else " (%)"}</text>')
    out.append("</svg>")
    return "".join(out)


def timeline_chart(t: Mapping[str, Any]) -> str:
    """A rerun's requests per slice of time (grey), slices with 401/403 or 429 answers (red marks
    under them), retries (orange marks) and changes of the model served (violet lines)."""
    slices = t.get("slices") or []
    n = max(len(slices), 1)
    w, h, marks = 6, 36, 8
    width, height = n * w, h + 2 * marks + 2
    peak = max((s[0] for s in slices), default=0) or 1
    req, bad, retry = [], [], []
    for i, s in enumerate(slices):
        x = i * w
        if s[0]:
            bh = max(s[0] * h / peak, 1)
            req.append(f"M{x},{h}v{-bh:.1f}h{w - 1}v{bh:.1f}z")
        if s[1] or s[2]:
            bad.append(f"M{x},{h + 2}h{w - 1}v{marks - 1}h{1 - w}z")
        if s[3]:
            retry.append(f"M{x},{h + marks + 2}h{w - 1}v{marks - 1}h{1 - w}z")
    out = [f'<svg class="timeline" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="requests over time">']
    for cls, parts in (("req", req), ("bad", bad), ("retry", retry)):
        if parts:
            out.append(f'<path class="{cls}" d="{"".join(parts)}"/>')
    seconds = t.get("seconds") or 1
    for c in t.get("model_changes") or []:
        x = min(c["at"] / seconds, 1) * width
        out.append(f'<line class="model-change" x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{h}">'
                   f'<title>served model {text(c["from"], 80)} → {text(c["to"], 80)}</title></line>')
    out.append("</svg>")
    return "".join(out)

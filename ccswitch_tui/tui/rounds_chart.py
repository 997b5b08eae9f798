"""The Runs tab's Rounds view: the consistency gap per round as bars, oldest round first, with the scores
and the routing verdict beside each, and under it what changed since the round before (a warning
when more than one thing did). Drawn with block characters: no plotting library."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from textual.content import Content

from ccswitch_tui.runs.rounds_text import cell
from ccswitch_tui.terminal_text import visible

LABEL = "bold $text-accent"
MUTED = "$text-muted"
WARN = "$text-warning"
OK = "$text-success"
BAR = "$text-warning"
EIGHTHS = " ▏▎▍▌▋▊▉"
NAME_WIDTH = 14


def bar(value: float, top: float, width: int) -> str:
    """``value`` of ``top`` as a bar of ``width`` cells, to an eighth of a cell."""
    if top <= 0 or value <= 0:
        return ""
    eighths = round(min(value / top, 1.0) * width * 8)
    return "█" * (eighths // 8) + (EIGHTHS[eighths % 8] if eighths % 8 else "")


def _name(text: str) -> str:
    shown = visible(text)
    return (shown if len(shown) <= NAME_WIDTH else shown[:NAME_WIDTH - 1] + "…").ljust(NAME_WIDTH)


def chart(rounds: Sequence[Mapping[str, Any]], width: int = 80) -> Content:
    """One line per round: name, the gap's bar and value, pass@1 and pass^k, the verdict; then the
    changes between rounds."""
    if not rounds:
        return Content.styled("No rounds: launch reruns with --label L and --outcomes FILE, then press u again "
                              "for the gap per round.", MUTED)
    bar_width = max(min(width - NAME_WIDTH - 50, 30), 8)
    top = max((r.get("gap") or 0.0 for r in rounds), default=0.0) or 1.0
    lines: list[Content] = [Content.assemble(("round".ljust(NAME_WIDTH), LABEL), " ",
                                             ("gap (pp)".ljust(bar_width + 7), LABEL),
                                             ("pass@1  pass^k  flips  verdict", LABEL))]
    for r in rounds:
        gap = r.get("gap")
        shown = "-" if gap is None else f"{gap:.1f}"
        verdict = "clean" if r.get("comparable") else "not comparable"
        lines.append(Content.assemble(
            (_name(str(r.get("round"))), LABEL), " ", (bar(gap or 0.0, top, bar_width).ljust(bar_width), BAR),
            " ", shown.rjust(5), "  ", cell(r, "pass_at_1").rjust(6), "  ", cell(r, "pass_hat_k").rjust(6), "  ",
            cell(r, "flips").rjust(5), "  ", (verdict, OK if r.get("comparable") else WARN)))
    lines.append(Content(""))
    for r in rounds:
        name = visible(str(r.get("round")))
        lines.append(Content.assemble((name, LABEL), ": ", (visible(str(r.get("verdict", ""))),
                                                            OK if r.get("comparable") else WARN)))
        if r.get("changed_since") is not None:
            changed = "; ".join(c["text"] for c in r.get("changed") or []) or "nothing"
            lines.append(Content.assemble("  changed since ", (visible(str(r["changed_since"])), LABEL), ": ",
                                          visible(changed)))
        if r.get("changed_warning"):
            lines.append(Content.styled(f"  ⚠ {visible(r['changed_warning'])}", f"bold {WARN}"))
    lines.append(Content.styled("u: back to the runs · ccs runs report --rounds … --html FILE: the board with "
                                "the tasks that flipped", MUTED))
    return Content("\n").join(lines)

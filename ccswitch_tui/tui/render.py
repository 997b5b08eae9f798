"""Turn the service's records into styled text for the panes (theme variables, never raw markup,
so a value holding brackets is shown as it is)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from textual.content import Content, Span

from ccswitch_tui import tools
from ccswitch_tui.launch.environment import EnvDiff
from ccswitch_tui.model import SOURCE_INHERITED, SOURCE_MARKER, env_var_of
from ccswitch_tui.policy import routing_family
from ccswitch_tui.runs.manifests import user_argv
from ccswitch_tui.terminal_text import CONTROL_RE, visible
from ccswitch_tui.tui.service import Detail, KeyState, Problem, RunRow, ToolView

LABEL = "bold $text-accent"
MUTED = "$text-muted"
ERROR = "bold $text-error"
WARN = "$text-warning"
OK = "$text-success"

SOURCE_STYLES = {
    "inherited": MUTED,
    "profile": "$text-primary",
    "tool": "$text-primary",
    "routing": "$text-accent",
    "key": "bold $text-warning",
    "marker": "$text-secondary",
}


def lines(parts: Iterable[Content]) -> Content:
    """The parts one per line, each ``shown``: every pane's text is built from records of other
    programs (settings files, processes, providers), so this is where the display rule applies."""
    return Content("\n").join(shown(p) for p in parts)


def shown(content: Content | str) -> Content:
    """``content`` with ``visible``'s escapes in place of control and bidi characters, its styles kept
    on the same characters (a span grows with the escapes inside it)."""
    if isinstance(content, str):
        return Content(visible(content))
    text = content.plain
    if not CONTROL_RE.search(text):
        return content
    at = [0]  # at[i]: where character i of the text starts in the shown text
    for ch in text:
        at.append(at[-1] + len(visible(ch)))
    end = len(text)  # a span may reach past the text (Content drops a BEL or CR after placing spans)
    return Content(visible(text), [Span(at[min(sp.start, end)], at[min(sp.end, end)], sp.style)
                                   for sp in content.spans])


def row(label: str, *values: Content | str | tuple[str, str], width: int = 12) -> Content:
    pieces: list[Content | str | tuple[str, str]] = [((label + "  ").ljust(width), LABEL)]  # a long label keeps a gap
    for i, v in enumerate(values):
        if i:
            pieces.append("  ")
        pieces.append(v)
    return Content.assemble(*pieces)


def heading(text: str) -> Content:
    return Content.styled(text, "bold underline $text-accent")


def problem_line(p: Problem) -> Content:
    mark, style = ("✗", ERROR) if p.severity == "error" else ("!", WARN)
    return Content.assemble((f"{mark} ", style), (p.text, style if p.severity == "error" else ""))


def key_line(key: KeyState | None) -> Content:
    if key is None:
        return row("key", ("?", MUTED))
    kid = key.key_id
    if key.present:
        return row("key", kid, (key.mask or "", "bold"), (key.fingerprint or "", MUTED))
    if key.error:
        return row("key", kid, (f"unknown: {key.error}", ERROR))
    if env_var_of(kid):
        return row("key", kid, (f"MISSING — ${env_var_of(kid)} is not set in the shell ccs started from", ERROR))
    return row("key", kid, ("MISSING — press k to store it", ERROR))


def overview(detail: Detail, check: Sequence[Any] | None = None) -> Content:
    entry = detail.entry
    if entry.profile is None:
        return lines([
            row("profile", (entry.name, "bold")),
            row("file", str(entry.path)),
            Content(""),
            Content.styled("This profile file cannot be loaded:", ERROR),
            Content(entry.error or ""),
            Content(""),
            Content.styled("Press e to fix it in the editor (the old file is kept until the text is valid).", MUTED),
        ])
    p = entry.profile
    out: list[Content] = [Content.assemble((p.name, "bold"), ("  " + p.description, MUTED) if p.description else "")]
    out.append(row("file", (str(entry.path), MUTED)))
    out.append(row("provider", p.provider.name, (p.provider.website or "", MUTED)))
    out.append(key_line(detail.key))
    out.append(row("tools", " ".join(p.tools)))
    out += [Content(""), heading("Base URLs")]
    out.append(row("  provider", p.provider.base_url))
    for tool, view in detail.views.items():
        if view.plan is None:
            out.append(row(f"  {tool}", (view.error or "", ERROR)))
            continue
        for var, url in view.plan.base_urls.items():
            out.append(row(f"  {tool}", url, (var, MUTED)))
        if not view.plan.base_urls:
            out.append(row(f"  {tool}", ("nothing exported ([run].export is empty)", MUTED)))
    out += [Content(""), heading("Models")]
    for tool, view in detail.views.items():
        if view.plan is None:
            continue
        models = [f"{k}={v}" for k, v in view.plan.models.items()]
        side = p.side(tool)
        if side is not None:  # what the client's spec adds (Codex: reasoning effort, wire API)
            models += [x for x in tools.get(tool).summary(side) if "=" in x and x not in models]
        out.append(row(f"  {tool}", " ".join(models) if models else ("the tool's defaults", MUTED)))
    out += [Content(""), heading("Injected variables")]
    for tool, view in detail.views.items():
        if view.plan is None:
            continue
        injected = [(k, v) for k, v in view.plan.env.items()
                    if view.plan.sources.get(k) not in (SOURCE_INHERITED, SOURCE_MARKER)]
        out.append(Content.styled(f"  {tool}", LABEL))
        for k, v in injected:
            src = view.plan.sources.get(k, "")
            out.append(Content.assemble("    ", (k, "bold"), "=", view.shown_value(k, v),
                                        (f"  {src}", SOURCE_STYLES.get(src, MUTED))))
    if p.inherit:
        out.append(row("  inherit", " ".join(p.inherit)))
    if detail.usage is not None and (detail.usage.rows or detail.usage.not_recorded):
        out += [Content(""), heading("Usage, last 7 days")]
        out += usage_lines(detail.usage)
    if detail.problems:
        out += [Content(""), heading("Problems")]
        out += [problem_line(x) for x in detail.problems]
    if check is not None:
        out += [Content(""), heading("Endpoint check")]
        out += check_lines(check)
    return lines(out)


def usage_lines(usage: Any) -> list[Content]:
    """The profile's totals (``ccs usage --profile NAME --since 7d``) and what they leave out."""
    from ccswitch_tui.runs.usage import summary_lines

    t = usage.totals
    out = [row("  requests", str(t["requests"]), (f"{t['runs']} recorded run(s)", MUTED)),
           row("  tokens", f"input {t['input_tokens']}  output {t['output_tokens']}  cached {t['cached_tokens']}  "
                           f"reasoning {t['reasoning_tokens']}"),
           row("  errors", (str(t["errors"]), ERROR if t["errors"] else ""))]
    if t["cost"] is not None and t["requests"]:
        out.append(row("  cost", f"{t['cost']:.4f}", ("from the profile's [pricing]", MUTED)))
    out += [Content.styled(f"  {line}", MUTED) for line in summary_lines(usage)]
    return out


def check_lines(findings: Sequence[Any]) -> list[Content]:
    """Endpoint check results (findings of `ccs check`)."""
    return [problem_line_finding(f) for f in findings] or [Content.styled("nothing to probe", MUTED)]


def tool_bar(tools: Sequence[str], current: str) -> Content:
    parts: list[Content | tuple[str, str] | str] = [("tool ", MUTED)]
    for t in tools:
        if t == current:
            parts.append((f" {t} ", "reverse bold $accent"))
        else:
            parts.append(Content.from_markup(f"[@click=app.set_tool('{t}')] {t} [/]"))
    parts.append(("  (t switches)", MUTED))
    return Content.assemble(*parts)


def environment(view: ToolView | None) -> Content:
    if view is None:
        return Content.styled("Choose a profile.", MUTED)
    if view.plan is None:
        return Content.styled(view.error or "no plan", ERROR)
    plan = view.plan
    out: list[Content] = [
        Content.styled(f"{len(plan.env)} variables, keys masked: the plan of `ccs env {plan.profile} "
                       f"--tool {plan.tool}`", MUTED),
        row("argv", " ".join(plan.argv) or "(the command you give)", width=6),
    ]
    out += [problem_line(Problem("warn", w)) for w in plan.warnings]
    out += [problem_line(Problem("error", f"refused: {r.message}")) for r in plan.refusals]
    from ccswitch_tui.tools.share import describe

    out += [row("shared", line, width=6) for line in describe(plan.extra.get("shared", ()))]
    out.append(Content(""))
    width = min(max((len(k) for k in plan.env), default=10), 32)
    out.append(Content.styled(f"{'VARIABLE'.ljust(width)}  SOURCE     VALUE", MUTED))
    for k, v in plan.env.items():
        src = plan.sources.get(k, "?")
        out.append(Content.assemble((k.ljust(width), "bold"), "  ",
                                    (src.ljust(9), SOURCE_STYLES.get(src, MUTED)), "  ", view.shown_value(k, v)))
    return lines(out)


def diff(view: ToolView | None, parent_env: Mapping[str, str], label: str = "the shell ccs started from") -> Content:
    if view is None:
        return Content.styled("Choose a profile.", MUTED)
    if view.plan is None:
        return Content.styled(view.error or "no plan", ERROR)
    d = view.diff(parent_env)
    assert d is not None
    return env_diff(d, view.shown_value, f"{label} → {view.tool} under {view.plan.profile}")


def env_diff(d: EnvDiff, shown: Any, title: str, *, added: str = "added",
             removed: str = "removed — not passed to the child", launch: bool = True) -> Content:
    """A diff, summary line first; routing, key and proxy changes in full, the harmless rest folded
    into one line of names (the summary and the order are the core's, as `ccs env --diff` prints them)."""
    out: list[Content] = [Content.styled(d.summary(), "bold"), Content.styled(title, MUTED)]
    gone = [k for k in d.removed if d.matters(k)]
    replaced = [k for k in d.changed if d.matters(k)]
    new = [k for k in d.added if d.matters(k)]
    if launch and (gone or replaced):
        what = [f"{k} (kept out)" for k in gone] + [f"{k} (replaced)" for k in replaced]
        out.append(Content.styled(
            f"✗ {len(what)} routing/key variable(s) in the shell would have reached the tool without ccs: "
            f"{', '.join(what)}", ERROR))
    if gone:
        out += [Content(""), Content.styled(f"{removed} ({len(gone)})", LABEL)]
        for k in gone:
            fam = routing_family(k)
            note = (f"  ← {fam or 'key'}: contamination kept out", ERROR) if launch else ""
            out.append(Content.assemble(("- ", ERROR), (k, ERROR), "=", (shown(k, d.removed[k]), MUTED), note))
    if replaced:
        out += [Content(""), Content.styled(f"changed ({len(replaced)})", LABEL)]
        for k in replaced:
            a, b = d.changed[k]
            note = ("  ← routing replaced by the profile" if launch else "  ← routing differs", WARN)
            out.append(Content.assemble(("~ ", WARN), (k, "bold " + WARN), ": ", (shown(k, a), MUTED), " → ",
                                        shown(k, b), note))
    if new:
        out += [Content(""), Content.styled(f"{added} ({len(new)})", LABEL)]
        for k in new:
            out.append(Content.assemble(("+ ", OK if launch else ERROR), (k, OK if launch else ERROR), "=",
                                        shown(k, d.added[k])))
    other = d.marked(False)
    if other:
        out += [Content(""), Content.styled(f"other, harmless ({len(other)}): not routing, keys or proxies", LABEL),
                Content.styled(" ".join(other), MUTED)]
    if d.empty:
        out.append(Content.styled("no changes", OK))
    return lines(out)


def problem_line_finding(f: Any) -> Content:
    """One finding of inspect/doctor/check: severity mark, code, where, message."""
    sev = getattr(f, "severity", "info")
    style = ERROR if sev == "error" else WARN if sev == "warn" else OK
    mark = "✗" if sev == "error" else "!" if sev == "warn" else "✓" if getattr(f, "code", "") == "ok" else "·"
    return Content.assemble((f"{mark} ", style), (getattr(f, "code", ""), style), "  ", getattr(f, "message", str(f)))


def run_summary(r: RunRow) -> Content:
    m = r.manifest
    out = [row("launch", str(m.get("launch_id", "?")), width=17), row("argv", shlex.join(user_argv(m)), width=17)]
    out.append(row("cwd", str(m.get("cwd", "")), width=17))
    out.append(row("status", status_text(m), width=17))
    if m.get("label"):
        out.append(row("label", str(m["label"]), width=17))
    for f in ("base_urls", "models", "key_id", "key_fingerprint", "env_hash", "tool_version"):
        value = m.get(f)
        shown = json.dumps(value) if isinstance(value, dict) else "unknown" if value is None else str(value)
        drifted = f in r.drifted or (f == "env_hash" and "env" in r.drifted)
        out.append(row(f.replace("_", " "), (shown, WARN if drifted else ""), width=17))
    if r.against:
        what = f"drifted from {r.against}: {', '.join(r.drifted)}" if r.drifted else f"comparable with {r.against}"
        out.append(Content.styled(what, WARN if r.drifted else OK))
        for d in r.differences:
            if d.cause:
                out.append(row(f"  {d.field}", (f"{d.kind}: {d.cause}", WARN), width=17))
    if r.round is not None:
        out.append(round_line(r.round))
    if r.observed is not None:
        out += observed_lines(r.observed, r.live)
    return lines(out)


def round_line(rd: Mapping[str, Any]) -> Content:
    """A run's round (its label) in one line: the scores, the key strategy and the verdict."""
    from ccswitch_tui.runs.rounds import cell

    scores = (f"pass@1 {cell(rd, 'pass_at_1')}, pass^k {cell(rd, 'pass_hat_k')}, gap {cell(rd, 'gap')}"
              if rd.get("pass_at_1") is not None else "no outcomes attached")
    text = f"k={rd.get('k')}, {scores}, key {rd.get('key_strategy')}: {rd.get('verdict')}"
    return row(f"round {rd.get('round')}", (text, OK if rd.get("comparable") else WARN), width=17)


def observed_lines(o: Mapping[str, Any], live: bool) -> list[Content]:
    """A recorded run's requests in a few lines: counts, tokens, models, errors, findings."""
    def pairs(d: Mapping[str, Any]) -> str:
        return ", ".join(f"{k} ×{v}" for k, v in d.items()) or "-"

    tokens = o.get("tokens") or {}
    out = [heading("Requests" + (" (live)" if live else "")),
           row("requests", f"{o.get('requests', 0)}, at most {o.get('max_concurrency', 0)} at once"),
           row("paths", pairs(o.get("by_path") or {})),
           row("status", pairs(o.get("by_status") or {})),
           row("tokens", " ".join(f"{k.removesuffix('_tokens')} {v}" for k, v in tokens.items()) or "none reported"),
           row("requested", pairs(o.get("models_requested") or {})),
           row("served", pairs(o.get("models_served") or {})),
           row("errors", (str(o.get("errors", 0)), ERROR if o.get("errors") else OK))]
    for f in o.get("findings") or ():
        out.append(Content.assemble(("! " if f.get("severity") == "warn" else "· ", WARN),
                                    (str(f.get("code")), WARN), "  ", str(f.get("message", ""))))
    return out


def status_text(m: Mapping[str, Any]) -> str:
    if m.get("exit_status") is None and m.get("ended"):
        return "?"
    from ccswitch_tui.launch.liveness import status_text as run_status

    return run_status(m)  # the exit status, "running", or "lost" when the ccs that ran it is gone

"""Turn the service's records into the panes: aligned grids (``grid.Sheet``: name, value, source
columns, a section per client, findings one row each) and styled text (theme variables, never raw
markup, so a value holding brackets is shown as it is)."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from textual.content import Content, Span

from ccswitch_tui import tools
from ccswitch_tui.launch.environment import EnvDiff
from ccswitch_tui.launch.liveness import status_text as run_status
from ccswitch_tui.model import SOURCE_INHERITED, SOURCE_MARKER, SOURCE_TRUST, env_var_of
from ccswitch_tui.policy import is_trust, secret_name
from ccswitch_tui.profiles.schema import configured_tools
from ccswitch_tui.runs.manifests import user_argv
from ccswitch_tui.runs.origin import imported_from
from ccswitch_tui.runs.rounds_text import cell
from ccswitch_tui.terminal_text import CONTROL_RE, visible
from ccswitch_tui.tools.share import describe
from ccswitch_tui.tui.grid import Cell, Fit, Grid, Sheet, SheetBuilder
from ccswitch_tui.tui.service import Detail, KeyState, RunRow, ToolView

Shown = Callable[[str, str], str]  # a variable's name and value → the value as the screen shows it

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
    "trust": "$text-success",
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


def overview(detail: Detail, check: Sequence[Any] | None = None, theme: Mapping[str, str] | None = None) -> Sheet:  # noqa: C901
    """The profile at a glance: its facts, then per client the base URLs, models and injected
    variables as aligned grids (name, value, source), problems and check results one row each."""
    entry = detail.entry
    b = SheetBuilder()
    if entry.profile is None:
        facts = b.grid("name", "value")
        facts.add(("profile", LABEL), (entry.name, "bold")).add(("file", LABEL), str(entry.path))
        b.blank().line(("This profile file cannot be loaded:", ERROR)).line(entry.error or "").blank()
        b.line(("Press e to fix it in the editor (the old file is kept until the text is valid).", MUTED))
        return b.sheet(theme)
    p = entry.profile
    b.line((p.name, "bold"), ("  " + p.description, MUTED) if p.description else "")
    b.grid("name", "value", align="facts").add(("file", LABEL), (str(entry.path), MUTED))
    facts = b.grid("name", "prose", align="facts")  # wraps between its words, under its column
    facts.add(("provider", LABEL), Cell(p.provider.name + (f"  {p.provider.website}" if p.provider.website else "")))
    facts.add(*key_cells(detail.key))
    configured = configured_tools(p)  # a side the profile does not set up (an empty `ccs run`) is not listed
    facts.add(("tools", LABEL), " ".join(configured))
    b.heading("Base URLs")
    urls = b.grid("name", "value", "tag")
    urls.add(("provider", LABEL), p.provider.base_url)
    for tool, view in detail.views.items():
        if tool not in configured:
            continue
        if view.plan is None:
            urls.add((tool, LABEL), (view.error or "", ERROR))
            continue
        for var, url in view.plan.base_urls.items():
            urls.add((tool, LABEL), url, (var, MUTED))
        if not view.plan.base_urls:
            urls.add((tool, LABEL), ("nothing exported ([run].export is empty)", MUTED))
    b.heading("Models")
    models_grid = b.grid("name", "prose")
    for tool, view in detail.views.items():
        if view.plan is None or tool not in configured:
            continue
        models = [f"{k}={v}" for k, v in view.plan.models.items()]
        side = p.side(tool)
        if side is not None:  # what the client's spec adds (Codex: reasoning effort, wire API)
            models += [x for x in tools.load().get(tool).summary(side) if "=" in x and x not in models]
        models_grid.add((tool, LABEL), " ".join(models) if models else ("the tool's defaults", MUTED))
    b.heading("Injected variables")
    for tool, view in detail.views.items():
        if view.plan is None or tool not in configured:
            continue
        injected = [(k, v) for k, v in view.plan.env.items()
                    if view.plan.sources.get(k) not in (SOURCE_INHERITED, SOURCE_MARKER)]
        b.line((tool, LABEL))
        grid = b.grid("name", "value", "fixed", align="injected")
        for k, v in injected:
            src = view.plan.sources.get(k, "")
            grid.add((k, "bold"), view.shown_value(k, v), (src, SOURCE_STYLES.get(src, MUTED)))
    if p.inherit:
        b.grid("name", "prose").add(("inherit", LABEL), " ".join(p.inherit))
    if detail.usage is not None and (detail.usage.rows or detail.usage.not_recorded):
        b.heading("Usage, last 7 days")
        usage_grid(b, detail.usage)
    if detail.problems:
        b.heading("Problems")
        grid = b.grid("fixed", "prose")
        for x in detail.problems:
            mark, style = problem_mark(x.severity)
            grid.add((mark, style), (x.text, style if x.severity == "error" else ""))
    if check is not None:
        b.heading("Endpoint check")
        findings_grid(b, check, whole=True)
    return b.sheet(theme)


def key_cells(key: KeyState | None) -> tuple[tuple[str, str], ...]:
    """The key row: its id, then its mask and fingerprint, or why it is missing (one wrapped cell)."""
    if key is None:
        return (("key", LABEL), ("?", MUTED))
    kid = key.key_id
    if key.present:
        return (("key", LABEL), (f"{kid}  {key.mask or ''}  {key.fingerprint or ''}".strip(), ""))
    if key.error:
        return (("key", LABEL), (f"{kid}  unknown: {key.error}", ERROR))
    if env_var_of(kid):
        return (("key", LABEL), (f"{kid}  MISSING — ${env_var_of(kid)} is not set in the shell ccs started from",
                                 ERROR))
    return (("key", LABEL), (f"{kid}  MISSING — press k to store it", ERROR))


def problem_mark(severity: str, code: str = "") -> tuple[str, str]:
    if severity == "error":
        return "✗", ERROR
    if severity == "warn":
        return "!", WARN
    return ("✓" if code == "ok" else "·"), OK


def summary_of(message: str, variable: str | None = None) -> str:
    """A finding's first clause: what is wrong, without the explanation and the way out (nor the
    ``NAME=value`` it starts with when the row names the variable already)."""
    head = message.split("; ", 1)[0].split(". ", 1)[0]
    if variable and head.startswith(variable + "=") and " " in head:
        head = head.split(" ", 1)[1]
    return head


def subject_of(f: Any) -> str:
    """What a finding is about: its variable, else its file, else where it was seen."""
    return str(getattr(f, "variable", None) or getattr(f, "path", None) or getattr(f, "where", "") or "-")


def finding_cells(f: Any) -> tuple[tuple[str, str], ...]:
    """A finding as a row: mark, code, what it is about, its first clause."""
    sev, code = getattr(f, "severity", "info"), str(getattr(f, "code", ""))
    mark, style = problem_mark(sev, code)
    summary = summary_of(str(getattr(f, "message", f)), getattr(f, "variable", None))
    return (mark, style), (code, style), (subject_of(f), "bold"), (summary, "")


def finding_detail(f: Any, theme: Mapping[str, str] | None = None) -> Sheet:
    """The selected finding in full: the whole message (what, why, the way out) wrapped in its column."""
    sev, code = getattr(f, "severity", "info"), str(getattr(f, "code", ""))
    mark, style = problem_mark(sev, code)
    b = SheetBuilder()
    b.line((f"{mark} {code}", style), (f"  {sev} · {getattr(f, 'where', '-')}", MUTED))
    b.line(str(getattr(f, "message", f)))
    if getattr(f, "family", None):
        b.line(("family ", LABEL), str(f.family))
    return b.sheet(theme)


def findings_grid(b: SheetBuilder, findings: Sequence[Any], whole: bool = False) -> None:
    """Findings one row each: mark, code, subject, message (whole, wrapped in its column) or its
    first clause."""
    if not findings:
        b.line(("nothing to probe", MUTED))
        return
    grid = b.grid("fixed", "fixed", "name", "prose" if whole else "line")
    for f in findings:
        sev, code = getattr(f, "severity", "info"), str(getattr(f, "code", ""))
        mark, style = problem_mark(sev, code)
        message = str(getattr(f, "message", f))
        grid.add((mark, style), (code, style), (subject_of(f), "bold"), message if whole else summary_of(message))


def usage_grid(b: SheetBuilder, usage: Any) -> None:
    """The profile's totals (``ccs usage --profile NAME --since 7d``) and what they leave out."""

    t = usage.totals
    g = b.grid("name", "prose", "line")
    g.add(("requests", LABEL), str(t["requests"]), (f"{t['runs']} recorded run(s)", MUTED))
    g.add(("tokens", LABEL), f"input {t['input_tokens']}  output {t['output_tokens']}  cached {t['cached_tokens']}  "
                             f"reasoning {t['reasoning_tokens']}")
    g.add(("errors", LABEL), (str(t["errors"]), ERROR if t["errors"] else ""))
    if t["cost"] is not None and t["requests"]:
        g.add(("cost", LABEL), f"{t['cost']:.4f}", ("from the profile's [pricing]", MUTED))
    from ccswitch_tui.runs.usage import summary_lines  # lazy: with the first profile's usage

    for line in summary_lines(usage):
        b.line((line, MUTED))


def tool_bar(tools: Sequence[str], current: str) -> Content:
    parts: list[Content | tuple[str, str] | str] = [("tool ", MUTED)]
    for t in tools:
        if t == current:
            parts.append((f" {t} ", "reverse bold $accent"))
        else:
            parts.append(Content.from_markup(f"[@click=app.set_tool('{t}')] {t} [/]"))
    parts.append(("  (t switches)", MUTED))
    return Content.assemble(*parts)


def environment_head(view: ToolView | None, theme: Mapping[str, str] | None = None) -> Sheet:
    """What sits above the Environment tab's grid: the count, the argv, warnings, refusals, shares."""
    b = SheetBuilder()
    if view is None:
        return b.line(("Choose a profile.", MUTED)).sheet(theme)
    if view.plan is None:
        return b.line((view.error or "no plan", ERROR)).sheet(theme)
    plan = view.plan
    b.line((f"{len(plan.env)} variables, keys masked: the plan of `ccs env {plan.profile} --tool {plan.tool}`",
            MUTED))
    facts = b.grid("name", "value")  # cut in the middle: the command and its last argument stay
    facts.add(("argv", LABEL), " ".join(plan.argv) or "(the command you give)")

    for line in describe(plan.client.shared or ()):
        facts.add(("shared", LABEL), line)
    if plan.warnings or plan.refusals:
        grid = b.grid("fixed", "prose")
        for w in plan.warnings:
            grid.add(("!", WARN), w)
        for r in plan.refusals:
            grid.add(("✗", ERROR), (f"refused: {r.message}", ERROR))
    return b.sheet(theme)


ENV_COLUMNS: tuple[tuple[str, Fit], ...] = (("VARIABLE", "name"), ("VALUE", "value"), ("SOURCE", "fixed"))


def environment_rows(view: ToolView | None) -> list[tuple[tuple[Any, ...], str | None]]:
    """The plan's variables for the Environment grid: name, shown value, source; keyed by name."""
    if view is None or view.plan is None:
        return []
    plan = view.plan
    return [(((k, "bold"), view.shown_value(k, v), (plan.sources.get(k, "?"),
                                                      SOURCE_STYLES.get(plan.sources.get(k, "?"), MUTED))), k)
            for k, v in plan.env.items()]


def environment_detail(view: ToolView | None, name: str | None, theme: Mapping[str, str] | None = None) -> Sheet:
    """The selected variable whole: its value uncut, its source and what the policy calls it."""
    b = SheetBuilder()
    if view is None or view.plan is None or name is None or name not in view.plan.env:
        return b.sheet(theme)
    src = view.plan.sources.get(name, "?")
    grid = b.grid("name", "prose")
    grid.add((name, "bold"), view.shown_value(name, view.plan.env[name]))
    what = view.families.kind(name)
    grid.add(("source", LABEL), (src + (f" · {what}" if what else ""), SOURCE_STYLES.get(src, MUTED)))
    return b.sheet(theme)


def diff(view: ToolView | None, parent_env: Mapping[str, str], label: str = "the shell ccs started from",
         theme: Mapping[str, str] | None = None) -> Sheet:
    if view is None:
        return SheetBuilder().line(("Choose a profile.", MUTED)).sheet(theme)
    if view.plan is None:
        return SheetBuilder().line((view.error or "no plan", ERROR)).sheet(theme)
    d = view.diff(parent_env)
    assert d is not None
    trust = {k: v for k, v in view.plan.env.items() if view.plan.sources.get(k) == SOURCE_TRUST}
    return env_diff(d, view.shown_value, f"{label} → {view.tool} under {view.plan.profile}", trust=trust,
                    sources=view.plan.sources, theme=theme, fingerprint=view.fingerprint)


def _change(name: str, old: str, new: str, shown: Any, fingerprint: Any) -> str:
    """``old → new`` as shown; two masks alike (``sk-…kLmN → sk-…kLmN``) get their fingerprints, or
    are said to differ."""
    a, b = shown(name, old), shown(name, new)
    if a == b and old != new:
        if fingerprint is not None:
            return f"{a} {fingerprint(old)} → {b} {fingerprint(new)}"
        return f"{a} → {b} (another value)"
    return f"{a} → {b}"


def env_diff(d: EnvDiff, shown: Any, title: str, *, added: str = "added",
             removed: str = "kept out", launch: bool = True, trust: Mapping[str, str] | None = None,
             sources: Mapping[str, str] | None = None, theme: Mapping[str, str] | None = None,
             builder: SheetBuilder | None = None, fingerprint: Any = None) -> Sheet:
    """A diff as a table, summary line first: the routing, key and proxy changes grouped (kept out,
    replaced, added), the TLS trust variables the launch carries, then the harmless rest; each row
    ``mark  NAME  old → new  reason`` (the summary and the order are the core's, as `ccs env --diff`
    prints them)."""
    b = builder or SheetBuilder()
    b.line((d.summary(), "bold")).line((title, MUTED))
    trust = dict(trust or {})
    gone = [k for k in d.removed if d.matters(k)]
    replaced = [k for k in d.changed if d.matters(k)]
    new = [k for k in d.added if d.matters(k) and k not in trust]
    dropped = [k for k in d.removed if is_trust(k) and not d.matters(k)]
    set_trust = [k for k in (*d.changed, *d.added) if is_trust(k) and not d.matters(k) and k not in trust]
    other_names = {k for k in (*d.removed, *d.changed, *d.added) if not d.matters(k) and not is_trust(k)}
    if launch and (gone or replaced):
        b.line((f"✗ {len(gone) + len(replaced)} routing/key variable(s) in the shell would have reached the tool "
                "without ccs", ERROR))
    if gone:
        _kept_out_rows(_group(b, removed, len(gone)), d, shown, gone, launch)
    if replaced:
        g = _group(b, "replaced" if launch else "differs", len(replaced))
        for k in replaced:
            g.add(("~", WARN), (k, "bold " + WARN), _change(k, *d.changed[k], shown, fingerprint),
                  ("by the profile" if launch else "routing differs", WARN))
    if new:
        g = _group(b, added, len(new))
        for k in new:
            src = (sources or {}).get(k, "")
            g.add(("+", OK if launch else ERROR), (k, OK if launch else ERROR), shown(k, d.added[k]),
                  (src or ("set by the profile" if launch else "not in the plan"), SOURCE_STYLES.get(src, MUTED)))
    if trust or dropped or set_trust:
        count = len(trust) + len(dropped) + len(set_trust)
        _trust_rows(_group(b, "trust: which certificates the client trusts", count),
                    d, shown, trust, set_trust, dropped, launch, sources or {})
    if other_names:
        _harmless_rows(_group(b, "harmless: not routing, keys, proxies or trust", len(other_names)),
                       d, shown, other_names, sources or {})
    if d.empty and not trust:
        b.line(("no changes", OK))
    return b.sheet(theme)


def _group(b: SheetBuilder, name: str, count: int) -> Grid:
    """A group's heading, ``name (count)``, and its grid."""
    b.blank().line((f"{name} ({count})", LABEL))
    return b.grid("fixed", "name", "value", "note", align="diff")


def _kept_out_rows(g: Grid, d: EnvDiff, shown: Shown, gone: list[str], launch: bool) -> None:
    """The routing and key variables the shell holds and the launch leaves out."""
    for k in gone:
        fam = d.families.routing_family(k)
        g.add(("-", ERROR), (k, ERROR), (shown(k, d.removed[k]), MUTED),
              (f"{fam or ''} {'key' if secret_name(k) else 'routing'}".strip(), ERROR if launch else WARN))


def _trust_rows(g: Grid, d: EnvDiff, shown: Shown, trust: Mapping[str, str], set_trust: list[str],
                dropped: list[str], launch: bool, sources: Mapping[str, str]) -> None:
    """The TLS trust variables: carried by the launch, set or changed, dropped."""
    for k, v in trust.items():
        g.add(("=", OK), (k, "bold"), shown(k, v), ("carried", MUTED))
    for k in set_trust:
        old, now = d.changed.get(k, ("", d.added.get(k, "")))
        g.add(("~" if k in d.changed else "+", WARN), (k, WARN), f"{shown(k, old)} → {shown(k, now)}" if old
              else shown(k, now), (sources.get(k, "set") if launch else "differs", WARN))
    for k in dropped:
        g.add(("-", WARN), (k, WARN), (shown(k, d.removed[k]), MUTED),
              ("dropped ([policy] trust = false)" if launch else "not in the process", WARN))


def _harmless_rows(g: Grid, d: EnvDiff, shown: Shown, names: set[str], sources: Mapping[str, str]) -> None:
    """The rest (not routing, keys, proxies or trust), removed, changed, then added, each sorted."""
    for k in sorted(d.removed):
        if k in names:
            g.add(("-", MUTED), (k, MUTED), (shown(k, d.removed[k]), MUTED), ("not passed", MUTED))
    for k in sorted(d.changed):
        if k in names:
            a, c = d.changed[k]
            g.add(("~", MUTED), (k, MUTED), (f"{shown(k, a)} → {shown(k, c)}", MUTED), ("changed", MUTED))
    for k in sorted(d.added):
        if k in names:
            g.add(("+", MUTED), (k, MUTED), (shown(k, d.added[k]), MUTED), (sources.get(k, "added"), MUTED))


def _fact(facts: Grid, field: str, value: object, drifted: bool) -> None:
    """A manifest field's row, or a row per entry of a table (its name in the name column)."""
    style = WARN if drifted else ""
    name = field.replace("_", " ")
    if isinstance(value, dict) and value:
        facts.add((name, LABEL))
        for k, v in value.items():
            facts.add((f"  {k}", MUTED), (str(v), style))
    else:
        shown_ = "{}" if isinstance(value, dict) else "unknown" if value is None else str(value)
        facts.add((name, LABEL), (shown_, style))


def run_summary(r: RunRow, theme: Mapping[str, str] | None = None) -> Sheet:
    """The run under the cursor: its manifest as a grid (drifted fields marked), the drift's causes,
    its round and, for a recorded run, its requests."""
    m = r.manifest
    b = SheetBuilder()
    facts = b.grid("name", "value", align="run")
    facts.add(("launch", LABEL), str(m.get("launch_id", "?")))
    facts.add(("argv", LABEL), shlex.join(user_argv(m)))
    facts.add(("cwd", LABEL), str(m.get("cwd", "")))
    facts.add(("status", LABEL), status_text(m))
    if m.get("label"):
        facts.add(("label", LABEL), str(m["label"]))
    if (origin := imported_from(m)) is not None:
        facts.add(("machine", LABEL), f"{origin.get('machine')} (imported, read-only)")
    for f in ("base_urls", "models", "key_id", "key_fingerprint", "env_hash", "tool_version"):
        _fact(facts, f, m.get(f), f in r.drifted or (f == "env_hash" and "env" in r.drifted))
    if r.against:
        what = f"drifted from {r.against}: {', '.join(r.drifted)}" if r.drifted else f"comparable with {r.against}"
        b.line((what, WARN if r.drifted else OK))
        causes = b.grid("name", "prose")
        for d in r.differences:
            if d.cause:
                causes.add((d.field, LABEL), (f"{d.kind}: {d.cause}", WARN))
    if r.round is not None:
        rd = r.round
        b.grid("name", "prose").add((f"round {rd.get('round')}", LABEL),
                                    (round_text(rd), OK if rd.get("comparable") else WARN))
        b.line(("u: every round's gap, side by side", MUTED))
    if r.observed is not None:
        observed_grid(b, r.observed, r.live)
    return b.sheet(theme)


def round_text(rd: Mapping[str, Any]) -> str:
    """A run's round (its label) in one line: the scores, the key strategy and the verdict."""

    scores = (f"pass@1 {cell(rd, 'pass_at_1')}, pass^k {cell(rd, 'pass_hat_k')}, gap {cell(rd, 'gap')}"
              if rd.get("pass_at_1") is not None else "no outcomes attached")
    return f"k={rd.get('k')}, {scores}, key {rd.get('key_strategy')}: {rd.get('verdict')}"


def round_line(rd: Mapping[str, Any]) -> Content:
    return row(f"round {rd.get('round')}", (round_text(rd), OK if rd.get("comparable") else WARN), width=17)


def observed_grid(b: SheetBuilder, o: Mapping[str, Any], live: bool) -> None:
    """A recorded run's requests in a few rows: counts, tokens, models, errors; findings one row each."""
    def pairs(d: Mapping[str, Any]) -> str:
        return ", ".join(f"{k} ×{v}" for k, v in d.items()) or "-"

    tokens = o.get("tokens") or {}
    b.heading("Requests" + (" (live)" if live else ""))
    g = b.grid("name", "prose")
    g.add(("requests", LABEL), f"{o.get('requests', 0)}, at most {o.get('max_concurrency', 0)} at once")
    g.add(("paths", LABEL), pairs(o.get("by_path") or {}))
    g.add(("status", LABEL), pairs(o.get("by_status") or {}))
    g.add(("tokens", LABEL), " ".join(f"{k.removesuffix('_tokens')} {v}" for k, v in tokens.items()) or "none reported")
    g.add(("requested", LABEL), pairs(o.get("models_requested") or {}))
    g.add(("served", LABEL), pairs(o.get("models_served") or {}))
    g.add(("errors", LABEL), (str(o.get("errors", 0)), ERROR if o.get("errors") else OK))
    found = o.get("findings") or ()
    if found:
        f_grid = b.grid("fixed", "fixed", "prose")
        for f in found:
            f_grid.add(("!" if f.get("severity") == "warn" else "·", WARN), (str(f.get("code")), WARN),
                       str(f.get("message", "")))


def status_text(m: Mapping[str, Any]) -> str:
    if m.get("exit_status") is None and m.get("ended"):
        return "?"

    return run_status(m)  # the exit status, "running", or "lost" when the ccs that ran it is gone

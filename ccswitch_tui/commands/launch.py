"""`ccs launch`, `run`, `shell`, `env`, `runs`: the clean-launch commands."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ccswitch_tui import policy, tools
from ccswitch_tui.commands.common import Context, emit_json, json_option, pass_ctx, table
from ccswitch_tui.commands.held import hold_options
from ccswitch_tui.commands.launching import ENV_NOTE_VAR, cwd_of, launch_command, run_command, warn
from ccswitch_tui.errors import UsageError
from ccswitch_tui.keys.extra import resolve
from ccswitch_tui.launch import launcher as launch
from ccswitch_tui.launch.environment import diff_env
from ccswitch_tui.launch.liveness import state, status_text
from ccswitch_tui.launch.plan import plan_for
from ccswitch_tui.policy import MARKERS
from ccswitch_tui.policy.redact import echo_revealed
from ccswitch_tui.runs.manifests import DRIFT_EXIT, damage_note, find_manifest, load_manifests, records_lost, user_argv
from ccswitch_tui.runs.origin import machine_here, machine_of, machines, refuse_imported
from ccswitch_tui.terminal_text import visible, visible_json
from ccswitch_tui.tools.capabilities import ShellHinting
from ccswitch_tui.tools.share import describe

if TYPE_CHECKING:
    from ccswitch_tui.model import LaunchPlan

nested_option = click.option("--nested", is_flag=True, help="Allow launching inside a ccs child.")


def _tool_names() -> list[str]:
    return list(tools.names())


def outcome_options(f: Any) -> Any:
    """Where a run's per-task results are, and their column names (for launch, run and runs attach)."""
    f = click.option("--success-column", metavar="NAME",
                     help="The column with the success flag or score (default: success, passed, score, …).")(f)
    return click.option("--task-column", metavar="NAME",
                        help="The column with the task id (default: task_id, task, id, name).")(f)


def record_options(f: Any) -> Any:
    """--record and its companions, for launch and run."""
    f = outcome_options(f)
    f = click.option("--outcomes", type=click.Path(dir_okay=False), metavar="FILE",
                     help="Read the run's per-task results from FILE when it exits (JSONL, JSON or CSV); "
                          "see `ccs runs report --rounds`.")(f)
    f = click.option("--label", help="Tag the run, e.g. an experiment's name (see `ccs runs report --label`).")(f)
    f = click.option("--strict-model", is_flag=True,
                     help="Refuse (4xx) requests for a model the profile does not set; implies --record.")(f)
    f = click.option("--record-bodies", is_flag=True,
                     help="Also keep request and response bodies, secrets masked; implies --record.")(f)
    return click.option("--record/--no-record", default=None,
                        help="Send the tool's requests through a loopback bridge that records each one "
                             "(default: the profile's [policy].record).")(f)


def _warn_lines(lines: list[str]) -> None:
    for line in dict.fromkeys(lines):
        click.echo(visible(f"ccs: warning: {line}"), err=True)


env_note_option = click.option(
    "--no-env-note", is_flag=True,
    help=f"Say nothing about the shell's routing variables the launch keeps out (or set {ENV_NOTE_VAR}=0).")


# `ccs launch` and `ccs run` are read here only when the quick reader leaves them to click (help, usage
# errors); either way commands/launching.py runs them. Their options are LAUNCH_OPTIONS and RUN_OPTIONS
# there too (tests/test_launch_args.py keeps the two equal).
@click.command("launch", context_settings={"ignore_unknown_options": True})
@click.argument("profile")
@click.argument("tool")
@click.option("--cwd", type=click.Path(file_okay=False), help="Working directory for the tool.")
@click.option("--isolate", is_flag=True, help="Load only ccs's own settings layers (no project settings).")
@click.option("--force", is_flag=True, help="Launch despite a settings override (recorded in the manifest).")
@nested_option
@env_note_option
@record_options
@hold_options
@click.argument("tool_args", nargs=-1, type=click.UNPROCESSED)
@pass_ctx
def launch_cmd(ctx: Context, **options: Any) -> int:
    """Launch a client (claude, codex, …) for PROFILE in a clean environment: ccs launch PROFILE claude -- ARGS."""
    return launch_command(ctx, **options)


@click.command("run", context_settings={"ignore_unknown_options": True})
@click.argument("profile")
@nested_option
@env_note_option
@record_options
@hold_options
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@pass_ctx
def run_cmd(ctx: Context, **options: Any) -> int:
    """Run any command with PROFILE's [run] exports: ccs run PROFILE -- CMD ARGS..."""
    return run_command(ctx, **options)


@click.command("shell")
@click.argument("profile")
@click.option("--tool", type=click.Choice(_tool_names()), default="run", show_default=True,
              help="Whose environment the shell gets.")
@nested_option
@pass_ctx
def shell_cmd(ctx: Context, profile: str, tool: str, nested: bool) -> int:
    """Open an interactive $SHELL with PROFILE's clean environment for TOOL."""

    launch.refuse_nested(ctx.environ, nested)
    shell = ctx.environ.get("SHELL") or "/bin/sh"
    prep = launch.build(profile, tool, store=ctx.store, keys=ctx.keys, paths=ctx.paths, environ=ctx.environ,
                        cwd=cwd_of(None), argv_override=[shell], force=True, nested=nested)
    warn(prep.plan)

    spec = ctx.registry.get(tool)
    if isinstance(spec, ShellHinting) and (hint := spec.shell_hint(prep.plan)):
        click.echo(f"ccs: {hint}", err=True)
    click.echo(f"ccs: shell for {profile} ({tool}); exit to leave", err=True)
    return launch.execute(prep, ctx.paths, recording=launch.NO_RECORDING)


def _evaluable_env(plan: LaunchPlan, reveal: bool) -> tuple[dict[str, str], list[str]]:
    """What sh/dotenv print: safe to eval or source. Never a mask in place of a key (an SDK would send
    it), never the launch markers (a made-up launch id makes every later launch look nested)."""

    markers = [k for k in MARKERS if k in plan.env]
    secrets = [] if reveal else sorted(k for k in plan.env if policy.plan_is_secret(plan, k))
    env = {k: v for k, v in plan.env.items() if k not in markers and k not in secrets}
    notes = []
    if secrets:
        what = "the key" if set(secrets) <= plan.secret_names else "secrets"
        notes.append(f"left out: {' '.join(secrets)} ({what}; `ccs run {plan.profile} -- CMD` and "
                     f"`ccs shell {plan.profile}` carry them, or print them with --reveal)")
    if markers:
        notes.append(f"left out: {' '.join(markers)} (set by ccs for each launch)")
    return env, notes


def _format_env(env: dict[str, str], notes: list[str], fmt: str) -> str:
    head = [f"# {n}" for n in notes]
    if fmt == "sh":
        return "\n".join([*head, *(f"export {k}={shlex.quote(v)}" for k, v in env.items())])
    if fmt == "dotenv":
        def q(v: str) -> str:
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("$", "\\$") + '"'
        return "\n".join([*head, *(f"{k}={q(v)}" for k, v in env.items())])
    raise AssertionError(fmt)


@click.command("env")
@click.argument("profile")
@click.option("--tool", type=click.Choice(_tool_names()), default="run", show_default=True)
@click.option("--format", "fmt", type=click.Choice(("sh", "dotenv", "json")), default="sh", show_default=True)
@click.option("--reveal", is_flag=True, help="Print the key itself (sh/dotenv leave it out otherwise).")
@click.option("--diff", "as_diff", is_flag=True, help="Compare with the current shell (direnv-style).")
@click.option("--cwd", type=click.Path(file_okay=False), help="Working directory to plan for.")
@pass_ctx
def env_cmd(ctx: Context, profile: str, tool: str, fmt: str, reveal: bool, as_diff: bool, cwd: str | None) -> None:
    """Print the environment a launch of TOOL under PROFILE would get.

    sh and dotenv are safe to eval or source: the key is left out unless --reveal (a comment says so),
    and so are the per-launch markers. json shows the whole plan, the key masked unless --reveal."""

    def out(text: str) -> None:  # --reveal asks for the key itself: its lines alone pass unfiltered
        (echo_revealed if reveal else click.echo)(visible_json(text) if fmt == "json" else visible(text))

    p = ctx.store.load(profile)
    key = ctx.keys.resolve(p)
    plan = plan_for(p, tool, key, ctx.environ, cwd_of(cwd), paths=ctx.paths,
                    secrets=resolve(p, ctx.keys, ctx.registry.multiline_vars()), registry=ctx.registry)
    env = dict(plan.env) if reveal else policy.masked_env(plan)
    if as_diff:
        d = diff_env(ctx.environ, plan.env, ctx.registry.families, plan.routing_names)

        def show(name: str, value: str) -> str:
            return value if reveal else policy.plan_shown(plan, name, value)

        if fmt == "json":
            out(json.dumps({
                "summary": d.summary(),
                "routing": d.marked(True),
                "added": {k: show(k, v) for k, v in d.added.items()},
                "removed": {k: show(k, v) for k, v in d.removed.items()},
                "changed": {k: {"from": show(k, a), "to": show(k, b)} for k, (a, b) in d.changed.items()},
            }, indent=2, ensure_ascii=False))
            return
        # Routing, key and proxy changes in full first; the harmless rest folded into one line of names.
        lines = [d.summary()]
        lines += [f"- {k}={show(k, v)}" for k, v in d.removed.items() if d.matters(k)]
        lines += [f"~ {k}: {_change(show(k, a), show(k, b), a, b, ctx.keys.fingerprint)}"
                  for k, (a, b) in d.changed.items() if d.matters(k)]
        lines += [f"+ {k}={show(k, v)}" for k, v in d.added.items() if d.matters(k)]
        other = d.marked(False)
        if other:
            lines.append(f"other, harmless ({len(other)}; values with --format json): {' '.join(other)}")
        out("\n".join(lines))
        return
    if fmt == "json":
        out(json.dumps({
            "profile": plan.profile, "tool": plan.tool, "argv": list(plan.argv), "env": env,
            "sources": dict(plan.sources), "secret_names": sorted(plan.secret_names),
            "warnings": list(plan.warnings), "refusals": [r.message for r in plan.refusals],
            "quiet": plan.client.quiet, "shared": [dict(s) for s in plan.client.shared or ()],
        }, indent=2, ensure_ascii=False))
        return
    for w in (*plan.warnings, *(r.message for r in plan.refusals)):
        click.echo(visible(f"ccs: warning: {w}"), err=True)

    for line in describe(plan.client.shared or ()):
        click.echo(visible(f"ccs: shared: {line}"), err=True)
    out(_format_env(*_evaluable_env(plan, reveal), fmt))


def _change(old_shown: str, new_shown: str, old: str, new: str, fingerprint: Any) -> str:
    """``old -> new``; two masks alike (two keys with the same ends) get their fingerprints."""
    if old_shown == new_shown and old != new:
        return f"{old_shown} {fingerprint(old)} -> {new_shown} {fingerprint(new)}"
    return f"{old_shown} -> {new_shown}"


class RunsGroup(click.Group):
    """`ccs runs` and its subcommands; export and import load only when asked for."""

    LAZY = {"export": "runs_export", "import": "runs_import"}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *self.LAZY]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.LAZY:
            # lazy: export and import (tarfile, gzip) stay off `ccs run`'s imports
            from ccswitch_tui.commands import runs_travel

            return getattr(runs_travel, self.LAZY[cmd_name])
        return super().get_command(ctx, cmd_name)


@click.group("runs", cls=RunsGroup, invoke_without_command=True)
@click.option("--profile", help="Only this profile's runs.")
@json_option
@click.pass_context
def runs_group(click_ctx: click.Context, profile: str | None, as_json: bool) -> None:
    """List run manifests, newest first; `ccs runs diff ID ID...` shows drift between runs."""
    if click_ctx.invoked_subcommand is not None:
        return

    ctx = click_ctx.find_object(Context) or Context()
    runs = load_manifests(ctx.paths, profile)
    here = machine_here()
    if as_json:

        emit_json({"runs": [m | {"state": state(m), "machine": machine_of(m, here)} for m in runs]})
        return
    if not runs:
        click.echo("no runs yet")
        return

    rows = [[m.get("launch_id", "?"), m.get("profile", "?"), m.get("tool", "?"), m.get("started") or "-",
             status_text(m) + (f" ({lost} records lost)" if (lost := records_lost(m)) else ""),
             str(m.get("label") or "-"), m.get("key_fingerprint") or "-", _argv_cell(m)]
            for m in runs]
    headers = ["LAUNCH ID", "PROFILE", "TOOL", "STARTED", "STATUS", "LABEL", "KEY", "ARGV"]
    if len(machines(runs, here)) > 1:  # imported runs from elsewhere: say where each ran
        headers.insert(1, "MACHINE")
        for row, m in zip(rows, runs, strict=True):
            row.insert(1, machine_of(m, here))
    click.echo(table(rows, headers))


def _argv_cell(manifest: dict[str, Any], width: int = 60) -> str:
    """The run's argv as typed, cut with a mark when it is long (the manifest keeps all of it)."""
    text = shlex.join(user_argv(manifest))
    return text if len(text) <= width else text[:width - 1] + "…"


@runs_group.command("diff")
@click.argument("launch_ids", nargs=-1, required=True)
@json_option
@pass_ctx
def runs_diff(ctx: Context, launch_ids: tuple[str, ...], as_json: bool) -> int:
    """Compare runs with the first one, each difference with its kind and cause: routing (base URLs, key
    fingerprint, proxy, endpoints), models (pinned, requested, served), a forced launch, project layers,
    the client and its version, the environment (by variable), and the outcome (requests per path,
    errors, retries, 401/403, 429, exit status). Exit 3 when any run drifted."""
    # lazy: keeps ccswitch_tui.runs.verdict off `ccs run`'s imports
    from ccswitch_tui.runs.verdict import compare_views, view

    if len(launch_ids) < 2:
        raise UsageError("give at least two launch ids to compare (see `ccs runs`)")
    manifests = [find_manifest(ctx.paths, i) for i in launch_ids]
    views = [view(m, ctx.paths) for m in manifests]
    _warn_lines([n for m in manifests if (n := damage_note(m))] + [p for v in views for p in v.problems])
    verdicts = [compare_views(views[0], v) for v in views[1:]]
    results = [v.to_dict() for v in verdicts]
    if as_json:
        emit_json({"comparisons": results})
    else:
        for v in verdicts:
            click.echo(visible(v.headline()))
            for d in v.differences:
                if d.field == "env" and v.env_changes is not None:
                    click.echo(visible(f"  env: {d.cause}"))
                    continue
                line = f"  {d.field} ({d.kind}): {json.dumps(d.base)} -> {json.dumps(d.run)}"
                click.echo(visible(line + (f"  [cause: {d.cause}]" if d.cause else "")))
            for note in v.notes:
                click.echo(visible(f"  note: {note}"))
    return DRIFT_EXIT if any(r["drifted"] for r in results) else 0


@runs_group.command("report")
@click.argument("launch_ids", nargs=-1)
@click.option("--label", help="Every run launched with --label LABEL, oldest first.")
@click.option("--rounds", is_flag=True,
              help="The consistency table: the arguments are labels, one round of reruns each (pass@1, pass^k, "
                   "the gap, how each round was routed and whether its reruns are comparable).")
@click.option("--format", "fmt", type=click.Choice(("table", "json", "csv", "md")), default="table",
              show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--csv", "as_csv", is_flag=True, help="Same as --format csv.")
@click.option("--md", "as_md", is_flag=True, help="Same as --format md: a Markdown table.")
@click.option("--wide", is_flag=True, help="With --rounds: every column (routing too), wider than 80 columns.")
@click.option("--html", "html_file", metavar="FILE", type=click.Path(dir_okay=False),
              help="With --rounds: write the consistency board, one self-contained HTML file ('-': stdout).")
@pass_ctx
def runs_report(ctx: Context, launch_ids: tuple[str, ...], label: str | None, rounds: bool, fmt: str, as_json: bool,
                as_csv: bool, as_md: bool, wide: bool, html_file: str | None) -> None:
    """A table across reruns: base URL, key, models requested and served, tool version, requests,
    tokens, errors, duration; columns that drifted from the first run are marked with '*'.

    With --rounds LABEL...: a row per round of reruns, scored from the runs' outcomes; --html FILE
    draws them as a board (the gap per round, what changed between rounds, the tasks that flipped)."""
    fmt = "json" if as_json else "csv" if as_csv else "md" if as_md else fmt
    if rounds:
        _rounds_report(ctx, launch_ids, label, fmt, wide, html_file)
        return
    if wide or html_file:
        raise UsageError("--wide and --html go with --rounds LABEL...")
    # lazy: keeps ccswitch_tui.runs.report off `ccs run`'s imports
    from ccswitch_tui.runs.report import report, table_rows, to_csv

    if bool(label) == bool(launch_ids):
        raise UsageError("give either --label LABEL or launch ids (see `ccs runs`)")
    problems: list[str] = []
    if label:
        manifests = [m for m in reversed(load_manifests(ctx.paths, problems=problems)) if m.get("label") == label]
        if not manifests:
            _warn_lines(problems)
            raise UsageError(f"no run has the label {label!r}; launch with --label {label}")
    else:
        manifests = [find_manifest(ctx.paths, i) for i in launch_ids]
    data = report(manifests, ctx.paths)
    _warn_lines(problems + [n for m in manifests if (n := damage_note(m))] + data["problems"])  # lost records too
    if fmt == "json":
        emit_json(data)
    elif fmt == "csv":
        click.echo(visible(to_csv(data)), nl=False)  # a cell's control characters shown, as in the table
    elif fmt == "md":
        from ccswitch_tui.runs.report import markdown  # lazy: keeps ccswitch_tui.runs.report off `ccs run`'s imports

        click.echo(visible(markdown(data)), nl=False)
    else:
        headers, cells = table_rows(data)
        click.echo(table(cells, headers))
        if data["drifted_columns"]:
            click.echo(visible(f"drifted from {manifests[0].get('launch_id')}: {', '.join(data['drifted_columns'])}"))


def _rounds_report(ctx: Context, labels: tuple[str, ...], label: str | None, fmt: str, wide: bool,
                   html_file: str | None) -> None:
    # lazy: keeps ccswitch_tui.runs.outcomes off `ccs run`'s imports
    from ccswitch_tui.runs import rounds, rounds_text

    labels = (*((label,) if label else ()), *labels)
    if not labels:
        raise UsageError("give the labels of the rounds to compare: ccs runs report --rounds LABEL... "
                         "(runs get a label with `ccs run --label LABEL`)")
    problems: list[str] = []
    manifests = [m for m in load_manifests(ctx.paths, problems=problems) if m.get("label") in labels]
    missing = [lb for lb in labels if not any(m.get("label") == lb for m in manifests)]
    if missing:
        _warn_lines(problems)
        raise UsageError(f"no run has the label {missing[0]!r}; launch with --label {missing[0]}")
    data = rounds.rounds_table(labels, manifests, ctx.paths)
    _warn_lines(problems + [n for m in manifests if (n := damage_note(m))])
    if html_file is not None:
        from ccswitch_tui.runs.board import write_board  # lazy: only the board needs it

        where = write_board(data, html_file)
        if where is not None:
            click.echo(visible(f"ccs: board of {len(labels)} round(s) written to {where}"), err=True)
        if fmt == "table":
            return
    if fmt == "json":
        emit_json(data)
    elif fmt == "csv":
        click.echo(visible(rounds_text.to_csv(data)), nl=False)
    elif fmt == "md":
        click.echo(visible(rounds_text.markdown(data)), nl=False)
    else:
        headers, cells, lines = rounds_text.terminal(data, shutil.get_terminal_size().columns, wide)
        click.echo(table(cells, headers))
        for line in lines:
            click.echo(line)


@runs_group.command("attach")
@click.argument("launch_id")
@click.argument("file", type=click.Path(dir_okay=False))
@outcome_options
@pass_ctx
def runs_attach(ctx: Context, launch_id: str, file: str, task_column: str | None, success_column: str | None) -> None:
    """Attach a finished run's per-task results (JSONL, JSON or CSV: a task id and a success flag or a
    score from 0 to 1 per row) for `ccs runs report --rounds`."""
    # lazy: keeps ccswitch_tui.runs.outcomes off `ccs run`'s imports
    from ccswitch_tui.runs.outcomes import attach, read_outcomes

    refuse_imported(find_manifest(ctx.paths, launch_id), "attach its outcomes")
    outcomes = read_outcomes(Path(file), task_column, success_column)
    attach(ctx.paths, launch_id, outcomes)
    click.echo(f"attached {outcomes['tasks']} task results ({outcomes['passed']} solved) to run {launch_id}")

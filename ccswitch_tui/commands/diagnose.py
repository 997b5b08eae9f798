"""`ccs ps`, `inspect`, `doctor`, `check`: find what could redirect a tool. The core lives in
inspect.py, doctor.py and check.py; this module only formats. Nothing here prints a key."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from ccswitch_tui import tools
from ccswitch_tui.commands.common import Context, emit_json, json_option, pass_ctx, table
from ccswitch_tui.diagnose.doctor import run_doctor
from ccswitch_tui.diagnose.findings import counts, counts_text, has_errors, sort_findings
from ccswitch_tui.diagnose.inspect import Inspection, inspect_pid, list_processes
from ccswitch_tui.errors import FindingsError, UsageError
from ccswitch_tui.model import Finding
from ccswitch_tui.terminal_text import visible


def _local(ts: float | None) -> str:
    return "-" if ts is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _findings_lines(findings: list[Finding]) -> list[str]:
    return [f"  {f.line()}" for f in sort_findings(findings)]


def _raise_if_errors(findings: list[Finding], what: str) -> None:
    if has_errors(findings):
        c = counts(findings)
        raise FindingsError(f"{what}: {c['error']} error finding(s)")


# --- ps -------------------------------------------------------------------------------------------

@click.command("ps")
@click.option("--all", "all_", is_flag=True, help="Also list any process whose environment holds routing variables.")
@json_option
@pass_ctx
def ps_cmd(ctx: Context, all_: bool, as_json: bool) -> None:
    """Running Claude Code and Codex processes and ccs children, with their findings."""

    procs = list_processes(ctx.store, ctx.keys, all_=all_)
    if as_json:
        emit_json({"processes": [p.to_dict() for p in procs]})
        return
    if not procs:
        click.echo(f"no {', '.join(s.label for s in tools.load().clients())} or ccs processes running"
                   + ("" if all_ else " (--all: any with routing variables)"))
        return
    rows = []
    for p in procs:
        if p.status == "ok":
            state = counts_text(p.counts)
        elif p.status == "access-denied":
            state = "unreadable (another user's process)"
        else:
            state = "exited"
        rows.append([str(p.pid), p.name or "?", p.tool or "-", p.profile or "unmanaged", p.launch_id or "-",
                     _local(p.started), p.cwd or "-", state])
    click.echo(table(rows, ["PID", "NAME", "TOOL", "PROFILE", "LAUNCH ID", "STARTED", "CWD", "FINDINGS"]))


# --- inspect --------------------------------------------------------------------------------------

@click.command("inspect")
@click.argument("pid", type=int)
@click.option("--profile", "profile", help="Judge against this profile (default: the process's CCS_PROFILE).")
@json_option
@pass_ctx
def inspect_cmd(ctx: Context, pid: int, profile: str | None, as_json: bool) -> None:
    """A running process's environment against the plan its profile would produce today."""

    if profile:
        ctx.store.path_for(profile)  # a bad name is bad input before anything is read
    ins = inspect_pid(pid, ctx.store, ctx.keys, profile=profile)
    if as_json:
        emit_json(ins.to_dict())
    else:
        click.echo(visible(_inspection_text(ins)))  # the process's cwd, name and environment are its own
    _raise_if_errors(list(ins.findings), f"pid {pid}")


def _inspection_text(ins: Inspection) -> str:
    head = f"pid {ins.pid}  {ins.name}  tool {ins.tool or '-'}  "
    if ins.profile:
        head += f"profile {ins.profile} ({'from CCS_PROFILE' if ins.profile_source == 'marker' else '--profile'})"
    else:
        head += "unmanaged"
    lines = [head]
    if ins.launch_id:
        lines.append(f"launch     {ins.launch_id}")
    lines.append(f"cwd        {ins.cwd or '-'}")
    lines.append(f"started    {_local(ins.started)}")
    lines.append(f"note       {ins.note}")
    if ins.profile:
        lines.append(f"expected   the environment profile {ins.profile} builds today for {ins.tool}"
                     + (f" (key {ins.key_fingerprint})" if ins.key_fingerprint else ""))
    else:
        lines.append("expected   a clean environment (base allowlist only)")
    d = ins.display_diff()
    lines.append("")
    lines.append(f"diff (expected → process)  +{len(d['added'])} -{len(d['removed'])} ~{len(d['changed'])}")
    for k, v in d["added"].items():
        lines.append(f"  + {k}={v}")
    for k, v in d["removed"].items():
        lines.append(f"  - {k}={v}")
    for k, v in d["changed"].items():
        lines.append(f"  ~ {k}: {v['expected']} → {v['actual']}")
    if not any(d.values()):
        lines.append("  (no differences)")
    lines.append("")
    findings = list(ins.findings)
    lines.append(f"findings   {counts_text(counts(findings))}")
    lines += _findings_lines(findings)
    return "\n".join(lines)


# --- doctor ---------------------------------------------------------------------------------------

@click.command("doctor")
@click.option("--cwd", "cwd", type=click.Path(file_okay=False), help="Directory whose settings layers to check "
              "(default: the current one).")
@json_option
@pass_ctx
def doctor_cmd(ctx: Context, cwd: str | None, as_json: bool) -> None:
    """Every contamination source at rest: shell, Claude Code settings layers, Codex config, keys."""

    where = Path(cwd) if cwd else Path.cwd()
    if cwd and not where.is_dir():
        raise UsageError(f"--cwd {cwd}: no such directory")
    report = run_doctor(ctx.store, ctx.keys, ctx.environ, where.resolve(), paths=ctx.paths)
    if as_json:
        emit_json(report.to_dict())
    else:
        click.echo(visible(report.text()))  # layers and values come from the repository's files
    _raise_if_errors(list(report.findings), "doctor")


# --- check ----------------------------------------------------------------------------------------

@click.command("check")
@click.argument("profile", required=False)
@click.option("--all", "all_", is_flag=True, help="Probe every profile, concurrently.")
@click.option("--tool", type=click.Choice(list(tools.names())), help="Probe only this tool's side.")
@click.option("--timeout", type=click.FloatRange(min=0.1, max=600), default=10.0, show_default=True,
              help="Seconds to wait for each probe.")
@json_option
@pass_ctx
def check_cmd(ctx: Context, profile: str | None, all_: bool, tool: str | None, timeout: float, as_json: bool) -> None:  # noqa: C901
    """Probe a profile's endpoints with a request that costs at most a handful of tokens."""
    from ccswitch_tui.diagnose import check  # lazy: httpx loads only when ccs sends a request itself

    if bool(profile) == all_:
        raise UsageError("give one PROFILE or --all (see `ccs check --help`)")
    if all_:
        entries = ctx.store.entries()
        broken = [e for e in entries if e.profile is None]
        profiles = [e.profile for e in entries if e.profile is not None]
        if tool:
            profiles = [p for p in profiles if tool in check.sides(p)]
        if not profiles and not broken:
            click.echo(f"no profiles to check in {ctx.store.root}")
            return
    else:
        assert profile is not None
        p = ctx.store.load(profile)
        if tool and tool not in check.sides(p):
            raise UsageError(f"profile {p.name!r} has no {tool} side to check (sides: {', '.join(check.sides(p))})")
        profiles, broken = [p], []

    progress = None
    if not as_json and sys.stderr.isatty() and len(profiles) > 1:
        def progress(done: int, total: int, r: Any) -> None:
            click.echo(f"\rchecking {done}/{total}  {r.profile}/{r.tool}: {r.outcome}".ljust(70), err=True, nl=False)
            if done == total:
                click.echo("\r" + " " * 70 + "\r", err=True, nl=False)

    results = check.check_profiles(profiles, ctx.keys, tool=tool, timeout=timeout, environ=ctx.environ,
                                   progress=progress)
    failed = [r for r in results if not r.ok]
    if as_json:
        emit_json({"results": [r.to_dict() for r in results],
                   "broken_profiles": [{"name": e.name, "error": e.error} for e in broken],
                   "failed": len(failed) + len(broken)})
    else:
        click.echo(visible(_results_text(results)))  # details quote the endpoint's answers
        for e in broken:
            click.echo(visible(f"{e.name}: cannot be loaded: {e.error}"))
    if failed or broken:
        raise FindingsError(f"{len(failed) + len(broken)} of {len(results) + len(broken)} probe(s) failed")


def _results_text(results: list[Any]) -> str:
    rows = []
    for r in results:
        rows.append([r.profile, r.tool, r.outcome, str(r.http_status or "-"),
                     f"{r.latency_ms} ms" if r.latency_ms is not None else "-",
                     f"{r.method} {r.url}" + (f"  model={r.model}" if r.model else "")])
    lines = [table(rows, ["PROFILE", "TOOL", "OUTCOME", "HTTP", "LATENCY", "REQUEST"])] if rows else \
        ["nothing to probe"]
    for r in results:
        if r.note:
            lines.append(f"  {r.profile}/{r.tool} model={r.model}: {r.note}")
    for r in results:
        if not r.ok:
            text = "; ".join(x for x in (r.detail, r.hint) if x)
            lines.append(f"  {r.profile}/{r.tool} {r.outcome}: {text}")
    return "\n".join(lines)

"""`ccs use` and `ccs status`: the profile for tools started by hand or by an editor, through shims."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ccswitch_tui.commands.common import Context, emit_json, json_option, pass_ctx
from ccswitch_tui.errors import UsageError
from ccswitch_tui.launch import shim_setup, shims
from ccswitch_tui.launch.use_status import lines, programs, shim_report


def _launchable() -> list[str]:
    return list(programs())


def _selection_error(exc: Exception) -> None:
    raise UsageError(str(exc)) from None


@click.command("use")
@click.argument("profile", required=False)
@click.option("--tool", "tools_", multiple=True, metavar="TOOL",
              help="Only for this tool (repeatable); default: every tool the profile serves.")
@click.option("--none", "off", is_flag=True, help="Shims pass straight through to the real binaries.")
@click.option("--clear", is_flag=True, help="Forget the choice of `ccs use` (project files still apply).")
@click.option("--here", is_flag=True, help="Write PROFILE to ./.ccs-profile for this project instead.")
@pass_ctx
def use_cmd(ctx: Context, profile: str | None, tools_: tuple[str, ...], off: bool, clear: bool, here: bool) -> None:
    """Pick the profile for tools started by name (by hand or by an editor), without touching their
    config files: ccs installs a launcher (shim) per client in its own folder, to put first on PATH.

    A `.ccs-profile` file in a project (or its parents) beats `ccs use PROFILE`; `ccs use --none`
    beats both. `ccs status` (or a bare `ccs use`) says which profile a shim would use here, and why."""

    progs = programs()
    for t in tools_:
        if t not in progs:
            raise UsageError(f"unknown tool {t!r} for --tool; choose one of: {', '.join(progs)}")
    if not (profile or off or clear or here or tools_):  # bare `ccs use`: what is chosen here

        click.echo("\n".join(lines(shim_report(ctx.paths, ctx.environ, Path(os.getcwd()), ctx.store))))
        return
    if sum(map(bool, (profile, off, clear))) != 1:
        raise UsageError("give one of: PROFILE, --none or --clear (see `ccs use --help`)")
    if here and not profile:
        raise UsageError("--here writes a profile name to ./.ccs-profile; give PROFILE")
    if profile:
        loaded = ctx.store.load(profile)  # a missing or invalid profile is one line here, not at launch
        if not any(t in loaded.tools for t in progs):
            raise UsageError(f"profile {profile!r} serves none of {', '.join(progs)}; add a table with "
                             f"`ccs edit {profile}`")
        missing = [t for t in tools_ if t not in loaded.tools]
        if missing:
            raise UsageError(f"profile {profile!r} has no [{missing[0]}] table; add one with `ccs edit {profile}` "
                             f"(tools served: {', '.join(loaded.tools)})")
    folder = shims.shim_dir(ctx.paths.state, ctx.environ)
    shim_setup.install(folder, progs, ctx.paths.profiles, ctx.paths.state)  # first: a failure changes no choice
    if here and profile:  # --here without a profile was refused above
        try:
            if tools_:
                for t in tools_:
                    path = shim_setup.write_project_file(Path(os.getcwd()), profile, t)
            else:
                path = shim_setup.write_project_file(Path(os.getcwd()), profile, None)
        except shims.SelectionError as exc:
            _selection_error(exc)
        click.echo(f"{path}: {', '.join(tools_) or 'every tool'} here uses {profile}")
    else:
        try:
            current = shims.read_selection(ctx.paths.state) if tools_ else {}
        except shims.SelectionError:
            current = {}  # a damaged selection is rewritten whole
        if clear:
            chosen = {k: v for k, v in current.items() if k not in tools_} if tools_ else {}
        elif off:
            chosen = current | {t: None for t in tools_} if tools_ else {shims.ALL: None}
        else:
            served = [t for t in (tools_ or progs) if t in loaded.tools]
            base = dict(current) if tools_ else {}  # --tool changes that tool only
            chosen = base | {t: profile for t in served}
        shim_setup.write_selection(ctx.paths.state, chosen)
        if off:
            click.echo(f"shims pass straight through for {', '.join(tools_) or 'every tool'}")
        elif clear:
            click.echo("`ccs use` choice cleared (project files still apply)")
        else:
            others = [t for t in progs if t not in chosen]
            click.echo(f"{', '.join(t for t, v in chosen.items() if v == profile)}: {profile}"
                       + (f"; {', '.join(others)}: pass through" if others else ""))
    pos = shim_setup.path_position(folder, ctx.environ.get("PATH"))
    if pos is None:
        click.echo(f"shims are in {folder}; put that folder first on PATH, once, in your shell's rc file:\n"
                   f"  export PATH=\"{folder}:$PATH\"")
    elif blockers := shim_setup.shadowed(folder, list(progs.values()), ctx.environ.get("PATH")):
        click.echo(f"shims are in {folder}, but {', '.join(blockers.values())} come(s) first on PATH; "
                   "put the shim folder first")


@click.command("status")
@json_option
@pass_ctx
def status_cmd(ctx: Context, as_json: bool) -> None:
    """Which profile a tool started by name here would use, and why (project file, `ccs use`, none),
    and whether the shims are first on PATH."""

    report = shim_report(ctx.paths, ctx.environ, Path(os.getcwd()), ctx.store)
    if report["error"]:

        raise UsageError(report["error"])
    if as_json:
        emit_json(report)
        return
    click.echo("\n".join(lines(report)))

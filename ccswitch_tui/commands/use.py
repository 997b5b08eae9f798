"""`ccs use` and `ccs status`: the profile for tools started by hand or by an editor, through shims."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ccswitch_tui.commands.common import Context, confirm_or_refuse, emit_json, json_option, pass_ctx
from ccswitch_tui.errors import UsageError
from ccswitch_tui.launch.use_choice import use
from ccswitch_tui.launch.use_status import lines, programs, shim_report
from ccswitch_tui.terminal_text import visible


@click.command("use")
@click.argument("profile", required=False)
@click.option("--tool", "tools_", multiple=True, metavar="TOOL",
              help="Only for this tool (repeatable); default: every tool the profile serves.")
@click.option("--none", "off", is_flag=True, help="Shims pass straight through to the real binaries.")
@click.option("--clear", is_flag=True, help="Forget the choice of `ccs use` (project files still apply).")
@click.option("--here", is_flag=True, help="Write PROFILE to ./.ccs-profile for this project instead "
                                          "(with --none: TOOL=- lines, those tools pass straight through here).")
@click.option("--uninstall", "remove", is_flag=True,
              help="Remove the shims and the choice (before removing ccs; see also `ccs uninstall`).")
@pass_ctx
def use_cmd(ctx: Context, profile: str | None, tools_: tuple[str, ...], off: bool, clear: bool, here: bool,
            remove: bool) -> None:
    """Pick the profile for tools started by name (by hand or by an editor), without touching their
    config files: ccs installs a launcher (shim) per client in its own folder, to put first on PATH.

    A `.ccs-profile` file in a project (or its parents) beats `ccs use PROFILE`; `ccs use --none`
    beats both. `ccs status` (or a bare `ccs use`) says which profile a shim would use here, and why."""

    if remove:
        if profile or off or clear or here or tools_:
            raise UsageError("--uninstall takes no other option: it removes every shim and the choice")
        _uninstall(ctx, state=False, profiles=False, with_keys=False, dry_run=False, yes=True)
        return
    if not (profile or off or clear or here or tools_):  # bare `ccs use`: what is chosen here
        click.echo(visible("\n".join(lines(shim_report(ctx.paths, ctx.environ, Path(os.getcwd()), ctx.store)))))
        return
    for line in use(ctx.paths, ctx.environ, ctx.store, Path(os.getcwd()), programs(), profile, tools_, off, clear,
                    here):
        click.echo(line)


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
    click.echo(visible("\n".join(lines(report))))  # a project file's path is a folder's name from anywhere


@click.command("uninstall")
@click.option("--all", "everything", is_flag=True,
              help="Also ccs's state folder: each profile's tool state (sessions, history, downloads), the shared "
                   "packages, run manifests and records, the salt and the key index.")
@click.option("--profiles", is_flag=True, help="Also the profile files.")
@click.option("--keys", "with_keys", is_flag=True, help="Also the keys ccs stored in the keyring.")
@click.option("--dry-run", is_flag=True, help="Only list what would be removed, with sizes.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask.")
@pass_ctx
def uninstall_cmd(ctx: Context, everything: bool, profiles: bool, with_keys: bool, dry_run: bool, yes: bool) -> None:
    """Before removing ccs: remove its launchers (shims) and the choice of `ccs use`, so that every client
    started by name runs as it did before ccs; with --all its state too. Lists what goes first (and asks
    on a terminal); what is left to do by hand is said at the end."""

    _uninstall(ctx, state=everything, profiles=profiles, with_keys=with_keys, dry_run=dry_run, yes=yes)


def _uninstall(ctx: Context, *, state: bool, profiles: bool, with_keys: bool, dry_run: bool, yes: bool) -> None:
    # lazy: keeps the removal code off `ccs use`'s and `ccs status`'s imports
    from ccswitch_tui.launch import uninstall

    keys = ctx.keys if with_keys else None
    plan = uninstall.plan(ctx.paths, ctx.environ, keys, state=state, profiles=profiles)
    for line in plan.lines(dry_run=True):
        click.echo(visible(line))
    if not dry_run and (plan.shims or plan.state or plan.profiles or plan.keys):
        confirm_or_refuse("remove them?", yes)
        for line in uninstall.carry_out(plan, ctx.paths, keys):
            click.echo(visible(line))
    if not dry_run:
        from ccswitch_tui.commands.resident import stop_resident  # lazy: only a removal stops it

        if (pid := stop_resident(str(ctx.paths.state / "resident"))) is not None:
            click.echo(f"stopped the resident launcher (pid {pid})")
    for line in uninstall.leftovers(ctx.paths, ctx.environ, state=state, profiles=profiles, keys=with_keys):
        click.echo(visible(f"left to you: {line}"))

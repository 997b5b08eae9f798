"""`ccs import cc-switch|claude|codex` and `ccs export`: bring existing setups in (keys into the
keyring, never into a file) and hand profiles out without any secret."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ccswitch_tui import tools
from ccswitch_tui.atomic import atomic_write
from ccswitch_tui.commands.common import Context, emit_json, json_option, pass_ctx
from ccswitch_tui.errors import UsageError
from ccswitch_tui.importers.sources import one_import_at_a_time
from ccswitch_tui.terminal_text import visible, visible_json
from ccswitch_tui.tools.checker import check_name
from ccswitch_tui.tools.spec import ToolSpec

dry_run_option = click.option("--dry-run", is_flag=True, help="Show what would happen; write nothing.")


def _planner(ctx: Context, dry_run: bool):  # noqa: ANN202 — keeps the import inside the command
    from ccswitch_tui.importers.planner import Planner  # lazy: tomlkit loads only when a profile is written

    return Planner(ctx.store, ctx.keys, dry_run=dry_run)


def _one_import_at_a_time(ctx: Context, dry_run: bool):  # noqa: ANN202 — the importers' context manager
    """The importers' lock (shared with the TUI); waiting for another import is said on stderr."""

    return one_import_at_a_time(ctx.store, dry_run, lambda line: click.echo(visible(f"ccs: {line}"), err=True))


@click.group("import")
def import_group() -> None:
    """Bring providers in from CC Switch, the live Claude Code / Codex configs, or a .env file.

    Keys go into the OS keyring (identical keys share one key id), never into a file. Re-running an
    import changes nothing. Every source entry gets one report line: created, merged (added a tool
    to a profile of the same provider), unchanged, skipped or error, with the reason.

    With --json, each subcommand prints one object:

    \b
      {"import": "cc-switch" | "claude" | "codex" | "env",
       "dry_run": bool,
       "read": [file, ...],
       "items": [{"source": str, "name": str | null, "action": str, "profile": str | null,
                  "path": str | null, "reason": str | null, "key_id": str | null,
                  "key": "stored" | "shared" | "present" | "missing" | "env" | null,
                  "fingerprint": "fp:…" | null, "warnings": [str, ...]}, ...],
       "summary": {"created": n, "merged": n, "unchanged": n, "skipped": n, "error": n},
       "scrubbed": [{"path": str, "removed": [field, ...], "remaining": [line, ...] | null,
                     "note": str | null, "referencing": [line, ...] (env only, when present)}, ...]}

    Exit status: 0 when the source was read (even if some entries were skipped or in error: see the
    report), 2 when it could not be read at all or the keyring is unavailable.
    """


@import_group.command("cc-switch")
@click.option("--db", "db", type=click.Path(dir_okay=False, path_type=Path),
              help="CC Switch's database (default ~/.cc-switch/cc-switch.db); its config.json beside it is "
                   "read too.")
@dry_run_option
@json_option
@pass_ctx
def import_cc_switch(ctx: Context, db: Path | None, dry_run: bool, as_json: bool) -> None:
    """Import CC Switch's Claude Code and Codex providers (database opened read-only)."""
    # lazy: tomlkit loads only when a profile is written
    from ccswitch_tui.importers.cc_switch import default_dir, plan_cc_switch
    from ccswitch_tui.importers.live import home_dir  # lazy: tomlkit loads only when a profile is written

    db = db.expanduser() if db else default_dir(home_dir(ctx.environ)) / "cc-switch.db"
    with _one_import_at_a_time(ctx, dry_run):
        planner = _planner(ctx, dry_run)
        report = plan_cc_switch(planner, db, db.parent / "config.json")
        if not dry_run:
            planner.apply()
    _report(report, as_json)


def _live_command(spec: ToolSpec) -> click.Command:
    """`ccs import NAME`: the provider the client's live config points at, read by its importer."""
    imp = tools.load().importer(spec)
    opt = imp.live_option
    assert opt is not None, f"{spec.name}'s importer declares no live option"

    @pass_ctx
    def command(ctx: Context, name: str | None, scrub: bool, dry_run: bool, as_json: bool,
                **where: Path | None) -> None:
        # lazy: tomlkit loads only when a profile is written
        from ccswitch_tui.importers.live import home_dir, plan_live
        from ccswitch_tui.importers.live import scrub as do_scrub  # lazy: tomlkit loads only when a profile is written

        if name:
            check_name(name)
        given = where.get(opt.dest)
        path = given.expanduser() if given else imp.live_path(ctx.environ, home_dir(ctx.environ))
        with _one_import_at_a_time(ctx, dry_run):
            planner = _planner(ctx, dry_run)
            plan = plan_live(planner, spec, path, name, ctx.environ)
            if not dry_run:
                planner.apply()
            if scrub:
                do_scrub(planner, plan)
        _report(plan.report, as_json)

    kind = click.Path(file_okay=False, path_type=Path) if opt.directory else click.Path(dir_okay=False,
                                                                                         path_type=Path)
    params: list[click.Parameter] = [
        click.Option([opt.flag, opt.dest], type=kind, help=opt.help),
        click.Option(["--name"], help=imp.name_help),
        click.Option(["--scrub"], is_flag=True, help=imp.scrub_help),
    ]
    return json_option(dry_run_option(click.Command(spec.name, callback=command, params=params,
                                                    help=imp.command_help)))


for _spec in tools.load().importable():
    import_group.add_command(_live_command(_spec))


@import_group.command("env")
@click.argument("file", type=click.Path(dir_okay=True, path_type=Path))
@click.option("--name", help="Profile name (default: the preset of the file's host, else the host's name); "
                             "an existing profile of that name is merged into.")
@click.option("--scrub", is_flag=True, help="Then remove the key's lines from the file (atomic rewrite, every "
                                            "other byte kept; in a shell file a comment names the key id).")
@dry_run_option
@json_option
@pass_ctx
def import_env(ctx: Context, file: Path, name: str | None, scrub: bool, dry_run: bool, as_json: bool) -> None:
    """Import a .env file (KEY=V, export KEY=V, quotes, $VAR references to earlier lines).

    Its key and base URLs become a profile (a host a preset knows picks that preset): OPENAI_* the
    "openai" export, ANTHROPIC_* the "anthropic" one and Claude Code's table, a pair such as
    TAOTOKEN_API_KEY + TAOTOKEN_BASE_URL an export under those names. Every line not used is
    reported with the reason. The key goes into the keyring (a key already there keeps its id)."""
    from ccswitch_tui.importers import env_file  # lazy: tomlkit loads only when a profile is written

    if name:
        check_name(name)
    path = file.expanduser()
    with _one_import_at_a_time(ctx, dry_run):
        planner = _planner(ctx, dry_run)
        plan = env_file.plan_env(planner, path, name)
        if not dry_run:
            env_file.apply(planner, plan)
        if scrub:
            env_file.scrub(planner, plan)
    _report(plan.report, as_json)


def _report(report, as_json: bool) -> None:  # noqa: ANN001
    if as_json:
        emit_json(report.to_json())
    else:
        click.echo(visible(report.render()))  # names, notes and paths from the source being imported


@click.command("export")
@click.argument("profiles", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["toml", "json"]), default="toml", show_default=True,
              help="toml: the profile file; json: CC Switch's provider shape with empty key fields.")
@click.option("--output", "-o", type=click.Path(path_type=Path),
              help="Write here instead of stdout: a directory for toml (NAME.toml each), a file for json.")
@click.option("--force", is_flag=True, help="Overwrite existing output files.")
@pass_ctx
def export_cmd(ctx: Context, profiles: tuple[str, ...], fmt: str, output: Path | None, force: bool) -> None:  # noqa: C901
    """Print profiles without any secret, ready to share or commit.

    \b
    toml: each profile's file, comments kept, with a header naming the key id to set.
          Several profiles need --output DIR (one NAME.toml each); one profile may go to FILE.toml.
    json: {"claude": {"providers": {NAME: {id, name, settingsConfig: {env: {...,
            ANTHROPIC_AUTH_TOKEN|ANTHROPIC_API_KEY: ""}}, category, websiteUrl?, notes?,
            meta: {apiKeyField}}}, "current": ""},
           "codex": {"providers": {NAME: {id, name, settingsConfig: {auth: {OPENAI_API_KEY: ""},
            config: TOML}, category, websiteUrl?, notes?}}, "current": ""}}
    """

    # lazy: tomlkit loads only when a profile is written
    from ccswitch_tui.importers.export import cc_switch_providers, export_toml

    names = list(dict.fromkeys(profiles))
    if fmt == "toml":
        exported = [export_toml(ctx.store, n) for n in names]
        for e in exported:
            for w in e.warnings:
                click.echo(visible(f"ccs: warning: {e.name}: {w}"), err=True)
        if output is None:
            if len(exported) > 1:
                raise UsageError("several profiles as TOML need --output DIR (one NAME.toml each), "
                                 "or use --format json")
            text = exported[0].text  # the file as it is; on a terminal, a comment's C1 or bidi character shown escaped
            click.echo(visible(text) if sys.stdout.isatty() else text, nl=False)
            return
        output = output.expanduser()
        if len(exported) == 1 and output.suffix == ".toml" and not output.is_dir():
            targets = [(output, exported[0].text)]  # one profile to a named file
        elif output.exists() and not output.is_dir():
            raise UsageError(f"{output} is a file; --output takes a directory for several profiles as TOML")
        else:
            targets = [(output / f"{e.name}.toml", e.text) for e in exported]
        if not output.parent.is_dir():
            raise UsageError(f"{output.parent} does not exist; create it first")
        _refuse_overwrite([t for t, _ in targets], force)
        for target, text in targets:
            atomic_write(target, text, mode=0o644)
            click.echo(f"wrote {target}", err=True)
        return
    loaded = [ctx.store.load(n) for n in names]
    data, warnings = cc_switch_providers(loaded)
    for w in warnings:
        click.echo(visible(f"ccs: warning: {w}"), err=True)
    text = visible_json(json.dumps(data, indent=2, ensure_ascii=False)) + "\n"  # the same data, nothing to obey
    if output is None:
        click.echo(text, nl=False)
        return
    output = output.expanduser()
    if output.is_dir():
        raise UsageError(f"{output} is a directory; --output takes a file for --format json")
    if not output.parent.is_dir():
        raise UsageError(f"{output.parent} does not exist; create it first")
    _refuse_overwrite([output], force)
    atomic_write(output, text, mode=0o644)
    click.echo(f"wrote {output}", err=True)


def _refuse_overwrite(paths: list[Path], force: bool) -> None:
    existing = [str(p) for p in paths if p.exists()]
    if existing and not force:
        raise UsageError(f"{', '.join(existing)} already exist(s); pass --force to overwrite")

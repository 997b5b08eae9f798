"""`ccs runs export` and `ccs runs import`: runs that travel between machines (``runs.archive_write``,
``runs.archive_read``)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from ccswitch_tui.commands.common import Context, pass_ctx
from ccswitch_tui.errors import UsageError
from ccswitch_tui.launch.liveness import RUNNING, state
from ccswitch_tui.runs.archive_read import import_archives
from ccswitch_tui.runs.archive_write import export, known_secrets, select
from ccswitch_tui.runs.origin import this_machine
from ccswitch_tui.runs.usage import parse_since
from ccswitch_tui.terminal_text import visible


def _notes(lines: list[str]) -> None:
    for line in dict.fromkeys(lines):
        click.echo(visible(f"ccs: note: {line}"), err=True)


@click.command("export")
@click.argument("launch_ids", nargs=-1)
@click.option("--label", "labels", multiple=True, metavar="LABEL", help="Every run with this label (repeatable).")
@click.option("--since", metavar="DATE", help="Runs started from DATE on: YYYY-MM-DD, an ISO date-time (UTC) or Nd.")
@click.option("--all", "every", is_flag=True, help="Every finished run.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), metavar="FILE",
              help="The archive to write (default: ccs-runs-MACHINE-TIME.tar.gz here).")
@click.option("--force", is_flag=True, help="Replace FILE when it exists.")
@pass_ctx
def runs_export(ctx: Context, launch_ids: tuple[str, ...], labels: tuple[str, ...], since: str | None, every: bool,
                output: str | None, force: bool) -> None:
    """Write runs (their manifests, records and outcomes, masked) to one archive for `ccs runs import` on
    another machine. The archive's bytes are checked for the runs' keys, [secrets] values, salts and
    bridge tokens, in their encoded forms too: finding one, nothing is written."""
    notes: list[str] = []
    manifests = select(ctx.paths, launch_ids, labels, parse_since(since) if since else None, every,
                       lambda m: state(m) == RUNNING, notes)
    machine = this_machine(ctx.environ)
    dest = Path(output) if output else Path(f"ccs-runs-{machine}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
                                            ".tar.gz")
    if dest.exists() and not force:
        raise UsageError(f"{dest} already exists; pass --force to replace it")
    secrets = known_secrets(ctx.paths, manifests, ctx.store, ctx.keys, ctx.environ, notes)
    done = export(ctx.paths, manifests, dest, secrets, ctx.environ)
    _notes(notes)
    click.echo(visible(f"exported {len(done.runs)} run(s) from {machine} to {done.path}"))


@click.command("import")
@click.argument("archives", nargs=-1, required=True, type=click.Path(dir_okay=False))
@pass_ctx
def runs_import(ctx: Context, archives: tuple[str, ...]) -> None:
    """Bring in runs exported on other machines (read-only here, with their machine and ccs version):
    every view covers them. An archive is checked whole first; a bad one writes nothing."""
    done = import_archives(ctx.paths, [Path(a) for a in archives])
    _notes(done.notes)
    for path, (written, kept) in done.counts.items():
        click.echo(visible(f"{path}: imported {written} run(s)" + (f", {kept} already here" if kept else "")))

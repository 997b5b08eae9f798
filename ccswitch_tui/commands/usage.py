"""`ccs usage`: totals across recorded runs, per profile, model, day, label or machine."""

from __future__ import annotations

import click

from ccswitch_tui.commands.common import Context, emit_json, pass_ctx, table
from ccswitch_tui.errors import UsageError
from ccswitch_tui.runs.usage import parse_since, profile_prices, summary_lines, table_rows, to_csv, totals
from ccswitch_tui.terminal_text import visible
from ccswitch_tui.tools.checker import check_name


@click.command("usage")
@click.option("--profile", help="Only this profile's runs.")
@click.option("--by", type=click.Choice(("profile", "model", "day", "label", "machine")), default="profile",
              show_default=True, help="What one row totals (machine: where the runs ran, imported ones too).")
@click.option("--since", metavar="DATE", help="Only requests from DATE on: YYYY-MM-DD, an ISO date-time (UTC) or Nd.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (shape documented in docs/reference.md).")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV.")
@pass_ctx
def usage_cmd(ctx: Context, profile: str | None, by: str, since: str | None, as_json: bool, as_csv: bool) -> None:
    """Requests, tokens, errors and cost (where the profile's [pricing] prices the model) from the
    request records of recorded runs. Runs that were not recorded are named, not counted."""

    if as_json and as_csv:
        raise UsageError("give --json or --csv, not both")
    if profile is not None:

        check_name(profile)
    u = totals(ctx.paths, by=by, profile=profile, since=parse_since(since) if since else None,
               prices=profile_prices(ctx.store))
    if as_json:
        emit_json(u.to_dict())
        return
    # labels, profile and model names and file names come from manifests and records: shown escaped
    if as_csv:
        click.echo(visible(to_csv(u)), nl=False)
        for line in summary_lines(u):
            click.echo(visible(f"ccs: {line}"), err=True)
        return
    if u.rows:
        headers, body = table_rows(u)
        click.echo(table(body, headers))
    else:
        click.echo("no recorded requests" + (f" since {u.since}" if u.since else ""))
    for line in summary_lines(u):
        click.echo(visible(line))

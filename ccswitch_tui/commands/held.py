"""--same-as and --locked for `ccs launch` and `ccs run`: a rerun held to its round (``launch.rerun``).
Without them, and for a label whose round is not locked, nothing of the lock is loaded."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ccswitch_tui.commands.common import Context
from ccswitch_tui.launch import launcher as launch
from ccswitch_tui.runs.round_locks import locked_first, unlock_unstarted
from ccswitch_tui.terminal_text import visible

if TYPE_CHECKING:
    from ccswitch_tui.launch.launcher import Recording
    from ccswitch_tui.launch.rerun import HeldLaunch


def hold_options(f: Any) -> Any:
    """--same-as and --locked: a rerun held to its round (launch and run)."""
    f = click.option("--locked", is_flag=True,
                     help="Lock the round of --label: every later run with that label must be the same as its "
                          "first run (see --same-as).")(f)
    return click.option("--same-as", metavar="ROUND_OR_RUN",
                        help="Refuse to start (exit 3) unless this run would be the same as the first run of round "
                             "ROUND (a --label) or as run ID: profile, base URLs, exported names, key fingerprint, "
                             "models, client and ccs versions, environment. With --record, a served model or "
                             "endpoint that drifts is said as it happens.")(f)


def held_launch(ctx: Context, prep: launch.Prepared, same_as: str | None, label: str | None,
                lock: bool) -> HeldLaunch | None:
    """The launch held to its round when a round or run binds it (``launch.rerun``), else None. A label
    alone costs one small read (is its round locked?)."""
    if same_as is None and not lock and (label is None or locked_first(ctx.paths, label) is None):
        return None
    # lazy: the rerun lock (and the verdict) only for a launch held to a round
    from ccswitch_tui.launch.rerun import hold

    held = hold(prep, ctx.paths, same_as=same_as, label=label, lock=lock)
    for line in dict.fromkeys(held.warnings):
        click.echo(visible(f"ccs: warning: {line}"), err=True)
    return held


def execute_held(ctx: Context, prep: launch.Prepared, held: HeldLaunch | None, label: str | None,
                 recording: Recording) -> int:
    """The launch, with what holding it adds; a round locked on this run is unlocked again when the run
    did not get as far as its manifest."""
    if held is None:
        return launch.execute(prep, ctx.paths, recording=recording, label=label, from_shim=ctx.from_shim)
    try:
        return launch.execute(prep, ctx.paths, recording=recording, label=held.label, fields=held.fields,
                              hooks=held.hooks, from_shim=ctx.from_shim)
    finally:
        if held.fields.get("locked") and held.label is not None:
            unlock_unstarted(ctx.paths, held.label, prep.plan.launch_id)

"""--same-as and --locked for `ccs launch` and `ccs run`: a rerun held to its round (``launch.rerun``).
Without them, and for a label whose round is not locked, nothing of the lock is loaded; what the two
options do is in commands/launching.py (``held_launch``, ``execute_held``), which the launch path runs
without click."""

from __future__ import annotations

from typing import Any

import click


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

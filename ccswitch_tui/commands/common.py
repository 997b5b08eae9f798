"""What every command module shares: the context (commands/context.py), click's decorators, output helpers."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import click

from ccswitch_tui.commands.context import Context as Context  # the commands' context lives there, click-free
from ccswitch_tui.errors import UsageError
from ccswitch_tui.terminal_text import visible, visible_json

pass_ctx = click.make_pass_decorator(Context, ensure=True)

json_option = click.option("--json", "as_json", is_flag=True,
                           help="Print JSON (shape documented in docs/reference.md).")


def emit_json(data: Any) -> None:
    click.echo(visible_json(json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False)))


def table(rows: Sequence[Sequence[str]], headers: Sequence[str]) -> str:
    """A plain aligned table; the last column is never padded. Cells are shown ``visible``: a
    table's cells are names, paths and values from elsewhere."""
    all_rows = [list(headers), *[[visible(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in all_rows) for i in range(len(headers))]
    lines = []
    for r in all_rows:
        cells = [c.ljust(widths[i]) if i < len(r) - 1 else c for i, c in enumerate(r)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def stdin_is_tty() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()


def confirm_or_refuse(question: str, yes: bool, flag_hint: str = "--yes") -> None:
    """Ask on a terminal; refuse without asking when there is none and ``--yes`` was not given."""

    if yes:
        return
    if not stdin_is_tty():
        raise UsageError(f"{question.rstrip('?.')}: not confirmed (no terminal); pass {flag_hint} to confirm")
    if not click.confirm(question, default=False):
        raise click.Abort()


def join(items: Iterable[str]) -> str:
    return ",".join(items) or "-"

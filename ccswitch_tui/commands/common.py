"""What every command module shares: the context (store, keys), output helpers."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import click

from ccswitch_tui.errors import UsageError
from ccswitch_tui.keys.keyring import KeyStore
from ccswitch_tui.paths import Paths, resolve_paths
from ccswitch_tui.profiles.store import Store
from ccswitch_tui.terminal_text import visible, visible_json


@dataclass
class Context:
    """Built once per invocation; everything is looked up lazily so `--help` stays instant."""

    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    _paths: Paths | None = None
    _store: Store | None = None
    _keys: KeyStore | None = None
    from_shim: bool = False  # started by a shim (`ccs use`): a one-prompt run prints no resume hint

    @property
    def paths(self) -> Paths:
        if self._paths is None:
            self._paths = resolve_paths(self.environ)
        return self._paths

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store(self.paths)
        return self._store

    @property
    def keys(self) -> KeyStore:
        if self._keys is None:
            self._keys = KeyStore(self.paths, self.environ)
        return self._keys


pass_ctx = click.make_pass_decorator(Context, ensure=True)

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON (shape documented in the README).")


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

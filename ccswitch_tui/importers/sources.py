"""The three import sources with their default locations, run the way `ccs import` runs them: one
call that plans, applies (unless a dry run) and returns the importers' own report."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ccswitch_tui.atomic import locked
from ccswitch_tui.importers.report import Report
from ccswitch_tui.paths import ensure_private_dir

if TYPE_CHECKING:
    from ccswitch_tui.keys.keyring import KeyStore
    from ccswitch_tui.profiles.store import Store


KINDS = ("cc-switch", "claude", "codex")
IMPORT_LOCK = ".import.lock"  # in the profiles folder, beside the store's own .lock


def import_lock(store: Store) -> Path:
    return store.root / IMPORT_LOCK


def waiting_line(store: Store) -> str:
    return f"waiting for another import to finish (it holds {import_lock(store)})"


@contextlib.contextmanager
def one_import_at_a_time(store: Store, dry_run: bool, on_wait: Callable[[str], None] | None = None
                         ) -> Iterator[None]:
    """Imports that write run one after another, from planning to the last write, whether started by
    `ccs import` or the TUI: a second one then plans against what the first stored and finds it
    unchanged, instead of racing it for the same names and keys. One that finds another running
    waits for it, after ``on_wait`` was told why in one line. A dry run writes nothing, not even
    the lock file, and waits for nobody."""
    if dry_run:
        yield
        return

    ensure_private_dir(store.root)
    with locked(import_lock(store), on_wait=(lambda: on_wait(waiting_line(store))) if on_wait else None):
        yield


@dataclass(frozen=True)
class Source:
    kind: str  # cc-switch | claude | codex
    label: str
    path: Path  # CC Switch's database, Claude Code's settings.json, or the Codex home
    what: str = "its file"  # what to point it at instead, for people

    @property
    def exists(self) -> bool:
        return self.path.exists()


def default_sources(environ: Mapping[str, str]) -> list[Source]:
    """Where `ccs import cc-switch|claude|codex` look when given no path."""
    from ccswitch_tui.importers.cc_switch import default_dir
    from ccswitch_tui.importers.live import claude_settings_path, codex_home, home_dir

    home = home_dir(environ)
    return [
        Source("cc-switch", "CC Switch's providers", default_dir(home) / "cc-switch.db", "a cc-switch.db"),
        Source("claude", "Claude Code's live settings", claude_settings_path(environ, home),
               "a Claude Code settings.json"),
        Source("codex", "Codex's live config", codex_home(environ, home), "a Codex home folder"),
    ]


def run_import(source: Source, store: Store, keys: KeyStore, environ: Mapping[str, str], *, dry_run: bool = False,
               on_wait: Callable[[str], None] | None = None) -> Report:
    """Import from ``source`` as the CLI does (keys into the keyring, profiles through the store),
    one import at a time."""
    with one_import_at_a_time(store, dry_run, on_wait):
        return _import(source, store, keys, environ, dry_run)


def _import(source: Source, store: Store, keys: KeyStore, environ: Mapping[str, str], dry_run: bool) -> Report:
    from ccswitch_tui.importers.planner import Planner

    planner = Planner(store, keys, dry_run=dry_run)
    if source.kind == "cc-switch":
        from ccswitch_tui.importers.cc_switch import plan_cc_switch

        report = plan_cc_switch(planner, source.path, source.path.parent / "config.json")
    elif source.kind == "claude":
        from ccswitch_tui.importers.live import plan_claude

        report = plan_claude(planner, source.path).report
    else:
        from ccswitch_tui.importers.live import plan_codex

        report = plan_codex(planner, source.path, None, environ).report
    if not dry_run:
        planner.apply()
    return report

"""The import sources with their default locations, run the way `ccs import` runs them: one
call that plans, applies (unless a dry run) and returns the importers' own report."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ccswitch_tui import tools
from ccswitch_tui.atomic import locked
from ccswitch_tui.importers.report import Report
from ccswitch_tui.paths import ensure_private_dir
from ccswitch_tui.valueclass import valueclass

if TYPE_CHECKING:
    from ccswitch_tui.keys.keyring import KeyStore
    from ccswitch_tui.profiles.store import Store


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


@valueclass(frozen=True)
class Source:
    kind: str  # cc-switch, or the name of a client whose importer reads its live config
    label: str
    path: Path  # CC Switch's database, or where the client's live config is (a file or a folder)
    what: str = "its file"  # what to point it at instead, for people

    @property
    def exists(self) -> bool:
        return self.path.exists()


ENV_FILE = "env-file"  # `ccs import env FILE`: a .env file, by default the working folder's


def default_sources(environ: Mapping[str, str], cwd: Path | None = None) -> list[Source]:
    """Where `ccs import cc-switch` and `ccs import NAME` (each client with an importer) look when
    given no path, and a .env file in ``cwd`` (`ccs import env FILE`)."""
    from ccswitch_tui.importers.cc_switch import default_dir  # lazy: tomlkit loads only when a profile is written
    from ccswitch_tui.importers.live import home_dir  # lazy: tomlkit loads only when a profile is written

    home = home_dir(environ)
    return [
        Source("cc-switch", "CC Switch's providers", default_dir(home) / "cc-switch.db", "a cc-switch.db"),
        *(Source(s.name, tools.load().importer(s).live_label, tools.load().importer(s).live_path(environ, home),
                 tools.load().importer(s).live_what)
          for s in tools.load().importable()),
        Source(ENV_FILE, "a .env file", (cwd or Path.cwd()) / ".env", "a .env file (KEY=V lines)"),
    ]


def run_import(source: Source, store: Store, keys: KeyStore, environ: Mapping[str, str], *, dry_run: bool = False,
               on_wait: Callable[[str], None] | None = None) -> Report:
    """Import from ``source`` as the CLI does (keys into the keyring, profiles through the store),
    one import at a time."""
    with one_import_at_a_time(store, dry_run, on_wait):
        return _import(source, store, keys, environ, dry_run)


def _import(source: Source, store: Store, keys: KeyStore, environ: Mapping[str, str], dry_run: bool) -> Report:
    from ccswitch_tui.importers.planner import Planner  # lazy: tomlkit loads only when a profile is written

    planner = Planner(store, keys, dry_run=dry_run)
    if source.kind == ENV_FILE:
        from ccswitch_tui.importers import env_file  # lazy: tomlkit loads only when a profile is written

        plan = env_file.plan_env(planner, source.path)
        if not dry_run:
            env_file.apply(planner, plan)
        return plan.report
    if source.kind == "cc-switch":
        # lazy: tomlkit loads only when a profile is written
        from ccswitch_tui.importers.cc_switch import plan_cc_switch

        report = plan_cc_switch(planner, source.path, source.path.parent / "config.json")
    else:
        from ccswitch_tui.importers.live import plan_live  # lazy: tomlkit loads only when a profile is written

        report = plan_live(planner, tools.load().get(source.kind), source.path, None, environ).report
    if not dry_run:
        planner.apply()
    return report

"""The three import sources with their default locations, run the way `ccs import` runs them: one
call that plans, applies (unless a dry run) and returns the importers' own report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .report import Report

KINDS = ("cc-switch", "claude", "codex")


@dataclass(frozen=True)
class Source:
    kind: str  # cc-switch | claude | codex
    label: str
    path: Path  # CC Switch's database, Claude Code's settings.json, or the Codex home

    @property
    def exists(self) -> bool:
        return self.path.exists()


def default_sources(environ: Mapping[str, str]) -> list[Source]:
    """Where `ccs import cc-switch|claude|codex` look when given no path."""
    from .cc_switch import default_dir
    from .live import claude_settings_path, codex_home, home_dir

    home = home_dir(environ)
    return [
        Source("cc-switch", "CC Switch's providers", default_dir(home) / "cc-switch.db"),
        Source("claude", "Claude Code's live settings", claude_settings_path(environ, home)),
        Source("codex", "Codex's live config", codex_home(environ, home)),
    ]


def run_import(source: Source, store: Any, keys: Any, environ: Mapping[str, str], *, dry_run: bool = False
               ) -> Report:
    """Import from ``source`` as the CLI does (keys into the keyring, profiles through the store)."""
    from .planner import Planner

    planner = Planner(store, keys, dry_run=dry_run)
    if source.kind == "cc-switch":
        from .cc_switch import plan_cc_switch

        report = plan_cc_switch(planner, source.path, source.path.parent / "config.json")
    elif source.kind == "claude":
        from .live import plan_claude

        report = plan_claude(planner, source.path).report
    else:
        from .live import plan_codex

        report = plan_codex(planner, source.path, None, environ).report
    if not dry_run:
        planner.apply()
    return report

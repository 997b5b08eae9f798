"""The clients' live configs (each client's importer knows its files: Claude Code's ``settings.json``,
Codex's ``config.toml`` + ``auth.json``, …). With ``scrub``, the imported key is then removed from the
source files by an atomic rewrite that keeps everything else (TOML comments and order, other JSON keys)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ccswitch_tui import tools
from ccswitch_tui.importers.mapping import env_check
from ccswitch_tui.importers.model import Candidate
from ccswitch_tui.importers.naming import host_label, host_of, slugify
from ccswitch_tui.importers.planner import Planner
from ccswitch_tui.importers.report import Item, Report
from ccswitch_tui.importers.scrub_file import rewrite
from ccswitch_tui.importers.scrub_text import scrub_json_text, scrub_toml_text
from ccswitch_tui.safe_read import read_text
from ccswitch_tui.tools.spec import ToolSpec
from ccswitch_tui.valueclass import valueclass


def live_path(spec: ToolSpec, environ: Mapping[str, str]) -> Path:
    """Where the client's live config is by default (its importer knows)."""
    return tools.load().importer(spec).live_path(environ, home_dir(environ))


def _name_for(base_url: str, name: str | None) -> tuple[str, str | None]:
    """(provider name, asked profile name) for a live config, which names no provider."""
    if name:
        return name, name
    host = host_of(base_url)
    return (host_label(host) if host else "imported"), None


@valueclass
class LivePlan:
    report: Report
    candidate: Candidate | None
    item: Item | None
    files: dict[str, Path]  # role → path ("settings", "config", "auth")
    formats: dict[str, str]  # role → "json" | "toml"


def plan_live(planner: Planner, spec: ToolSpec, where: Path, name: str | None = None,
              environ: Mapping[str, str] | None = None) -> LivePlan:
    """Plan the import of the client's live config at ``where``."""
    live = tools.load().importer(spec).read_live(where, environ or {}, env_check)
    report = Report(kind=spec.name, read=live.read, dry_run=planner.dry_run, items=planner.items)
    if live.parsed is None:
        assert live.problem is not None
        planner.problem(live.source, live.problem.action, live.problem.reason)
        planner.finish()
        return LivePlan(report, None, None, live.files, live.formats)
    parsed = live.parsed
    provider_name, asked = _name_for(parsed.fields.base_url, name)
    if not name and parsed.provider_name and slugify(parsed.provider_name):
        provider_name = parsed.provider_name
    c = Candidate(source=live.source, origin=live.origin, provider_name=provider_name,
                  tables={spec.name: parsed.fields}, key=parsed.key, name=asked,
                  description=f"{provider_name} (imported from {live.source})", warnings=parsed.warnings)
    if parsed.key_from and parsed.key_from.startswith("env:"):
        c.warnings.append(f"the key was read from ${parsed.key_from[4:]} in this environment")
    item = planner.add(c)
    planner.finish()
    return LivePlan(report, c, item, live.files, live.formats)


# --- scrub --------------------------------------------------------------------------------------

def key_is_safe(planner: Planner, plan: LivePlan) -> str | None:
    """None when the keyring holds (or, in a dry run, will hold) the key; else why scrubbing is refused."""
    c, item = plan.candidate, plan.item
    if c is None or item is None or not c.key:
        return "no key was imported, so there is nothing to scrub"
    if item.action == "error" or not item.key_id or item.key_id.startswith("env:"):
        return "the key is not in the keyring (see above), so the source keeps it"
    if planner.dry_run:
        return None if planner.value_of(item.key_id) == c.key else "the key would not be in the keyring"
    stored = planner.keys.get(item.key_id)
    if stored != c.key:
        return f"the keyring does not hold this key under {item.key_id!r}, so the source keeps it"
    return None


def scrub(planner: Planner, plan: LivePlan) -> None:
    """Remove every copy of the imported key from the live files (exact values), atomically."""
    why_not = key_is_safe(planner, plan)
    roles = list(plan.files)
    if why_not:
        plan.report.scrubbed.append({"path": str(plan.files[roles[0]]), "removed": [], "remaining": None,
                                     "note": f"not scrubbed: {why_not}"})
        return
    key = plan.candidate.key if plan.candidate else None
    assert key
    for role in roles:
        path = plan.files[role]
        if not path.exists():
            continue
        real = path.resolve()  # rewrite a symlink's target, keep the link
        entry: dict[str, Any] = {"path": str(path), "removed": [], "remaining": None, "note": None}
        try:
            text = read_text(real)
            if key not in text:
                continue
            new_text, removed = (scrub_toml_text if plan.formats.get(role) == "toml" else scrub_json_text)(text, key)
        except (OSError, ValueError) as exc:  # changed or unreadable since the import read it
            entry["note"] = f"not scrubbed: cannot rewrite it safely ({exc}); remove the key by hand"
            plan.report.scrubbed.append(entry)
            continue
        entry["removed"] = removed
        if key in new_text:
            lines = [str(i) for i, line in enumerate(new_text.splitlines(), 1) if key in line]
            entry["remaining"] = [int(n) for n in lines]
            entry["note"] = (f"the key still appears on line {', '.join(lines)} inside a longer value or a "
                             "comment; remove it by hand")
        if removed and not planner.dry_run:
            why = rewrite(real, text.encode("utf-8"), new_text.encode("utf-8"))
            if why:
                entry["removed"], entry["remaining"] = [], None
                entry["note"] = f"not scrubbed: {why}; the key is in the keyring, and the file still holds it"
        plan.report.scrubbed.append(entry)


def home_dir(environ: Mapping[str, str]) -> Path:
    home = environ.get("HOME")
    return Path(home) if home else Path(os.path.expanduser("~"))

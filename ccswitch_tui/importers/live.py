"""The live configs of the clients: Claude Code's ``settings.json`` (its ``env`` table) and Codex's
``config.toml`` + ``auth.json``. With ``scrub``, the imported key is then removed from the source
files by an atomic rewrite that keeps everything else (TOML comments and order, other JSON keys)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ccswitch_tui.atomic import atomic_write
from ccswitch_tui.errors import UsageError
from ccswitch_tui.importers.mapping import parse_claude_settings, parse_codex_config, parse_toml_text
from ccswitch_tui.importers.model import Candidate, RowProblem
from ccswitch_tui.importers.naming import host_label, host_of, slugify
from ccswitch_tui.importers.planner import Planner
from ccswitch_tui.importers.report import Item, Report
from ccswitch_tui.importers.scrub_text import scrub_json_text, scrub_toml_text
from ccswitch_tui.safe_read import decode_error_line, loads_json, read_text


def _own_dir(environ: Mapping[str, str], name: str) -> str | None:
    """$name, unless this runs inside a ccs child, where it is ccs's own per-profile folder."""
    return None if environ.get("CCS_LAUNCH_ID") else environ.get(name)


def claude_settings_path(environ: Mapping[str, str], home: Path) -> Path:
    base = _own_dir(environ, "CLAUDE_CONFIG_DIR")
    return (Path(base).expanduser() if base else home / ".claude") / "settings.json"


def codex_home(environ: Mapping[str, str], home: Path) -> Path:
    base = _own_dir(environ, "CODEX_HOME")
    return Path(base).expanduser() if base else home / ".codex"


def _read_text(path: Path, missing: str | None = "not found") -> str | None:
    """The file's text. A missing file: UsageError with ``missing``, or None when ``missing`` is None."""
    try:
        return read_text(path)
    except FileNotFoundError:
        if missing is None:
            return None
        raise UsageError(f"{path}: {missing}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: cannot read: {decode_error_line(exc)}") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc}") from None


def _read_json(path: Path, required: bool = True) -> Any:
    """The file's JSON (an empty file reads as {}); None for a missing file that is not required."""
    text = _read_text(path, "not found" if required else None)
    if text is None:
        return None
    if not text.strip():
        return {}
    try:
        return loads_json(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}; fix or move the file") from None


def _name_for(base_url: str, name: str | None) -> tuple[str, str | None]:
    """(provider name, asked profile name) for a live config, which names no provider."""
    if name:
        return name, name
    host = host_of(base_url)
    return (host_label(host) if host else "imported"), None


@dataclass
class LivePlan:
    report: Report
    candidate: Candidate | None
    item: Item | None
    files: dict[str, Path]  # role → path ("settings", "config", "auth")


def plan_claude(planner: Planner, path: Path, name: str | None = None) -> LivePlan:
    settings = _read_json(path)
    report = Report(kind="claude", read=[str(path)], dry_run=planner.dry_run, items=planner.items)
    source = str(path)
    try:
        if not isinstance(settings, Mapping):
            raise RowProblem("error", "the file does not hold a JSON object")
        parsed = parse_claude_settings(settings)
    except RowProblem as p:
        planner.problem(source, p.action, p.reason)
        planner.finish()
        return LivePlan(report, None, None, {"settings": path})
    provider_name, asked = _name_for(parsed.fields.base_url, name)
    c = Candidate(source=source, origin=f"Claude Code settings {path}", provider_name=provider_name,
                  claude=parsed.fields, key=parsed.key, name=asked,
                  description=f"{provider_name} (imported from {path})", warnings=parsed.warnings)
    item = planner.add(c)
    planner.finish()
    return LivePlan(report, c, item, {"settings": path})


def plan_codex(planner: Planner, home: Path, name: str | None = None,
               environ: Mapping[str, str] | None = None) -> LivePlan:
    config_path, auth_path = home / "config.toml", home / "auth.json"
    text = _read_text(config_path, "not found (use --home DIR for another Codex home)")
    assert text is not None
    auth = _read_json(auth_path, required=False)
    report = Report(kind="codex", read=[str(config_path)] + ([str(auth_path)] if auth is not None else []),
                    dry_run=planner.dry_run, items=planner.items)
    files = {"config": config_path, "auth": auth_path}
    source = str(config_path)
    try:
        try:
            cfg = parse_toml_text(text)
        except RowProblem as p:
            raise UsageError(f"{config_path}: {p.reason.removeprefix('config is ')}") from None
        parsed = parse_codex_config(cfg, auth, environ)
    except RowProblem as p:
        planner.problem(source, p.action, p.reason)
        planner.finish()
        return LivePlan(report, None, None, files)
    provider_name, asked = _name_for(parsed.fields.base_url, name)
    if not name and parsed.provider_name and slugify(parsed.provider_name):
        provider_name = parsed.provider_name
    c = Candidate(source=source, origin=f"Codex config {config_path}", provider_name=provider_name,
                  codex=parsed.fields, key=parsed.key, name=asked,
                  description=f"{provider_name} (imported from {config_path})", warnings=parsed.warnings)
    if parsed.key_from and parsed.key_from.startswith("env:"):
        c.warnings.append(f"the key was read from ${parsed.key_from[4:]} in this environment")
    item = planner.add(c)
    planner.finish()
    return LivePlan(report, c, item, files)


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
    roles = [r for r in ("settings", "config", "auth") if r in plan.files]
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
            new_text, removed = (scrub_toml_text if role == "config" else scrub_json_text)(text, key)
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
            mode = real.stat().st_mode & 0o777
            atomic_write(real, new_text, mode=mode)
        plan.report.scrubbed.append(entry)


def home_dir(environ: Mapping[str, str]) -> Path:
    home = environ.get("HOME")
    return Path(home) if home else Path(os.path.expanduser("~"))

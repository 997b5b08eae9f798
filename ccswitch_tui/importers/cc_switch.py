"""CC Switch: its SQLite database (``~/.cc-switch/cc-switch.db``, opened read-only) and its legacy
``config.json`` beside it.

Each ``providers`` row (primary key ``(id, app_type)``) becomes a candidate: a Claude Code row's
``settings_config`` is a whole settings.json; a Codex row's is ``{"auth": {...}, "config": TOML}``.
Rows of other apps are reported and skipped. Nothing is ever written to CC Switch's files.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ccswitch_tui import tools
from ccswitch_tui.errors import UsageError
from ccswitch_tui.importers.mapping import env_check, nonblank
from ccswitch_tui.importers.model import Candidate, RowProblem, fail, skip
from ccswitch_tui.importers.planner import Planner
from ccswitch_tui.importers.report import Report
from ccswitch_tui.policy.shapes import holds_credential
from ccswitch_tui.safe_read import loads_json, read_text
from ccswitch_tui.terminal_text import visible
from ccswitch_tui.valueclass import field, valueclass

REQUIRED_COLUMNS = ("id", "app_type", "name", "settings_config")
OPTIONAL_COLUMNS = ("website_url", "category", "notes", "meta", "sort_index", "created_at")


class SourceError(Exception):
    """A whole source that cannot be read (missing, locked, not CC Switch's)."""


@valueclass
class Row:
    source: str           # "db:claude/ID" or "config.json:claude/ID"
    where: str            # the file, for the header comment
    app: str
    id: str
    name: str
    settings: Any         # a JSON text (database) or an object (config.json)
    website: str | None = None
    notes: str | None = None
    meta: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


def default_dir(home: Path) -> Path:
    return home / ".cc-switch"


def read_db(path: Path, timeout: float = 2.0) -> list[Row]:  # noqa: C901
    """Every provider row, in CC Switch's own order. Raises SourceError with one readable line."""
    if not path.exists():
        raise SourceError(f"{path}: not found")
    if not path.is_file():
        raise SourceError(f"{path}: not a file")
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=timeout)
    except sqlite3.Error as exc:
        raise SourceError(f"{path}: cannot open: {exc}") from None
    try:
        try:
            cols = [r[1] for r in conn.execute("PRAGMA table_info(providers)").fetchall()]
        except sqlite3.DatabaseError as exc:
            raise SourceError(_db_message(path, exc)) from None
        if not cols:
            raise SourceError(f"{path}: not a CC Switch database (it has no `providers` table)")
        missing = [c for c in REQUIRED_COLUMNS if c not in cols]
        if missing:
            raise SourceError(f"{path}: not a CC Switch database (`providers` lacks {', '.join(missing)})")
        optional = [c for c in OPTIONAL_COLUMNS if c in cols]
        order = []
        if "sort_index" in cols:
            order.append("COALESCE(sort_index, 999999)")
        if "created_at" in cols:
            order.append("created_at")
        order.append("id")
        sql = (f"SELECT {', '.join(REQUIRED_COLUMNS + tuple(optional))} FROM providers "
               f"ORDER BY {', '.join(order)}")
        try:
            raw = conn.execute(sql).fetchall()
        except sqlite3.DatabaseError as exc:
            raise SourceError(_db_message(path, exc)) from None
    finally:
        conn.close()
    rows = []
    for r in raw:
        values = dict(zip(REQUIRED_COLUMNS + tuple(optional), r, strict=True))
        app, pid = str(values["app_type"]), str(values["id"])
        rows.append(Row(
            source=f"db:{app}/{pid}", where=str(path), app=app, id=pid, name=str(values["name"] or pid),
            settings=values["settings_config"], website=nonblank(values.get("website_url")),
            notes=nonblank(values.get("notes")), meta=values.get("meta"),
        ))
    return rows


def _db_message(path: Path, exc: Exception) -> str:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return f"{path}: the database is locked by another program (CC Switch?); close it and try again"
    if "not a database" in text or "malformed" in text or "encrypted" in text:
        return f"{path}: not a SQLite database (is this CC Switch's cc-switch.db?)"
    return f"{path}: cannot read: {text}"


def read_config_json(path: Path) -> list[Row]:
    """Providers of the legacy ``{"claude": {"providers": {ID: {...}}, "current": ID}, ...}`` file."""
    try:
        text = read_text(path)
    except FileNotFoundError:
        raise SourceError(f"{path}: not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"{path}: cannot read: {exc}") from None
    try:
        data = loads_json(text)
    except json.JSONDecodeError as exc:
        raise SourceError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    if not isinstance(data, Mapping):
        raise SourceError(f"{path}: not a CC Switch config (expected an object of apps)")
    rows = []
    for app, section in data.items():
        if not isinstance(section, Mapping) or not isinstance(section.get("providers"), Mapping):
            continue
        for pid, prov in section["providers"].items():
            prov = prov if isinstance(prov, Mapping) else {}
            rows.append(Row(
                source=f"config.json:{app}/{pid}", where=str(path), app=str(app), id=str(pid),
                name=str(prov.get("name") or pid), settings=prov.get("settingsConfig", prov.get("settings_config")),
                website=nonblank(prov.get("websiteUrl")), notes=nonblank(prov.get("notes")), meta=prov.get("meta"),
            ))
    return rows


def first_line(text: Any) -> str:
    """The first non-blank line of a text (at most 200 characters); empty for anything else."""
    if not isinstance(text, str):
        return ""
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""


def supported_apps() -> tuple[str, ...]:
    """CC Switch's app types ccs imports: one per client whose importer reads them, in registry order."""
    return tuple(app for s in tools.load().importable() if (app := tools.load().importer(s).cc_switch_app))


def candidate_from_row(row: Row) -> Candidate:
    """One row → a candidate. Raises RowProblem."""
    spec = tools.load().by_cc_switch_app(row.app)
    if spec is None:
        raise skip(f"app type {row.app!r} is not supported by ccs (only {', '.join(supported_apps())})")
    settings = row.settings
    if isinstance(settings, (str, bytes)):
        try:
            settings = loads_json(settings)
        except json.JSONDecodeError as exc:
            raise fail(f"settings_config is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
                       ) from None
    if not isinstance(settings, Mapping):
        raise fail("settings_config is not a JSON object")
    meta, warnings = _meta(row.meta)
    kind = meta.get("providerType")
    registry = tools.load()
    managed = {"github_copilot"} | {t for s in registry.importable()
                                    for t in registry.importer(s).managed_provider_types}
    if kind in managed or (isinstance(meta.get("authBinding"), Mapping)
                           and meta["authBinding"].get("source") == "managed_account"):
        raise skip(f"signs in through a managed account ({kind or 'authBinding'}), which ccs does not import")

    app_label = spec.label
    name = visible(row.name)  # a control character in the name or notes is kept as its escape: a profile is plain text
    origin = f"CC Switch {row.where}, {app_label} provider {name!r} (id {row.id})"
    description = visible(first_line(row.notes)) or f"{name} (imported from CC Switch)"
    website = row.website if row.website and row.website.startswith(("http://", "https://")) else None
    description, website = drop_credentials(name, description, website, warnings)

    parsed = tools.load().importer(spec).from_cc_switch(settings, meta, env_check)
    return Candidate(source=row.source, origin=origin, provider_name=name, tables={spec.name: parsed.fields},
                     key=parsed.key, website=website, description=description,
                     warnings=warnings + parsed.warnings)


def drop_credentials(name: str, description: str, website: str | None, warnings: list[str]
                     ) -> tuple[str, str | None]:
    """Notes and a website URL that hold a credential stay behind, each with a report line."""

    if holds_credential(description):
        warnings.append("the notes hold a credential; not imported (the description is the provider's name)")
        description = f"{name} (imported from CC Switch)"
    if website and holds_credential(website):
        warnings.append("the website URL holds a credential; not imported")
        website = None
    return description, website


def _meta(raw: Any) -> tuple[dict[str, Any], list[str]]:
    if raw is None or raw == "":
        return {}, []
    if isinstance(raw, Mapping):
        return dict(raw), []
    try:
        data = loads_json(raw)
    except (TypeError, json.JSONDecodeError):
        return {}, ["meta is not valid JSON; ignored"]
    return (dict(data), []) if isinstance(data, Mapping) else ({}, ["meta is not a JSON object; ignored"])


def plan_cc_switch(planner: Planner, db: Path, config_json: Path | None, *, timeout: float = 2.0) -> Report:  # noqa: C901
    """Read both sources and feed every row to the planner. A source that cannot be read is one error
    line; when neither can be read, UsageError (nothing to import)."""
    report = Report(kind="cc-switch", read=[], dry_run=planner.dry_run, items=planner.items)
    rows: list[Row] = []
    problems: list[str] = []
    try:
        rows.extend(read_db(db, timeout))
        report.read.append(str(db))
    except SourceError as exc:
        problems.append(str(exc))
    db_absent = not db.exists()  # only the legacy config.json, say: no error when that one is read
    db_keys = {(r.app, r.id) for r in rows}
    legacy_missing = True
    if config_json is not None and config_json.exists():
        legacy_missing = False
        try:
            legacy = read_config_json(config_json)
            report.read.append(str(config_json))
        except SourceError as exc:
            problems.append(str(exc))
            legacy = []
        for r in legacy:
            if (r.app, r.id) in db_keys:
                continue  # the database holds the current version of this provider
            rows.append(r)
    if not report.read:
        where = f"{db}" + ("" if legacy_missing or config_json is None else f" or {config_json}")
        raise UsageError(f"no CC Switch data could be read from {where}: {'; '.join(problems)}"
                         + ("" if db.exists() else " (use --db PATH)"))
    if db_absent:
        problems = [p for p in problems if not p.startswith(f"{db}: ")]
    for p in problems:
        planner.problem(p.split(": ", 1)[0], "error", p.split(": ", 1)[1] if ": " in p else p)

    apps = supported_apps()

    def rank(r: Row) -> int:
        return apps.index(r.app) if r.app in apps else len(apps)

    for row in sorted(rows, key=rank):  # the first client's rows first: merged profiles take their names
        try:
            candidate = candidate_from_row(row)
        except RowProblem as p:
            planner.problem(row.source, p.action, p.reason, name=row.name)
            continue
        planner.add(candidate)
    planner.finish()
    return report

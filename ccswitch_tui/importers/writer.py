"""Profile texts for what an import plans: a whole new profile, or the tables an import adds to an
existing one (its comments and order kept). Each text is validated like a hand-written profile."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import tomlkit

from ccswitch_tui import tools
from ccswitch_tui.errors import CcsError
from ccswitch_tui.importers.model import Candidate, Side, Slot, fail
from ccswitch_tui.importers.naming import slugify
from ccswitch_tui.profiles.store import validate_text

MIN_KEY_CHECK = 8  # shorter "keys" are placeholders; searching texts for them finds only noise


def today() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d")


def side_table(tool: str, side: Side, provider_base_url: str, profile_name: str) -> Any:
    """The profile table for an imported side, as its client's importer writes it."""
    fields = tools.load().importer(tools.load().get(tool)).table(side, provider_base_url, profile_name)
    t = tomlkit.table()
    for k, v in fields.items():
        if isinstance(v, dict):
            sub = tomlkit.table()
            for name, value in v.items():
                sub.add(name, value)
            t.add(k, sub)
        else:
            t.add(k, v)
    return t


def render_new(s: Slot) -> str:
    """The whole text of a profile this import creates."""
    doc = tomlkit.document()
    doc.add(tomlkit.comment(f"Imported by ccs on {today()} from:"))
    for origin in s.origins:
        doc.add(tomlkit.comment(f"  {origin}"))
    if s.key_ref and not s.key_ref.startswith("env:"):
        doc.add(tomlkit.comment(f"The key is not in this file: it is in the OS keyring under id {s.key_ref!r}"))
        doc.add(tomlkit.comment(f"(see `ccs key show {s.key_ref}`)."))
    doc.add(tomlkit.nl())
    doc.add("schema", 1)
    doc.add("description", s.description)
    prov = tomlkit.table()
    prov.add("name", s.provider_name)
    prov.add("base_url", s.provider_base_url)
    prov.add("key", s.key_ref or slugify(s.provider_name) or s.name)
    if s.website:
        prov.add("website", s.website)
    doc.add("provider", prov)
    sides = s.sides()
    for tool, side in sides.items():
        doc.add(tool, side_table(tool, side, s.provider_base_url, s.name))
    run = tomlkit.table()
    registry = tools.load()
    leading = sorted(sides, key=lambda t: registry.importer(registry.get(t)).run_rank)  # the side [run] follows first
    run.add("export", [registry.importer(registry.get(leading[0])).run_export] if leading else ["anthropic"])
    model = next((m for t in leading if (m := getattr(sides[t], "model", None))), None)
    if model:
        run.add("model", model)
    doc.add("run", run)
    return tomlkit.dumps(doc)


def render_added(doc: Any, s: Slot) -> str:
    """An existing profile's document with the tables this import adds, each with a comment saying
    where it came from."""
    for tool, origin in s.added:
        t = side_table(tool, s.side(tool), s.provider_base_url, s.name)
        t.comment(f"added by ccs import from {origin} on {today()}")
        doc.add(tool, t)
    return tomlkit.dumps(doc)


def check_alone(c: Candidate) -> None:
    """Validate the profile this candidate alone would make, so a bad URL is reported on its row."""
    sides = c.sides()
    assert sides
    first = next(iter(sides.values()))
    probe = Slot(name="import-check", provider_name=c.provider_name or "x", provider_base_url=first.base_url,
                 key_ref="import-check", tables=dict(sides), website=c.website,
                 description=c.description)
    try:
        text = render_new(probe)
        validate_text("import-check", text, "import-check.toml")
    except CcsError as exc:
        raise fail(str(exc).removeprefix("import-check.toml: ")) from None
    if c.key and len(c.key) >= MIN_KEY_CHECK and c.key in text:
        raise fail("the key also appears in a non-secret field; refusing to write it into a profile")

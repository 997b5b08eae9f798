"""Profile texts for what an import plans: a whole new profile, or the tables an import adds to an
existing one (its comments and order kept). Each text is validated like a hand-written profile."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import tomlkit

from ccswitch_tui.errors import CcsError
from ccswitch_tui.importers.model import Candidate, CodexFields, Slot, fail, norm_url
from ccswitch_tui.importers.naming import slugify
from ccswitch_tui.profiles.store import validate_text
from ccswitch_tui.tools.claude import MODEL_VARS as CLAUDE_MODEL_VARS
from ccswitch_tui.tools.claude import ClaudeSide
from ccswitch_tui.tools.codex import CodexSide, default_provider_id

MIN_KEY_CHECK = 8  # shorter "keys" are placeholders; searching texts for them finds only noise


def today() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d")


def claude_table(f: ClaudeSide, provider_base_url: str) -> Any:
    t = tomlkit.table()
    if norm_url(f.base_url) != norm_url(provider_base_url):
        t.add("base_url", f.base_url)
    t.add("auth", f.auth)
    for name in CLAUDE_MODEL_VARS.values():
        if getattr(f, name):
            t.add(name, getattr(f, name))
    if f.env:
        env = tomlkit.table()
        for k, v in f.env.items():
            env.add(k, v)
        t.add("env", env)
    return t


def codex_table(f: CodexSide | CodexFields, provider_base_url: str, profile_name: str) -> Any:
    t = tomlkit.table()
    if norm_url(f.base_url) != norm_url(provider_base_url):
        t.add("base_url", f.base_url)
    t.add("model", f.model)
    t.add("provider_id", f.provider_id or default_provider_id(profile_name))
    if f.reasoning_effort:
        t.add("reasoning_effort", f.reasoning_effort)
    if f.wire_api != "responses":
        t.add("wire_api", f.wire_api)
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
    if s.claude:
        doc.add("claude", claude_table(s.claude, s.provider_base_url))
    if s.codex:
        doc.add("codex", codex_table(s.codex, s.provider_base_url, s.name))
    run = tomlkit.table()
    run.add("export", ["openai"] if s.codex else ["anthropic"])
    model = (s.codex.model if s.codex else None) or (s.claude.model if s.claude else None)
    if model:
        run.add("model", model)
    doc.add("run", run)
    return tomlkit.dumps(doc)


def render_added(doc: Any, s: Slot) -> str:
    """An existing profile's document with the tables this import adds, each with a comment saying
    where it came from."""
    for tool, origin in s.added:
        f = s.side(tool)
        t = codex_table(f, s.provider_base_url, s.name) if tool == "codex" else claude_table(f, s.provider_base_url)
        t.comment(f"added by ccs import from {origin} on {today()}")
        doc.add(tool, t)
    return tomlkit.dumps(doc)


def check_alone(c: Candidate) -> None:
    """Validate the profile this candidate alone would make, so a bad URL is reported on its row."""
    first = c.claude or c.codex
    assert first is not None
    probe = Slot(name="import-check", provider_name=c.provider_name or "x", provider_base_url=first.base_url,
                 key_ref="import-check", claude=c.claude, codex=c.codex, website=c.website,
                 description=c.description)
    try:
        text = render_new(probe)
        validate_text("import-check", text, "import-check.toml")
    except CcsError as exc:
        raise fail(str(exc).removeprefix("import-check.toml: ")) from None
    if c.key and len(c.key) >= MIN_KEY_CHECK and c.key in text:
        raise fail("the key also appears in a non-secret field; refusing to write it into a profile")

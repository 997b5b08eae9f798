"""The importers' model: what a source entry becomes (a ``Candidate``, or a ``RowProblem`` saying why
not), and the profiles a plan works on (``Slot``: one already on disk, or one the import creates).

A Claude Code entry becomes a ``profile.ClaudeSide``, the same as a profile's; a Codex entry becomes
a ``CodexFields``, which may leave the provider id to the profile's name.

Nothing here reads or writes files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ccswitch_tui.importers.naming import host_of
from ccswitch_tui.importers.report import Item
from ccswitch_tui.model import Profile
from ccswitch_tui.tools.claude import MODEL_VARS as CLAUDE_MODEL_VARS
from ccswitch_tui.tools.claude import ClaudeSide
from ccswitch_tui.tools.codex import CodexSide

TOOL_SIDES = ("claude", "codex")


class RowProblem(Exception):
    """A source entry that is not imported; ``action`` is "skipped" (nothing to import) or "error"."""

    def __init__(self, action: str, reason: str):
        super().__init__(reason)
        self.action = action
        self.reason = reason


def skip(reason: str) -> RowProblem:
    return RowProblem("skipped", reason)


def fail(reason: str) -> RowProblem:
    return RowProblem("error", reason)


def norm_url(url: str) -> str:
    """A base URL as the importers compare it: surrounding blanks and trailing slashes dropped."""
    return url.strip().rstrip("/")


@dataclass(frozen=True)
class CodexFields:
    """The [codex] table an import brings. Unlike ``profile.CodexSide``, the provider id may be left
    to the profile's name (None: ``default_provider_id`` once the profile is named), and there is no
    env table to import."""

    base_url: str
    model: str
    provider_id: str | None = None
    reasoning_effort: str | None = None
    wire_api: str = "responses"


Side = ClaudeSide | CodexSide | CodexFields


def compared(side: Side) -> dict[str, Any]:
    """The settings that make two sides of one tool the same setup: the base URL (as ``norm_url``
    has it), then Claude Code's auth, models and env, or Codex's model and reasoning effort (its
    provider id and env are not compared)."""
    if isinstance(side, ClaudeSide):
        return {
            "base_url": norm_url(side.base_url),
            "auth": side.auth,
            **{f: getattr(side, f) for f in CLAUDE_MODEL_VARS.values()},
            "env": dict(sorted(side.env.items())),
        }
    return {"base_url": norm_url(side.base_url), "model": side.model, "reasoning_effort": side.reasoning_effort,
            "wire_api": side.wire_api}


@dataclass
class Candidate:
    """One provider entry read from a source. ``key`` lives in memory only, never in a repr."""

    source: str                      # short reference shown in the report, e.g. "db:claude/abc"
    origin: str                      # a longer description for the profile's header comment
    provider_name: str
    claude: ClaudeSide | None = None
    codex: CodexFields | None = None
    key: str | None = field(default=None, repr=False)
    website: str | None = None
    description: str = ""
    name: str | None = None          # a profile name asked for (--name)
    warnings: list[str] = field(default_factory=list)

    def sides(self) -> dict[str, ClaudeSide | CodexFields]:
        return {t: getattr(self, t) for t in TOOL_SIDES if getattr(self, t) is not None}

    def hosts(self) -> set[str]:
        return {host_of(f.base_url) for f in self.sides().values()} - {""}


@dataclass
class Slot:
    """A profile in the plan: one already on disk, or one this import creates."""

    name: str
    provider_name: str
    provider_base_url: str
    key_ref: str | None
    claude: ClaudeSide | None = None
    codex: CodexSide | CodexFields | None = None   # a profile's own side, or one an import brings
    existing: bool = False
    website: str | None = None
    description: str = ""
    origins: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    added: list[tuple[str, str]] = field(default_factory=list)   # (side, origin) added to an existing profile
    items: list[Item] = field(default_factory=list)
    new_key: str | None = None       # a key id this slot stores
    dirty: bool = False
    claimed: dict[str, str] = field(default_factory=dict)        # side → the source that matched it

    @classmethod
    def of_profile(cls, p: Profile) -> Slot:
        return cls(
            name=p.name, provider_name=p.provider.name, provider_base_url=p.provider.base_url,
            key_ref=p.key_id, claude=p.side("claude"), codex=p.side("codex"),
            existing=True, website=p.provider.website, description=p.description,
        )

    def side(self, tool: str) -> Side | None:
        return getattr(self, tool)

    def hosts(self) -> set[str]:
        urls = [self.provider_base_url] + [f.base_url for f in (self.claude, self.codex) if f is not None]
        return {host_of(u) for u in urls} - {""}

"""The importers' model: what a source entry becomes (a ``Candidate``, or a ``RowProblem`` saying why
not), and the profiles a plan works on (``Slot``: one already on disk, or one the import creates).

Nothing here reads or writes files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..profile import Profile
from .naming import host_of
from .report import Item

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


@dataclass
class ClaudeFields:
    base_url: str
    auth: str = "token"
    model: str | None = None
    opus: str | None = None
    sonnet: str | None = None
    haiku: str | None = None
    subagent: str | None = None
    env: dict[str, str] = field(default_factory=dict)

    MODEL_FIELDS = ("model", "opus", "sonnet", "haiku", "subagent")

    def comparable(self) -> dict[str, Any]:
        return {
            "base_url": norm_url(self.base_url),
            "auth": self.auth,
            **{f: getattr(self, f) for f in self.MODEL_FIELDS},
            "env": dict(sorted(self.env.items())),
        }

    @classmethod
    def from_profile(cls, p: Profile) -> ClaudeFields | None:
        c = p.claude
        if c is None:
            return None
        return cls(c.base_url, c.auth, c.model, c.opus, c.sonnet, c.haiku, c.subagent, dict(c.env))


@dataclass
class CodexFields:
    base_url: str
    model: str
    provider_id: str | None = None  # None: derived from the profile name
    reasoning_effort: str | None = None

    def comparable(self) -> dict[str, Any]:
        return {"base_url": norm_url(self.base_url), "model": self.model, "reasoning_effort": self.reasoning_effort}

    @classmethod
    def from_profile(cls, p: Profile) -> CodexFields | None:
        x = p.codex
        if x is None:
            return None
        return cls(x.base_url, x.model, x.provider_id, x.reasoning_effort)


@dataclass
class Candidate:
    """One provider entry read from a source. ``key`` lives in memory only, never in a repr."""

    source: str                      # short reference shown in the report, e.g. "db:claude/abc"
    origin: str                      # a longer description for the profile's header comment
    provider_name: str
    claude: ClaudeFields | None = None
    codex: CodexFields | None = None
    key: str | None = field(default=None, repr=False)
    website: str | None = None
    description: str = ""
    name: str | None = None          # a profile name asked for (--name)
    warnings: list[str] = field(default_factory=list)

    def sides(self) -> dict[str, ClaudeFields | CodexFields]:
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
    claude: ClaudeFields | None = None
    codex: CodexFields | None = None
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
            key_ref=p.key_id, claude=ClaudeFields.from_profile(p), codex=CodexFields.from_profile(p),
            existing=True, website=p.provider.website, description=p.description,
        )

    def side(self, tool: str) -> ClaudeFields | CodexFields | None:
        return getattr(self, tool)

    def hosts(self) -> set[str]:
        urls = [self.provider_base_url] + [f.base_url for f in (self.claude, self.codex) if f is not None]
        return {host_of(u) for u in urls} - {""}

"""The importers' model: what a source entry becomes (a ``Candidate``, or a ``RowProblem`` saying why
not), and the profiles a plan works on (``Slot``: one already on disk, or one the import creates).

Each side is the client's own: what its importer (``tools.load().importer(spec)``) read, or a profile's
side. The importer says how two sides compare.

Nothing here reads or writes files.
"""

from __future__ import annotations

from typing import Any

from ccswitch_tui import tools
from ccswitch_tui.importers.naming import host_of
from ccswitch_tui.importers.report import Item
from ccswitch_tui.model import Profile
from ccswitch_tui.tools.importing import RowProblem, fail, norm_url, skip
from ccswitch_tui.valueclass import field, valueclass

__all__ = ["Candidate", "RowProblem", "Side", "Slot", "compared", "fail", "in_order", "norm_url", "skip"]

Side = Any  # a client's side: what its importer read, or a profile's


def in_order(sides: dict[str, Side]) -> dict[str, Side]:
    """The sides in registry order (the order a profile's tables are written in)."""
    return {s.name: sides[s.name] for s in tools.load().importable() if sides.get(s.name) is not None}


def compared(tool: str, side: Side) -> dict[str, Any]:
    """The settings that make two sides of one tool the same setup (the client's importer says which:
    the base URL as ``norm_url`` has it, and its models, auth, env …)."""
    return tools.load().importer(tools.load().get(tool)).compared(side)


@valueclass
class Candidate:
    """One provider entry read from a source. ``key`` lives in memory only, never in a repr."""

    source: str                      # short reference shown in the report, e.g. "db:claude/abc"
    origin: str                      # a longer description for the profile's header comment
    provider_name: str
    tables: dict[str, Side] = field(default_factory=dict)  # tool → the side this entry brings
    key: str | None = field(default=None, repr=False)
    website: str | None = None
    description: str = ""
    name: str | None = None          # a profile name asked for (--name)
    warnings: list[str] = field(default_factory=list)

    def sides(self) -> dict[str, Side]:
        return in_order(self.tables)

    def hosts(self) -> set[str]:
        return {host_of(f.base_url) for f in self.sides().values()} - {""}


@valueclass
class Slot:
    """A profile in the plan: one already on disk, or one this import creates."""

    name: str
    provider_name: str
    provider_base_url: str
    key_ref: str | None
    tables: dict[str, Side] = field(default_factory=dict)   # a profile's own sides, or ones an import brings
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
            key_ref=p.key_id, tables={s.name: p.side(s.name) for s in tools.load().importable() if p.side(s.name)},
            existing=True, website=p.provider.website, description=p.description,
        )

    def side(self, tool: str) -> Side | None:
        return self.tables.get(tool)

    def sides(self) -> dict[str, Side]:
        return in_order(self.tables)

    def hosts(self) -> set[str]:
        urls = [self.provider_base_url] + [f.base_url for f in self.sides().values()]
        return {host_of(u) for u in urls} - {""}

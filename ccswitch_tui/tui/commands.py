"""The command palette: the same actions as the footer bindings, plus jumping to a profile."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import Any, Protocol, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.fuzzy import Matcher
from textual.markup import escape

from ccswitch_tui.tui.actions import PALETTE


class PaletteHost(Protocol):
    """What the palette needs from the app (the app satisfies it; no import of the app here)."""

    def action_enabled(self, name: str) -> bool | None: ...

    async def run_action(self, action: str) -> Any: ...

    def profile_entries(self) -> Iterable[Any]: ...

    def select_profile(self, name: str) -> None: ...


def highlight(matcher: Matcher, text: str) -> Content:
    """The matched letters highlighted in plain text (Matcher.highlight would read ``[run]`` as markup)."""
    content = Content(text)
    _score, offsets = matcher.fuzzy_search.match(matcher.query, text)
    for offset in offsets:
        if not text[offset].isspace():
            content = content.stylize(matcher.match_style, offset, offset + 1)
    return content


class CcsCommands(Provider):
    @property
    def ccs(self) -> PaletteHost:
        return cast(PaletteHost, self.app)

    def _enabled(self) -> list[tuple[str, str, str]]:
        out = []
        for a in PALETTE:
            if self.ccs.action_enabled(a.name) is not True:
                continue
            out.append((a.action, f"{a.label}: {a.help}", escape(a.help)))  # help is read as markup
        return out

    async def discover(self) -> Hits:
        for action, text, help_text in self._enabled():
            yield DiscoveryHit(Content(text), partial(self.ccs.run_action, action), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for action, text, help_text in self._enabled():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, highlight(matcher, text), partial(self.ccs.run_action, action), help=help_text)
        for entry in self.ccs.profile_entries():
            text = f"Profile: {entry.name}"
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), partial(self.ccs.select_profile, entry.name),
                          help="Show this profile")

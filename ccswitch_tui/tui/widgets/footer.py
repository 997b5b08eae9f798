"""The footer: its keys built once the profiles are listed, and once for a burst of binding changes."""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class CcsFooter(Footer):
    """Textual's footer rebuilds its keys (a dozen widgets, styled again) after the screen refreshes,
    once for every change of the bindings. This one rebuilds once for all the changes made before that
    refresh (it reads the bindings as they are then, so it shows what the last rebuild would have
    shown), and not at all while it is ``held``: as the app starts, until the list is shown, when every
    profile key is dimmed anyway (the first frame of a Textual footer is empty too). The keys work
    whatever the footer shows."""

    def __init__(self, *, held: bool = False) -> None:
        super().__init__()
        self.held = held
        self._rebuild_pending = False
        self._asked = False  # the bindings changed while held

    def release(self) -> None:
        """Show the keys from now on (rebuilt now if the bindings changed while held)."""
        if self.held:
            self.held = False
            if self._asked and self.is_attached:  # from the footer's own queue: it composes as itself
                self.call_next(self.bindings_changed, self.screen)

    def bindings_changed(self, screen: Screen) -> None:
        if self.held:
            self._asked = True
            return
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._rebuild_pending:
            self._rebuild_pending = True
            self.call_after_refresh(self._rebuild)

    async def _rebuild(self) -> None:
        self._rebuild_pending = False
        await self.recompose()

"""The footer, rebuilt once for a burst of binding changes."""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class CcsFooter(Footer):
    """Textual's footer rebuilds its keys (a dozen widgets, styled again) after the screen refreshes,
    once for every change of the bindings; as the app starts, focus, mount and the first profile each
    change them within one refresh. This one rebuilds once for all the changes before that refresh:
    it reads the bindings as they are then, so it shows what the last rebuild would have shown."""

    _rebuild_pending = False

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._rebuild_pending:
            self._rebuild_pending = True
            self.call_after_refresh(self._rebuild)

    async def _rebuild(self) -> None:
        self._rebuild_pending = False
        await self.recompose()

"""The ccs TUI: a profile list (minimal first version)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Header

from ..paths import Paths, resolve_paths
from ..store import Store


class CcsApp(App[None]):
    TITLE = "ccs"
    BINDINGS = [Binding("q", "quit", "Quit", id="quit", tooltip="Leave ccs")]

    def __init__(self, paths: Paths | None = None):
        super().__init__()
        self.store = Store(paths or resolve_paths())

    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable(id="profiles", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#profiles", DataTable)
        table.add_columns("Name", "Provider", "Tools", "Key id")
        for e in self.store.entries():
            p = e.profile
            if p:
                table.add_row(p.name, p.provider.name, ",".join(p.tools), p.key_id, key=p.name)
            else:
                table.add_row(e.name, "BROKEN", "-", e.error or "", key=e.name)


def run_app() -> None:
    CcsApp().run()

"""Import from the TUI: pick a source, preview (dry run) or import, and read the importers' own report
(the text `ccs import` prints)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Label, Select, Static

from ccswitch_tui.importers.sources import Source
from ccswitch_tui.terminal_text import visible
from ccswitch_tui.tui.screens.modals import Dialog


@dataclass(frozen=True)
class ImportChoice:
    kind: str
    dry_run: bool


class ImportScreen(Dialog[ImportChoice]):
    def __init__(self, sources: Sequence[Source]):
        super().__init__()
        self.sources = {s.kind: s for s in sources}

    def compose(self) -> ComposeResult:
        options = [(f"{s.label}{'' if s.exists else ' (not found)'}", s.kind) for s in self.sources.values()]
        first = next((s.kind for s in self.sources.values() if s.exists), options[0][1])
        with Vertical(classes="dialog wide"):
            yield Label("Import providers", classes="dialog-title")
            yield Static("Keys go into the keyring, profiles into ccs's folder; the source is only read. "
                         "Re-running an import changes nothing.", classes="note", markup=False)
            yield Select(options, value=first, allow_blank=False, id="source", compact=True)
            yield Static("", id="source-path", classes="note", markup=False)
            with Horizontal(classes="buttons"):
                yield Button("Preview", id="preview", tooltip="A dry run: the report, nothing written")
                yield Button("Import", id="import", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        super().on_mount()
        self._describe()
        self.query_one("#source", Select).focus()

    @on(Select.Changed, "#source")
    def _describe(self) -> None:
        s = self.sources[str(self.query_one("#source", Select).value)]
        self.query_one("#source-path", Static).update(
            visible(f"reads {s.path}") + ("" if s.exists else " — not found here"))

    @on(Button.Pressed, "#preview")
    @on(Button.Pressed, "#import")
    def _go(self, event: Button.Pressed) -> None:
        self.dismiss(ImportChoice(str(self.query_one("#source", Select).value), event.button.id == "preview"))

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)


class ReportScreen(Dialog[bool]):
    """The import report as `ccs import` prints it; after a preview, Import runs it for real."""

    def __init__(self, title: str, report_text: str, dry_run: bool):
        super().__init__()
        self.title_text, self.report_text, self.dry_run = title, report_text, dry_run

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide report"):
            yield Label(self.title_text, classes="dialog-title")
            with VerticalScroll(id="report-scroll"):
                yield Static(visible(self.report_text), id="report-text", markup=False)
            with Horizontal(classes="buttons"):
                if self.dry_run:
                    yield Button("Import", id="import", variant="primary")
                yield Button("Close", id="close")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#import" if self.dry_run else "#close", Button).focus()

    @on(Button.Pressed, "#import")
    def _import(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#close")
    def _close(self) -> None:
        self.dismiss(False)

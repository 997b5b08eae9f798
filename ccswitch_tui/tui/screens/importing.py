"""Import from the TUI: pick a source, preview (dry run) or import, and read the importers' own report
(the text `ccs import` prints)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Input, Label, Select, Static

from ccswitch_tui.importers.sources import Source
from ccswitch_tui.terminal_text import visible
from ccswitch_tui.tui.screens.modals import Dialog
from ccswitch_tui.valueclass import valueclass


@valueclass(frozen=True)
class ImportChoice:
    kind: str
    dry_run: bool
    path: Path | None = None  # another file (or Codex home) than the source's default


class ImportScreen(Dialog[ImportChoice]):
    """Pick a source; its path is a field, so any file can be imported. With no source found at its
    default place, the dialog says so and where each was looked for."""

    def __init__(self, sources: Sequence[Source]):
        super().__init__()
        self.sources = {s.kind: s for s in sources}

    def compose(self) -> ComposeResult:
        options = [(f"{s.label}{'' if s.exists else ' (not found)'}", s.kind) for s in self.sources.values()]
        first = next((s.kind for s in self.sources.values() if s.exists), options[0][1])
        with Vertical(classes="dialog wide"):
            yield Label("Import providers", classes="dialog-title")
            if not any(s.exists for s in self.sources.values()):
                looked = "\n".join(f"  • {s.label}: {s.path}" for s in self.sources.values())
                yield Static(visible(f"No source found. Looked for:\n{looked}\nPick a source and type the path "
                                     "of its file below."), id="none-found", classes="problem-text", markup=False)
            yield Static("Keys go into the keyring, profiles into ccs's folder; the source is only read. "
                         "Re-running an import changes nothing.", classes="note", markup=False)
            yield Select(options, value=first, allow_blank=False, id="source", compact=True)
            with Horizontal(classes="field"):
                yield Label("path", classes="field-label")
                yield Input(id="path", compact=True)
            yield Static("", id="source-path", classes="note", markup=False)
            with Horizontal(classes="buttons"):
                yield Button("Preview", id="preview", tooltip="A dry run: the report, nothing written")
                yield Button("Import", id="import", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        super().on_mount()
        self._source_changed()
        self.query_one("#source", Select).focus()

    @property
    def source(self) -> Source:
        return self.sources[str(self.query_one("#source", Select).value)]

    def _path(self) -> Path | None:
        text = self.query_one("#path", Input).value.strip()
        return Path(text).expanduser() if text else None

    @on(Select.Changed, "#source")
    def _source_changed(self) -> None:
        s = self.source
        field = self.query_one("#path", Input)
        field.value = str(s.path)
        field.placeholder = f"the path of {s.what}"
        self._describe()

    @on(Input.Changed, "#path")
    def _describe(self) -> None:
        path = self._path()
        found = path is not None and path.exists()
        if path is None:
            text = f"type the path of {self.source.what}"
        else:
            text = f"reads {path}" + ("" if found else f" — not found here; type the path of "
                                                       f"{self.source.what}")
        self.query_one("#source-path", Static).update(visible(text))
        for bid in ("#preview", "#import"):
            self.query_one(bid, Button).disabled = not found

    @on(Button.Pressed, "#preview")
    @on(Button.Pressed, "#import")
    def _go(self, event: Button.Pressed) -> None:
        path = self._path()
        if path is None or not path.exists():
            return
        self.dismiss(ImportChoice(self.source.kind, event.button.id == "preview",
                                  None if path == self.source.path else path))

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

"""The Running tab: Claude Code / Codex / ccs-launched processes with their findings (the same
judgement as `ccs ps` and `ccs inspect`); the process under the cursor shows its inherited-env diff."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import DataTable, Static

from ccswitch_tui import tools
from ccswitch_tui.terminal_text import visible
from ccswitch_tui.tui import render
from ccswitch_tui.tui.grid import Fit, FitTable, SheetBuilder

if TYPE_CHECKING:
    from ccswitch_tui.diagnose.inspect import Inspection

FINDING_COLUMNS: tuple[tuple[str, Fit], ...] = (("", "fixed"), ("code", "fixed"), ("about", "name"),
                                                ("summary", "line"))


def counts_cell(counts: Mapping[str, int] | None, error: str | None, colors: Mapping[str, str]) -> Text:
    if counts is None:
        return Text(visible(error or "unreadable"), style=colors.get("text-muted", ""))
    if counts.get("error"):
        return Text(f"{counts['error']} error" + (f", {counts['warn']} warn" if counts.get("warn") else ""),
                    style=f"bold {colors.get('text-error', 'red')}")
    if counts.get("warn"):
        return Text(f"{counts['warn']} warn", style=colors.get("text-warning", "yellow"))
    return Text("clean", style=colors.get("text-success", "green"))


class RunningView(Vertical):
    """Rows come from the app's refresh worker (``set_processes``); selection asks for an inspection."""

    class Selected(Message):
        def __init__(self, pid: int | None):
            super().__init__()
            self.pid = pid

    class Ready(Message):
        """Mounted (after the first frame): the app may fill it now."""

    def __init__(self, parent_env: Mapping[str, str], **kwargs: Any):
        super().__init__(**kwargs)
        self.parent_env = parent_env
        self.processes: list[Any] = []
        self.selected_pid: int | None = None
        self.inspection: Any = None

    def compose(self) -> ComposeResult:
        yield Static(Content.styled("Looking for running tools…", "$text-muted"), id="running-status")
        yield DataTable(id="procs", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="inspect-scroll"):
            yield Static("", id="inspect-body")
            yield FitTable(FINDING_COLUMNS, id="findings")
            yield Static("", id="finding-detail")
            yield Static("", id="inspect-diff")

    def on_mount(self) -> None:
        tables = self.query("#procs").results(DataTable)
        table = next(tables, None)
        if table is None:  # the app quit before the tab's children were mounted
            return
        table.add_columns("pid", "tool", "profile", "findings", "cwd")
        self.post_message(self.Ready())

    def set_processes(self, processes: Sequence[Any], status: str) -> None:
        self.processes = list(processes)
        table = self.query_one("#procs", DataTable)
        colors = self.app.theme_variables
        keep = self.selected_pid
        table.clear()
        for p in self.processes:
            table.add_row(Text(str(p.pid)), Text(visible(p.tool or "?")), Text(visible(p.profile or "(unmanaged)")),
                          counts_cell(p.counts, p.error, colors), Text(visible(p.cwd or "-"), overflow="ellipsis"),
                          key=str(p.pid))
        self.query_one("#running-status", Static).update(Content.styled(status, "$text-muted"))
        pids = [p.pid for p in self.processes]
        if keep in pids:
            table.move_cursor(row=pids.index(keep), scroll=False)
        elif pids:
            table.move_cursor(row=0)
            self._select(pids[0])
        else:
            self.selected_pid = None
            self.show_inspection(None)
            self.query_one("#inspect-body", Static).update(Content.styled(
                f"No {', '.join(s.label for s in tools.load().clients())} or ccs-launched process is running.",
                "$text-muted"))

    def _select(self, pid: int | None) -> None:
        if pid != self.selected_pid:
            self.selected_pid = pid
            self.post_message(self.Selected(pid))

    @on(DataTable.RowHighlighted, "#procs")
    def _row(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if event.row_key.value is not None:
            self._select(int(event.row_key.value))

    def show_inspection(self, insp: Inspection | None) -> None:
        """The process's facts, its findings one row each (the selected one in full below them) and
        its inherited environment as a diff table."""
        body = self.query_one("#inspect-body", Static)
        table = self.query_one("#findings", FitTable)
        self.inspection = insp
        theme = self.app.theme_variables
        if insp is None:
            body.update("")
            table.set_rows([], theme)
            table.display = False
            self.query_one("#finding-detail", Static).update("")
            self.query_one("#inspect-diff", Static).update("")
            return
        b = SheetBuilder()
        head = b.grid("name", "value", "line")
        head.add(("process", render.LABEL), f"{insp.pid} {insp.name}", (insp.tool or "?", "bold"))
        head.add(("judged", render.LABEL), insp.judged_against, f"launch {insp.launch_id}" if insp.launch_id else "")
        head.add(("cwd", render.LABEL), insp.cwd or "-")
        b.heading(f"Findings ({len(insp.findings)})" if insp.findings else "Findings")
        if not insp.findings:
            b.line(("clean", render.OK))
        body.update(b.sheet(theme))
        table.display = bool(insp.findings)
        table.set_rows([(render.finding_cells(f), str(i)) for i, f in enumerate(insp.findings)], theme)
        self._show_finding()
        diff = SheetBuilder().blank().line(("Inherited environment", "bold underline $text-accent"))
        render.env_diff(insp.diff, insp.show, f"what {insp.judged_against} expects → what pid {insp.pid} "
                        "inherited", added="extra in the process", removed="missing from the process",
                        launch=False, builder=diff)
        diff.blank().line((insp.note, render.MUTED))
        self.query_one("#inspect-diff", Static).update(diff.sheet(theme))

    def _show_finding(self) -> None:
        table = self.query_one("#findings", FitTable)
        insp = self.inspection
        index = table.cursor_row
        found = insp.findings[index] if insp is not None and 0 <= index < len(insp.findings) else None
        self.query_one("#finding-detail", Static).update(
            render.finding_detail(found, self.app.theme_variables) if found is not None else "")

    @on(DataTable.RowHighlighted, "#findings")
    def _finding(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._show_finding()

    def show_error(self, message: str) -> None:
        self.show_inspection(None)
        self.query_one("#inspect-body", Static).update(Content.styled(visible(message), render.WARN))

"""The detail pane: the chosen profile in five tabs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.lazy import Lazy
from textual.message import Message
from textual.widgets import DataTable, Static, TabbedContent, TabPane

from ccswitch_tui import tools
from ccswitch_tui.terminal_text import visible
from ccswitch_tui.tools.capabilities import TuiFace
from ccswitch_tui.tui import render
from ccswitch_tui.tui.grid import FitTable
from ccswitch_tui.tui.rounds_chart import chart
from ccswitch_tui.tui.service import Detail, RunRow, ToolView
from ccswitch_tui.tui.widgets.requests import RequestsTable
from ccswitch_tui.tui.widgets.running import RunningView

TABS = ("overview", "environment", "diff", "running", "runs")
# status and drift first: at 80 columns they are what shows whole (the rest scrolls sideways)
RUN_COLUMNS = ("status", "drift", "started", "tool", "round", "key")


def started_text(value: Any) -> str:
    """A manifest's start time to the second: ``2025-01-03 09:00:00``."""
    text = str(value or "-").replace("T", " ").removesuffix("Z")
    head, dot, rest = text.partition(".")
    if dot:  # fractions of a second, and a zone after them if any
        zone = rest.lstrip("0123456789")
        return head + ("" if zone in ("", "+00:00") else zone)
    return head


class DetailPane(Vertical):
    def __init__(self, parent_env: Mapping[str, str], **kwargs: Any):
        super().__init__(**kwargs)
        self.parent_env = parent_env
        self.detail: Detail | None = None
        self.cleared = ""  # why no profile is shown, once ``clear`` said so
        self.tool: str | None = None
        self.checks: dict[str, Sequence[Any]] = {}
        self.runs: tuple[RunRow, ...] = ()

    def compose(self) -> ComposeResult:
        yield Static("", id="detail-title")
        with TabbedContent(id="tabs", initial="overview"):
            with TabPane("Overview", id="overview"), VerticalScroll(classes="body"):
                yield Static(Content.styled("Loading…", "$text-muted"), id="overview-body")
            # composed with the pane (itself mounted after the first marks): every detail shown fills it
            with TabPane("Environment", id="environment"), Vertical(id="env-view"):
                yield Static("", id="env-head")
                yield FitTable(render.ENV_COLUMNS, id="env-body")
                yield Static("", id="env-detail")
            with TabPane("Diff", id="diff"), VerticalScroll(classes="body"):
                yield Static("", id="diff-body")
            # The tables of these two are mounted after the pane is on screen: it shows sooner.
            with TabPane("Running", id="running"):
                yield Lazy(RunningView(self.parent_env, id="running-view"))
            with TabPane("Runs", id="runs"):
                yield Lazy(RunsView(id="runs-view"))

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._theme_changed())

    def _theme_changed(self) -> None:
        """The grids hold the theme's colours: draw them again."""
        if self.detail is None:
            self.refresh_runs()
        else:
            self.refresh_all()

    @property
    def active_tab(self) -> str | None:
        """The tab shown; None while the tabs are not there (mounting, or the app closing: a timer
        can fire in between)."""
        tabs = self.query("#tabs").results(TabbedContent)
        return next((t.active for t in tabs), None)

    def show_tab(self, tab: str) -> None:
        self.query_one("#tabs", TabbedContent).active = tab

    @property
    def view(self) -> ToolView | None:
        if self.detail is None or self.tool is None:
            return None
        return self.detail.views.get(self.tool)

    @property
    def tools(self) -> tuple[str, ...]:
        return tuple(self.detail.views) if self.detail else ()

    def show(self, detail: Detail) -> None:
        same = self.detail is not None and self.detail.entry.name == detail.entry.name
        self.detail = detail
        if not same or self.tool not in detail.views:
            self.tool = next(iter(detail.views), None)
        self.runs = detail.runs
        self.refresh_all()

    def clear(self, message: str, body: str = "") -> None:
        self.detail = None
        self.tool = None
        self.runs = ()
        self.cleared = message  # what the Runs tab says instead of "No runs yet"
        self.query_one("#detail-title", Static).update(Content.styled(visible(message), "$text-muted"))
        for wid in ("#overview-body", "#env-head", "#diff-body"):
            self.query_one(wid, Static).update(Content(visible(body)))  # wraps: readable at 80 columns
        self.query_one("#env-body", FitTable).set_rows([], {})
        self.query_one("#env-detail", Static).update("")
        self.refresh_runs()

    def set_tool(self, tool: str) -> None:
        if tool in self.tools:
            self.tool = tool
            self.refresh_all()

    def cycle_tool(self) -> None:
        tools = self.tools
        if tools and self.tool in tools:
            self.set_tool(tools[(tools.index(self.tool) + 1) % len(tools)])

    def set_check(self, name: str, results: Sequence[Any]) -> None:
        self.checks[name] = results
        if self.detail and self.detail.entry.name == name:
            self.refresh_all()

    def refresh_all(self) -> None:
        d = self.detail
        if d is None:
            return
        title = Content.assemble((d.entry.name, "bold"), "  ")
        if d.profile is not None and self.tool:
            title += render.tool_bar(self.tools, self.tool)
        self.query_one("#detail-title", Static).update(title)
        theme = self.app.theme_variables
        self.query_one("#overview-body", Static).update(render.overview(d, self.checks.get(d.entry.name), theme))
        self.query_one("#env-head", Static).update(render.environment_head(self.view, theme) if d.profile
                                                   else render.overview(d, theme=theme))
        self.query_one("#env-body", FitTable).set_rows(render.environment_rows(self.view) if d.profile else [], theme)
        self._show_variable()
        self.query_one("#diff-body", Static).update(render.diff(self.view, self.parent_env, theme=theme) if d.profile
                                                    else render.overview(d, theme=theme))
        self.refresh_runs()

    def _show_variable(self) -> None:
        """The variable under the Environment grid's cursor, whole."""
        table = self.query_one("#env-body", FitTable)
        cells = table.row_cells(table.cursor_row)
        name = table.data[table.cursor_row][1] if cells else None
        self.query_one("#env-detail", Static).update(render.environment_detail(self.view, name,
                                                                               self.app.theme_variables))

    @on(DataTable.RowHighlighted, "#env-body")
    def _variable_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._show_variable()

    @property
    def empty_runs(self) -> str:
        return self.cleared if self.detail is None else ""

    def refresh_runs(self) -> None:
        for view in self.query(RunsView):
            view.show(self.runs, self.empty_runs)


class RunsView(Vertical):
    """The profile's run manifests, newest first, the one under the cursor in full and, for a
    recorded run, its requests (the app reloads them while the run goes on). ``u`` shows the Rounds
    view instead: the gap per round of the profile's labelled runs, with the verdicts beside it."""

    class Selected(Message):
        def __init__(self, manifest: Mapping[str, Any]):
            super().__init__()
            self.manifest = manifest

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.runs: tuple[RunRow, ...] = ()
        self.showing_rounds = False

    def compose(self) -> ComposeResult:
        yield DataTable(id="runs-table", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="run-detail-scroll"):
            yield Static("", id="run-detail")
        yield RequestsTable(id="requests-table")
        with VerticalScroll(id="rounds-scroll"):
            yield Static("", id="rounds-body")

    @property
    def rounds(self) -> list[Mapping[str, Any]]:
        """The rounds of the profile's labelled runs, the oldest round first."""
        first: dict[str, tuple[str, Mapping[str, Any]]] = {}
        for r in self.runs:
            if r.round is not None:
                label = str(r.round.get("round"))
                started = str(r.manifest.get("started") or "")
                if label not in first or started < first[label][0]:
                    first[label] = (started, r.round)
        return [rd for _, rd in sorted(first.values(), key=lambda x: x[0])]

    def toggle_rounds(self) -> None:
        self.showing_rounds = not self.showing_rounds
        self._show_mode()

    def _show_mode(self) -> None:
        rounds = self.showing_rounds
        for wid in ("#runs-table", "#run-detail-scroll"):
            self.query_one(wid).display = not rounds
        if rounds:
            self.query_one(RequestsTable).display = False
        elif (row := self.selected) is not None:
            self.query_one(RequestsTable).display = bool(row.manifest.get("recording"))
        self.query_one("#rounds-scroll").display = rounds
        if rounds:
            self.query_one("#rounds-body", Static).update(chart(self.rounds, self.size.width or 80))

    @property
    def selected(self) -> RunRow | None:
        index = self.query_one("#runs-table", DataTable).cursor_row
        return self.runs[index] if 0 <= index < len(self.runs) else None

    def show_requests(self, launch_id: str, records: Sequence[Mapping[str, Any]]) -> None:
        if not self.query("#runs-table"):
            return
        row = self.selected
        if row is None or row.manifest.get("launch_id") != launch_id:
            return
        v = self.app.theme_variables
        table = self.query_one(RequestsTable)
        table.display = bool(row.manifest.get("recording")) and not self.showing_rounds
        table.show(launch_id, records, {"ok": v.get("text-success", "green"), "warn": v.get("text-warning", "yellow")})

    def on_mount(self) -> None:
        self.query_one("#runs-table", DataTable).add_columns(*RUN_COLUMNS)
        self.query_one("#rounds-scroll").display = False
        pane = next((a for a in self.ancestors if isinstance(a, DetailPane)), None)
        self.show(pane.runs if pane else (), pane.empty_runs if pane else "")

    def show(self, runs: tuple[RunRow, ...], empty: str = "") -> None:
        """``empty``: what to say when there are no runs because no profile is shown."""
        self.runs = runs
        tables = self.query("#runs-table").results(DataTable)
        table = next(tables, None)
        if table is None or not table.columns:  # not mounted yet: on_mount shows the runs
            return
        keep = table.cursor_row
        table.clear()
        v = self.app.theme_variables
        warn, ok, muted = v.get("text-warning", "yellow"), v.get("text-success", "green"), v.get("text-muted", "")
        for r in runs:
            m = r.manifest
            if r.against is None:
                drift = Text("first run", style=muted)
            elif r.drifted:
                drift = Text(visible(", ".join(r.drifted)), style=f"bold {warn}")
            else:
                drift = Text("comparable", style=ok)
            status = render.status_text(m)
            table.add_row(Text(visible(status), style=ok if status == "0" else warn), drift,  # a manifest is a file
                          Text(visible(started_text(m.get("started")))), Text(visible(str(m.get("tool", "?")))),
                          self._round_cell(r, warn, ok), Text(visible(str(m.get("key_fingerprint") or "-"))),
                          key=str(m.get("launch_id")))
        if runs:
            table.move_cursor(row=min(max(keep, 0), len(runs) - 1))
            self._show_run(table.cursor_row)
        else:
            self.query_one("#run-detail", Static).update(Content.styled(visible(empty) or (
                "No runs yet. Launch with "
                + "".join(f"{s.tui_key} ({s.label}), " for s in tools.load().clients()
                          if isinstance(s, TuiFace))
                + "r (a command) or s (a shell); "
                "each launch writes a manifest here."), "$text-muted"))
        if self.showing_rounds:
            self._show_mode()

    @staticmethod
    def _round_cell(r: RunRow, warn: str, ok: str) -> Text:
        """The run's label, with its round's verdict: the runs of one round read as a group."""
        if r.round is None:
            return Text("-")
        return Text(visible(f"{r.round['round']} ({'clean' if r.round.get('comparable') else 'not comparable'})"),
                    style=ok if r.round.get("comparable") else warn)

    def _show_run(self, index: int) -> None:
        if 0 <= index < len(self.runs):
            self.query_one("#run-detail", Static).update(render.run_summary(self.runs[index],
                                                                                   self.app.theme_variables))
            manifest = self.runs[index].manifest
            if manifest.get("recording"):
                self.post_message(self.Selected(manifest))
            else:
                self.query_one(RequestsTable).display = False

    @on(DataTable.RowHighlighted, "#runs-table")
    def _run_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_run(event.cursor_row)

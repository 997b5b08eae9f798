"""The detail pane's live tabs: the Runs tab (a recorded run's requests, reloaded while a run goes on)
and the Running tab (the processes, scanned on a timer, and the one selected inspected), each read in
a worker that answers with a message."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

from ccswitch_tui import tools
from ccswitch_tui.errors import CcsError
from ccswitch_tui.tui import messages as m
from ccswitch_tui.tui.detail_feed import DetailHost

if TYPE_CHECKING:
    from textual.css.query import DOMQuery
    from textual.widget import Widget

    from ccswitch_tui.diagnose.inspect import Inspection
    from ccswitch_tui.tui.widgets.detail import RunsView
    from ccswitch_tui.tui.widgets.running import RunningView


class TabsHost(DetailHost, Protocol):
    """What the live tabs need of the app (CcsApp), beyond the detail feed's."""

    running_interval: float

    def refresh_detail(self) -> None: ...

    def query(self, selector: str) -> DOMQuery[Widget]: ...


class LiveTabs:
    def __init__(self, host: TabsHost):
        self.host = host
        self.show_all_processes = False
        self.runs_stamp: int | None = None

    # --- the Runs tab ---------------------------------------------------------------------------

    def tick_runs(self, live: bool) -> None:
        """While the Runs tab is shown: reload when a run starts or ends (the runs folder changes) and
        as long as a recorded run (``live``) goes on."""
        try:
            stamp = self.host.service.paths.runs.stat().st_mtime_ns
        except OSError:
            stamp = None
        moved, self.runs_stamp = stamp != self.runs_stamp, stamp
        if moved or live:
            self.host.refresh_detail()

    def load_requests(self, manifest: Mapping[str, Any]) -> None:
        def read() -> None:
            self.host.post_message(m.RequestsReady(str(manifest.get("launch_id")),
                                                   self.host.service.requests(manifest)))

        self.host.run_worker(read, name="load_requests", group="requests", exclusive=True, thread=True,
                             exit_on_error=False)

    def requests(self, event: m.RequestsReady) -> None:
        for view in self._runs_views():
            view.show_requests(event.launch_id, event.records)

    def toggle_rounds(self) -> None:
        for view in self._runs_views():
            view.toggle_rounds()

    def _runs_views(self) -> list[RunsView]:
        return cast("list[RunsView]", list(self.host.query("RunsView")))

    # --- the Running tab ------------------------------------------------------------------------

    def running_view(self) -> RunningView | None:
        """The Running tab's view; None for the moment after start-up before it is mounted."""
        views = self.host.query("RunningView")
        return cast("RunningView", views.first()) if views else None

    def scan(self) -> None:
        self.host.run_worker(self._scan, name="scan_processes", group="running", exclusive=True, thread=True,
                             exit_on_error=False)

    def _scan(self) -> None:
        view = self.running_view()
        pid = view.selected_pid if view else None
        service = self.host.service
        try:
            procs = service.processes(self.show_all_processes)
        except CcsError as exc:
            self.host.post_message(m.ProcessesReady([], error=str(exc)))
            return
        insp, error = None, None
        if pid is not None and pid in [p.pid for p in procs]:
            insp, error = service.inspect(pid)
        self.host.post_message(m.ProcessesReady(procs, insp, error, pid if insp or error else None))

    def processes(self, event: m.ProcessesReady) -> None:
        view = self.running_view()
        if view is None:
            return
        scope = "any process with routing variables" if self.show_all_processes else \
            f"{', '.join(s.label for s in tools.load().clients())} and ccs-launched processes"
        # the key first: the line is cut at the pane's width (half of an 80-column terminal)
        status = "a: toggle all · " + (event.error or f"{len(event.processes)} running — {scope}; "
                                                      f"refreshed every {self.host.running_interval:g} s")
        view.set_processes(event.processes, status)
        if event.inspected_pid is not None and event.inspected_pid == view.selected_pid:
            self.show_inspection(event.inspected_pid, event.inspection, event.error)

    def toggle_all_processes(self) -> None:
        self.show_all_processes = not self.show_all_processes
        self.scan()

    def inspect(self, pid: int) -> None:
        def read() -> None:
            insp, error = self.host.service.inspect(pid)
            self.host.post_message(m.InspectionReady(pid, insp, error))

        self.host.run_worker(read, name="inspect_process", group="inspect", exclusive=True, thread=True,
                             exit_on_error=False)

    def show_inspection(self, pid: int, insp: Inspection | None, error: str | None) -> None:
        view = self.running_view()
        if view is None or pid != view.selected_pid:
            return
        if insp is not None:
            view.show_inspection(insp)
        else:
            view.show_error(error or f"pid {pid}: nothing to show")

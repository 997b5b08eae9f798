"""The detail pane's life: mounted once the rows on screen have their marks, fed by one worker that
always ends on the latest profile asked for. Until the pane is there, what it should show (a profile,
a line saying why none is shown, endpoint checks already ended) waits here."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

from textual.message import Message
from textual.widget import Widget
from textual.worker import WorkType

from ccswitch_tui.tui import messages as m

if TYPE_CHECKING:
    from ccswitch_tui.tui.service import Detail, Service
    from ccswitch_tui.tui.widgets.detail import DetailPane


class DetailHost(Protocol):
    """What the feed needs of the app (CcsApp)."""

    @property
    def service(self) -> Service: ...

    @property
    def selected(self) -> str | None: ...

    @property
    def screen_stack(self) -> Sequence[object]: ...

    def closing(self) -> bool: ...

    def main_node(self, selector: str) -> Widget: ...

    def refresh_bindings_if_changed(self) -> None: ...

    def update_problems(self, detail: Detail) -> None: ...

    def post_message(self, message: Message) -> bool: ...

    def call_after_refresh(self, callback: Callable[[], object]) -> bool: ...

    def run_worker(self, work: WorkType[None], name: str | None = "", group: str = "default",
                   description: str = "", exit_on_error: bool = True, start: bool = True, exclusive: bool = False,
                   thread: bool = False) -> object: ...


class DetailFeed:
    """Shows a profile's detail in the pane, once the pane is mounted (``release``)."""

    def __init__(self, host: DetailHost):
        self.host = host
        self.lock = threading.Lock()
        self.wanted: tuple[str, int] | None = None
        self.running = False  # a detail is on its way (tests wait on it)
        self.generation = 0
        self.shown: str | None = None  # the profile under the cursor whose detail is asked for
        self.pane_widget: DetailPane | None = None
        self.hold = True
        self.held: str | None = None  # the profile whose detail is wanted
        self.releasing = False
        self.pending_clear: tuple[str, str] | None = None  # or why none is shown
        self.early_checks: dict[str, Sequence[object]] = {}  # endpoint checks ended before the pane was there

    def pane(self) -> DetailPane | None:
        """The detail pane, once mounted; None before (the first marks are not shown yet) and while the app closes."""
        pane = self.pane_widget
        return pane if pane is not None and pane.is_attached and self.host.screen_stack else None

    def release(self, read_shims: Callable[[], object]) -> None:
        """The rows on screen have their marks (or cannot get them): mount the detail pane once they are
        painted, then show the profile under the cursor in it. From here on ``running`` says that a
        detail is on its way, as it does for ``request`` (tests wait on it)."""
        if self.releasing or not self.hold:
            return
        self.releasing = True
        read_shims()
        with self.lock:
            if self.held is not None:
                self.running = True
        self.host.call_after_refresh(self._mount)

    def _mount(self) -> None:
        from ccswitch_tui.tui.widgets.detail import DetailPane  # lazy: the pane's tabs, after the first marks

        if self.host.closing():
            with self.lock:
                self.running = False
            return
        pane = DetailPane(self.host.service.environ, id="detail")
        pane.checks.update(self.early_checks)
        main = self.host.main_node("#main")
        mounting = main.mount(pane)

        async def mounted() -> None:
            try:
                await mounting
                await main.query("#detail-loading").remove()
            except Exception:  # noqa: BLE001 — the app closing under the mount: nothing to show
                with self.lock:
                    self.running = False
                return
            self.pane_widget = pane
            if self.pending_clear is not None:
                pane.clear(*self.pending_clear)
            with self.lock:
                self.hold = False
                held, self.held = self.held, None
                if held is not None:
                    self.generation += 1
                    self.wanted = (held, self.generation)
                self.running = held is not None
            if held is not None:
                self._start()

        self.host.run_worker(mounted(), group="detail-mount", exit_on_error=False)

    def clear(self, message: str, body: str) -> None:
        pane = self.pane()
        if pane is None:
            self.pending_clear = (message, body)
        else:
            pane.clear(message, body)

    def forget_checks(self, names: Iterable[str]) -> None:
        """Profiles changed: an endpoint check of the old file says nothing now."""
        for name in names:
            self.early_checks.pop(name, None)
            if pane := self.pane():
                pane.checks.pop(name, None)

    def request(self, name: str) -> None:
        """Show ``name``'s detail; one worker at a time, always ending on the latest request. Before the
        detail pane is there, the request waits for it (``release``)."""
        with self.lock:
            if self.hold:
                self.held = name
                return
            self.generation += 1
            self.wanted = (name, self.generation)
            if self.running:
                return
            self.running = True
        self._start()

    def refresh(self) -> None:
        if self.shown:
            self.request(self.shown)

    def _start(self) -> None:
        self.host.run_worker(self._read, name="_detail_worker", group="detail", thread=True, exit_on_error=False)

    def _read(self) -> None:
        try:
            while True:
                wanted = self.wanted
                assert wanted is not None
                detail = self.host.service.detail(wanted[0])
                with self.lock:
                    if self.wanted == wanted:
                        self.running = False
                        self.host.post_message(m.DetailReady(detail))
                        return
        except BaseException:
            with self.lock:
                self.running = False
            raise

    def ready(self, event: m.DetailReady) -> None:
        if self.host.closing():  # the answer is too late
            return
        d = event.detail
        pane = self.pane()
        if d.entry.name != self.host.selected or pane is None:
            return
        pane.show(d)
        self.host.update_problems(d)
        self.host.refresh_bindings_if_changed()

    def checked(self, event: m.CheckDone) -> None:
        if pane := self.pane():
            pane.set_check(event.profile, event.results)
        else:
            self.early_checks[event.profile] = event.results

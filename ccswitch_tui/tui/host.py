"""What the controllers (launching, profile changes, importing) get: the Textual-free service, and
from the app only the few things named in ``Host``. They answer with the typed messages of
messages.py, which the app handles; none of them imports the app or reaches past this interface."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

from textual.message import Message
from textual.notifications import SeverityLevel

from ccswitch_tui.errors import CcsError
from ccswitch_tui.profiles.store import Entry
from ccswitch_tui.tui import messages as m
from ccswitch_tui.tui.service import Service


class Host(Protocol):
    """What a controller may ask of the app (CcsApp satisfies it)."""

    @property
    def is_headless(self) -> bool: ...

    @property
    def selected(self) -> str | None: ...

    def current_entry(self) -> Entry | None: ...

    def profile_entries(self) -> list[Entry]: ...

    def shown_tool(self) -> str | None:
        """The tool whose plan the detail pane shows."""

    def reload(self, keep: str | None) -> None:
        """Read the profiles again, keeping ``keep`` under the cursor."""

    def refresh_detail(self) -> None: ...

    def set_status(self, text: str) -> None:
        """One line under the title (the last launch's outcome)."""

    def post_message(self, message: Message) -> bool: ...

    def call_from_thread(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> Any: ...

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None: ...

    def open_screen(self, screen: Any, then: Callable[[Any], None]) -> None:
        """Push a dialog; ``then`` gets what it was dismissed with."""

    def run_worker(self, work: Callable[[], None], *, group: str, exclusive: bool, thread: bool,
                   exit_on_error: bool) -> Any: ...

    def suspend(self) -> AbstractContextManager[None]: ...


class Controller:
    """A group of the app's actions: the service to act with, the host to show what happened."""

    def __init__(self, host: Host, service: Service):
        self.host = host
        self.service = service

    def run(self, what: str, fn: Callable[..., Any], *args: Any,
            done: Callable[[Any], Message | None] | None = None) -> None:
        """Run ``fn(*args)`` in a worker; a CcsError becomes a notification, a result goes to ``done``
        (in the worker: a message it returns is posted)."""

        def job() -> None:
            try:
                result = fn(*args)
            except CcsError as exc:
                self.host.post_message(m.Failed(what, str(exc)))
                return
            if done is not None:
                msg = done(result)
                if msg is not None:
                    self.host.post_message(msg)

        self.host.run_worker(job, thread=True, group=what, exclusive=False, exit_on_error=False)

    def then(self, fn: Callable[[Any], None]) -> Callable[[Any], None]:
        """``fn`` called on the app's thread with a worker's result (``done=self.then(ask)``)."""

        def on_app_thread(result: Any) -> None:
            self.host.call_from_thread(fn, result)

        return on_app_thread

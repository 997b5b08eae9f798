"""Reading the profiles into the list: one worker reads the files, asks for the keys and marks of the
rows on screen and posts the list with them (one paint), then the other profiles' marks; only the latest
read's list is shown. The folder watcher reads again when a profile file changes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from textual.worker import get_current_worker

from ccswitch_tui import tools
from ccswitch_tui.tui import messages as m
from ccswitch_tui.tui.detail_feed import DetailFeed, DetailHost
from ccswitch_tui.tui.watch import changed, snapshot
from ccswitch_tui.tui.widgets.profile_list import screen_order

if TYPE_CHECKING:
    from textual.notifications import SeverityLevel

    from ccswitch_tui.paths import Paths
    from ccswitch_tui.tui.service import Presence
    from ccswitch_tui.tui.widgets.profile_list import ProfileList

EMPTY_STATE = (
    "No profiles yet.\n\n"
    "Press n to create one from a preset (TaoToken, DeepSeek, Kimi, GLM, OpenRouter …), or i to import the "
    "providers you already use: CC Switch's, or the ones in your live {imported} "
    "configs.\n\n"
    "Profiles are files in {folder}."
)


class ReadingHost(DetailHost, Protocol):
    """What the reader needs of the app (CcsApp), beyond the detail feed's."""

    paths: Paths

    @property
    def profile_list(self) -> ProfileList: ...

    def release_footer(self) -> None: ...

    def release_detail(self) -> None: ...

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None: ...


class ProfileReader:
    def __init__(self, host: ReadingHost, feed: DetailFeed):
        self.host = host
        self.feed = feed
        self.folder: dict[str, tuple[int, int, int]] | None = None  # what the watcher compares with
        self.loads = 0  # profile reads asked for (``load``)
        # a profile to select once the list holds it (a new or copied profile): every reload keeps
        # it, the folder watcher's included, until the list shows it
        self.select_next: str | None = None

    def load(self, keep: str | None = None, first: bool = False) -> None:
        """Read the profiles in a worker; only the latest read's list is shown (an earlier one still
        running would bring back the selection it started with)."""
        self.loads += 1
        pl = self.host.profile_list
        at = self.select_next or keep  # the row the list will show first (``loaded``)
        args = (keep, first, self.loads, pl.filter_text, pl.rows_shown(), at)
        self.host.run_worker(lambda: self._read(*args), name="_read_profiles", group="load", exclusive=True,
                             thread=True, exit_on_error=False)

    def _read(self, keep: str | None, first: bool, generation: int, needle: str, rows: int,
              at: str | None) -> None:
        """The profiles, then their keys and problem marks: the list comes with the marks of the rows it
        shows (one paint, not a list painted and painted again a moment later), the other profiles'
        marks follow. A newer read cancels this one: it posts nothing more."""
        worker = get_current_worker()
        service = self.host.service
        if first:
            self.folder = snapshot(self.host.paths.profiles)
        entries = service.entries()
        steps = service.presence_in_steps(screen_order(entries, needle, at), rows)
        try:
            marks = next(steps)
        except BaseException:
            self.host.post_message(m.ProfilesLoaded(entries, keep, generation))  # the list still shows
            raise
        if worker.is_cancelled:
            return
        self.host.post_message(m.ProfilesLoaded(entries, keep, generation, marks))
        for marks in steps:
            if worker.is_cancelled:
                return
            self.host.post_message(m.PresenceReady(marks))

    def watch(self) -> None:
        """Profile files written, added or removed by anything (an editor, `ccs new`, a sync): reload."""
        self.host.run_worker(self._compare, name="watch_profiles", group="watch", exclusive=True, thread=True,
                             exit_on_error=False)

    def _compare(self) -> None:
        now = snapshot(self.host.paths.profiles)
        before, self.folder = self.folder, now
        if before is not None and changed(before, now):
            self.host.post_message(m.ProfilesChanged(changed(before, now)))

    def files_changed(self, event: m.ProfilesChanged) -> None:
        if self.host.closing():
            return
        self.feed.forget_checks(event.names)
        self.load(self.select_next or self.host.selected)
        if self.feed.shown in event.names:
            self.feed.refresh()

    def loaded(self, event: m.ProfilesLoaded) -> None:
        if self.host.closing():
            return
        if event.generation and event.generation < self.loads:
            return  # a newer read is on its way
        self.feed.shown = None
        names = {e.name for e in event.entries}
        keep = self.select_next if self.select_next in names else event.keep
        if self.select_next in names:
            self.select_next = None
        self.host.profile_list.set_entries(event.entries, keep=keep, presence=event.presence)
        self.host.release_footer()
        if not event.entries:
            self.feed.clear("No profiles yet", EMPTY_STATE.format(
                folder=self.host.paths.profiles, imported=tools.known().importable_labels("and")))
        if event.presence is not None:
            self._marks_shown(event.presence)

    def presence(self, event: m.PresenceReady) -> None:
        if self.host.closing():  # the answer is too late
            return
        self.host.profile_list.set_presence(event.presence)
        self._marks_shown(event.presence)

    def _marks_shown(self, presence: Presence) -> None:
        if presence.keyring_error and presence.complete:  # said once, with the last step
            self.host.notify(presence.keyring_error, title="Keyring", severity="warning")
        self.host.release_detail()

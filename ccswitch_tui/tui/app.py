"""The ccs TUI: choose a profile and launch, edit profiles and keys, see env diffs and running tools.

The app is built from domain objects (paths, store, keys, the parent environment), so tests build it
with small real ones. Everything that blocks runs in thread workers that report with messages.
Launching lives in launching.py, changes to profiles and keys in profile_actions.py, importing in
importing.py: controllers holding the service, that reach the app only through ``Host`` (host.py) and
answer with messages; the screens are imported when first opened, so start-up stays short.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Header, Input, Static
from textual.worker import Worker, WorkerState, get_current_worker

from ccswitch_tui import tools
from ccswitch_tui.errors import CcsError
from ccswitch_tui.paths import Paths, resolve_paths
from ccswitch_tui.terminal_text import visible
from ccswitch_tui.tui import messages as m
from ccswitch_tui.tui.actions import ACTIONS, BY_CALL, BY_NAME, bindings
from ccswitch_tui.tui.commands import CcsCommands
from ccswitch_tui.tui.settings import load_settings, save_setting
from ccswitch_tui.tui.watch import changed, snapshot
from ccswitch_tui.tui.widgets.footer import CcsFooter
from ccswitch_tui.tui.widgets.profile_list import ProfileList, screen_order

# Not imported here: the detail pane (its tabs, grids and renderers) is mounted once the first marks are
# on screen; the service (the store, the keyring, the records) loads with the first profiles read, in a
# worker; the launcher, the profile actions and the importer load with their first use.
if TYPE_CHECKING:
    from textual.widgets import TabbedContent

    from ccswitch_tui.diagnose.inspect import Inspection
    from ccswitch_tui.keys.keyring import KeyStore
    from ccswitch_tui.profiles.store import Entry, Store
    from ccswitch_tui.tui.importing import Importer
    from ccswitch_tui.tui.launching import Launcher
    from ccswitch_tui.tui.profile_actions import ProfileActions
    from ccswitch_tui.tui.service import Presence, Service
    from ccswitch_tui.tui.widgets.detail import DetailPane, RunsView
    from ccswitch_tui.tui.widgets.running import RunningView

EMPTY_STATE = (
    "No profiles yet.\n\n"
    "Press n to create one from a preset (TaoToken, DeepSeek, Kimi, GLM, OpenRouter …), or i to import the "
    "providers you already use: CC Switch's, or the ones in your live {imported} "
    "configs.\n\n"
    "Profiles are files in {folder}."
)
NO_PROFILE = "No profile to act on yet: press n to create one, or i to import"
# The keys of the actions that need a profile, to say why they do nothing when there is none.
PROFILE_KEYS = {k: a for a in ACTIONS if a.needs_profile for k in a.key.split(",")}


def _text_field(widget: object) -> bool:
    """A field typed into has focus: an Input, or a TextArea (its module loads with the first one)."""
    text_area = sys.modules.get("textual.widgets._text_area")
    return isinstance(widget, Input) or (text_area is not None and isinstance(widget, text_area.TextArea))


def no_match(needle: str, total: int) -> str:
    return (f"No profile matches the filter {needle!r} ({total} hidden): press Esc in the list to clear it, "
            "or / to change it")


class CcsApp(App[None]):
    TITLE = "ccs"
    CSS_PATH = Path(__file__).with_name("ccs.tcss")
    # Tab-level keys live on the app, so they work whatever has focus; check_action limits them to their tab.
    BINDINGS = [*bindings(), Binding("a", "toggle_all_processes", "All processes", id="running-all",
                                     tooltip="Running tab: also list any process whose environment holds "
                                             "routing variables"),
                Binding("u", "toggle_rounds", "Rounds", id="runs-rounds", show=False,  # the footer is full
                        tooltip="Runs tab: the consistency gap per round of reruns, with the verdicts beside it "
                                "(u again: the runs)"),
                Binding("escape", "leave_pane", "Back to the list", show=False, id="leave-pane",
                        tooltip="From a pane back to the profile list")]
    TAB_ACTIONS = {"toggle_all_processes": "running", "toggle_rounds": "runs"}
    COMMANDS = App.COMMANDS | {CcsCommands}
    NOTIFICATION_TIMEOUT = 8

    def __init__(
        self,
        paths: Paths | None = None,
        *,
        store: Store | None = None,
        keys: KeyStore | None = None,
        environ: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        cursor_blink: bool = True,
        running_interval: float = 2.0,
        runs_interval: float = 1.0,
        watch_interval: float = 1.0,
        service: Service | None = None,
    ):
        super().__init__()
        env = dict(os.environ if environ is None else environ)
        self.paths = service.paths if service is not None else paths or resolve_paths(env)
        self._service = service
        self._service_parts = (store, keys, env, (cwd or Path.cwd()).resolve())
        self._service_lock = threading.Lock()
        self.cursor_blink = cursor_blink
        self.running_interval = running_interval
        self.runs_interval = runs_interval
        self._runs_stamp: int | None = None
        self.watch_interval = watch_interval
        self._folder: dict[str, tuple[int, int, int]] | None = None
        self.show_all_processes = False
        self._detail_lock = threading.Lock()
        self._wanted: tuple[str, int] | None = None
        self._detail_running = False
        self._generation = 0
        self._loads = 0  # profile reads asked for (load_profiles)
        self._shown: str | None = None
        # a profile to select once the list holds it (a new or copied profile): every reload keeps
        # it, the folder watcher's included, until the list shows it
        self._select_next: str | None = None
        self._launcher: Launcher | None = None
        self._profile_actions: ProfileActions | None = None
        self._importer: Importer | None = None
        # The detail pane is mounted once the rows on screen have their marks (``_release_detail``);
        # until then what it should show waits here.
        self._detail: DetailPane | None = None
        self._hold_detail = True
        self._held: str | None = None  # the profile whose detail is wanted
        self._releasing = False
        self._pending_clear: tuple[str, str] | None = None  # or why none is shown
        self._early_checks: dict[str, Any] = {}  # endpoint checks ended before the pane was there

    @property
    def service(self) -> Service:
        """The TUI's calls into the core: built with its first use (the first profiles read, in a worker)."""
        with self._service_lock:
            if self._service is None:
                from ccswitch_tui.keys.keyring import KeyStore  # lazy: see the imports
                from ccswitch_tui.profiles.store import Store  # lazy: see the imports
                from ccswitch_tui.tui.service import Service  # lazy: see the imports

                store, keys, env, cwd = self._service_parts
                self._service = Service(self.paths, store or Store(self.paths), keys or KeyStore(self.paths, env),
                                        env, cwd)
            return self._service

    # --- the controllers, each loaded with its first use ------------------------------------------

    @property
    def launcher(self) -> Launcher:
        if self._launcher is None:
            from ccswitch_tui.tui.launching import Launcher  # lazy: the launch machinery, with the first launch

            self._launcher = Launcher(self, self.service)
        return self._launcher

    @property
    def profile_actions(self) -> ProfileActions:
        if self._profile_actions is None:
            from ccswitch_tui.tui.profile_actions import ProfileActions  # lazy: see launcher

            self._profile_actions = ProfileActions(self, self.service)
        return self._profile_actions

    @property
    def importer(self) -> Importer:
        if self._importer is None:
            from ccswitch_tui.tui.importing import Importer  # lazy: see launcher

            self._importer = Importer(self, self.service)
        return self._importer

    def notify(self, message: str, *, title: str = "", severity: Any = "information", timeout: float | None = None,
               markup: bool = True) -> None:
        """Every notification (the screens' too) is plain text shown ``visible``: they quote errors,
        names and paths from elsewhere, so neither markup nor a control character in them is obeyed."""
        super().notify(visible(message), title=visible(title), severity=severity, timeout=timeout, markup=False)

    def action_help_quit(self) -> None:
        """ctrl+c does not quit (it copies): say which key does, as plain text (Textual's own note is
        markup, which ``notify`` shows as it is: ``Press [b]ctrl+q[/b]``)."""
        keys = [k for k, b in self.active_bindings.items() if b.binding.action in ("quit", "app.quit")]
        if keys:
            self.notify(f"Press {' or '.join(keys)} to quit ccs", title="Do you want to quit?")

    # --- layout -------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        """The first frame: the header, the list and the footer. The detail pane (five tabs, their grids
        and renderers: about as much to build and style again) comes after the marks of the rows on
        screen (``_release_detail``)."""
        yield Header(icon="⇄")
        with Horizontal(id="main"):
            yield ProfileList(id="sidebar")
            yield Static(Content.styled("Loading…", "$text-muted"), id="detail-loading")
        yield CcsFooter(held=True)  # its keys once the list is shown (``_release_footer``)

    def on_mount(self) -> None:
        self.sub_title = str(self.paths.profiles)  # and which profile a shim gets here: _read_shims
        self._restore_theme()
        if not self.cursor_blink:
            self.query_one("#filter", Input).cursor_blink = False
        self.query_one("#profiles").focus()
        # Paint first, read after: the profile files (with hundreds of them, a few hundred ms of parsing
        # and checking) are read once the first frame is on screen, so that frame does not wait for them.
        self.call_after_refresh(self.load_profiles, None, True)
        self.set_interval(self.running_interval, self._tick_running)
        self.set_interval(self.runs_interval, self._tick_runs)
        if self.watch_interval > 0:
            self.set_interval(self.watch_interval, self.watch_profiles)

    def _restore_theme(self) -> None:
        """The theme chosen last time (a file read at start-up: a few hundred bytes)."""

        theme = load_settings(self.paths).get("theme")
        if theme and theme in self.available_themes:
            self.theme = theme
        self.theme_changed_signal.subscribe(self, self._save_theme)

    def _save_theme(self, theme: Any) -> None:
        def save() -> None:
            try:
                save_setting(self.service.paths, "theme", theme.name)
            except OSError as exc:
                self.post_message(m.Failed("Theme not kept", f"cannot write {exc.filename}: {exc.strerror}"))

        self.run_worker(save, thread=True, group="settings", exit_on_error=False)

    def _main_screen(self) -> Screen:
        """The screen holding the list and the detail pane: the bottom of the stack, so that a
        message arriving while a dialog is open (a file watcher, a worker) still finds them."""
        return self.screen_stack[0] if self.screen_stack else self.screen

    @property
    def profile_list(self) -> ProfileList:
        return self._main_screen().query_one(ProfileList)

    @property
    def detail_pane(self) -> DetailPane:
        return cast("DetailPane", self._main_screen().query_one("#detail"))

    def _pane(self) -> DetailPane | None:
        """The detail pane, once mounted; None before (the first marks are not shown yet) and while the app closes."""
        pane = self._detail
        return pane if pane is not None and pane.is_attached and self.screen_stack else None

    def _release_detail(self) -> None:
        """The rows on screen have their marks (or cannot get them): mount the detail pane once they are
        painted, then show the profile under the cursor in it. From here on ``_detail_running`` says that
        a detail is on its way, as it does for ``request_detail`` (tests wait on it)."""
        if self._releasing or not self._hold_detail:
            return
        self._releasing = True
        self._read_shims()
        with self._detail_lock:
            if self._held is not None:
                self._detail_running = True
        self.call_after_refresh(self._mount_detail)

    @work(thread=True, group="shims", exit_on_error=False)
    def _read_shims(self) -> None:
        """Which profile a tool started by name here gets, in the header (the shims' report loads every
        client's spec: after the first marks)."""
        if shims := self.service.shim_header():
            self.post_message(m.ShimsRead(shims))

    @on(m.ShimsRead)
    def _shims(self, event: m.ShimsRead) -> None:
        self.sub_title += f"  ·  {event.text}"

    def _mount_detail(self) -> None:
        from ccswitch_tui.tui.widgets.detail import DetailPane  # lazy: see the imports

        if not self.screen_stack or not self._main_screen().query(ProfileList):  # the app is closing
            with self._detail_lock:
                self._detail_running = False
            return
        pane = DetailPane(self.service.environ, id="detail")
        pane.checks.update(self._early_checks)
        main = self._main_screen().query_one("#main")
        mounting = main.mount(pane)

        async def mounted() -> None:
            try:
                await mounting
                await main.query("#detail-loading").remove()
            except Exception:  # noqa: BLE001 — the app closing under the mount: nothing to show
                with self._detail_lock:
                    self._detail_running = False
                return
            self._detail = pane
            if self._pending_clear is not None:
                pane.clear(*self._pending_clear)
            with self._detail_lock:
                self._hold_detail = False
                held, self._held = self._held, None
                if held is not None:
                    self._generation += 1
                    self._wanted = (held, self._generation)
                self._detail_running = held is not None
            if held is not None:
                self._detail_worker()

        self.run_worker(mounted(), group="detail-mount", exit_on_error=False)

    def _release_footer(self) -> None:
        for footer in self._main_screen().query(CcsFooter) if self.screen_stack else ():
            footer.release()

    def _clear_detail(self, message: str, body: str) -> None:
        pane = self._pane()
        if pane is None:
            self._pending_clear = (message, body)
        else:
            pane.clear(message, body)

    def profile_entries(self) -> list[Entry]:
        return self.profile_list.entries

    @property
    def selected(self) -> str | None:
        return self.profile_list.selected

    def current_entry(self) -> Entry | None:
        return self.profile_list.entry(self.selected)

    # --- enabling actions ---------------------------------------------------------------------

    def action_enabled(self, action: str) -> bool | None:
        """True: the action can run; None: shown dimmed; False: not in the footer. A client's launch key
        shows only for a profile that serves that client (the footer has room for the rest); a key
        pressed while its action cannot run still says why (``on_key``)."""
        a = BY_NAME.get(action)
        if a is None or not a.needs_profile:
            return True
        entry = self.current_entry()
        launch = a.method == "launch" or a.name == "launch_menu"
        if entry is None:
            return False if launch else None
        p = entry.profile
        if p is None:
            return True if action in ("edit", "delete") else (False if launch else None)
        if a.name == "launch_menu":
            return any(s.name in p.tools for s in tools.load().clients())
        if launch:
            return a.args[0] in p.tools
        return True

    def on_key(self, event: events.Key) -> None:
        """A profile's key that cannot act (no profile, a broken one, a tool it does not serve) says why,
        instead of doing nothing. Keys an enabled binding took never get here."""
        a = PROFILE_KEYS.get(event.key)
        if a is None or self.screen.is_modal or self.action_enabled(a.name):
            return
        entry = self.current_entry()
        needle = self.profile_list.filter_text
        if entry is None and needle and self.profile_list.entries:
            self.notify(no_match(needle, len(self.profile_list.entries)), title=a.label, severity="warning")
        elif entry is None:
            self.notify(NO_PROFILE, title=a.label)
        elif entry.profile is None:
            self.notify(f"{entry.name} cannot be loaded: press e to fix it", title=a.label, severity="warning")
        elif not a.args:  # the launch menu of a profile that serves no client
            self.notify(f"{entry.name} serves no client: press e and switch one on", title=a.label,
                        severity="warning", markup=False)
        else:
            tool = a.args[0]
            self.notify(f"{entry.name} has no [{tool}] table, so it cannot launch {a.label}: press e to add one",
                        title=a.label, severity="warning", markup=False)

    def _refresh_bindings_if_changed(self) -> None:
        """The footer is rebuilt on refresh_bindings: only when what the actions can do changed."""
        entry = self.current_entry()
        p = entry.profile if entry else None
        state = (entry is not None, p is not None, *(bool(p and t in p.tools) for t in tools.names()))
        if state != getattr(self, "_binding_state", None):
            self._binding_state = state
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        a = BY_CALL.get((action, tuple(map(str, parameters))))
        if (a is not None or action in ("quit", "show_tab", "leave_pane", *self.TAB_ACTIONS)) and self.screen.is_modal:
            return False  # under a dialog, its own keys count (ctrl+q still quits)
        if action in self.TAB_ACTIONS:
            return self._shown_tab() == self.TAB_ACTIONS[action]
        if action == "filter" and (self.screen is not self.profile_list.screen
                                   or _text_field(self.focused)):
            return False  # a priority key: `/` typed into a field, or on another screen, stays a `/`
        return self.action_enabled(a.name) if a is not None else True

    # --- loading ------------------------------------------------------------------------------

    def load_profiles(self, keep: str | None = None, first: bool = False) -> None:
        """Read the profiles in a worker; only the latest read's list is shown (an earlier one still
        running would bring back the selection it started with)."""
        self._loads += 1
        pl = self.profile_list
        at = self._select_next or keep  # the row the list will show first (``_loaded``)
        self._read_profiles(keep, first, self._loads, pl.filter_text, pl.rows_shown(), at)

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def _read_profiles(self, keep: str | None, first: bool, generation: int, needle: str, rows: int,
                       at: str | None) -> None:
        """The profiles, then their keys and problem marks: the list comes with the marks of the rows it
        shows (one paint, not a list painted and painted again a moment later), the other profiles'
        marks follow. A newer read cancels this one: it posts nothing more."""
        worker = get_current_worker()
        if first:
            self._folder = snapshot(self.paths.profiles)  # what the watcher compares with
        entries = self.service.entries()
        steps = self.service.presence_in_steps(screen_order(entries, needle, at), rows)
        try:
            marks = next(steps)
        except BaseException:
            self.post_message(m.ProfilesLoaded(entries, keep, generation))  # the list still shows
            raise
        if worker.is_cancelled:
            return
        self.post_message(m.ProfilesLoaded(entries, keep, generation, marks))
        for marks in steps:
            if worker.is_cancelled:
                return
            self.post_message(m.PresenceReady(marks))

    @work(thread=True, exclusive=True, group="watch", exit_on_error=False)
    def watch_profiles(self) -> None:
        """Profile files written, added or removed by anything (an editor, `ccs new`, a sync): reload."""

        now = snapshot(self.paths.profiles)
        before, self._folder = self._folder, now
        if before is not None and changed(before, now):
            self.post_message(m.ProfilesChanged(changed(before, now)))

    @on(m.ProfilesChanged)
    def _profiles_changed(self, event: m.ProfilesChanged) -> None:
        if not self.screen_stack or not self._main_screen().query(ProfileList):  # the app is closing
            return
        for name in event.names:  # an endpoint check of the old file says nothing now
            self._early_checks.pop(name, None)
            if pane := self._pane():
                pane.checks.pop(name, None)
        self.load_profiles(self._select_next or self.selected)
        if self._shown in event.names:
            self.refresh_detail()

    @on(m.ProfilesLoaded)
    def _loaded(self, event: m.ProfilesLoaded) -> None:
        if not self.screen_stack or not self._main_screen().query(ProfileList):  # the app is closing
            return
        if event.generation and event.generation < self._loads:
            return  # a newer read is on its way
        self._shown = None
        names = {e.name for e in event.entries}
        keep = self._select_next if self._select_next in names else event.keep
        if self._select_next in names:
            self._select_next = None
        self.profile_list.set_entries(event.entries, keep=keep, presence=event.presence)
        self._release_footer()
        if not event.entries:
            self._clear_detail("No profiles yet", EMPTY_STATE.format(
                folder=self.paths.profiles, imported=tools.known().importable_labels("and")))
        if event.presence is not None:
            self._marks_shown(event.presence)

    @on(m.PresenceReady)
    def _presence(self, event: m.PresenceReady) -> None:
        if not self.screen_stack or not self._main_screen().query(ProfileList):  # closing: the answer is too late
            return
        self.profile_list.set_presence(event.presence)
        self._marks_shown(event.presence)

    def _marks_shown(self, presence: Presence) -> None:
        if presence.keyring_error and presence.complete:  # said once, with the last step
            self.notify(presence.keyring_error, title="Keyring", severity="warning")
        self._release_detail()

    @on(ProfileList.Chosen)
    def _chosen(self) -> None:
        self.focus_detail()

    @on(ProfileList.Highlighted)
    def _highlighted(self, event: ProfileList.Highlighted) -> None:
        if not self.screen_stack or not self._main_screen().query(ProfileList):  # the app is closing
            return
        self._refresh_bindings_if_changed()
        pl = self.profile_list
        if event.profile is None and pl.filter_text and pl.entries:
            self._shown = None  # the filter hides every profile: so does the detail (one still read is dropped)
            self._clear_detail("No profile matches the filter", no_match(pl.filter_text, len(pl.entries)))
        if event.profile is not None and event.profile != self._shown:
            self._shown = event.profile
            self.request_detail(event.profile)

    def select_profile(self, name: str) -> None:
        pl = self.profile_list
        if name not in [e.name for e in pl.entries]:
            return
        if pl.filter_text:
            pl.query_one("#filter", Input).value = ""
        pl.refill(name)
        pl.options.focus()

    def request_detail(self, name: str) -> None:
        """Show ``name``'s detail; one worker at a time, always ending on the latest request. Before the
        detail pane is there, the request waits for it (``_release_detail``)."""
        with self._detail_lock:
            if self._hold_detail:
                self._held = name
                return
            self._generation += 1
            self._wanted = (name, self._generation)
            if self._detail_running:
                return
            self._detail_running = True
        self._detail_worker()

    def refresh_detail(self) -> None:
        if self._shown:
            self.request_detail(self._shown)

    @work(thread=True, group="detail", exit_on_error=False)
    def _detail_worker(self) -> None:
        try:
            while True:
                wanted = self._wanted
                assert wanted is not None
                detail = self.service.detail(wanted[0])
                with self._detail_lock:
                    if self._wanted == wanted:
                        self._detail_running = False
                        self.post_message(m.DetailReady(detail))
                        return
        except BaseException:
            with self._detail_lock:
                self._detail_running = False
            raise

    @on(m.DetailReady)
    def _detail_ready(self, event: m.DetailReady) -> None:
        if not self.screen_stack or not self._main_screen().query(ProfileList):  # closing: the answer is too late
            return
        d = event.detail
        pane = self._pane()
        if d.entry.name != self.selected or pane is None:
            return
        pane.show(d)
        self.profile_list.update_problems(d.entry.name, d.key.present if d.key else None, d.problems)
        self._refresh_bindings_if_changed()

    # --- the Runs tab: a recorded run's requests, live while it goes on -------------------------

    def _shown_tab(self) -> str | None:
        """The detail pane's tab, or None while the pane is not there (a timer firing as the app
        starts or closes)."""
        pane = self._pane()
        return pane.active_tab if pane is not None else None

    def _tick_runs(self) -> None:
        """While the Runs tab is shown: reload when a run starts or ends (the runs folder changes) and
        as long as a recorded run goes on."""
        if self._shown_tab() != "runs" or self.screen.is_modal:
            return
        pane = self.detail_pane
        try:
            stamp = self.service.paths.runs.stat().st_mtime_ns
        except OSError:
            stamp = None
        changed, self._runs_stamp = stamp != self._runs_stamp, stamp
        if changed or any(r.live for r in pane.runs):
            self.refresh_detail()

    def on_runs_view_selected(self, event: RunsView.Selected) -> None:
        self.load_requests(event.manifest)

    @work(thread=True, exclusive=True, group="requests", exit_on_error=False)
    def load_requests(self, manifest: Mapping[str, Any]) -> None:
        self.post_message(m.RequestsReady(str(manifest.get("launch_id")), self.service.requests(manifest)))

    @on(m.RequestsReady)
    def _requests(self, event: m.RequestsReady) -> None:
        for view in cast("list[RunsView]", list(self.query("RunsView"))):
            view.show_requests(event.launch_id, event.records)

    # --- the Running tab ----------------------------------------------------------------------

    def _tick_running(self) -> None:
        if self._shown_tab() == "running" and not self.screen.is_modal:
            self.scan_processes()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self.refresh_bindings()  # the footer shows the tab's own keys
        if event.pane.id == "running":
            self.scan_processes()

    def running_view(self) -> RunningView | None:
        """The Running tab's view; None for the moment after start-up before it is mounted."""
        views = self.query("RunningView")
        return cast("RunningView", views.first()) if views else None

    @work(thread=True, exclusive=True, group="running", exit_on_error=False)
    def scan_processes(self) -> None:
        view = self.running_view()
        pid = view.selected_pid if view else None
        try:
            procs = self.service.processes(self.show_all_processes)
        except CcsError as exc:
            self.post_message(m.ProcessesReady([], error=str(exc)))
            return
        insp, error = None, None
        if pid is not None and pid in [p.pid for p in procs]:
            insp, error = self.service.inspect(pid)
        self.post_message(m.ProcessesReady(procs, insp, error, pid if insp or error else None))

    @on(m.ProcessesReady)
    def _processes(self, event: m.ProcessesReady) -> None:
        view = self.running_view()
        if view is None:
            return
        scope = "any process with routing variables" if self.show_all_processes else \
            f"{', '.join(s.label for s in tools.load().clients())} and ccs-launched processes"
        # the key first: the line is cut at the pane's width (half of an 80-column terminal)
        status = "a: toggle all · " + (event.error or f"{len(event.processes)} running — {scope}; "
                                                      f"refreshed every {self.running_interval:g} s")
        view.set_processes(event.processes, status)
        if event.inspected_pid is not None and event.inspected_pid == view.selected_pid:
            self._show_inspection(event.inspected_pid, event.inspection, event.error)

    def on_running_view_selected(self, event: RunningView.Selected) -> None:
        if event.pid is not None:
            self.inspect_process(event.pid)

    def on_running_view_ready(self) -> None:
        if self._shown_tab() == "running":  # None: the app is closing
            self.scan_processes()

    def action_toggle_rounds(self) -> None:
        for view in cast("list[RunsView]", list(self.query("RunsView"))):
            view.toggle_rounds()

    def action_toggle_all_processes(self) -> None:
        self.show_all_processes = not self.show_all_processes
        self.scan_processes()

    @work(thread=True, exclusive=True, group="inspect", exit_on_error=False)
    def inspect_process(self, pid: int) -> None:
        insp, error = self.service.inspect(pid)
        self.post_message(m.InspectionReady(pid, insp, error))

    @on(m.InspectionReady)
    def _inspected(self, event: m.InspectionReady) -> None:
        self._show_inspection(event.pid, event.inspection, event.error)

    def _show_inspection(self, pid: int, insp: Inspection | None, error: str | None) -> None:
        view = self.running_view()
        if view is None or pid != view.selected_pid:
            return
        if insp is not None:
            view.show_inspection(insp)
        else:
            view.show_error(error or f"pid {pid}: nothing to show")

    # --- generic worker reports ---------------------------------------------------------------

    @on(m.Failed)
    def _failed(self, event: m.Failed) -> None:
        self.notify(event.error, title=event.what, severity="error", timeout=12)

    @on(m.Done)
    def _done(self, event: m.Done) -> None:
        self.notify(event.text)
        for name in event.changed:  # an endpoint check of the old file says nothing now
            self._early_checks.pop(name, None)
            if pane := self._pane():
                pane.checks.pop(name, None)
        if event.select:
            self._select_next = event.select
        if event.reload:
            self.load_profiles(event.select or self.selected)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "load" and event.state in (WorkerState.ERROR, WorkerState.CANCELLED):
            self._release_footer()  # no list coming from this one: neither waits for it
            self._release_detail()
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            err = event.worker.error
            text = str(err) if isinstance(err, CcsError) else f"{type(err).__name__}: {err}"
            self.notify(text, title="Error", severity="error", timeout=12)

    # --- what the controllers may ask (Host, host.py) -------------------------------------------

    def shown_tool(self) -> str | None:
        pane = self._pane()
        return pane.tool if pane is not None else None

    def reload(self, keep: str | None) -> None:
        self.load_profiles(keep)

    def set_status(self, text: str) -> None:
        self.sub_title = text

    def open_screen(self, screen: Screen[Any], then: Callable[[Any], None]) -> None:
        self.push_screen(screen, then)

    @on(m.LaunchReady)
    def _launch_ready(self, event: m.LaunchReady) -> None:
        self.launcher.ready(event)

    @on(m.LaunchRefused)
    def _launch_refused(self, event: m.LaunchRefused) -> None:
        self.launcher.refused(event)

    # --- actions ------------------------------------------------------------------------------

    def action_launch(self, tool: str) -> None:
        """Launch the client ``tool`` (a name of the registry: its binding is ``launch('<name>')``)."""
        self.launcher.launch(tool)

    def action_launch_menu(self) -> None:
        self.launcher.menu()

    def action_shell(self) -> None:
        self.launcher.shell()

    def action_run_command(self) -> None:
        self.launcher.run_command()

    def action_key(self) -> None:
        self.profile_actions.key()

    def action_new(self) -> None:
        self.profile_actions.new()

    def action_edit(self) -> None:
        self.profile_actions.edit()

    def action_duplicate(self) -> None:
        self.profile_actions.duplicate()

    def action_delete(self) -> None:
        self.profile_actions.delete()

    def action_import_profiles(self) -> None:
        self.importer.import_profiles()

    def action_filter(self) -> None:
        self.profile_list.focus_filter()

    def action_reload(self) -> None:
        self.load_profiles(self.selected)

    def action_help(self) -> None:
        from ccswitch_tui.tui.screens.help import HelpScreen  # lazy: markdown_it and the help text when opened

        self.push_screen(HelpScreen())

    def _in_pane(self) -> bool:
        pane = self._pane()
        return self.focused is not None and pane is not None and pane in self.focused.ancestors_with_self

    def action_show_tab(self, tab: str) -> None:
        """Show ``tab``; from inside a pane, into the new tab's pane. The focus leaves the old pane
        first: a widget focused there (the next one of that pane, once the first is hidden) brought
        its tab back, so `1` did nothing in the Runs table."""
        pane = self._pane()
        if pane is None:
            return
        inside = self._in_pane()
        if inside:
            self.profile_list.options.focus()
        pane.show_tab(tab)
        if inside:
            self.call_after_refresh(self.focus_detail)

    def action_leave_pane(self) -> None:
        """Esc in a pane: back to the profile list (in the list, Esc clears the filter)."""
        if self._in_pane():
            self.profile_list.options.focus()

    def focus_detail(self) -> None:
        """Enter on a profile: into the active tab, to scroll or pick a row with the keyboard."""
        pane = self._pane()
        tab = pane.active_tab if pane is not None else None
        if pane is None or tab is None:
            return
        target = {"environment": "#env-body", "running": "#procs", "runs": "#runs-table"}.get(tab)
        if target:
            for widget in self.query(target):
                widget.focus()
        else:
            pane.query_one(f"#{tab} .body").focus()

    def action_cycle_tool(self) -> None:
        if pane := self._pane():
            pane.cycle_tool()

    def action_set_tool(self, tool: str) -> None:
        if pane := self._pane():
            pane.set_tool(tool)

    def action_check(self) -> None:
        entry = self.current_entry()
        if entry is None or entry.profile is None:
            return
        name = entry.profile.name
        self.notify(f"checking {name}'s endpoints…", timeout=3)
        self.check_profile(name)

    @work(thread=True, exclusive=True, group="check", exit_on_error=False)
    def check_profile(self, name: str) -> None:
        try:
            results, summary, severity = self.service.check(name)
        except CcsError as exc:
            self.post_message(m.Failed("Check", str(exc)))
            return
        self.post_message(m.CheckDone(name, results, summary, severity))

    @on(m.CheckDone)
    def _checked(self, event: m.CheckDone) -> None:
        if pane := self._pane():
            pane.set_check(event.profile, event.results)
        else:
            self._early_checks[event.profile] = event.results
        self.notify(event.summary, title=f"Check {event.profile}", severity=event.severity)


def run_app() -> None:
    CcsApp().run()

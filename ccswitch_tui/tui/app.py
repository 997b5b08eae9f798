"""The ccs TUI: choose a profile and launch, edit profiles and keys, see env diffs and running tools.

The app is built from domain objects (paths, store, keys, the parent environment), so tests build it
with small real ones. Everything that blocks runs in thread workers that report with messages.
Launching lives in launching.py, changes to profiles and keys in profile_actions.py, importing in
importing.py: controllers holding the service, that reach the app only through ``Host`` (host.py) and
answer with messages; the screens are imported when first opened, so start-up stays short. After the
first frame the app also holds the profile reading (profile_reading.py), the detail pane's mounting and
feeding (detail_feed.py) and the Runs and Running tabs' workers (live_tabs.py); which actions a profile
lets run, and why not, is in actions.py.
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
from textual.widget import Widget
from textual.widgets import Header, Input, Static
from textual.worker import Worker, WorkerState

from ccswitch_tui import tools
from ccswitch_tui.errors import CcsError
from ccswitch_tui.paths import Paths, resolve_paths
from ccswitch_tui.terminal_text import visible
from ccswitch_tui.tui import messages as m
from ccswitch_tui.tui.actions import BY_CALL, PROFILE_KEYS, bindings, enabled, no_match, why_not
from ccswitch_tui.tui.commands import CcsCommands
from ccswitch_tui.tui.settings import load_settings, save_setting
from ccswitch_tui.tui.widgets.footer import CcsFooter
from ccswitch_tui.tui.widgets.profile_list import ProfileList

# Not imported here: the detail pane (its tabs, grids and renderers) is mounted once the first marks are
# on screen; the service (the store, the keyring, the records) loads with the first profiles read, in a
# worker; the launcher, the profile actions and the importer load with their first use.
if TYPE_CHECKING:
    from textual.widgets import TabbedContent

    from ccswitch_tui.keys.keyring import KeyStore
    from ccswitch_tui.profiles.store import Entry, Store
    from ccswitch_tui.tui.detail_feed import DetailFeed
    from ccswitch_tui.tui.importing import Importer
    from ccswitch_tui.tui.launching import Launcher
    from ccswitch_tui.tui.live_tabs import LiveTabs
    from ccswitch_tui.tui.profile_actions import ProfileActions
    from ccswitch_tui.tui.profile_reading import ProfileReader
    from ccswitch_tui.tui.service import Detail, Service
    from ccswitch_tui.tui.widgets.detail import DetailPane, RunsView
    from ccswitch_tui.tui.widgets.running import RunningView

def _text_field(widget: object) -> bool:
    """A field typed into has focus: an Input, or a TextArea (its module loads with the first one)."""
    text_area = sys.modules.get("textual.widgets._text_area")
    return isinstance(widget, Input) or (text_area is not None and isinstance(widget, text_area.TextArea))


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
        self.watch_interval = watch_interval
        self._launcher: Launcher | None = None
        self._profile_actions: ProfileActions | None = None
        self._importer: Importer | None = None
        # The detail pane and what it waits to show (detail_feed.py: mounted once the rows on screen
        # have their marks), the profile reading (profile_reading.py) and the live tabs (live_tabs.py)
        self._feed: DetailFeed | None = None
        self._reader: ProfileReader | None = None
        self._tabs: LiveTabs | None = None

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
        screen (``release_detail``)."""
        yield Header(icon="⇄")
        with Horizontal(id="main"):
            yield ProfileList(id="sidebar")
            yield Static(Content.styled("Loading…", "$text-muted"), id="detail-loading")
        yield CcsFooter(held=True)  # its keys once the list is shown (``release_footer``)

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

    def main_node(self, selector: str) -> Widget:
        return self._main_screen().query_one(selector)

    def closing(self) -> bool:
        """No main screen left to show an answer in (the app is closing)."""
        return not self.screen_stack or not self._main_screen().query(ProfileList)

    # --- the controllers of the list and the pane, each loaded after the first frame ----------------

    @property
    def feed(self) -> DetailFeed:
        if self._feed is None:
            from ccswitch_tui.tui.detail_feed import DetailFeed  # lazy: after the first frame, as the pane

            self._feed = DetailFeed(self)
        return self._feed

    @property
    def reader(self) -> ProfileReader:
        if self._reader is None:
            from ccswitch_tui.tui.profile_reading import ProfileReader  # lazy: read after the first frame

            self._reader = ProfileReader(self, self.feed)
        return self._reader

    @property
    def tabs(self) -> LiveTabs:
        if self._tabs is None:
            from ccswitch_tui.tui.live_tabs import LiveTabs  # lazy: with the Runs or Running tab shown

            self._tabs = LiveTabs(self)
        return self._tabs

    @property
    def _detail_running(self) -> bool:
        """A profile's detail is on its way (tests wait on it)."""
        return self._feed is not None and self._feed.running

    @property
    def show_all_processes(self) -> bool:
        """The Running tab lists any process with routing variables, not only the clients'."""
        return self._tabs is not None and self._tabs.show_all_processes

    @show_all_processes.setter
    def show_all_processes(self, value: bool) -> None:
        self.tabs.show_all_processes = value

    def _pane(self) -> DetailPane | None:
        """The detail pane, once mounted; None before (the first marks are not shown yet) and while the app closes."""
        return self._feed.pane() if self._feed is not None else None

    # --- the detail pane and the header, after the first marks --------------------------------------

    def release_detail(self) -> None:
        self.feed.release(self._read_shims)

    @work(thread=True, group="shims", exit_on_error=False)
    def _read_shims(self) -> None:
        """Which profile a tool started by name here gets, in the header (the shims' report loads every
        client's spec: after the first marks)."""
        if shims := self.service.shim_header():
            self.post_message(m.ShimsRead(shims))

    @on(m.ShimsRead)
    def _shims(self, event: m.ShimsRead) -> None:
        self.sub_title += f"  ·  {event.text}"

    def release_footer(self) -> None:
        for footer in self._main_screen().query(CcsFooter) if self.screen_stack else ():
            footer.release()

    def update_problems(self, detail: Detail) -> None:
        self.profile_list.update_problems(detail.entry.name, detail.key.present if detail.key else None,
                                          detail.problems)

    def profile_entries(self) -> list[Entry]:
        return self.profile_list.entries

    @property
    def selected(self) -> str | None:
        return self.profile_list.selected

    def current_entry(self) -> Entry | None:
        return self.profile_list.entry(self.selected)

    # --- enabling actions ---------------------------------------------------------------------

    def action_enabled(self, action: str) -> bool | None:
        """True: the action can run; None: shown dimmed; False: not in the footer (actions.py: ``enabled``);
        a key pressed while its action cannot run still says why (``on_key``)."""
        return enabled(action, self.current_entry())

    def on_key(self, event: events.Key) -> None:
        """A profile's key that cannot act (no profile, a broken one, a tool it does not serve) says why,
        instead of doing nothing. Keys an enabled binding took never get here."""
        a = PROFILE_KEYS.get(event.key)
        if a is None or self.screen.is_modal or self.action_enabled(a.name):
            return
        pl = self.profile_list
        text, severity = why_not(a, self.current_entry(), pl.filter_text, len(pl.entries))
        self.notify(text, title=a.label, severity=severity, markup=False)

    def refresh_bindings_if_changed(self) -> None:
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
            return self.shown_tab() == self.TAB_ACTIONS[action]
        if action == "filter" and (self.screen is not self.profile_list.screen
                                   or _text_field(self.focused)):
            return False  # a priority key: `/` typed into a field, or on another screen, stays a `/`
        return self.action_enabled(a.name) if a is not None else True

    # --- loading (profile_reading.py) -------------------------------------------------------------

    def load_profiles(self, keep: str | None = None, first: bool = False) -> None:
        self.reader.load(keep, first)

    def watch_profiles(self) -> None:
        self.reader.watch()

    @on(m.ProfilesChanged)
    def _profiles_changed(self, event: m.ProfilesChanged) -> None:
        self.reader.files_changed(event)

    @on(m.ProfilesLoaded)
    def _loaded(self, event: m.ProfilesLoaded) -> None:
        self.reader.loaded(event)

    @on(m.PresenceReady)
    def _presence(self, event: m.PresenceReady) -> None:
        self.reader.presence(event)

    @on(ProfileList.Chosen)
    def _chosen(self) -> None:
        self.focus_detail()

    @on(ProfileList.Highlighted)
    def _highlighted(self, event: ProfileList.Highlighted) -> None:
        if self.closing():
            return
        self.refresh_bindings_if_changed()
        pl, feed = self.profile_list, self.feed
        if event.profile is None and pl.filter_text and pl.entries:
            feed.shown = None  # the filter hides every profile: so does the detail (one still read is dropped)
            feed.clear("No profile matches the filter", no_match(pl.filter_text, len(pl.entries)))
        if event.profile is not None and event.profile != feed.shown:
            feed.shown = event.profile
            feed.request(event.profile)

    def select_profile(self, name: str) -> None:
        pl = self.profile_list
        if name not in [e.name for e in pl.entries]:
            return
        if pl.filter_text:
            pl.query_one("#filter", Input).value = ""
        pl.refill(name)
        pl.options.focus()

    def request_detail(self, name: str) -> None:
        self.feed.request(name)

    def refresh_detail(self) -> None:
        self.feed.refresh()

    @on(m.DetailReady)
    def _detail_ready(self, event: m.DetailReady) -> None:
        self.feed.ready(event)

    # --- the Runs and Running tabs (live_tabs.py) ----------------------------------------------------

    def shown_tab(self) -> str | None:
        """The detail pane's tab, or None while the pane is not there (a timer firing as the app
        starts or closes)."""
        pane = self._pane()
        return pane.active_tab if pane is not None else None

    def _tick_runs(self) -> None:
        if self.shown_tab() == "runs" and not self.screen.is_modal:
            self.tabs.tick_runs(any(r.live for r in self.detail_pane.runs))

    def on_runs_view_selected(self, event: RunsView.Selected) -> None:
        self.tabs.load_requests(event.manifest)

    @on(m.RequestsReady)
    def _requests(self, event: m.RequestsReady) -> None:
        self.tabs.requests(event)

    def _tick_running(self) -> None:
        if self.shown_tab() == "running" and not self.screen.is_modal:
            self.tabs.scan()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self.refresh_bindings()  # the footer shows the tab's own keys
        if event.pane.id == "running":
            self.tabs.scan()

    def on_running_view_selected(self, event: RunningView.Selected) -> None:
        if event.pid is not None:
            self.tabs.inspect(event.pid)

    def on_running_view_ready(self) -> None:
        if self.shown_tab() == "running":  # None: the app is closing
            self.tabs.scan()

    @on(m.ProcessesReady)
    def _processes(self, event: m.ProcessesReady) -> None:
        self.tabs.processes(event)

    def inspect_process(self, pid: int) -> None:
        self.tabs.inspect(pid)

    @on(m.InspectionReady)
    def _inspected(self, event: m.InspectionReady) -> None:
        self.tabs.show_inspection(event.pid, event.inspection, event.error)

    def action_toggle_rounds(self) -> None:
        self.tabs.toggle_rounds()

    def action_toggle_all_processes(self) -> None:
        self.tabs.toggle_all_processes()

    # --- generic worker reports ---------------------------------------------------------------

    @on(m.Failed)
    def _failed(self, event: m.Failed) -> None:
        self.notify(event.error, title=event.what, severity="error", timeout=12)

    @on(m.Done)
    def _done(self, event: m.Done) -> None:
        self.notify(event.text)
        if event.changed:  # an endpoint check of the old file says nothing now
            self.feed.forget_checks(event.changed)
        if event.select:
            self.reader.select_next = event.select
        if event.reload:
            self.load_profiles(event.select or self.selected)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "load" and event.state in (WorkerState.ERROR, WorkerState.CANCELLED):
            self.release_footer()  # no list coming from this one: neither waits for it
            self.release_detail()
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
        self.feed.checked(event)
        self.notify(event.summary, title=f"Check {event.profile}", severity=event.severity)


def run_app() -> None:
    CcsApp().run()

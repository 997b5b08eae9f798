"""The ccs TUI: choose a profile and launch, edit profiles and keys, see env diffs and running tools.

The app is built from domain objects (paths, store, keys, the parent environment), so tests build it
with small real ones. Everything that blocks runs in thread workers that report with messages.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import App, ComposeResult
from textual.containers import Horizontal
from textual.widgets import Footer, Header, TabbedContent
from textual.worker import Worker, WorkerState

from ..errors import CcsError
from ..paths import Paths, resolve_paths
from ..secrets import KeyStore
from ..store import Entry, Store
from . import messages as m
from .actions import BY_NAME, bindings
from .commands import CcsCommands
from .launching import LaunchMixin
from .service import Service
from .widgets.detail import DetailPane
from .widgets.profile_list import ProfileList
from .widgets.running import RunningView

if TYPE_CHECKING:  # the screens are imported when first opened: start-up stays short
    from .screens.editor import EditResult
    from .screens.modals import KeyChange, NewProfile


class CcsApp(LaunchMixin, App[None]):
    TITLE = "ccs"
    CSS_PATH = Path(__file__).with_name("ccs.tcss")
    BINDINGS = bindings()
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
        service: Service | None = None,
    ):
        super().__init__()
        env = dict(os.environ if environ is None else environ)
        paths = paths or resolve_paths(env)
        self.service = service or Service(paths, store or Store(paths), keys or KeyStore(paths, env), env,
                                          (cwd or Path.cwd()).resolve())
        self.cursor_blink = cursor_blink
        self.running_interval = running_interval
        self.show_all_processes = False
        self._detail_lock = threading.Lock()
        self._wanted: tuple[str, int] | None = None
        self._detail_running = False
        self._generation = 0
        self._shown: str | None = None

    # --- layout -------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header(icon="⇄")
        with Horizontal(id="main"):
            yield ProfileList(id="sidebar")
            yield DetailPane(self.service.environ, id="detail")
        yield Footer()

    def on_load(self) -> None:
        # Start reading the profile files before the screen is built: with hundreds of them the
        # list is then ready about when the first frame is.
        self._first_entries: Future[list[Entry]] = Future()

        def read() -> None:
            try:
                self._first_entries.set_result(self.service.entries())
            except BaseException as exc:  # handed to load_profiles, which reports it
                self._first_entries.set_exception(exc)

        self.run_worker(read, thread=True, group="preload", exit_on_error=False)

    def on_mount(self) -> None:
        self.sub_title = str(self.service.paths.profiles)
        if not self.cursor_blink:
            self.query_one("#filter").cursor_blink = False  # type: ignore[attr-defined]
        self.query_one("#profiles").focus()
        self.load_profiles(first=True)
        self.set_interval(self.running_interval, self._tick_running)

    @property
    def profile_list(self) -> ProfileList:
        return self.query_one(ProfileList)

    @property
    def detail_pane(self) -> DetailPane:
        return self.query_one(DetailPane)

    def profile_entries(self) -> list[Entry]:
        return self.profile_list.entries

    @property
    def selected(self) -> str | None:
        return self.profile_list.selected

    def current_entry(self) -> Entry | None:
        return self.profile_list.entry(self.selected)

    # --- enabling actions ---------------------------------------------------------------------

    def action_enabled(self, action: str) -> bool | None:
        a = BY_NAME.get(action)
        if a is None or not a.needs_profile:
            return True
        entry = self.current_entry()
        if entry is None:
            return None
        p = entry.profile
        if p is None:
            return True if action in ("edit", "delete") else None
        if action in ("launch_claude", "launch_codex"):
            return True if getattr(p, action.removeprefix("launch_")) is not None else None
        return True

    def _refresh_bindings_if_changed(self) -> None:
        """The footer is rebuilt on refresh_bindings: only when what the actions can do changed."""
        entry = self.current_entry()
        p = entry.profile if entry else None
        state = (entry is not None, p is not None, bool(p and p.claude), bool(p and p.codex))
        if state != getattr(self, "_binding_state", None):
            self._binding_state = state
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if (action in BY_NAME or action in ("quit", "show_tab")) and self.screen.is_modal:
            return False  # under a dialog, its own keys count (ctrl+q still quits)
        return self.action_enabled(action)

    # --- loading ------------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def load_profiles(self, keep: str | None = None, first: bool = False) -> None:
        entries = self._first_entries.result() if first else self.service.entries()
        self.post_message(m.ProfilesLoaded(entries, keep))

    @work(thread=True, exclusive=True, group="presence", exit_on_error=False)
    def load_presence(self, entries: list[Entry]) -> None:
        self.post_message(m.PresenceReady(self.service.presence(entries)))

    @on(m.ProfilesLoaded)
    def _loaded(self, event: m.ProfilesLoaded) -> None:
        self._shown = None
        self.profile_list.set_entries(event.entries, keep=event.keep)
        if not event.entries:
            self.detail_pane.clear("No profiles yet: press n to create one from a preset.")
        # Keys and problem marks after the list is on screen: the keyring and 3 plans a profile
        # should not hold up the first paint.
        self.call_after_refresh(self.load_presence, event.entries)

    @on(m.PresenceReady)
    def _presence(self, event: m.PresenceReady) -> None:
        self.profile_list.set_presence(event.presence)
        if event.presence.keyring_error:
            self.notify(event.presence.keyring_error, title="Keyring", severity="warning")

    @on(ProfileList.Chosen)
    def _chosen(self) -> None:
        self.focus_detail()

    @on(ProfileList.Highlighted)
    def _highlighted(self, event: ProfileList.Highlighted) -> None:
        self._refresh_bindings_if_changed()
        if event.profile is not None and event.profile != self._shown:
            self._shown = event.profile
            self.request_detail(event.profile)

    def select_profile(self, name: str) -> None:
        pl = self.profile_list
        if name not in [e.name for e in pl.entries]:
            return
        if pl.filter_text:
            pl.query_one("#filter").value = ""  # type: ignore[attr-defined]
        pl.refill(name)
        pl.options.focus()

    def request_detail(self, name: str) -> None:
        """Show ``name``'s detail; one worker at a time, always ending on the latest request."""
        with self._detail_lock:
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
        d = event.detail
        if d.entry.name != self.selected:
            return
        self.detail_pane.show(d)
        self.profile_list.update_problems(d.entry.name, d.key.present if d.key else None, d.problems)
        self._refresh_bindings_if_changed()

    # --- the Running tab ----------------------------------------------------------------------

    def _tick_running(self) -> None:
        if self.detail_pane.active_tab == "running" and not self.screen.is_modal:
            self.scan_processes()

    @on(TabbedContent.TabActivated)
    def _tab(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == "running":
            self.scan_processes()

    def running_view(self) -> RunningView | None:
        """The Running tab's view; None for the moment after start-up before it is mounted."""
        views = self.query(RunningView)
        return views.first() if views else None

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
            "Claude Code, Codex and ccs-launched processes"
        status = event.error or f"{len(event.processes)} running — {scope}; refreshed every " \
                                f"{self.running_interval:g} s (a: toggle all)"
        view.set_processes(event.processes, status)
        if event.inspected_pid is not None and event.inspected_pid == view.selected_pid:
            self._show_inspection(event.inspected_pid, event.inspection, event.error)

    @on(RunningView.Selected)
    def _process_selected(self, event: RunningView.Selected) -> None:
        if event.pid is not None:
            self.inspect_process(event.pid)

    @on(RunningView.Ready)
    def _running_ready(self) -> None:
        if self.detail_pane.active_tab == "running":
            self.scan_processes()

    @on(RunningView.ToggleAll)
    def _toggle_all(self) -> None:
        self.show_all_processes = not self.show_all_processes
        self.scan_processes()

    @work(thread=True, exclusive=True, group="inspect", exit_on_error=False)
    def inspect_process(self, pid: int) -> None:
        insp, error = self.service.inspect(pid)
        self.post_message(m.InspectionReady(pid, insp, error))

    @on(m.InspectionReady)
    def _inspected(self, event: m.InspectionReady) -> None:
        self._show_inspection(event.pid, event.inspection, event.error)

    def _show_inspection(self, pid: int, insp: Any, error: str | None) -> None:
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
        if event.reload:
            self.load_profiles(event.select or self.selected)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            err = event.worker.error
            text = str(err) if isinstance(err, CcsError) else f"{type(err).__name__}: {err}"
            self.notify(text, title="Error", severity="error", timeout=12)

    def _run(self, what: str, fn: Any, *args: Any, done: Any = None) -> None:
        """Run ``fn(*args)`` in a worker; a CcsError becomes a notification, a result goes to ``done``."""

        def job() -> None:
            try:
                result = fn(*args)
            except CcsError as exc:
                self.post_message(m.Failed(what, str(exc)))
                return
            if done is not None:
                msg = done(result)
                if msg is not None:
                    self.post_message(msg)

        self.run_worker(job, thread=True, group=what, exit_on_error=False)

    # --- actions ------------------------------------------------------------------------------

    def action_filter(self) -> None:
        self.profile_list.focus_filter()

    def action_reload(self) -> None:
        self.load_profiles(self.selected)

    def action_help(self) -> None:
        from .screens.help import HelpScreen

        self.push_screen(HelpScreen())

    def action_show_tab(self, tab: str) -> None:
        self.detail_pane.show_tab(tab)

    def focus_detail(self) -> None:
        """Enter on a profile: into the active tab, to scroll or pick a row with the keyboard."""
        pane = self.detail_pane
        target = {"running": "#procs", "runs": "#runs-table"}.get(pane.active_tab)
        if target:
            for widget in self.query(target):
                widget.focus()
        else:
            pane.query_one(f"#{pane.active_tab} .body").focus()

    def action_cycle_tool(self) -> None:
        self.detail_pane.cycle_tool()

    def action_set_tool(self, tool: str) -> None:
        self.detail_pane.set_tool(tool)

    def action_key(self) -> None:
        entry = self.current_entry()
        if entry is None or entry.profile is None:
            return
        p = entry.profile
        if p.key_id.startswith("env:"):
            self.notify(f"{p.name} reads its key from ${p.key_id[4:]} in the shell ccs started from; set it there "
                        f"(or change [provider].key to a key id with e to keep it in the keyring)",
                        title="Key from the environment", severity="warning")
            return

        def ask(info: tuple[Any, list[str]]) -> None:
            from .screens.modals import KeyScreen

            state, users = info
            if state.present:
                text = f"stored: {state.mask}  {state.fingerprint}"
            elif state.error:
                text = f"cannot read the keyring: {state.error}"
            else:
                text = "not stored yet"
            self.push_screen(KeyScreen(p.key_id, text, users, bool(state.present)),
                             lambda change: self._key_change(p.key_id, change))

        def read() -> tuple[Any, list[str]]:
            return self.service.key_state(p)[0], self.service.key_users(p.key_id)

        self._run("Key", read, done=lambda info: self.call_from_thread(ask, info))

    def _key_change(self, key_id: str, change: KeyChange | None) -> None:
        if change is None:
            return
        if change.action == "set":
            assert change.value is not None
            self._run("Key", self.service.set_key, key_id, change.value,
                      done=lambda st: m.Done(f"stored {key_id}  {st.mask}  {st.fingerprint}"))
        else:
            self._run("Key", self.service.remove_key, key_id,
                      done=lambda found: m.Done(f"removed {key_id} from the keyring" if found
                                                else f"no key was stored for {key_id}"))

    def action_new(self) -> None:
        taken = [e.name for e in self.profile_entries()]

        def ask(presets: list[Any]) -> None:
            from .screens.modals import NewProfileScreen

            self.push_screen(NewProfileScreen(presets, taken), self._create)

        self._run("New profile", self.service.presets, done=lambda ps: self.call_from_thread(ask, ps))

    def _create(self, new: NewProfile | None) -> None:
        if new is None:
            return

        def created(p: Any) -> m.Done:
            nxt = "" if p.key_id.startswith("env:") else f"; press k to store key {p.key_id}"
            return m.Done(f"created {self.service.store.path_for(p.name)}{nxt}", select=p.name)

        self._run("New profile", self.service.create, new.name, new.preset, new.base_url, new.key, done=created)

    def action_edit(self) -> None:
        name = self.selected
        if name is None:
            return

        def opened(text: str) -> None:
            from .screens.editor import EditorScreen, RawEditorScreen

            try:
                screen: Any = EditorScreen(name, text)
            except CcsError:
                screen = RawEditorScreen(name, text)
            self.push_screen(screen, lambda r: self._edited(name, text, r))

        self._run("Edit", self.service.read_text, name, done=lambda t: self.call_from_thread(opened, t))

    def _edited(self, name: str, original: str, result: EditResult | None) -> None:
        if result is None:
            return
        if result.raw:
            from .screens.editor import RawEditorScreen

            self.push_screen(RawEditorScreen(name, result.text), lambda r: self._edited(name, original, r))
            return
        if result.text == original:
            self.notify(f"no changes to {name}")
            return
        self._run("Save", self.service.save_text, name, result.text, original,
                  done=lambda _p: m.Done(f"saved {self.service.store.path_for(name)}", select=name))

    def action_duplicate(self) -> None:
        name = self.selected
        if name is None:
            return
        taken = [e.name for e in self.profile_entries()]
        initial = next(f"{name}-{i}" if i > 1 else f"{name}-copy" for i in range(1, 1000)
                       if (f"{name}-{i}" if i > 1 else f"{name}-copy") not in taken)

        from .screens.modals import NameScreen

        def chosen(new: str | None) -> None:
            if new:
                self._run("Duplicate", self.service.duplicate, name, new,
                          done=lambda p: m.Done(f"copied {name} to {self.service.store.path_for(p.name)}",
                                                select=p.name))

        self.push_screen(NameScreen(f"Duplicate {name}", initial, taken, "Duplicate"), chosen)

    def action_delete(self) -> None:
        entry = self.current_entry()
        if entry is None:
            return
        from .screens.modals import ConfirmScreen

        key = f" Its key ({entry.profile.key_id}) stays in the keyring." if entry.profile else ""

        def confirmed(ok: bool | None) -> None:
            if ok:
                self._run("Delete", self.service.delete, entry.name,
                          done=lambda path: m.Done(f"deleted {path}"))

        self.push_screen(ConfirmScreen(f"Delete {entry.name}", f"Delete the profile file {entry.path}?{key}",
                                       "Delete"), confirmed)

    def action_run_command(self) -> None:
        entry = self.current_entry()
        if entry is None or entry.profile is None:
            return
        p = entry.profile
        from .screens.modals import CommandScreen

        exports = f"exports: {', '.join(p.run.export) or 'nothing'}" + (f"; CCS_MODEL={p.run.model}"
                                                                          if p.run.model else "")

        def chosen(command: str | None) -> None:
            if command:
                import shlex

                args = tuple(shlex.split(command))
                self.start_launch(m.LaunchRequest(p.name, "run", args[0], args=args))

        self.push_screen(CommandScreen(p.name, exports), chosen)

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
        self.detail_pane.set_check(event.profile, event.results)
        self.notify(event.summary, title=f"Check {event.profile}", severity=event.severity)  # type: ignore[arg-type]


def run_app() -> None:
    CcsApp().run()

"""The app's actions in one table: the footer bindings and the command palette are built from it; which
of them a profile lets run, and why one cannot."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.binding import Binding

from ccswitch_tui import tools
from ccswitch_tui.tools.registry import LAUNCH_MENU_KEY
from ccswitch_tui.valueclass import valueclass

if TYPE_CHECKING:
    from ccswitch_tui.profiles.store import Entry

FOOTER_COLUMNS = 80  # the footer must fit a terminal this wide
PALETTE_WIDTH = 12  # Textual's "^p palette" at the footer's right end


@valueclass(frozen=True)
class Action:
    name: str  # the binding id (and the action, action_<name>, unless ``method`` says another)
    key: str
    label: str  # short, for the footer
    help: str  # tooltip and palette help
    show: bool = True
    needs_profile: bool = True  # disabled when no loadable profile is selected
    key_display: str | None = None
    method: str = ""  # the app's action_<method>, when it is not the name: one method for several bindings
    args: tuple[str, ...] = ()  # its parameters: launch('<client>')
    priority: bool = False  # handled before the key reaches the focused widget (see the filter)

    @property
    def call(self) -> tuple[str, tuple[str, ...]]:
        """(action, parameters), as Textual hands them to check_action."""
        return self.method or self.name, self.args

    @property
    def action(self) -> str:
        """The action string of the binding and the palette: ``launch('<client>')``, ``key``."""
        method, args = self.call
        return f"{method}({', '.join(map(repr, args))})" if args else method


def _launch_actions(show: bool) -> tuple[Action, ...]:
    """One binding per client the registry holds (id ``launch_<name>``, the spec's key), all of them
    the one parameterised action ``launch('<name>')``; in the footer unless it is folded. A client without
    a TUI face (capabilities.TuiFace) has no key of its own: the launch menu lists it. Read from the index
    (``tools.known``): the first frame's footer loads no spec."""

    return tuple(Action(f"launch_{name}", key, short, f"Launch {label} with this profile (clean env, manifest written)",
                        show=show, method="launch", args=(name,))
                 for name, key, short, label in tools.known().launch_keys())


def _launch_menu(show: bool) -> Action:
    return Action("launch_menu", LAUNCH_MENU_KEY, "Launch…", "Choose a client to launch with this profile "
                  "(each also has its own key)", show=show)


def footer_width(actions: tuple[Action, ...]) -> int:
    """The columns Textual's footer takes for these bindings: " key label " each, and the palette."""
    return sum(len(a.key_display or a.key) + len(a.label) + 3 for a in actions if a.show) + PALETTE_WIDTH


QUIT = Action("quit", "q", "Quit", "Leave ccs", needs_profile=False)  # bound last, after the tabs


def _actions(rest: tuple[Action, ...]) -> tuple[Action, ...]:
    """The launch keys in the footer when every one fits in 80 columns with the rest (a profile may
    serve every client); otherwise one "Launch…" entry, the keys still bound."""
    wide = (*_launch_actions(True), _launch_menu(False), *rest)
    if footer_width((*wide, QUIT)) <= FOOTER_COLUMNS:
        return wide
    folded = (*_launch_actions(False), _launch_menu(True), *rest)
    if footer_width((*folded, QUIT)) > FOOTER_COLUMNS:
        raise RuntimeError(f"the TUI's footer needs {footer_width((*folded, QUIT))} columns even with the launch "
                           f"keys folded; it must fit {FOOTER_COLUMNS}")
    return folded


ACTIONS: tuple[Action, ...] = _actions((
    Action("shell", "s", "Shell", "Open a shell with the clean environment of the tool shown", show=False),
    Action("run_command", "r", "Run", "Run a command with this profile's [run] exports", show=False),
    Action("key", "k", "Key", "Set, replace or remove this profile's key in the keyring"),
    Action("check", "p", "Check", "Probe this profile's endpoints (result in Overview)"),
    Action("edit", "e", "Edit", "Edit this profile in a form (comments in the file are kept)"),
    Action("new", "n", "New", "New profile from a preset", needs_profile=False),
    Action("import_profiles", "i", "Import", "Import providers from CC Switch or the live "
           f"{tools.known().importable_labels('/')} configs (the report of `ccs import`)",
           needs_profile=False),
    Action("duplicate", "d", "Duplicate", "Copy this profile under a new name", show=False),
    Action("delete", "delete", "Delete", "Delete this profile file and its tool state (asks first; the key stays)",
           show=False,
           key_display="del"),
    Action("cycle_tool", "t", "Tool", "Show another tool's plan in Environment and Diff", show=False),
    # priority: run as the key arrives, so the letters typed right behind it already find the filter
    # focused (a binding of the focused list would run only after they were handed to the list)
    Action("filter", "slash", "Filter", "Filter the profile list", show=False, needs_profile=False,
           key_display="/", priority=True),
    Action("reload", "ctrl+r", "Reload", "Read the profiles and keys again", show=False, needs_profile=False),
    Action("help", "question_mark,f1", "Help", "Keys and what ccs shows", needs_profile=False, key_display="?"),
))
FOLDED = any(a.name == "launch_menu" and a.show for a in ACTIONS)  # the launch keys are behind "Launch…"

BY_NAME = {a.name: a for a in ACTIONS}
LAUNCHES = tuple(a for a in ACTIONS if a.method == "launch")
BY_CALL = {a.call: a for a in ACTIONS}  # what check_action is asked about: ("launch", ("<client>",))

TABS = (("overview", "Overview"), ("environment", "Environment"), ("diff", "Diff"), ("running", "Running"),
        ("runs", "Runs"))

# Actions the command palette lists; the same as the bindings but without the UI-only ones.
PALETTE = tuple(a for a in ACTIONS if a.name not in ("filter",))


def bindings() -> list[Binding]:
    out = [
        Binding(a.key, a.action, a.label, show=a.show, id=a.name, tooltip=a.help, key_display=a.key_display,
                priority=a.priority)
        for a in ACTIONS
    ]
    for n, (tab, label) in enumerate(TABS, 1):
        out.append(Binding(str(n), f"show_tab('{tab}')", label, show=False, id=f"tab-{tab}",
                           tooltip=f"Show the {label} tab"))
    out.append(Binding(QUIT.key, QUIT.action, QUIT.label, id=QUIT.name, tooltip=QUIT.help))
    return out


NO_PROFILE = "No profile to act on yet: press n to create one, or i to import"
# The keys of the actions that need a profile, to say why they do nothing when there is none.
PROFILE_KEYS = {k: a for a in ACTIONS if a.needs_profile for k in a.key.split(",")}


def no_match(needle: str, total: int) -> str:
    return (f"No profile matches the filter {needle!r} ({total} hidden): press Esc in the list to clear it, "
            "or / to change it")


def enabled(action: str, entry: Entry | None) -> bool | None:
    """True: the action can run for ``entry`` (the profile under the cursor); None: shown dimmed; False:
    not in the footer. A client's launch key shows only for a profile that serves that client."""
    a = BY_NAME.get(action)
    if a is None or not a.needs_profile:
        return True
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


def why_not(a: Action, entry: Entry | None, needle: str, total: int) -> tuple[str, str]:
    """Why ``a`` cannot act on ``entry`` (None: no profile shown; ``needle``: the list's filter, hiding
    ``total`` profiles): the line to say and its severity."""
    if entry is None and needle and total:
        return no_match(needle, total), "warning"
    if entry is None:
        return NO_PROFILE, "information"
    if entry.profile is None:
        return f"{entry.name} cannot be loaded: press e to fix it", "warning"
    if not a.args:  # the launch menu of a profile that serves no client
        return f"{entry.name} serves no client: press e and switch one on", "warning"
    tool = a.args[0]
    return f"{entry.name} has no [{tool}] table, so it cannot launch {a.label}: press e to add one", "warning"

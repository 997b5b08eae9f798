"""Small modals, each typed by its result: confirm, key, name, command, refusal, new profile."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any, TypeVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static, TextArea

from ccswitch_tui.errors import CcsError
from ccswitch_tui.terminal_text import visible
from ccswitch_tui.tools.checker import check_key_id, check_name
from ccswitch_tui.valueclass import valueclass

T = TypeVar("T")


class Dialog(ModalScreen[T]):
    """A centred dialog; Escape cancels (dismisses with None)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="cancel", tooltip="Close without changes")]

    def on_mount(self) -> None:
        if not getattr(self.app, "cursor_blink", True):
            for w in self.query(Input):
                w.cursor_blink = False
            for t in self.query(TextArea):
                t.cursor_blink = False

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmScreen(Dialog[bool]):
    def __init__(self, title: str, message: str, yes: str = "Yes", *, danger: bool = True):
        super().__init__()
        self.title_text, self.message, self.yes, self.danger = title, message, yes, danger

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.title_text, classes="dialog-title")
            yield Static(visible(self.message), classes="dialog-body", markup=False)
            with Horizontal(classes="buttons"):
                yield Button(self.yes, id="yes", variant="error" if self.danger else "primary")
                yield Button("Cancel", id="no")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#no", Button).focus()

    @on(Button.Pressed, "#yes")
    def _yes(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#no")
    def _no(self) -> None:
        self.dismiss(False)


class LaunchMenuScreen(Dialog[str]):
    """The clients a profile serves, each a button with its launch key; pressing the key or the button
    dismisses with the client's name."""

    def __init__(self, profile: str, clients: Sequence[tuple[str, str, str]]):
        super().__init__()
        self.profile, self.clients = profile, list(clients)  # (key, label, name)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog launch-menu"):
            yield Label(f"Launch with {self.profile}", classes="dialog-title")
            for key, label, name in self.clients:
                yield Button(f"{key}  {label}" if key else label, id=f"launch-{name}", classes="launch-choice")
            with Horizontal(classes="buttons"):
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        super().on_mount()
        if self.clients:
            self.query_one(f"#launch-{self.clients[0][2]}", Button).focus()

    def on_key(self, event: events.Key) -> None:
        name = next((n for k, _, n in self.clients if k and k == event.key), None)
        if name is not None:
            event.stop()
            self.dismiss(name)

    @on(Button.Pressed, ".launch-choice")
    def _chosen(self, event: Button.Pressed) -> None:
        self.dismiss((event.button.id or "").removeprefix("launch-"))

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)


@valueclass(frozen=True)
class KeyChange:
    action: str  # "set" | "remove"
    value: str | None = None


class KeyScreen(Dialog[KeyChange]):
    """Set, replace or remove a key. The value is typed into a password field and never shown."""

    def __init__(self, key_id: str, state: str, users: Sequence[str], present: bool):
        super().__init__()
        self.key_id, self.state, self.users, self.present = key_id, state, list(users), present

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(f"Key {self.key_id}", classes="dialog-title")
            yield Static(self.state, id="key-state", markup=False)
            if len(self.users) > 1:
                yield Static(f"Shared by {len(self.users)} profiles: {', '.join(self.users)}",
                             classes="note", markup=False)
            yield Input(placeholder="paste the key (hidden)", password=True, id="key-value")
            yield Static("", id="key-error", classes="problem-text")
            with Horizontal(classes="buttons"):
                yield Button("Replace" if self.present else "Store", id="store", variant="primary")
                yield Button("Remove", id="remove", variant="error", disabled=not self.present)
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#key-value", Input).focus()

    @on(Input.Submitted, "#key-value")
    @on(Button.Pressed, "#store")
    def _store(self) -> None:
        value = self.query_one("#key-value", Input).value.strip()
        error = ""
        if not value:
            error = "type or paste the key first"
        elif "\n" in value or "\r" in value:
            error = "a key is one line"
        if error:
            self.query_one("#key-error", Static).update(error)
            return
        self.dismiss(KeyChange("set", value))

    @on(Button.Pressed, "#remove")
    def _remove(self) -> None:
        def done(ok: bool | None) -> None:
            if ok:
                self.dismiss(KeyChange("remove"))

        users = f" (used by {', '.join(self.users)})" if self.users else ""
        self.app.push_screen(ConfirmScreen("Remove key", f"Remove key {self.key_id!r} from the keyring{users}?",
                                           "Remove"), done)

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)


class NameScreen(Dialog[str]):
    """Ask for a new profile name (duplicate), checked as it is typed."""

    def __init__(self, title: str, initial: str, taken: Sequence[str], action: str = "Create"):
        super().__init__()
        self.title_text, self.initial, self.taken, self.action = title, initial, set(taken), action

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.title_text, classes="dialog-title")
            yield Input(self.initial, placeholder="profile name", id="name")
            yield Static("", id="name-error", classes="problem-text")
            with Horizontal(classes="buttons"):
                yield Button(self.action, id="ok", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#name", Input).focus()

    def problem(self, name: str) -> str:
        try:
            check_name(name)
        except CcsError as exc:
            return str(exc)
        return f"a profile named {name!r} exists" if name in self.taken else ""

    @on(Input.Changed, "#name")
    def _changed(self, event: Input.Changed) -> None:
        self.query_one("#name-error", Static).update(self.problem(event.value) if event.value else "")

    @on(Input.Submitted, "#name")
    @on(Button.Pressed, "#ok")
    def _ok(self) -> None:
        name = self.query_one("#name", Input).value.strip()
        problem = self.problem(name)
        if problem:
            self.query_one("#name-error", Static).update(problem)
            return
        self.dismiss(name)

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)


class CommandScreen(Dialog[str]):
    """The command for `ccs run PROFILE -- CMD`."""

    def __init__(self, profile: str, exports: str):
        super().__init__()
        self.profile, self.exports = profile, exports

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(f"Run a command with {self.profile}", classes="dialog-title")
            yield Static(self.exports, classes="note", markup=False)
            yield Input(placeholder="e.g. python run.py --model gpt-4.1", id="command")
            yield Static("", id="command-error", classes="problem-text")
            with Horizontal(classes="buttons"):
                yield Button("Run", id="ok", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#command", Input).focus()

    @on(Input.Submitted, "#command")
    @on(Button.Pressed, "#ok")
    def _ok(self) -> None:
        value = self.query_one("#command", Input).value.strip()
        try:
            ok = bool(shlex.split(value))
        except ValueError as exc:
            self.query_one("#command-error", Static).update(f"cannot split the command: {exc}")
            return
        if not ok:
            self.query_one("#command-error", Static).update("type a command")
            return
        self.dismiss(value)

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)


# The ways out of a refusal that the TUI can take for you, by the launch option (LaunchRefused.flags).
WAY_BUTTONS = {"isolate": "Launch isolated", "force": "Launch anyway (force)", "nested": "Launch nested"}
SAFEST_FIRST = ("isolate", "nested", "force")  # --isolate changes only what is loaded; --force overrides a check


class RefusalScreen(Dialog[str]):
    """A refused launch, with its ways out, each once: the ones ccs can take are buttons (the line
    that explains one is its tooltip), the others are listed. The safest way that launches has the
    focus."""

    def __init__(self, message: str, ways_out: Sequence[str], flags: Sequence[str] = ()):
        super().__init__()
        self.message, self.ways_out, self.flags = message, list(ways_out), tuple(flags)
        self.buttons = [f for f in self.flags if f in WAY_BUTTONS]

    def _explains(self, way: str) -> str | None:
        """The flag a way-out line is about (``--isolate to …``), when it has a button."""
        first = way.split(maxsplit=1)[0] if way.strip() else ""
        return next((f for f in self.buttons if first == f"--{f}"), None)

    def compose(self) -> ComposeResult:
        others = [w for w in self.ways_out if self._explains(w) is None]
        tips = {f: w for w in self.ways_out if (f := self._explains(w))}
        with Vertical(classes="dialog refusal"):
            yield Label("Launch refused", classes="dialog-title danger")
            yield Static(visible(self.message), classes="dialog-body", markup=False)
            if others:
                head = "Or:" if self.buttons else "Ways out:"
                yield Static(visible(head + "\n" + "\n".join(f"  • {w}" for w in others)), classes="note",
                             markup=False)
            with Horizontal(classes="buttons"):
                for flag in self.buttons:
                    yield Button(WAY_BUTTONS[flag], id=f"way-{flag}", variant="warning",
                                 tooltip=visible(tips.get(flag, f"--{flag}")))
                yield Button("Cancel", id="cancel", variant="primary")

    def on_mount(self) -> None:
        super().on_mount()
        safest = next((f for f in SAFEST_FIRST if f in self.buttons), None)
        self.query_one(f"#way-{safest}" if safest else "#cancel", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        bid = event.button.id or ""
        self.dismiss(bid[4:] if bid.startswith("way-") else None)


@valueclass(frozen=True)
class NewProfile:
    name: str
    preset: str | None
    base_url: str | None
    key: str | None


class NewProfileScreen(Dialog[NewProfile]):
    """A new profile from a preset (or a blank one from a base URL)."""

    def __init__(self, presets: Sequence[Any], taken: Sequence[str]):
        super().__init__()
        self.presets = {p.name: p for p in presets}
        self.taken = set(taken)
        self._suggested = ""

    def compose(self) -> ComposeResult:
        options = [(f"{p.name} — {p.profile.provider.name}", p.name) for p in self.presets.values()]
        with Vertical(classes="dialog wide"):
            yield Label("New profile", classes="dialog-title")
            with Horizontal(classes="field"):
                yield Label("preset", classes="field-label")
                yield Select([*options, ("blank (give a base URL)", "")], value=options[0][1] if options else "",
                             allow_blank=False, id="preset", compact=True)
            yield Static("", id="preset-about", classes="note", markup=False)
            with Horizontal(classes="field"):
                yield Label("name", classes="field-label")
                yield Input(placeholder="profile name, e.g. taotoken-gpt41", id="name", compact=True)
            with Horizontal(classes="field"):
                yield Label("base URL", classes="field-label")
                yield Input(placeholder="blank profile, or to replace the preset's", id="base-url", compact=True)
            with Horizontal(classes="field"):
                yield Label("key id", classes="field-label")
                yield Input(placeholder="optional: key id in the keyring, or env:VAR", id="key-id", compact=True)
            yield Static("", id="new-error", classes="problem-text")
            with Horizontal(classes="buttons"):
                yield Button("Create", id="ok", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        super().on_mount()
        self._describe()
        self.query_one("#preset", Select).focus()

    @on(Select.Changed, "#preset")
    def _describe(self) -> None:
        preset = self.presets.get(str(self.query_one("#preset", Select).value or ""))
        about = self.query_one("#preset-about", Static)
        if preset is None:
            about.update("A blank profile for one provider: name, base URL and key id; add tools in the editor.")
        else:
            p = preset.profile
            about.update(f"{p.description or p.provider.name}\n{p.provider.base_url} · tools: {' '.join(p.tools)}"
                         f" · key id: {p.key_id}")
            name = self.query_one("#name", Input)
            if name.value in ("", self._suggested) and preset.name not in self.taken:
                name.value = self._suggested = preset.name

    def problem(self) -> str:
        name = self.query_one("#name", Input).value.strip()
        preset = str(self.query_one("#preset", Select).value or "")
        base_url = self.query_one("#base-url", Input).value.strip()
        key = self.query_one("#key-id", Input).value.strip()
        try:
            check_name(name)
            if key and not key.startswith("env:"):
                check_key_id(key)
        except CcsError as exc:
            return str(exc)
        if name in self.taken:
            return f"a profile named {name!r} exists; pick another name"
        if not preset and not base_url:
            return "a blank profile needs a base URL"
        if base_url and not base_url.startswith(("http://", "https://")):
            return f"{base_url!r} is not an http(s) URL"
        return ""

    @on(Input.Changed)
    def _changed(self) -> None:
        if self.query_one("#name", Input).value:
            self.query_one("#new-error", Static).update(self.problem())

    @on(Input.Submitted)
    @on(Button.Pressed, "#ok")
    def _ok(self) -> None:
        problem = self.problem()
        if problem:
            self.query_one("#new-error", Static).update(problem)
            return
        self.dismiss(NewProfile(
            self.query_one("#name", Input).value.strip(),
            str(self.query_one("#preset", Select).value or "") or None,
            self.query_one("#base-url", Input).value.strip() or None,
            self.query_one("#key-id", Input).value.strip() or None,
        ))

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)

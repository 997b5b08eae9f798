"""The profile editor: a form over the profile's TOML document, validated as you type by the same
validation the store applies, written back through the store with comments and order kept.

Only the fields you change are touched in the document, so an untouched file is saved byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import tomlkit
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Button, Checkbox, Input, Label, Select, Static, Switch, TextArea
from tomlkit.toml_document import TOMLDocument

from ccswitch_tui import tools
from ccswitch_tui.errors import CcsError, ProfileError
from ccswitch_tui.profiles.store import validate_text
from ccswitch_tui.safe_read import parse_toml
from ccswitch_tui.tools.fields import editor_form
from ccswitch_tui.tui.screens.modals import ConfirmScreen, Dialog
from ccswitch_tui.valueclass import valueclass


@valueclass(frozen=True)
class Field:
    path: tuple[str, ...]
    label: str
    kind: str = "text"  # text | select | bool | int | env | list | exports
    options: tuple[tuple[str, str], ...] = ()
    placeholder: str = ""

    @property
    def id(self) -> str:
        return "f-" + "-".join(self.path)


def _client_sections() -> tuple[tuple[str, str | None, tuple[Field, ...]], ...]:
    """One section per registered client, from its spec's editor fields; a client's table has an
    on/off switch (its presence says whether the profile serves it), `ccs run`'s has none."""

    return tuple(
        (s.label if s.launchable else "ccs run", s.name if s.launchable else None,
         tuple(Field((s.name, f.key), f.label, f.kind, f.choices, f.placeholder) for f in form))
        for s in tools.load().specs() if (form := editor_form(s.name, s.fields)))


SECTIONS: tuple[tuple[str, str | None, tuple[Field, ...]], ...] = (
    ("Profile", None, (
        Field(("description",), "description", placeholder="what this profile is for"),
    )),
    ("Provider", None, (
        Field(("provider", "name"), "name"),
        Field(("provider", "base_url"), "base URL", placeholder="https://host/path"),
        Field(("provider", "key"), "key id", placeholder="key id in the keyring, or env:VAR"),
        Field(("provider", "website"), "website", placeholder="optional"),
    )),
    *_client_sections(),
    ("Every tool", None, (
        Field(("env",), "[env]", "env"),
        Field(("policy", "inherit"), "inherit", "list", placeholder="extra names from the shell: NODE_OPTIONS AWS_*"),
    )),
)
FIELDS = {f.id: f for _, _, fields in SECTIONS for f in fields}
TABLE_SWITCHES = tuple(switch for _, switch, _ in SECTIONS if switch)


def _off_hint(name: str) -> str:
    """What a client's section says while its switch is off: how to serve it, and what it then needs."""
    spec = tools.load().get(name)
    required = [f.label or f.name for f in spec.fields if f.required]
    then = f"; then fill in its {', '.join(required)}" if required else ""
    return (f"Off: this profile has no [{name}] table, so it does not serve {spec.label}. "
            f"Turn the switch on to serve it{then}.")


OFF_HINTS = {name: _off_hint(name) for name in TABLE_SWITCHES}


def _get(doc: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    cur: Any = doc
    for part in path:
        if not isinstance(cur, Mapping) or part not in cur:
            return None
        cur = cur[part]
    return cur


def env_lines(table: Any) -> str:
    if not isinstance(table, Mapping):
        return ""
    return "\n".join(f"{k}={v}" for k, v in table.items())


def parse_env_lines(text: str, label: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"{label} line {n}: write NAME=value")
        out[name.strip()] = value.strip()
    return out


def form_value(doc: Mapping[str, Any], f: Field) -> Any:
    """The form's starting value for a field: what the document says, never a default."""
    raw = _get(doc, f.path)
    if f.kind == "env":
        return env_lines(raw)
    if f.kind == "list":
        return " ".join(str(x) for x in raw) if isinstance(raw, list) else ""
    if f.kind == "exports":  # the families; tables naming a program's own variables are kept as written
        return tuple(x for x in raw if isinstance(x, str)) if isinstance(raw, list) else ()
    if f.kind == "bool" and isinstance(raw, bool):
        return str(raw).lower()
    return "" if raw is None else str(raw)


def _table(doc: Any, path: tuple[str, ...]) -> Any:
    """The table at ``path``, created (at the end of its parent) when missing."""
    cur = doc
    for part in path:
        if part not in cur:
            cur.add(part, tomlkit.table())
        cur = cur[part]
    return cur


def apply_changes(doc: TOMLDocument, before: Mapping[str, Any], after: Mapping[str, Any],  # noqa: C901
                  tables: Mapping[str, bool]) -> TOMLDocument:
    """Write the fields that changed into ``doc`` (in place); untouched fields keep their formatting.

    ``before``/``after`` map field ids to form values; ``tables`` says whether [claude] / [codex] exist.
    """
    for name, keep in tables.items():
        if not keep and name in doc:
            del doc[name]
        elif keep and name not in doc:
            doc.add(name, tomlkit.table())
    for fid, new in after.items():
        if new == before.get(fid):
            continue
        f = FIELDS[fid]
        if f.path[0] in tables and not tables[f.path[0]]:
            continue
        *parents, leaf = f.path
        if f.kind == "env":
            values = parse_env_lines(str(new), f.label)
            table = _table(doc, f.path)
            for k in [k for k in table if k not in values]:
                del table[k]
            for k, v in values.items():
                if table.get(k) != v:
                    table[k] = v
            continue
        parent = _table(doc, tuple(parents)) if parents else doc
        if f.kind == "list":
            items = [x for x in re.split(r"[\s,]+", str(new)) if x]
            value: Any = items or None
        elif f.kind == "exports":  # the checkboxes' families, then the tables the file holds, untouched
            value = list(new) + [x for x in (parent.get(leaf) or []) if not isinstance(x, str)]
        elif f.kind == "bool":
            value = {"true": True, "false": False}.get(str(new))
        elif f.kind == "int" and re.fullmatch(r"-?[0-9]+", str(new).strip()):
            value = int(str(new).strip())  # anything else is written as typed, for validation to name
        else:
            value = str(new).strip() or None
        if value is None:
            if leaf in parent:
                del parent[leaf]
        else:
            parent[leaf] = value
    return doc


def field_for(place: str | None) -> str | None:
    """The form field a validation error is about, from the place it carries (``ProfileError.field``):
    ``[codex].model`` → f-codex-model, ``[claude.env].X`` → f-claude-env, ``[env].X`` → f-env."""
    if not place:
        return None
    m = re.fullmatch(r"\[(\w+)(\.env)?\](?:\.(\w+))?.*", place)
    if not m:
        return f"f-{place}" if f"f-{place}" in FIELDS else None
    table, env, leaf = m.groups()
    if env:
        return f"f-{table}-env"
    if table == "env":
        return "f-env"
    fid = f"f-{table}-{leaf}" if leaf else None
    if fid in FIELDS:
        return fid
    return f"f-{table}" if f"f-{table}" in FIELDS else None


@valueclass(frozen=True)
class EditResult:
    text: str
    raw: bool = False  # open the TOML editor on ``text`` instead of saving


class EditorScreen(Dialog[EditResult]):
    """Edit a profile through a form; dismisses with the new text (saved by the app through the store)."""

    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="editor-save", tooltip="Validate and save through the store"),
        Binding("escape", "cancel", "Cancel", id="editor-cancel", tooltip="Close without saving"),
    ]

    def __init__(self, name: str, text: str):
        super().__init__()
        self.profile_name = name
        self.original = text
        self.doc = parse_toml(text, f"{name}.toml")
        self.before = {fid: form_value(self.doc, f) for fid, f in FIELDS.items()}
        self.error: str | None = None

    # --- layout -----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog editor"):
            yield Label(f"Edit {self.profile_name}", classes="dialog-title")
            with VerticalScroll(id="form"):
                for title, switch, fields in SECTIONS:
                    with Horizontal(classes="section"):
                        yield Label(title, classes="section-title")
                        if switch:
                            yield Switch(switch in self.doc, id=f"f-{switch}", tooltip=f"Serve {title}")
                    if switch:
                        yield Static(OFF_HINTS[switch], id=f"off-{switch}", classes="section-off", markup=False)
                    with Vertical(classes="fields", id=f"fields-{switch}" if switch else None):
                        for f in fields:
                            yield from self._field(f)
            yield Static("", id="form-error", classes="problem-text")
            with Horizontal(classes="buttons"):
                yield Button("Save", id="save", variant="primary")
                yield Button("Edit TOML", id="raw")
                yield Button("Cancel", id="cancel")

    def _field(self, f: Field) -> Iterator[Widget]:
        value = self.before[f.id]
        with Horizontal(classes="field"):
            yield Label(f.label, classes="field-label")
            if f.kind in ("select", "bool"):
                yield Select(list(f.options), value=value if value in dict(f.options).values() else "",
                             allow_blank=False, id=f.id, compact=True)
            elif f.kind == "env":
                yield TextArea(value, id=f.id, classes="env", show_line_numbers=False, soft_wrap=False,
                               compact=True, placeholder="NAME=value, one a line")
            elif f.kind == "exports":
                with Horizontal(id=f.id, classes="exports"):
                    for _, e in f.options:
                        yield Checkbox(e, e in value, id=f"{f.id}-{e}", compact=True)
            else:
                yield Input(value, placeholder=f.placeholder, id=f.id, compact=True)
        yield Static("", id=f"err-{f.id}", classes="field-error")

    def on_mount(self) -> None:
        super().on_mount()
        for name in TABLE_SWITCHES:
            self._toggle_section(name, name in self.doc)
        description = self.query_one("#f-description", Input)
        description.select_on_focus = False  # typing adds to the description, never replaces it
        description.cursor_position = len(description.value)
        description.focus()
        self.validate()

    # --- values and validation ----------------------------------------------------------------

    def values(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for fid, f in FIELDS.items():
            if f.kind in ("select", "bool"):
                out[fid] = str(self.query_one(f"#{fid}", Select).value or "")
            elif f.kind == "env":
                out[fid] = self.query_one(f"#{fid}", TextArea).text
            elif f.kind == "exports":
                out[fid] = tuple(e for _, e in f.options if self.query_one(f"#{fid}-{e}", Checkbox).value)
            else:
                out[fid] = self.query_one(f"#{fid}", Input).value
        return out

    def tables(self) -> dict[str, bool]:
        return {name: self.query_one(f"#f-{name}", Switch).value for name in TABLE_SWITCHES}

    def current_text(self) -> str:
        """The edited document's text, or a ValueError naming the field that cannot be written."""
        doc = parse_toml(self.original, f"{self.profile_name}.toml")
        return tomlkit.dumps(apply_changes(doc, self.before, self.values(), self.tables()))

    def validate(self) -> str | None:
        """Validate the form as the store would; show the message under its field. None when valid."""
        for err in self.query(".field-error").results(Static):
            err.update("")
            err.display = False
        try:
            text = self.current_text()
            validate_text(self.profile_name, text)
            message, fid = None, None
        except ValueError as exc:
            message = str(exc)
            fid = next((i for i, f in FIELDS.items() if f.kind == "env" and message.startswith(f.label)), None)
        except CcsError as exc:
            message = str(exc).removeprefix(f"{self.profile_name}.toml: ")
            fid = field_for(getattr(exc, "field", None))
        self.error = message
        self.query_one("#form-error", Static).update(message or "")
        if message and fid:
            target = self.query_one(f"#err-{fid}", Static)
            target.update(message)
            target.display = True
        self.query_one("#save", Button).disabled = message is not None
        return message

    def _toggle_section(self, name: str, on_: bool) -> None:
        self.query_one(f"#fields-{name}").display = on_
        self.query_one(f"#off-{name}").display = not on_

    @on(Input.Changed)
    @on(Select.Changed)
    @on(Checkbox.Changed)
    @on(TextArea.Changed)
    def _changed(self) -> None:
        if self.is_mounted:
            self.validate()

    @on(Switch.Changed)
    def _switched(self, event: Switch.Changed) -> None:
        name = (event.switch.id or "").removeprefix("f-")
        self._toggle_section(name, event.value)
        self.validate()

    # --- leaving ------------------------------------------------------------------------------

    @on(Button.Pressed, "#save")
    def action_save(self) -> None:
        if self.validate() is None:
            self.dismiss(EditResult(self.current_text()))
        else:
            self.notify(self.error or "invalid", severity="error", title="Not saved")

    @on(Button.Pressed, "#raw")
    def _raw(self) -> None:
        try:
            text = self.current_text()
        except ValueError:
            text = self.original
        self.dismiss(EditResult(text, raw=True))

    def changed(self) -> bool:
        try:
            return self.current_text() != self.original
        except ValueError:
            return True  # a value that cannot be written yet is still an edit

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        confirm_discard(self, self.changed())


def confirm_discard(screen: Dialog[Any], changed: bool) -> None:
    """Leave an editor: at once when nothing changed, else only after the user agrees to lose the edit."""
    if not changed:
        screen.dismiss(None)
        return

    def answered(discard: bool | None) -> None:
        if discard:
            screen.dismiss(None)

    screen.app.push_screen(ConfirmScreen("Discard changes?", "Your changes to this profile are not saved. "
                                         "Discard them, or go back to the editor (ctrl+s saves).", "Discard"),
                           answered)


class RawEditorScreen(Dialog[EditResult]):
    """The profile's TOML text, validated as you type; for files the form cannot read (or by choice)."""

    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="raw-save", tooltip="Validate and save through the store"),
        Binding("escape", "cancel", "Cancel", id="raw-cancel", tooltip="Close without saving"),
    ]

    def __init__(self, name: str, text: str, original: str | None = None):
        super().__init__()
        self.profile_name, self.text = name, text
        self.original = text if original is None else original  # what is on disk: Esc asks when it differs

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog editor"):
            yield Label(f"Edit {self.profile_name}.toml", classes="dialog-title")
            yield TextArea(self.text, id="raw-text", show_line_numbers=True, soft_wrap=False)
            yield Static("", id="raw-error", classes="problem-text")
            with Horizontal(classes="buttons"):
                yield Button("Save", id="save", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        super().on_mount()
        area = self.query_one("#raw-text", TextArea)
        area.focus()
        self.validate()
        if self.error_at:  # start where the file is broken
            line = min(self.error_at[0], area.document.line_count) - 1
            area.move_cursor((line, max(self.error_at[1] - 1, 0)))
            self.call_after_refresh(self._show_error_line)

    def _show_error_line(self, tries: int = 20) -> None:
        """The error's line in the middle, every line from its first column while the error's
        column fits (centring on the column too scrolled the whole file sideways). Once the editor
        has its size: until its first layout it has none to centre in."""
        area = self.query_one("#raw-text", TextArea)
        width = area.scrollable_content_region.width
        if not width and tries:
            self.call_after_refresh(self._show_error_line, tries - 1)
            return
        area.scroll_cursor_visible(center=True)
        if area.cursor_location[1] + area.gutter_width + 3 < width:
            area.scroll_to(x=0, animate=False)

    def validate(self) -> str | None:
        text = self.query_one("#raw-text", TextArea).text
        self.error_at: tuple[int, int] | None = None
        try:
            validate_text(self.profile_name, text)
            message = None
        except CcsError as exc:
            message = str(exc)
            if isinstance(exc, ProfileError) and exc.line:
                self.error_at = (exc.line, exc.column or 1)
        error = self.query_one("#raw-error", Static)
        error.update(message or "valid")
        error.set_class(message is None, "ok")
        self.query_one("#save", Button).disabled = message is not None
        return message

    @on(TextArea.Changed)
    def _changed(self) -> None:
        self.validate()

    @on(Button.Pressed, "#save")
    def action_save(self) -> None:
        message = self.validate()
        if message is None:
            self.dismiss(EditResult(self.query_one("#raw-text", TextArea).text))
        else:
            self.notify(message, severity="error", title="Not saved")

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        confirm_discard(self, self.query_one("#raw-text", TextArea).text != self.original)

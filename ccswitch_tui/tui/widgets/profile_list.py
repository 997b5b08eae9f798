"""The profile list: a filter field over an option list, two lines a profile."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from ccswitch_tui.terminal_text import visible

if TYPE_CHECKING:  # the records load with the first profiles read (in a worker), not with the first frame
    from ccswitch_tui.profiles.store import Entry
    from ccswitch_tui.tui.service import Presence, Problem


def matches(entry: Entry, needle: str) -> bool:
    if not needle:
        return True
    p = entry.profile
    hay = [entry.name] + ([p.provider.name, p.description, *p.tools, p.key_id] if p else ["broken"])
    words = needle.lower().split()
    text = " ".join(hay).lower()
    return all(w in text for w in words)


def prompt(entry: Entry, key_present: bool | None, problems: Sequence[Problem]) -> Content:
    p = entry.profile
    errors = any(x.severity == "error" for x in problems)
    mark = ("✗ ", "bold $text-error") if errors else ("! ", "bold $text-warning") if problems else ("  ", "")
    first = Content.assemble(mark, (entry.name, "bold"))
    if p is None:
        return Content("\n").join([first, Content.styled("  broken file — e to fix", "$text-error")])
    tools = " ".join(t for t in p.tools if t != "run") or "run only"
    if key_present is None:
        key = ("key ?", "$text-muted")
    elif key_present:
        key = ("key ✓", "$text-success")
    else:
        key = ("key missing", "bold $text-error")
    # The key first: on a narrow list the end of the line is cut, and the key is what blocks a launch.
    second = Content.assemble("  ", key, " · ", (visible(p.provider.name), "$text-muted"), " · ", tools)
    return Content("\n").join([first, second])


def screen_order(entries: Sequence[Entry], needle: str, at: str | None) -> list[Entry]:
    """The entries from the row ``at`` on (the first row when it is not shown: the rows on screen first),
    then those above it, then those the filter ``needle`` hides."""
    shown = [e for e in entries if matches(e, needle)]
    i = next((n for n, e in enumerate(shown) if e.name == at), 0)
    hidden = {id(e) for e in entries} - {id(e) for e in shown}
    return shown[i:] + shown[:i] + [e for e in entries if id(e) in hidden]


class ProfileList(Vertical):
    """Filter + list. Posts ``ProfileList.Highlighted`` with the profile under the cursor."""

    BINDINGS = [Binding("escape", "clear_filter", "Clear filter", show=False, id="clear-filter",
                        tooltip="Clear the filter and go back to the list")]

    class Chosen(Message):
        """Enter on a profile."""

    class Highlighted(Message):
        def __init__(self, name: str | None):
            super().__init__()
            self.profile = name

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.entries: list[Entry] = []
        self.presence: Presence | None = None  # none known yet
        self.loaded = False

    def compose(self) -> ComposeResult:
        yield Input(placeholder="/ filter profiles", id="filter")
        yield OptionList(id="profiles")
        yield Static("loading profiles…", id="list-status")

    @property
    def options(self) -> OptionList:
        return self.query_one("#profiles", OptionList)

    @property
    def filter_text(self) -> str:
        return self.query_one("#filter", Input).value

    @property
    def selected(self) -> str | None:
        ol = self.options
        if ol.highlighted is None or ol.option_count == 0:
            return None
        return ol.get_option_at_index(ol.highlighted).id

    def entry(self, name: str | None) -> Entry | None:
        return next((e for e in self.entries if e.name == name), None)

    def set_entries(self, entries: Sequence[Entry], keep: str | None = None, presence: Presence | None = None) -> None:
        """The profiles, with the keys and marks known of them (``presence``: None keeps the ones shown)."""
        self.entries = list(entries)
        self.loaded = True
        if presence is not None:
            self.presence = presence
        self.refill(keep if keep is not None else self.selected)

    def rows_shown(self) -> int:
        """How many profiles the list shows at once (two lines each), at least a screenful's worth."""
        return max(self.options.size.height // 2 + 1, 12)

    def set_presence(self, presence: Presence) -> None:
        self.presence = presence
        self.refill(self.selected)

    def update_problems(self, name: str, key_present: bool | None, problems: Sequence[Problem]) -> None:
        """Refresh one profile's line after its detail was read."""
        entry = self.entry(name)
        if entry is None or entry.profile is None:
            return
        key_id = entry.profile.key_id
        known = self.presence
        keys = dict(known.keys) if known else {}
        key_changed = key_present is not None and keys.get(key_id) != key_present
        if key_present is not None:
            keys[key_id] = key_present
        probs = dict(known.problems) if known else {}
        probs[name] = tuple(problems)
        if not key_changed and known is not None and probs == known.problems:
            return
        from ccswitch_tui.tui.service import Presence  # lazy: see the imports

        self.presence = Presence(keys, probs, known.keyring_error if known else None)
        if key_changed:  # profiles sharing the key show it too
            self.refill(self.selected)
        elif name in [o.id for o in self.options.options]:
            self.options.replace_option_prompt(name, prompt(entry, keys.get(key_id), problems))

    def refill(self, keep: str | None) -> None:
        needle = self.filter_text
        shown = [e for e in self.entries if matches(e, needle)]
        keys, problems = (self.presence.keys, self.presence.problems) if self.presence else ({}, {})
        ol = self.options
        with self.app.batch_update():
            ol.clear_options()
            ol.add_options([
                Option(prompt(e, keys.get(e.profile.key_id) if e.profile else None, problems.get(e.name, ())),
                       id=e.name)
                for e in shown
            ])
            names = [e.name for e in shown]
            if names:
                ol.highlighted = names.index(keep) if keep in names else 0
        status = self.query_one("#list-status", Static)
        if not self.entries:
            status.update("none yet: n new, i import")  # fits the narrowest list
        elif needle and not shown:
            status.update(f"no match for {needle!r}: Esc clears")
        elif needle:
            status.update(f"{len(shown)} of {len(self.entries)} match {needle!r}")
        else:
            broken = sum(1 for e in self.entries if e.profile is None)
            n = len(self.entries)
            status.update(f"{n} profile{'' if n == 1 else 's'}" + (f", {broken} broken" if broken else ""))
        self.post_message(self.Highlighted(self.selected))

    @on(Input.Changed, "#filter")
    def _filter(self) -> None:
        self.refill(self.selected)

    @on(Input.Submitted, "#filter")
    def _to_list(self) -> None:
        self.options.focus()

    @on(OptionList.OptionHighlighted, "#profiles")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        self.post_message(self.Highlighted(event.option.id))

    @on(OptionList.OptionSelected, "#profiles")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.post_message(self.Chosen())

    def action_clear_filter(self) -> None:
        self.query_one("#filter", Input).value = ""
        self.options.focus()

    def focus_filter(self) -> None:
        """Focus now, not after the queued events (`Widget.focus` defers): the keys typed right
        behind `/` are handed to whatever has focus when each arrives, and belong to the filter."""
        self.screen.set_focus(self.query_one("#filter", Input))

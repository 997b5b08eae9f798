"""Changing profiles and keys from the TUI: the key dialog, new from a preset, the editor, duplicate,
delete. Each reads and writes through the store and the keyring in a worker; a core error becomes a
notification."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ccswitch_tui.errors import CcsError
from ccswitch_tui.terminal_text import visible
from ccswitch_tui.tui import messages as m
from ccswitch_tui.tui.host import Controller

if TYPE_CHECKING:
    from ccswitch_tui.launch.removal import Removal
    from ccswitch_tui.tui.screens.editor import EditResult
    from ccswitch_tui.tui.screens.modals import KeyChange, NewProfile



def dialogs() -> Any:
    """The dialogs' module, loaded when the first dialog opens (not at start-up)."""
    from ccswitch_tui.tui.screens import modals  # lazy: the dialogs load when the first one opens

    return modals

class ProfileActions(Controller):
    def key(self) -> None:
        entry = self.host.current_entry()
        if entry is None or entry.profile is None:
            return
        p = entry.profile
        if p.key_id.startswith("env:"):
            self.host.notify(f"{p.name} reads its key from ${p.key_id[4:]} in the shell ccs started from; set it there "
                             f"(or change [provider].key to a key id with e to keep it in the keyring)",
                             title="Key from the environment", severity="warning")
            return

        def ask(info: tuple[Any, list[str]]) -> None:
            state, users = info
            if state.present:
                text = f"stored: {state.mask}  {state.fingerprint}"
            elif state.error:
                text = f"cannot read the keyring: {state.error}"
            else:
                text = "not stored yet"
            self.host.open_screen(dialogs().KeyScreen(p.key_id, text, users, bool(state.present)),
                                  lambda change: self._key_change(p.key_id, change))

        def read() -> tuple[Any, list[str]]:
            return self.service.key_state(p)[0], self.service.key_users(p.key_id)

        self.run("Key", read, done=self.then(ask))

    def _key_change(self, key_id: str, change: KeyChange | None) -> None:
        if change is None:
            return
        if change.action == "set":
            assert change.value is not None
            self.run("Key", self.service.set_key, key_id, change.value,
                     done=lambda st: m.Done(f"stored {key_id}  {st.mask}  {st.fingerprint}"))
        else:
            self.run("Key", self.service.remove_key, key_id,
                     done=lambda found: m.Done(f"removed {key_id} from the keyring" if found
                                               else f"no key was stored for {key_id}"))

    def new(self) -> None:
        taken = [e.name for e in self.host.profile_entries()]

        def ask(presets: list[Any]) -> None:
            self.host.open_screen(dialogs().NewProfileScreen(presets, taken), self._create)

        self.run("New profile", self.service.presets, done=self.then(ask))

    def _create(self, new: NewProfile | None) -> None:
        if new is None:
            return

        def created(result: tuple[Any, tuple[str, ...]]) -> m.Done:
            p, urls = result
            nxt = "" if p.key_id.startswith("env:") else f"; press k to store key {p.key_id}"
            shown = "".join(f"\n{visible(line)}" for line in urls)
            return m.Done(f"created {self.service.store.path_for(p.name)}{nxt}{shown}", select=p.name)

        self.run("New profile", self.service.create, new.name, new.preset, new.base_url, new.key, done=created)

    def edit(self) -> None:
        name = self.host.selected
        if name is None:
            return

        def opened(text: str) -> None:
            # lazy: tomlkit loads only when a profile is written
            from ccswitch_tui.tui.screens.editor import EditorScreen, RawEditorScreen

            try:
                screen: Any = EditorScreen(name, text)
            except CcsError:
                screen = RawEditorScreen(name, text)
            self.host.open_screen(screen, lambda r: self._edited(name, text, r))

        self.run("Edit", self.service.read_text, name, done=self.then(opened))

    def _edited(self, name: str, original: str, result: EditResult | None) -> None:
        if result is None:
            return
        if result.raw:
            # lazy: tomlkit loads only when a profile is written
            from ccswitch_tui.tui.screens.editor import RawEditorScreen

            self.host.open_screen(RawEditorScreen(name, result.text, original),
                                  lambda r: self._edited(name, original, r))
            return
        if result.text == original:
            self.host.notify(f"no changes to {name}")
            return
        self.run("Save", self.service.save_text, name, result.text, original,
                 done=lambda _p: m.Done(f"saved {self.service.store.path_for(name)}", select=name,
                                        changed=(name,)))

    def duplicate(self) -> None:
        name = self.host.selected
        if name is None:
            return
        taken = [e.name for e in self.host.profile_entries()]
        initial = next(f"{name}-{i}" if i > 1 else f"{name}-copy" for i in range(1, 1000)
                       if (f"{name}-{i}" if i > 1 else f"{name}-copy") not in taken)

        def chosen(new: str | None) -> None:
            if new:
                self.run("Duplicate", self.service.duplicate, name, new,
                         done=lambda p: m.Done(f"copied {name} to {self.service.store.path_for(p.name)}",
                                               select=p.name))

        self.host.open_screen(dialogs().NameScreen(f"Duplicate {name}", initial, taken, "Duplicate"), chosen)

    def delete(self) -> None:
        entry = self.host.current_entry()
        if entry is None:
            return

        def ask(removal: Removal) -> None:
            what = f"the profile file {removal.path}"
            if removal.state is not None:
                what += f" and its tool state {removal.state.path} (sessions, history; {removal.state.size_text})"
            key = removal.key_plan(False, f"`ccs key rm {removal.key_id}` removes it")

            def confirmed(ok: bool | None) -> None:
                if ok:
                    self.run("Delete", self.service.delete, removal,
                             done=lambda lines: m.Done("; ".join(lines), changed=(entry.name,)))

            self.host.open_screen(dialogs().ConfirmScreen(f"Delete {entry.name}", visible(f"Delete {what}? {key}"),
                                                          "Delete"),
                                  confirmed)

        self.run("Delete", self.service.removal, entry.name, done=self.then(ask))

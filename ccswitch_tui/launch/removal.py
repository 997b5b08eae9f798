"""Removing a profile with what belongs to it, the same from `ccs rm` and the TUI: its file, its
tool state (``state/tools/<profile>/``: sessions, history, downloads) and, when asked, its key —
only when no other profile names the same key id. What stays is said, with the command that
removes it."""

from __future__ import annotations

from pathlib import Path

from ccswitch_tui.errors import CcsError, UsageError
from ccswitch_tui.keys.keyring import KeyStore
from ccswitch_tui.launch.toolstate import ToolState, remove, running_launches, state_of
from ccswitch_tui.paths import Paths
from ccswitch_tui.profiles.store import Store
from ccswitch_tui.valueclass import valueclass


@valueclass(frozen=True)
class Removal:
    name: str
    path: Path
    state: ToolState | None  # None: kept (--keep-state) or none there
    key_id: str | None  # the keyring id the profile names; None for an `env:` key or a file that does not load
    key_users: tuple[str, ...]  # the other profiles naming the same key id

    def question(self, with_key: bool = False) -> str:
        """What will go, for the confirmation."""
        what = f"profile {self.name!r} ({self.path})"
        if self.state is not None:
            what += f" and its tool state {self.state.path} (sessions, history; {self.state.size_text})"
        return f"delete {what}? {self.key_plan(with_key)}"

    def key_plan(self, with_key: bool, way_out: str = "--with-key removes it too") -> str:
        if self.key_id is None:
            return "No key of it is in the keyring."
        if self.key_users:
            return (f"Its key {self.key_id!r} stays in the keyring: {', '.join(self.key_users)} "
                    f"{'uses' if len(self.key_users) == 1 else 'use'} it too.")
        if with_key:
            return f"Its key {self.key_id!r} is removed from the keyring too."
        return f"Its key {self.key_id!r} stays in the keyring ({way_out})."


def plan_removal(store: Store, paths: Paths, name: str, keep_state: bool = False) -> Removal:
    """What removing ``name`` would remove; refused (UsageError) for an unknown profile or while a
    launch of it runs and its tool state would go."""
    path = store.path_for(name)
    store.read_text(name)  # an unknown profile: one clear line
    state = None if keep_state else state_of(paths, name)
    if state is not None and (live := running_launches(paths, name)):
        raise UsageError(f"profile {name!r} has a running launch ({', '.join(live)}); end it first, "
                         "or keep its tool state (`ccs rm --keep-state`) to delete only the profile file")
    key_id: str | None = None
    users: tuple[str, ...] = ()
    try:
        profile = store.load(name)
    except CcsError:
        profile = None
    if profile is not None and not profile.key_id.startswith("env:"):
        key_id = profile.key_id
        users = tuple(e.name for e in store.entries()
                      if e.name != name and e.profile is not None and e.profile.key_id == key_id)
    return Removal(name, path, state, key_id, users)


def carry_out(store: Store, paths: Paths, keys: KeyStore | None, removal: Removal,
              with_key: bool = False) -> list[str]:
    """Remove what ``removal`` names; the lines saying what went and what stayed."""
    store.delete(removal.name)
    lines = [f"deleted {removal.path}"]
    if removal.state is not None:
        remove(paths, removal.state)
        lines.append(f"deleted {removal.state.path}")
    if removal.key_id is None:
        return lines
    if removal.key_users:
        verb = "uses" if len(removal.key_users) == 1 else "use"
        lines.append(f"kept key {removal.key_id!r} in the keyring: {', '.join(removal.key_users)} still {verb} it")
    elif with_key and keys is not None:
        found = keys.delete(removal.key_id)
        lines.append(f"removed key {removal.key_id!r} from the keyring" if found
                     else f"no key was stored under {removal.key_id!r}")
    else:
        lines.append(f"kept key {removal.key_id!r} in the keyring; `ccs key rm {removal.key_id}` removes it")
    return lines

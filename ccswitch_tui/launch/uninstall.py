"""Taking ccs off a machine: `ccs use --uninstall` and `ccs uninstall`. A plan first (what would go,
with sizes: a dry run prints it), then its removal, each piece only when it is ccs's own:

- the shims (only files that are ccs shims) and the choice of `ccs use` — what would otherwise break
  every client started by name once ccs is gone;
- with ``state``: the state folder — each profile's tool state (sessions, history, downloads; the
  Codex daemons that use it are ended first, as `ccs rm` does), the shared packages, run manifests
  and records, the salt and the key index; refused while a launch runs;
- with ``profiles``: the profile files and their folder;
- with ``keys``: the keys ccs stored in the keyring (the ids in its index).

Links are removed, never followed: a piece shared from the user's own ``~/.claude`` or ``~/.codex``
stays where it is. What ccs cannot do itself (the package, the ``PATH`` line in a shell's rc file,
``.ccs-profile`` files in projects) is said at the end.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from ccswitch_tui.errors import CcsError, UsageError
from ccswitch_tui.keys.keyring import KeyStore
from ccswitch_tui.launch import liveness
from ccswitch_tui.launch.shim_setup import GONE_NOTE
from ccswitch_tui.launch.shims import PROJECT_FILE, SELECTION_FILE, is_shim, shim_dir
from ccswitch_tui.launch.toolstate import remove as remove_tool_state
from ccswitch_tui.launch.toolstate import size_text, state_of, tree_size
from ccswitch_tui.paths import Paths
from ccswitch_tui.runs.manifests import load_manifests
from ccswitch_tui.valueclass import field, valueclass


@valueclass(frozen=True)
class Piece:
    path: Path
    what: str
    size: int = 0


@valueclass
class Plan:
    shims: list[Piece] = field(default_factory=list)  # shim files, the selection, the gone note
    shim_folder: Path | None = None  # removed too when nothing else is left in it
    tool_states: list[str] = field(default_factory=list)  # profiles whose tools/<profile> goes (daemons ended)
    state: list[Piece] = field(default_factory=list)  # the rest of the state folder, piece by piece
    state_folder: Path | None = None
    profiles: list[Piece] = field(default_factory=list)
    profiles_folder: Path | None = None
    keys: list[str] = field(default_factory=list)

    def lines(self, dry_run: bool) -> list[str]:
        verb = "would remove" if dry_run else "removes"
        out = [f"{verb} {p.path}  ({p.what}{', ' + size_text(p.size) if p.size else ''})"
               for p in (*self.shims, *self.state, *self.profiles)]
        out += [f"{verb} key {k!r} from the keyring" for k in self.keys]
        total = sum(p.size for p in (*self.shims, *self.state, *self.profiles))
        if total:
            out.append(f"in all {size_text(total)} on disk" + (f" and {len(self.keys)} key(s)" if self.keys else ""))
        return out or ["nothing of ccs's to remove"]


def plan(paths: Paths, environ: Mapping[str, str], keys: KeyStore | None, *, state: bool = False,  # noqa: C901
         profiles: bool = False) -> Plan:
    """What `ccs uninstall` would remove (``keys``: the key store whose keys go, or None to keep them)."""
    out = Plan()
    folder = shim_dir(paths.state, environ)
    if folder.is_dir() and not folder.is_symlink():
        for entry in sorted(folder.iterdir()):
            if entry.name == GONE_NOTE or (not entry.is_symlink() and is_shim(entry)):
                out.shims.append(Piece(entry, "a ccs launcher" if entry.name != GONE_NOTE else "its note",
                                       _size(entry)))
        out.shim_folder = folder
    selection = paths.state / SELECTION_FILE
    if selection.is_file():
        out.shims.append(Piece(selection, "the choice of `ccs use`", _size(selection)))
    if state and paths.state.is_dir() and not paths.state.is_symlink():
        running = [str(m.get("launch_id")) for m in load_manifests(paths) if liveness.state(m) == liveness.RUNNING]
        if running:
            raise UsageError(f"launches still running ({', '.join(running[:3])}{'…' if len(running) > 3 else ''}); "
                             "end them first: their tool state and manifests are in use")
        tools_dir = paths.state / "tools"
        if tools_dir.is_dir() and not tools_dir.is_symlink():
            for d in sorted(tools_dir.iterdir()):
                if (st := state_of(paths, d.name)) is not None:
                    out.tool_states.append(d.name)
                    out.state.append(Piece(st.path, f"tool state of profile {d.name!r}", st.size))
        taken = {p.path for p in out.shims} | {p.path for p in out.state} | {tools_dir}
        for entry in sorted(paths.state.iterdir()):
            if entry not in taken and entry != folder:
                out.state.append(Piece(entry, _state_what(entry.name), tree_size(entry) if entry.is_dir() else
                                       _size(entry)))
        out.state_folder = paths.state
    if profiles and paths.profiles.is_dir() and not paths.profiles.is_symlink():
        for entry in sorted(paths.profiles.iterdir()):
            what = f"profile {entry.stem!r}" if entry.suffix == ".toml" else "ccs's lock or a leftover"
            out.profiles.append(Piece(entry, what, tree_size(entry) if entry.is_dir() else _size(entry)))
        out.profiles_folder = paths.profiles
    if keys is not None:
        try:
            out.keys = keys.ids()
        except CcsError as exc:
            raise UsageError(f"cannot list the keys ccs stored ({exc}); uninstall without --keys, or fix the "
                             "keyring first") from None
    return out


def carry_out(p: Plan, paths: Paths, keys: KeyStore | None) -> list[str]:  # noqa: C901
    """Remove what ``p`` names, keys first (their index is in the state folder); the lines saying so."""
    done: list[str] = []
    if keys is not None:
        for kid in p.keys:
            found = keys.delete(kid)
            done.append(f"removed key {kid!r} from the keyring" if found else f"no key was stored under {kid!r}")
    gone_with_their_profile: set[Path] = set()
    for name in p.tool_states:  # each client ends what still uses it (Codex's daemons) first
        if (st := state_of(paths, name)) is not None:
            remove_tool_state(paths, st)
            done.append(f"removed {st.path}")
        gone_with_their_profile.add(paths.state / "tools" / name)
    for piece in (*p.shims, *p.state, *p.profiles):
        if piece.path not in gone_with_their_profile and (piece.path.is_symlink() or piece.path.exists()):
            _remove(piece.path)
            done.append(f"removed {piece.path}")
    folders = [p.shim_folder]
    if p.state_folder is not None:
        folders += [p.state_folder / "tools", p.state_folder]
    if p.profiles_folder is not None:  # and ~/.config/ccs (or CCS_HOME) when that was all it held
        folders += [p.profiles_folder, p.profiles_folder.parent]
    for folder in folders:
        if folder is not None and folder.is_dir() and not folder.is_symlink():
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty: what else is in it is not ccs's to remove
                done.append(f"removed {folder}")
    return done


def leftovers(paths: Paths, environ: Mapping[str, str], *, state: bool, profiles: bool, keys: bool) -> list[str]:
    """What is still the user's to do (or to keep), once ccs removed what it could."""
    folder = shim_dir(paths.state, environ)
    out = [f"take {folder} off PATH: remove the `export PATH=\"{folder}:$PATH\"` line from your shell's rc file",
           f"{PROJECT_FILE} files in your projects name profiles; ccs does not know where they are",
           "remove ccs itself: `pipx uninstall ccswitch-tui` (or the venv you installed it into)"]
    if not state:
        out.append(f"the state folder {paths.state} stays (tool state, runs, key index): `ccs uninstall --all` "
                   "removes it")
    if not profiles:
        out.append(f"your profiles stay in {paths.profiles} (`--profiles` removes them)")
    if not keys:
        out.append("the keys ccs stored stay in the keyring (`--keys` removes them, or `ccs key rm ID`)")
    return out


def _state_what(name: str) -> str:
    return {"runs": "run manifests and request records", "shared": "pieces shared by every profile (a client's "
            "downloads)", "salt": "the fingerprint salt", "keys.json": "the index of key ids",
            "tui.json": "the TUI's settings"}.get(name, "ccs's state")


def _size(path: Path) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def _remove(path: Path) -> None:
    """A file or link unlinked, a folder removed whole without following a link inside it."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()

"""What `ccs use` changes, without the command line: checks a choice, installs the shims and writes
the choice (the selection file, or a project's ``.ccs-profile`` with ``here``), then says what
happened. Which profile a shim then runs is ``shims.choose``'s answer alone; this module only writes
what it reads. The TUI can call ``use`` as the command does.

The rules of a choice, per tool (``tools``) or for every tool: a profile is chosen for the tools
it serves (the others pass straight through); ``off`` passes straight through; ``clear`` forgets
the choice (project files still apply); with ``tools``, the other tools keep theirs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ccswitch_tui.errors import UsageError
from ccswitch_tui.launch import shim_setup, shims
from ccswitch_tui.model import Profile
from ccswitch_tui.paths import Paths
from ccswitch_tui.profiles.store import Store
from ccswitch_tui.terminal_text import visible


def check_choice(store: Store, programs: Mapping[str, str], profile: str | None, tools: Sequence[str], off: bool,
                 clear: bool, here: bool) -> Profile | None:
    """The chosen profile, loaded (None for ``off`` or ``clear``); a choice that cannot be made:
    UsageError, one line."""
    for t in tools:
        if t not in programs:
            raise UsageError(f"unknown tool {t!r} for --tool; choose one of: {', '.join(programs)}")
    if sum(map(bool, (profile, off, clear))) != 1:
        raise UsageError("give one of: PROFILE, --none or --clear (see `ccs use --help`)")
    if here and clear:
        raise UsageError("--here writes ./.ccs-profile: give PROFILE, or --none to pass tools straight through here")
    if not profile:
        return None
    loaded = store.load(profile)  # a missing or invalid profile is one line here, not at launch
    if not any(t in loaded.tools for t in programs):
        raise UsageError(f"profile {profile!r} serves none of {', '.join(programs)}; add a table with "
                         f"`ccs edit {profile}`")
    missing = [t for t in tools if t not in loaded.tools]
    if missing:
        raise UsageError(f"profile {profile!r} has no [{missing[0]}] table; add one with `ccs edit {profile}` "
                         f"(tools served: {', '.join(loaded.tools)})")
    return loaded


def new_selection(current: Mapping[str, str | None], programs: Sequence[str], profile: Profile | None,
                  tools: Sequence[str], off: bool, clear: bool) -> dict[str, str | None]:
    """The selection file's new content (tool, or ``shims.ALL``, → profile, None: straight through)
    from what it holds: without ``tools`` the choice replaces it whole."""
    if clear:
        return {k: v for k, v in current.items() if k not in tools} if tools else {}
    if off or profile is None:
        return {**current, **dict.fromkeys(tools)} if tools else {shims.ALL: None}
    served = [t for t in (tools or programs) if t in profile.tools]
    base = dict(current) if tools else {}  # --tool changes that tool only
    return base | {t: profile.name for t in served}


def use(paths: Paths, environ: Mapping[str, str], store: Store, cwd: Path, programs: Mapping[str, str],
        profile: str | None, tools: Sequence[str] = (), off: bool = False, clear: bool = False,
        here: bool = False) -> list[str]:
    """Check and make the choice: the shims installed first (a failure changes no choice), then the
    choice written under the choice lock (parallel `ccs use` keep every choice). The lines say what
    was chosen and, when the shim folder is not first on PATH, what to do."""
    loaded = check_choice(store, programs, profile, tools, off, clear, here)
    folder = shims.shim_dir(paths.state, environ)
    shim_setup.install(folder, programs, paths.profiles, paths.state)
    with shim_setup.choice_lock(paths.state):  # read, change, write
        if here:
            said = _write_here(cwd, profile, tools)
        else:
            said = _write_selection(paths, programs, loaded, tools, off, clear)
    out = [said]
    pos = shim_setup.path_position(folder, environ.get("PATH"))
    if pos is None:
        out.append(f"shims are in {folder}; put that folder first on PATH, once, in your shell's rc file:\n"
                   f"  export PATH=\"{folder}:$PATH\"")
    elif blockers := shim_setup.shadowed(folder, list(programs.values()), environ.get("PATH")):
        out.append(f"shims are in {folder}, but {', '.join(blockers.values())} come(s) first on PATH; "
                   "put the shim folder first")
    return out


def _write_here(cwd: Path, profile: str | None, tools: Sequence[str]) -> str:
    """``.ccs-profile`` in ``cwd``: the profile (None: straight through) for ``tools``, else for every tool."""
    name = profile or shims.OFF
    try:
        for t in tools or (None,):
            path = shim_setup.write_project_file(cwd, name, t)
    except shims.SelectionError as exc:
        raise UsageError(str(exc)) from None
    what = f"uses {profile}" if profile else "passes straight through"
    return visible(f"{path}: {', '.join(tools) or 'every tool'} here {what}")


def _write_selection(paths: Paths, programs: Mapping[str, str], profile: Profile | None, tools: Sequence[str],
                     off: bool, clear: bool) -> str:
    try:
        current = shims.read_selection(paths.state) if tools else {}
    except shims.SelectionError:
        current = {}  # a damaged selection is rewritten whole
    chosen = new_selection(current, list(programs), profile, tools, off, clear)
    shim_setup.write_selection(paths.state, chosen)
    if off:
        return f"shims pass straight through for {', '.join(tools) or 'every tool'}"
    if clear:
        return "`ccs use` choice cleared (project files still apply)"
    assert profile is not None
    others = [t for t in programs if t not in chosen]
    return (f"{', '.join(t for t, v in chosen.items() if v == profile.name)}: {profile.name}"
            + (f"; {', '.join(others)}: pass through" if others else ""))

"""One module per client; the registry maps a tool name to its spec.

Adding a client is one new module whose ``TOOL`` is a ``spec.ToolSpec``, and one line in
``_MODULES``: profile validation, routing families, ``ps``/``inspect``, ``doctor``, ``check``,
export, the CLI and the TUI all iterate over the registry. Client modules never import each other.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

from ccswitch_tui.errors import UsageError
from ccswitch_tui.launch.plan import LaunchPlan
from ccswitch_tui.paths import Paths
from ccswitch_tui.profiles.schema import Profile
from ccswitch_tui.tools.spec import ToolSpec

# name → module, in the order every listing shows them; `run` (any command) comes last
_MODULES = {
    "claude": "claude",
    "codex": "codex",
    "gemini": "gemini",
    "opencode": "opencode",
    "run": "run",
}

def names() -> tuple[str, ...]:
    return tuple(_MODULES)


def get(name: str) -> ToolSpec:
    if name not in _MODULES:
        raise UsageError(f"unknown tool {name!r}; choose one of: {', '.join(_MODULES)}")
    return importlib.import_module(f"{__name__}.{_MODULES[name]}").TOOL


@cache
def specs() -> tuple[ToolSpec, ...]:
    """Every registered spec, in registry order."""
    return tuple(get(n) for n in _MODULES)


def clients() -> tuple[ToolSpec, ...]:
    """The specs `ccs launch PROFILE NAME` takes (every client but `run`)."""
    return tuple(s for s in specs() if s.launchable)


def label(name: str | None) -> str:
    """A tool's name for messages: "Claude Code"; an unknown one is "the process"."""
    return get(name).label if name in _MODULES else "the process"


def recognise(exe: str, script: str | None) -> str | None:
    """The client whose executable name (lower case, no folder) or npm script path this is."""
    for s in specs():
        if exe in s.exe_names or (script is not None and script.endswith(s.scripts)):
            return s.name
    return None


def require(profile: Profile, tool: str) -> ToolSpec:
    """The spec for ``tool``, if ``profile`` serves it; otherwise one clear line (exit 2)."""
    spec = get(tool)
    if tool not in profile.tools:
        raise UsageError(
            f"profile {profile.name!r} has no [{tool}] table, so it cannot launch {tool}; "
            f"add one with `ccs edit {profile.name}` (tools served: {', '.join(profile.tools)})"
        )
    return spec


def plan_for(
    profile: Profile,
    tool: str,
    key: str,
    parent_env: Mapping[str, str],
    cwd: Path,
    *,
    paths: Paths,
    args: Sequence[str] = (),
    launch_id: str | None = None,
    isolate: bool = False,
    secrets: Mapping[str, str] | None = None,
) -> LaunchPlan:
    """The plan for ``tool`` under ``profile``; a profile without the tool's table is bad input.
    ``secrets`` holds the values of the profile's ``[secrets]`` variables (secondary.resolve)."""
    from ccswitch_tui.keys.extra import with_secondary
    from ccswitch_tui.launch.isolation import with_door_warnings

    spec = require(profile, tool)
    plan = spec.plan(profile, key, parent_env, cwd, paths=paths, args=args, launch_id=launch_id, isolate=isolate)
    plan = with_secondary(plan, secrets or {})
    return with_door_warnings(plan)  # routing/loader variables the profile lets in are never silent

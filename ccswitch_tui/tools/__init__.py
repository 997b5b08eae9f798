"""One module per client; the registry maps a tool name to its spec.

Adding a client is one new module whose ``TOOL`` is a ``spec.ToolSpec``, and one line in
``_MODULES``: profile validation, routing families, ``ps``/``inspect``, ``doctor``, ``check``,
export, the CLI and the TUI all iterate over the registry. Client modules never import each other.
"""

from __future__ import annotations

import importlib
from functools import cache

from ccswitch_tui import policy
from ccswitch_tui.errors import UsageError
from ccswitch_tui.model import Profile
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
    """Every registered spec, in registry order; the policy learns their routing families."""
    loaded = tuple(get(n) for n in _MODULES)
    policy.register_client_families(
        [(fam, rx) for s in loaded for fam, rx in s.families.items()],
        {fam: text for s in loaded for fam, text in s.family_effects.items()},
        [rx for s in loaded for rx in s.cloud_switches],
    )
    return loaded


def multiline_vars() -> frozenset[str]:
    """Variables a client reads as several lines (a header list): the only ones whose value may
    hold a line break."""
    return frozenset(v for s in specs() for v in s.multiline_vars)


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


specs()  # the policy answers routing questions from the moment the registry is imported

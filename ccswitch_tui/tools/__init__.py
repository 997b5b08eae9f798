"""One module per client; the registry maps a tool name to its adapter.

Adding a client is one new module with a ``TOOL`` object and one line in ``_MODULES``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from ..errors import UsageError
from ..paths import Paths
from ..plan import LaunchPlan
from ..profile import Profile

_MODULES = {"claude": "claude", "codex": "codex", "run": "run"}


class Tool(Protocol):
    name: str
    program: str | None  # executable looked up on PATH; None when the user gives the command

    def plan(
        self,
        profile: Profile,
        key: str,
        parent_env: Mapping[str, str],
        cwd: Path,
        *,
        paths: Paths,
        args: Sequence[str] = (),
        launch_id: str | None = None,
        isolate: bool = False,
    ) -> LaunchPlan: ...


def names() -> tuple[str, ...]:
    return tuple(_MODULES)


def get(name: str) -> Tool:
    if name not in _MODULES:
        raise UsageError(f"unknown tool {name!r}; choose one of: {', '.join(_MODULES)}")
    return importlib.import_module(f"{__name__}.{_MODULES[name]}").TOOL


def require(profile: Profile, tool: str) -> Tool:
    """The adapter for ``tool``, if ``profile`` serves it; otherwise one clear line (exit 2)."""
    adapter = get(tool)
    if tool not in profile.tools:
        raise UsageError(
            f"profile {profile.name!r} has no [{tool}] table, so it cannot launch {tool}; "
            f"add one with `ccs edit {profile.name}` (tools served: {', '.join(profile.tools)})"
        )
    return adapter


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
    from ..isolation import with_door_warnings
    from ..secondary import with_secondary

    adapter = require(profile, tool)
    plan = adapter.plan(profile, key, parent_env, cwd, paths=paths, args=args, launch_id=launch_id, isolate=isolate)
    plan = with_secondary(plan, secrets or {})
    return with_door_warnings(plan)  # routing/loader variables the profile lets in are never silent

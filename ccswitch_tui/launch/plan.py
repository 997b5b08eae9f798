"""The plan of a launch: the client spec's own plan, judged against the layers the spec declares (the
refusals, warnings and manifest record of launch/layers.py), with the profile's ``[secrets]`` in the
child's environment and every door the profile opens named in a warning. No side effects: ``ccs env``,
``ccs launch``, ``ccs run``, ``ccs shell``, ``ccs inspect``, ``ccs check`` and the TUI all call
``plan_for``, so what is shown is what is launched."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ccswitch_tui import tools
from ccswitch_tui.errors import UsageError
from ccswitch_tui.launch.isolation import with_door_warnings
from ccswitch_tui.launch.layers import with_layers
from ccswitch_tui.model import SOURCE_KEY, SOURCE_MARKER, SOURCE_ROUTING, LaunchPlan, Profile
from ccswitch_tui.paths import Paths
from ccswitch_tui.valueclass import replace

if TYPE_CHECKING:
    from ccswitch_tui.tools.registry import Registry


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
    registry: Registry | None = None,
) -> LaunchPlan:
    """The plan for ``tool`` under ``profile``; a profile without the tool's table is bad input.
    ``secrets`` holds the values of the profile's ``[secrets]`` variables (``keys.extra.resolve``);
    ``registry`` the client specs (default: every spec)."""
    registry = registry or tools.load()
    families = registry.families
    spec = registry.require(profile, tool)
    plan = spec.plan(profile, key, parent_env, cwd, paths=paths, families=families, args=args, launch_id=launch_id,
                     isolate=isolate)
    # what the client's declared layers do to it: refusals, warnings, the manifest's record
    plan = with_layers(spec, plan, parent_env, paths.tool_dir(profile.name, tool), isolate, families, paths.toml_cache)
    plan = with_secondary(plan, secrets or {})
    return with_door_warnings(plan, families)  # routing/loader variables the profile lets in are never silent


def with_secondary(plan: LaunchPlan, values: Mapping[str, str]) -> LaunchPlan:
    """The plan with the secondary credentials in the child's environment, as secrets."""
    if not values:
        return plan
    env, sources = dict(plan.env), dict(plan.sources)
    for name, value in values.items():
        if sources.get(name) in (SOURCE_ROUTING, SOURCE_KEY, SOURCE_MARKER):
            raise UsageError(
                f"profile {plan.profile!r}: [secrets].{name} would replace {name}, which ccs sets for {plan.tool} "
                "itself; remove it from [secrets]")
        env[name] = value
        sources[name] = SOURCE_KEY
    return replace(plan, env=env, sources=sources, secret_names=plan.secret_names | frozenset(values))

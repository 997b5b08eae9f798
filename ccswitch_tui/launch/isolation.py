"""Doors a profile opens in the clean environment: routing, cloud-switch, proxy and loader variables
that reach the child because the profile's ``policy.inherit`` or an env table lets them in, not
because ccs set them. They are allowed (named in full), but never silently: each one is a warning
in the plan (``ccs env``, ``launch``, ``run``, the TUI), a finding in ``doctor`` for the profile and
in ``inspect``/``ps`` for a running child, always with where it came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ccswitch_tui.model import SOURCE_INHERITED, SOURCE_PROFILE, SOURCE_TOOL, WARN, Finding, LaunchPlan, Profile
from ccswitch_tui.policy.families import Families
from ccswitch_tui.valueclass import replace, valueclass

if TYPE_CHECKING:
    from ccswitch_tui.tools.registry import Registry

CODE = "opened-routing"
_EFFECT = {
    "cloud-switch": "switches the client to a cloud platform (every request goes there)",
    "routing": "steers where the tool sends requests, with which credentials or models",
    "proxy": "sends the tool's requests through a proxy",
    "cloud": "selects cloud credentials or a region",
    "loader": "changes what code the child loads",
}


@valueclass(frozen=True)
class Door:
    name: str
    kind: str  # cloud-switch | routing | proxy | cloud | loader
    source: str  # "policy.inherit", "[env]", "[claude.env]" …

    def message(self, profile: str) -> str:
        return (f"{self.name} reaches the child through {self.source} of profile {profile!r}: it "
                f"{_EFFECT[self.kind]}; ccs does not manage it (remove it there unless you mean it)")


def kind_of(name: str, families: Families) -> str | None:
    """What a variable does to a launch when ccs names it as a door: the policy's kind, except trust
    variables, which ccs carries on purpose (shown as "trust", dropped with [policy] trust = false)."""
    k = families.kind(name)
    return None if k == "trust" else k


def _source_label(source: str, tool: str) -> str:
    return {SOURCE_INHERITED: "policy.inherit", SOURCE_PROFILE: "[env]", SOURCE_TOOL: f"[{tool}.env]"}[source]


def plan_doors(plan: LaunchPlan, families: Families) -> list[Door]:
    """The doors in a plan: variables whose final source is the parent (policy.inherit) or an env table."""
    out = []
    for name, source in plan.sources.items():
        if source in (SOURCE_INHERITED, SOURCE_PROFILE, SOURCE_TOOL):
            kind = kind_of(name, families)
            if kind:
                out.append(Door(name, kind, _source_label(source, plan.tool)))
    return out


def with_door_warnings(plan: LaunchPlan, families: Families) -> LaunchPlan:
    extra = tuple(d.message(plan.profile) for d in plan_doors(plan, families))
    return replace(plan, warnings=(*plan.warnings, *extra)) if extra else plan


def inspect_findings(pid: int, actual: Mapping[str, str], plan: LaunchPlan, families: Families) -> list[Finding]:
    """For a running child: each door of its plan that the process really holds."""
    return [Finding(CODE, WARN, d.message(plan.profile), pid=pid, variable=d.name,
                    family=families.routing_family(d.name))
            for d in plan_doors(plan, families) if d.name in actual]


def profile_findings(profile: Profile, path: str, environ: Mapping[str, str], registry: Registry) -> list[Finding]:
    """For ``doctor``: the doors a profile opens, known from its file alone (env tables, the names
    its policy.inherit lists in full; a glob reaching such variables is refused when it is read)."""
    families = registry.families
    found: list[Door] = [Door(n, k, "policy.inherit") for n in profile.inherit if (k := kind_of(n, families))]
    tables = [("[env]", profile.env)]
    for tool, side in profile.sides.items():
        tables += [(label, env) for label, env in registry.get(tool).env_tables(side).items() if env]
    for label, env in tables:
        found += [Door(n, k, label) for n in env if (k := kind_of(n, families))]
    out = []
    for d in found:
        msg = d.message(profile.name)
        if d.source == "policy.inherit":
            msg += "; " + ("this shell sets it" if d.name in environ else "this shell does not set it now")
        out.append(Finding(CODE, WARN, msg, path=path, variable=d.name, family=families.routing_family(d.name)))
    return out

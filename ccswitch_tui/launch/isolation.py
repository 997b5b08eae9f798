"""Doors a profile opens in the clean environment: routing, cloud-switch, proxy and loader variables
that reach the child because the profile's ``policy.inherit`` or an env table lets them in, not
because ccs set them. They are allowed (named in full), but never silently: each one is a warning
in the plan (``ccs env``, ``launch``, ``run``, the TUI), a finding in ``doctor`` for the profile and
in ``inspect``/``ps`` for a running child, always with where it came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ccswitch_tui.launch.environment import client_families, routing_family
from ccswitch_tui.launch.plan import SOURCE_INHERITED, SOURCE_PROFILE, SOURCE_TOOL, LaunchPlan

if TYPE_CHECKING:
    from ccswitch_tui.diagnose.findings import Finding

CODE = "opened-routing"
# variables that change what code a child loads or which certificates it trusts
_LOADER_PREFIXES = ("LD_", "DYLD_")
_LOADER_NAMES = frozenset({
    "NODE_OPTIONS", "NODE_PATH", "NODE_EXTRA_CA_CERTS", "NODE_TLS_REJECT_UNAUTHORIZED", "PYTHONSTARTUP",
    "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONINSPECT", "BASH_ENV", "ENV", "PERL5OPT", "PERL5LIB",
    "RUBYOPT", "RUBYLIB", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "SSL_CERT_FILE", "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
})
_EFFECT = {
    "cloud-switch": "switches Claude Code to a cloud platform (every request goes there)",
    "routing": "steers where the tool sends requests, with which credentials or models",
    "proxy": "sends the tool's requests through a proxy",
    "cloud": "selects cloud credentials or a region",
    "loader": "changes what code the child loads or which certificates it trusts",
}


@dataclass(frozen=True)
class Door:
    name: str
    kind: str  # cloud-switch | routing | proxy | cloud | loader
    source: str  # "policy.inherit", "[env]", "[claude.env]" …

    def message(self, profile: str) -> str:
        return (f"{self.name} reaches the child through {self.source} of profile {profile!r}: it "
                f"{_EFFECT[self.kind]}; ccs does not manage it (remove it there unless you mean it)")


def kind_of(name: str) -> str | None:
    """What a variable does to a launch, when it is one ccs should name: None for ordinary ones."""
    if name.startswith("CLAUDE_CODE_USE_"):
        return "cloud-switch"
    family = routing_family(name)
    if family in client_families():
        return "routing"
    if family in ("proxy", "cloud"):
        return family
    return "loader" if name in _LOADER_NAMES or name.startswith(_LOADER_PREFIXES) else None


def _source_label(source: str, tool: str) -> str:
    return {SOURCE_INHERITED: "policy.inherit", SOURCE_PROFILE: "[env]", SOURCE_TOOL: f"[{tool}.env]"}[source]


def plan_doors(plan: LaunchPlan) -> list[Door]:
    """The doors in a plan: variables whose final source is the parent (policy.inherit) or an env table."""
    out = []
    for name, source in plan.sources.items():
        if source in (SOURCE_INHERITED, SOURCE_PROFILE, SOURCE_TOOL):
            kind = kind_of(name)
            if kind:
                out.append(Door(name, kind, _source_label(source, plan.tool)))
    return out


def with_door_warnings(plan: LaunchPlan) -> LaunchPlan:
    extra = tuple(d.message(plan.profile) for d in plan_doors(plan))
    return replace(plan, warnings=(*plan.warnings, *extra)) if extra else plan


def inspect_findings(pid: int, actual: Mapping[str, str], plan: LaunchPlan) -> list[Finding]:
    """For a running child: each door of its plan that the process really holds."""
    from ccswitch_tui.diagnose.findings import WARN, Finding  # not on the launch path

    return [Finding(CODE, WARN, d.message(plan.profile), pid=pid, variable=d.name, family=routing_family(d.name))
            for d in plan_doors(plan) if d.name in actual]


def profile_findings(profile: Any, path: str, environ: Mapping[str, str]) -> list[Finding]:
    """For ``doctor``: the doors a profile opens, known from its file alone (env tables, the names
    its policy.inherit lists in full; a glob reaching such variables is refused when it is read)."""
    from ccswitch_tui.diagnose.findings import WARN, Finding

    found: list[Door] = [Door(n, k, "policy.inherit") for n in profile.inherit if (k := kind_of(n))]
    from ccswitch_tui.tools import get

    tables = [("[env]", profile.env)]
    for tool, side in profile.sides.items():
        tables += [(label, env) for label, env in get(tool).env_tables(side).items() if env]
    for label, env in tables:
        found += [Door(n, k, label) for n in env if (k := kind_of(n))]
    out = []
    for d in found:
        msg = d.message(profile.name)
        if d.source == "policy.inherit":
            msg += "; " + ("this shell sets it" if d.name in environ else "this shell does not set it now")
        out.append(Finding(CODE, WARN, msg, path=path, variable=d.name, family=routing_family(d.name)))
    return out

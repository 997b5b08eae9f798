"""Point a launch plan at the bridge: pure functions over a ``LaunchPlan``, no sockets.

The plan is rewritten, not the profile, so every tool module stays as it is: wherever the plan
puts one of its base URLs (a variable, a generated file, an argument), the bridge route for it
goes instead, and wherever it puts the key, the launch token. Then the result is checked: if a
real base URL or the key is still anywhere in what the child gets, recording is refused rather
than letting traffic or the key pass around the bridge.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

from ccswitch_tui.bridge.routes import Dialect
from ccswitch_tui.errors import UsageError
from ccswitch_tui.model import FileToWrite, LaunchPlan
from ccswitch_tui.valueclass import replace, valueclass

_PROXY = {"https": ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"),
          "http": ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")}
_LOOPBACK = "127.0.0.1,localhost,::1"
TOKEN_PREFIX = "ccs-bridge-"  # every launch token starts so (bridge.server makes them)


@valueclass(frozen=True)
class RouteSpec:
    """One base URL of the plan and the bridge route that stands for it."""

    name: str  # the path prefix on the bridge
    location: str  # where the plan puts it (a variable name or a config key)
    upstream: str
    models: tuple[str, ...]
    proxy: str | None
    dialect: Dialect = "unknown"  # the API the child speaks to this route (bridge.routes)


_FAMILIES: tuple[tuple[str, str, Dialect], ...] = (("ANTHROPIC", "anthropic", "anthropic-messages"),
                                                   ("OPENAI", "openai", "openai"))


def route_name(location: str, tool: str) -> str:
    loc = location.upper()
    for word, name, _ in _FAMILIES:
        if word in loc:
            return name
    return re.sub(r"[^a-z0-9-]+", "-", tool.lower()).strip("-") or "route"


def route_dialect(location: str) -> Dialect:
    """The API the child speaks to the base URL at ``location``: its family's, as ``route_name``
    names the route after it."""
    loc = location.upper()
    return next((dialect for word, _, dialect in _FAMILIES if word in loc), "unknown")


def proxy_for(url: str, env: Mapping[str, str]) -> str | None:
    """The proxy the plan gives the tool for ``url`` (its own variables, not ccs's), if any."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    no_proxy = env.get("NO_PROXY", env.get("no_proxy", ""))
    for entry in (e.strip().lower().lstrip(".") for e in no_proxy.split(",")):
        if entry == "*" or (entry and (host == entry or host.endswith("." + entry))):
            return None
    for name in _PROXY.get(parts.scheme, ()):
        if env.get(name):
            return env[name]
    return None


def route_specs(plan: LaunchPlan) -> list[RouteSpec]:
    """One route per base-URL location of the plan, with unique names."""
    if not plan.base_urls:
        raise UsageError(f"nothing to record: the {plan.tool} launch of profile {plan.profile!r} has no base URL "
                         "(for `ccs run`, set [run].export)")
    models = tuple(dict.fromkeys(plan.models.values()))
    specs, taken = [], set()
    for location, url in plan.base_urls.items():
        # a variable the profile names itself is routed as its family (TAOTOKEN_BASE_URL as openai)
        family = plan.routing_names.get(location, location)
        name = base = route_name(family, plan.tool)
        n = 2
        while name in taken:
            name, n = f"{base}-{n}", n + 1
        taken.add(name)
        specs.append(RouteSpec(name, location, url, models, proxy_for(url, plan.env), route_dialect(family)))
    return specs


def reroute(plan: LaunchPlan, key: str, token: str, route_url: Callable[[str], str],
            specs: list[RouteSpec]) -> LaunchPlan:
    """The plan with every base URL replaced by its bridge route and the key by ``token``."""
    by_url: dict[str, str] = {}
    env = dict(plan.env)
    for spec in specs:
        target = route_url(spec.name)
        by_url.setdefault(spec.upstream, target)
        if env.get(spec.location) == spec.upstream:
            env[spec.location] = target
    for name, value in env.items():
        if value in by_url:
            env[name] = by_url[value]
        elif name in plan.secret_names and value == key:
            env[name] = token
    if any(name in env for names in _PROXY.values() for name in names):
        # Claude Code sends even loopback requests through a proxy unless NO_PROXY says otherwise.
        for name in ("NO_PROXY", "no_proxy"):
            env[name] = ",".join(x for x in (env.get(name, ""), _LOOPBACK) if x)
    argv = tuple(by_url.get(a, a) for a in plan.argv)
    new = replace(plan, env=env, files=_rerouted_files(plan, by_url), argv=argv)
    leftovers = _leftovers(new, key, by_url)
    if leftovers:
        raise UsageError(f"cannot record this {plan.tool} launch: {leftovers}; launch it without --record")
    return new


def _rerouted_files(plan: LaunchPlan, by_url: Mapping[str, str]) -> tuple[FileToWrite, ...]:
    """The plan's files with every upstream URL (as a JSON string) replaced by its route's."""
    files = []
    for f in plan.files:
        content = f.content
        for url, target in by_url.items():
            content = content.replace(json.dumps(url), json.dumps(target))
        files.append(replace(f, content=content))
    return tuple(files)


def _leftovers(plan: LaunchPlan, key: str, by_url: Mapping[str, str]) -> str | None:
    places = [*(f"${k}" for k in plan.env), *(str(f.path) for f in plan.files), "argv"]
    texts = [*plan.env.values(), *(f.content for f in plan.files), "\0".join(plan.argv)]
    for where, text in zip(places, texts, strict=True):
        if key and key in text:
            return f"the key would still reach the tool through {where}"
        for url in by_url:
            if url in text:
                return f"{where} still holds the real base URL {url}, which the bridge would not see"
    return None


def as_recorded(plan: LaunchPlan, actual_env: Mapping[str, str],
                bridge_of: Callable[[str], str | None]) -> tuple[LaunchPlan, str] | None:
    """For a process of a recorded launch: the plan as the child really got it (bridge URLs, the
    launch token) and the token; None when the launch was not recorded. ``bridge_of(launch_id)``
    is the bridge address its manifest names (the runs' own reader: runs.manifests.recording_bridge)."""
    launch_id = actual_env.get("CCS_LAUNCH_ID", "")
    token = next((actual_env[n] for n in plan.secret_names if actual_env.get(n, "").startswith(TOKEN_PREFIX)), None)
    if not launch_id or token is None or "/" in launch_id:
        return None
    bridge = bridge_of(launch_id)
    if bridge is None:
        return None
    try:
        key = next(plan.env[n] for n in plan.secret_names if n in plan.env)
        return reroute(plan, key, token, lambda name: f"{bridge}/{name}", route_specs(plan)), token
    except (OSError, ValueError, KeyError, TypeError, StopIteration, UsageError):
        return None

"""A Codex launch on a Chat Completions provider: the bridge with a translating route.

``TranslatingSession.start`` starts the bridge (which holds the real key and records every
request), and gives back the plan the child gets: Codex's generated config points at the bridge's
route instead of the provider, and the key variable holds the launch token instead of the key.
``stop`` ends the bridge and summarises its records for the manifest.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from ...errors import UsageError
from ...paths import Paths
from ...plan import LaunchPlan
from .handler import handler_for

ROUTE = "codex"


class TranslatingSession:
    def __init__(self, plan: LaunchPlan, bridge: Any, location: str, upstream: str):
        self.real_plan = plan
        self.bridge = bridge
        self.location = location
        self.upstream = upstream
        self.plan = point_at_bridge(plan, bridge.config.key, bridge.token, upstream, bridge.route_url(ROUTE))

    @classmethod
    def start(cls, plan: LaunchPlan, key: str, key_fingerprint: str | None, paths: Paths) -> TranslatingSession:
        (location, upstream), = plan.base_urls.items()  # a Codex plan has one: its provider's base URL
        from .. import records as rec
        from ..server import Bridge, BridgeConfig, Route

        config = BridgeConfig(
            routes=(Route(ROUTE, upstream, handler=handler_for(plan, location),
                          models=tuple(dict.fromkeys(plan.models.values()))),),
            key=key, key_fingerprint=key_fingerprint, records_path=rec.records_path(paths.runs, plan.launch_id))
        bridge = Bridge(config).start()
        try:
            return cls(plan, bridge, location, upstream)
        except BaseException:
            bridge.stop()
            raise

    def manifest_fields(self) -> dict[str, Any]:
        from .. import records as rec

        return {"recording": {
            "records": self.bridge.records_path.name, "bridge": self.bridge.url,
            "routes": {ROUTE: {"upstream": rec.safe_url(self.upstream), "set_as": self.location,
                               "translated": "responses -> chat completions"}},
            "bodies": False, "strict_model": False,
        }}

    def stop(self) -> dict[str, Any]:
        from .. import records as rec

        self.bridge.stop()
        return rec.summarize(self.bridge.records(), self.real_plan.models.values())


def point_at_bridge(plan: LaunchPlan, key: str, token: str, upstream: str, route_url: str) -> LaunchPlan:
    """The plan with the provider's base URL replaced by the bridge route and the key by the token;
    refused if either would still reach the child."""
    env = {k: (token if k in plan.secret_names and v == key else v) for k, v in plan.env.items()}
    files = tuple(replace(f, content=f.content.replace(json.dumps(upstream), json.dumps(route_url)))
                  for f in plan.files)
    new = replace(plan, env=env, files=files)
    for where, text in [*((f"${k}", v) for k, v in new.env.items()), *((str(f.path), f.content) for f in files)]:
        if (key and key in text) or upstream in text.replace(route_url, ""):
            raise UsageError(f"cannot launch Codex through the translating bridge: {where} would still hold the "
                             "key or the provider's URL")
    return new

"""Recording for one launch: start the bridge for the plan's base URLs, hand back the plan the child
gets (bridge URLs, the launch token), and at the end stop the bridge and summarize its records.

Only the bridge's loading thread imports the server (and so asyncio), while the child starts
(see ``bridge.loading``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from ccswitch_tui.bridge import records as rec
from ccswitch_tui.bridge.guard import Guard
from ccswitch_tui.bridge.handler import passthrough
from ccswitch_tui.bridge.loading import LoadingBridge
from ccswitch_tui.bridge.reroute import reroute, route_specs
from ccswitch_tui.errors import UsageError
from ccswitch_tui.model import LaunchPlan
from ccswitch_tui.paths import Paths
from ccswitch_tui.valueclass import valueclass

if TYPE_CHECKING:
    from ccswitch_tui.bridge.guard import Guard
    from ccswitch_tui.bridge.loading import LoadingBridge


@valueclass(frozen=True)
class RecordOptions:
    bodies: bool = False  # --record-bodies
    strict_model: bool = False  # --strict-model


class RecordingSession:
    def __init__(self, plan: LaunchPlan, bridge: LoadingBridge, specs: list, options: RecordOptions, key: str,
                 guard: Guard | None = None):
        self.real_plan = plan
        self.bridge = bridge
        self.guard = guard
        self.specs = specs
        self.options = options
        self.plan = reroute(plan, key, bridge.token, bridge.route_url, specs)

    @classmethod
    def start(cls, plan: LaunchPlan, key: str, key_fingerprint: str | None, paths: Paths,
              options: RecordOptions, handlers: Mapping[str, Any] | None = None) -> RecordingSession:
        """``handlers`` maps a route's location in the plan (``plan.base_urls`` key, e.g.
        ``model_providers.x.base_url``) to the ``bridge.handler.Handler`` for it (a translator);
        every other route passes requests through unchanged."""
        specs = route_specs(plan)
        models = tuple(dict.fromkeys(plan.models.values()))
        if options.strict_model and not models:

            raise UsageError(f"--strict-model needs a model to pin, and profile {plan.profile!r} sets none for "
                             f"{plan.tool}; set one with `ccs edit {plan.profile}`")

        records_path = rec.records_path(paths.runs, plan.launch_id)
        extra_secrets = known_secrets(plan, key, specs)

        def config() -> Any:  # in the loading thread: the server module imports asyncio
            # lazy: the server loads only for a recorded or translated launch, once its child runs
            from ccswitch_tui.bridge.server import BridgeConfig, Route

            return BridgeConfig(
                routes=tuple(Route(s.name, s.upstream, models=s.models, proxy=s.proxy,
                                   handler=(handlers or {}).get(s.location) or passthrough(s.dialect))
                             for s in specs),
                key=key, key_fingerprint=key_fingerprint, records_path=records_path,
                record_bodies=options.bodies, strict_model=options.strict_model, extra_secrets=extra_secrets,
            )

        # the socket is bound and the token made now; the server loads while the child starts
        bridge = LoadingBridge(config, records_path)
        guard = None
        try:
            guard = Guard.start(bridge.listen_fd, plan.launch_id)
            return cls(plan, bridge, specs, options, key, guard)
        except BaseException:
            if guard is not None:
                guard.release()
            bridge.stop()
            raise

    def in_child(self) -> None:
        """In the child, after its fork and before its exec (``preexec_fn``), in its own process
        group: the guard learns that group before the tool runs (``bridge.guard``)."""
        if self.guard is not None:
            self.guard.in_child()

    def child_started(self, pid: int) -> None:
        """The child runs: the server may finish loading now, and if ccs dies the guard ends the
        child's process group."""
        started = getattr(self.bridge, "child_started", None)
        if started is not None:
            started()
        if self.guard is not None:
            self.guard.watch(pid)

    def manifest_fields(self) -> dict[str, Any]:
        return {"recording": {
            "records": self.bridge.records_path.name,
            "bridge": self.bridge.url,
            "routes": {s.name: {"upstream": rec.safe_url(s.upstream), "set_as": s.location} for s in self.specs},
            "bodies": self.options.bodies,
            "strict_model": self.options.strict_model,
        }}

    def stop(self) -> dict[str, Any]:
        """Stop the bridge; the summary of every record it wrote."""
        self.bridge.stop()
        if self.guard is not None:
            self.guard.release()
        summary = rec.summarize(self.bridge.records(), self.real_plan.models.values())
        refused = self.bridge.connections_refused()
        if refused:
            summary["connections_refused"] = refused
        lost = self.bridge.records_lost
        if lost:
            summary["records_lost"] = lost  # `ccs runs`, `runs report` and `ccs usage` mark the run
            if self.bridge.lost_unreported():
                print(f"ccs: warning: {lost} request record(s) of this run could not be written to "
                      f"{self.bridge.records_path}; its request counts and totals are short", file=sys.stderr)
        return summary


def known_secrets(plan: LaunchPlan, key: str, specs: list) -> tuple[str, ...]:
    """Every secret of the launch besides the key: the values of its secret variables (the profile's
    ``[secrets]``) and the credentials of the proxies its routes go through. No record holds them and
    the bridge never hands them back to the child."""

    found = [plan.env[n] for n in sorted(plan.secret_names) if plan.env.get(n) and plan.env[n] != key]
    for value in list(found):  # headers in one variable (ANTHROPIC_CUSTOM_HEADERS): each value on its own
        for line in value.splitlines():
            name, sep, rest = line.partition(":")
            if sep and name.strip() and all(c.isalnum() or c in "-_" for c in name.strip()) and rest.strip():
                found.append(rest.strip())
    for spec in specs:
        if spec.proxy:
            parts = urlsplit(spec.proxy)
            if parts.password:
                found += [parts.password, unquote(parts.password)]
            if "@" in parts.netloc:
                found.append(parts.netloc.rsplit("@", 1)[0])  # user:password as written
    return tuple(dict.fromkeys(s for s in found if s))

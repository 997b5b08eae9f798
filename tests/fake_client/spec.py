"""The spec of ``fakecli`` (bin/fakecli), a client that exists only in the tests: everything ccs
does for it comes from this module, registered with ``tools.register`` (site/sitecustomize.py).

fakecli reads FAKECLI_BASE_URL, FAKECLI_MODEL and FAKECLI_API_KEY, and two files (bin/fakecli): the
working folder's ``.fakecli.json``, whose ``base_url``, ``model`` and ``proxy`` beat the environment
(unless FAKECLI_NO_PROJECT=1, which ``--isolate`` sets), and ``~/.fakecli.json``, whose values fill in
what the environment lacks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ccswitch_tui.model import SOURCE_ROUTING, SOURCE_TOOL, LaunchPlan, Profile, Provider, new_launch_id
from ccswitch_tui.paths import Paths
from ccswitch_tui.policy.families import Families
from ccswitch_tui.tools import fields
from ccswitch_tui.tools.capabilities import TuiFace
from ccswitch_tui.tools.checker import Checker
from ccswitch_tui.tools.environment import EnvBuilder
from ccswitch_tui.tools.fields import boolean, integer, select, string, url
from ccswitch_tui.tools.layers import ISOLATE, Key, Layer, home, working
from ccswitch_tui.tools.spec import ProbeSpec, ToolSpec, chat_probe
from ccswitch_tui.valueclass import valueclass


@valueclass(frozen=True, kw_only=True)
class FakeSide:
    base_url: str = url(hint="default: the provider's; requests go to …/chat/completions")
    model: str = string("model", hint="required", required=True)
    flavour: str = select("flavour", ("plain", "fancy"), default="plain")
    token: str | None = string("token", hint="a second credential of its own", secret=True)
    retries: int | None = integer("retries", hint="how often it retries (a number)")
    verbose: bool | None = boolean("verbose")
    env: Mapping[str, str] = fields.env()


class FakeSpec(ToolSpec[FakeSide], TuiFace):
    name = "fakecli"
    label = "Fake CLI"
    short = "Fake"
    program = "fakecli"
    install_hint = "put tests/fake_client/bin on PATH"
    tui_key = "f"
    side = FakeSide
    families = {"fakecli": r"FAKECLI_.*"}
    family_effects = {"fakecli": "Fake CLI"}
    reads = ("fakecli",)
    exe_names = ("fakecli",)
    scripts = ("fake_client/bin/fakecli",)
    layers = (
        Layer("project", "project", "json", working(".fakecli.json"),
              (Key("base_url", "base-url"), Key("model", "model"), Key("proxy", "proxy")), launch=ISOLATE,
              why="--isolate sets FAKECLI_NO_PROJECT=1"),
        Layer("user", "user", "json", home(".fakecli.json"),
              (Key("base_url", "base-url", beaten_by=("env:FAKECLI_BASE_URL",)),
               Key("model", "model", beaten_by=("env:FAKECLI_MODEL",)), Key("proxy", "proxy")),
              why="fills in what the environment lacks"),
    )

    def refine(self, values: dict[str, Any], t: Mapping[str, Any], c: Checker, provider: Provider,
               profile_name: str) -> None:
        if values.get("flavour") == "fancy" and values["model"].startswith("plain-"):
            raise c.fail("[fakecli].flavour 'fancy' needs a model that is not plain-*", "[fakecli].flavour")

    def summary(self, side: FakeSide) -> list[str]:
        return [f"FAKECLI_MODEL={side.model}"]

    def endpoint(self, side: FakeSide) -> str | None:
        return side.base_url.rstrip("/") + "/chat/completions"

    def plan(self, profile: Profile, key: str, parent_env: Mapping[str, str], cwd: Path, *,
             paths: Paths, families: Families, args: Sequence[str] = (), launch_id: str | None = None,
             isolate: bool = False) -> LaunchPlan:
        side: FakeSide = profile.sides[self.name]
        launch_id = launch_id or new_launch_id()
        b = EnvBuilder(profile, parent_env)
        b.add(side.env, SOURCE_TOOL)
        b.add({"FAKECLI_BASE_URL": side.base_url, "FAKECLI_MODEL": side.model,
               **({"FAKECLI_NO_PROJECT": "1"} if isolate else {})}, SOURCE_ROUTING)
        b.add_secret("FAKECLI_API_KEY", key)
        b.add_markers(profile, self.name, launch_id)
        return LaunchPlan(
            profile=profile.name, tool=self.name, argv=(self.program or "fakecli", *args), env=b.env,
            sources=b.sources, secret_names=frozenset(b.secret_names), cwd=cwd, launch_id=launch_id,
            dirs=paths.tool_dirs(profile.name, self.name), files=(),
            base_urls={"FAKECLI_BASE_URL": side.base_url}, models={"FAKECLI_MODEL": side.model},
            key_id=profile.key_id,
        )

    def probes(self, plan: LaunchPlan, profile: Profile) -> list[ProbeSpec]:
        return [chat_probe(plan.base_urls["FAKECLI_BASE_URL"], plan.models["FAKECLI_MODEL"])]


TOOL = FakeSpec()

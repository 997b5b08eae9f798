"""Generic programs built on the OpenAI / Anthropic SDKs (`ccs run`, `ccs shell`).

``[run].export = ["openai"]`` exports OPENAI_BASE_URL (the ``[codex]`` base URL, else the
provider's) and OPENAI_API_KEY; ``"anthropic"`` exports ANTHROPIC_BASE_URL (``[claude]``'s, else the
provider's) and the key as ``[claude].auth`` says. A table names the variables a program reads itself,
``{ key = "TAOTOKEN_API_KEY", base_url = "TAOTOKEN_BASE_URL" }`` (the OpenAI base URL, or with
``family = "anthropic"`` the Anthropic one): they get the guarantees of the family's own names (the
bridge's token and URL under --record, masked, in the manifest's base URLs, the profile's own for
``inspect``). Other sides are read by their fields only (``base_url``, ``auth``, ``model``): this module
imports no other client's module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ccswitch_tui.model import SOURCE_ROUTING, LaunchPlan, Profile, Provider, new_launch_id
from ccswitch_tui.paths import Paths
from ccswitch_tui.policy.families import Families
from ccswitch_tui.tools.capabilities import Probing, ServingUnasked
from ccswitch_tui.tools.checker import Checker
from ccswitch_tui.tools.environment import EnvBuilder
from ccswitch_tui.tools.export_names import ExportNames, add_names, parse_names, routing_names
from ccswitch_tui.tools.fields import declare, string
from ccswitch_tui.tools.spec import ProbeSpec, ToolSpec, responses_probe
from ccswitch_tui.valueclass import valueclass

EXPORTS = ("openai", "anthropic")
DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-5"  # a Messages probe needs some model


def _parse_export(t: Mapping[str, Any], c: Checker, where: str, name: str) -> tuple[str | ExportNames, ...]:
    """[run].export: the families, and the tables naming a program's own variables, in their order."""
    value = t.get(name, [])
    if not isinstance(value, list):
        raise c.fail("[run].export must be a list of \"openai\", \"anthropic\" and "
                     "{ key = \"…\", base_url = \"…\" } tables", "[run].export")
    out: list[str | ExportNames] = []
    taken: set[str] = set()
    for i, e in enumerate(value):
        if isinstance(e, Mapping):
            out.append(parse_names(e, c, f"[run].export[{i}]", "[run].export", EXPORTS, taken))
        elif e not in EXPORTS:
            raise c.fail(f"[run].export {e!r} must be one of: {', '.join(EXPORTS)}, or a table "
                         "{ key = \"NAME_API_KEY\", base_url = \"NAME_BASE_URL\" }", "[run].export")
        else:
            out.append(e)
    return tuple(out)


@valueclass(frozen=True, kw_only=True)
class RunSide:
    """The [run] table, declared once (tools/fields.py)."""

    export: tuple[str, ...] = declare("exports", "export", choices=EXPORTS, parse=_parse_export)
    model: str | None = string("model", hint="CCS_MODEL (optional)")
    names: tuple[ExportNames, ...] = ()  # the tables of [run].export, in their order (split off by refine)

    @property
    def exports_anything(self) -> bool:
        return bool(self.export or self.names)

    def shown_exports(self) -> list[str]:
        return [*self.export, *(n.shown() for n in self.names)]


def _openai_url(profile: Profile) -> str:
    codex = profile.sides.get("codex")
    return codex.base_url if codex else profile.provider.base_url


def _anthropic(profile: Profile) -> tuple[str, str]:
    claude = profile.sides.get("claude")
    return (claude.base_url, claude.auth) if claude else (profile.provider.base_url, "token")


def sdk_exports(profile: Profile, key: str, builder: EnvBuilder) -> tuple[dict[str, str], dict[str, str]]:
    """Add the ``[run].export`` variables; return (base URLs, models) for the manifest."""
    run: RunSide = profile.sides.get("run") or RunSide()
    urls: dict[str, str] = {}
    models: dict[str, str] = {}
    if "openai" in run.export:
        url = _openai_url(profile)
        builder.add({"OPENAI_BASE_URL": url}, SOURCE_ROUTING)
        builder.add_secret("OPENAI_API_KEY", key)
        urls["OPENAI_BASE_URL"] = url
    if "anthropic" in run.export:
        url, auth = _anthropic(profile)
        builder.add({"ANTHROPIC_BASE_URL": url}, SOURCE_ROUTING)
        builder.add_secret("ANTHROPIC_API_KEY" if auth == "api-key" else "ANTHROPIC_AUTH_TOKEN", key)
        urls["ANTHROPIC_BASE_URL"] = url
    urls.update(add_names(builder, run.names, lambda family: _url_of(profile, family), key))
    if run.model:
        builder.add({"CCS_MODEL": run.model}, SOURCE_ROUTING)
        models["CCS_MODEL"] = run.model
    return urls, models


def _url_of(profile: Profile, family: str) -> str:
    return _openai_url(profile) if family == "openai" else _anthropic(profile)[0]


class RunSpec(ToolSpec[RunSide], Probing, ServingUnasked):
    name = "run"
    label = "the `ccs run` program"
    program = None
    launchable = False
    side = RunSide
    layers = ()
    layers_reason = "`ccs run` starts any program: ccs cannot know which files it reads"
    reads_tables = ("codex", "claude")  # the OpenAI and Anthropic base URLs (and [claude].auth) it exports

    def refine(self, values: dict[str, Any], t: Mapping[str, Any], c: Checker, provider: Provider,
               profile_name: str) -> None:
        """The export list's families (each once) and its tables, apart."""
        export = values.get("export", ())
        values["export"] = tuple(dict.fromkeys(e for e in export if isinstance(e, str)))
        values["names"] = tuple(e for e in export if isinstance(e, ExportNames))

    def default_side(self, provider: Provider) -> RunSide:
        return RunSide()  # `ccs run` is always served (it may export nothing)

    def side_dict(self, side: RunSide) -> dict[str, Any]:
        return {"export": [*side.export, *(n.as_dict() for n in side.names)], "model": side.model}

    def summary(self, side: RunSide) -> list[str]:
        return ([f"exports {', '.join(side.shown_exports())}"] if side.exports_anything else ["exports nothing"]) + (
            [f"CCS_MODEL={side.model}"] if side.model else [])

    def show(self, side: RunSide) -> str:
        return f"export={','.join(side.shown_exports()) or '-'}  model={side.model or '-'}"

    def plan(self, profile: Profile, key: str, parent_env: Mapping[str, str], cwd: Path, *,
             paths: Paths, families: Families, args: Sequence[str] = (), launch_id: str | None = None,
             isolate: bool = False) -> LaunchPlan:
        launch_id = launch_id or new_launch_id()
        b = EnvBuilder(profile, parent_env)
        urls, models = sdk_exports(profile, key, b)
        b.add_markers(profile, self.name, launch_id)
        side: RunSide = profile.sides["run"]
        warnings = () if side.exports_anything else (
            f"profile {profile.name!r} exports nothing for `ccs run` ([run].export is empty): "
            "the command gets no base URL and no key",
        )
        return LaunchPlan(
            profile=profile.name, tool=self.name, argv=tuple(args), env=b.env, sources=b.sources,
            secret_names=frozenset(b.secret_names), cwd=cwd, launch_id=launch_id,
            base_urls=urls, models=models, key_id=profile.key_id, warnings=warnings,
            routing_names=routing_names(side.names),
        )

    def probes(self, plan: LaunchPlan, profile: Profile) -> list[ProbeSpec]:
        """`ccs run` exports CCS_MODEL only from [run].model: that is the model to look for. A models
        list costs no tokens and proves the endpoint and the key for SDK programs."""
        run: RunSide = profile.sides["run"]
        out: list[ProbeSpec] = []
        openai_bases = [plan.base_urls[n] for n in ("OPENAI_BASE_URL", *(x.base_url for x in run.names
                                                                          if x.family == "openai" and x.base_url))
                        if n in plan.base_urls]
        if openai_bases:
            base = openai_bases[0]
            codex = profile.sides.get("codex")
            fb_model = run.model or (codex.model if codex else None)  # a Responses request needs some model
            fallback = responses_probe(base, fb_model) if fb_model else None
            out.append(ProbeSpec("openai-models", base.rstrip("/") + "/models", run.model, "bearer", method="GET",
                                 fallback=fallback))
        if "anthropic" in run.export:
            base = plan.base_urls["ANTHROPIC_BASE_URL"]
            auth = "x-api-key" if "ANTHROPIC_API_KEY" in plan.secret_names else "bearer"
            if run.model:  # exported as CCS_MODEL: probe that model, as the program will use it
                out.append(_messages(base, run.model, auth))
            else:
                # `ccs run` exports no model, so there is none to look for: a models list proves the
                # endpoint and the key without one. A Messages request needs some model, so the
                # fallback (for an endpoint that serves no list) borrows Claude's or the default.
                claude = profile.sides.get("claude")
                fb_model = (claude and (claude.model or claude.sonnet or claude.opus or claude.haiku)) \
                    or DEFAULT_ANTHROPIC_MODEL
                out.append(ProbeSpec("anthropic-models", base.rstrip("/") + "/v1/models", None, auth, method="GET",
                                     fallback=_messages(base, fb_model, auth)))
        return out


def _messages(base: str, model: str, auth: str) -> ProbeSpec:
    body = {"model": model, "max_tokens": 1, "messages": [{"role": "user", "content": "ping"}]}
    return ProbeSpec("anthropic", base.rstrip("/") + "/v1/messages", model, auth, body=body)


TOOL = RunSpec()

"""Generic programs built on the OpenAI / Anthropic SDKs (`ccs run`, `ccs shell`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ..paths import Paths
from ..plan import SOURCE_ROUTING, EnvBuilder, LaunchPlan, new_launch_id
from ..profile import Profile


def sdk_exports(profile: Profile, key: str, builder: EnvBuilder) -> tuple[dict[str, str], dict[str, str]]:
    """Add the ``[run].export`` variables; return (base URLs, models) for the manifest."""
    urls: dict[str, str] = {}
    models: dict[str, str] = {}
    if "openai" in profile.run.export:
        url = profile.codex.base_url if profile.codex else profile.provider.base_url
        builder.add({"OPENAI_BASE_URL": url}, SOURCE_ROUTING)
        builder.add_secret("OPENAI_API_KEY", key)
        urls["OPENAI_BASE_URL"] = url
    if "anthropic" in profile.run.export:
        url = profile.claude.base_url if profile.claude else profile.provider.base_url
        auth = profile.claude.auth if profile.claude else "token"
        builder.add({"ANTHROPIC_BASE_URL": url}, SOURCE_ROUTING)
        builder.add_secret("ANTHROPIC_API_KEY" if auth == "api-key" else "ANTHROPIC_AUTH_TOKEN", key)
        urls["ANTHROPIC_BASE_URL"] = url
    if profile.run.model:
        builder.add({"CCS_MODEL": profile.run.model}, SOURCE_ROUTING)
        models["CCS_MODEL"] = profile.run.model
    return urls, models


class RunTool:
    name = "run"
    program = None

    def plan(self, profile: Profile, key: str, parent_env: Mapping[str, str], cwd: Path, *,
             paths: Paths, args: Sequence[str] = (), launch_id: str | None = None,
             isolate: bool = False) -> LaunchPlan:
        launch_id = launch_id or new_launch_id()
        b = EnvBuilder(profile, parent_env)
        urls, models = sdk_exports(profile, key, b)
        b.add_markers(profile, self.name, launch_id)
        warnings = () if profile.run.export else (
            f"profile {profile.name!r} exports nothing for `ccs run` ([run].export is empty): "
            "the command gets no base URL and no key",
        )
        return LaunchPlan(
            profile=profile.name, tool=self.name, argv=tuple(args), env=b.env, sources=b.sources,
            secret_names=frozenset(b.secret_names), cwd=cwd, launch_id=launch_id,
            base_urls=urls, models=models, key_id=profile.key_id, warnings=warnings,
        )


TOOL = RunTool()

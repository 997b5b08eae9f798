"""Codex CLI: a per-profile CODEX_HOME whose config.toml routes to the profile; the key only in the env.

Codex 0.171 speaks only the Responses API (``wire_api = "responses"``), refuses a provider entry
that reuses a built-in id, and rejects a top-level ``profile`` key: the owned part of the file
avoids all three; the rest of the file is Codex's and the user's (codex_config.py).
A profile whose provider speaks Chat Completions (``[codex] wire_api = "chat"``) still gets a
Responses config: the launch points it at the loopback bridge, which translates (see ``bridge/translate``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from .. import codex_config, share
from ..codex_config import KEY_VAR, toml_string
from ..paths import Paths
from ..plan import SOURCE_ROUTING, SOURCE_TOOL, EnvBuilder, FileToWrite, LaunchPlan, new_launch_id
from ..profile import Profile
from ..quiet import quiet_for

__all__ = ["KEY_VAR", "TOOL", "toml_string"]


class CodexTool:
    name = "codex"
    program = "codex"

    def plan(self, profile: Profile, key: str, parent_env: Mapping[str, str], cwd: Path, *,
             paths: Paths, args: Sequence[str] = (), launch_id: str | None = None,
             isolate: bool = False) -> LaunchPlan:
        assert profile.codex is not None
        launch_id = launch_id or new_launch_id()
        home = paths.tool_dir(profile.name, "codex")
        b = EnvBuilder(profile, parent_env)
        b.add(profile.codex.env, SOURCE_TOOL)
        b.add({"CODEX_HOME": str(home)}, SOURCE_ROUTING)
        b.add_secret(KEY_VAR, key)
        b.add_markers(profile, self.name, launch_id)
        quiet = quiet_for(profile, profile.codex.base_url)
        pieces = share.DEFAULT_PIECES if profile.share is None else profile.share
        user_codex = share.user_home(parent_env) / ".codex"
        mcp, shared, warnings = share.codex_mcp(pieces, user_codex, home)
        shared += share.links(pieces, share.CODEX_LINKS, user_codex, home)
        shared += share.packages_link(pieces, user_codex, paths.state / "shared", home)
        config = codex_config.content(home / "config.toml", profile, quiet, mcp)
        return LaunchPlan(
            profile=profile.name, tool=self.name, argv=(self.program, *args), env=b.env,
            sources=b.sources, secret_names=frozenset(b.secret_names), cwd=cwd, launch_id=launch_id,
            dirs=paths.tool_dirs(profile.name, self.name), files=(FileToWrite(home / "config.toml", config),),
            warnings=tuple(warnings),
            base_urls={f"model_providers.{profile.codex.provider_id}.base_url": profile.codex.base_url},
            models={"model": profile.codex.model}, key_id=profile.key_id,
            extra={"codex_home": str(home), "provider_id": profile.codex.provider_id, "quiet": quiet,
                   "shared": [x.to_dict() for x in shared],
                   **({"wire_api": "chat", "provider_name": profile.provider.name}
                      if profile.codex.wire_api == "chat" else {})},
        )


TOOL = CodexTool()

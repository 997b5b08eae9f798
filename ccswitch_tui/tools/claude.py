"""Claude Code: a per-profile CLAUDE_CONFIG_DIR, routing through ``--settings``, the key only in
the child's environment, and a look at every settings layer that could redirect the launch.

The ``env`` table of any settings layer beats the process environment, so a repository's
``.claude/settings.json`` can silently reroute a cleanly launched tool. ``--settings`` beats the
project and local layers but not the managed one.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import share
from ..env import PROXY_VARS
from ..paths import Paths
from ..plan import (
    SOURCE_PROFILE,
    SOURCE_ROUTING,
    SOURCE_TOOL,
    EnvBuilder,
    FileToWrite,
    LaunchPlan,
    Refusal,
    new_launch_id,
)
from ..profile import Profile
from ..quiet import CLAUDE_QUIET_ENV, quiet_for
from ..safe_read import decode_error_line, loads_json, read_text

SETTINGS_FILE = "ccs-settings.json"
MANAGED_ENV = "CCS_CLAUDE_MANAGED_SETTINGS"  # where to look for the managed layer instead (tests)
_ROUTING_ENV = re.compile(r"ANTHROPIC_.*|CLAUDE_CODE_USE_.*|CLAUDE_CODE_SUBAGENT_MODEL")
_ROUTING_TOP = ("apiKeyHelper", "model")


def managed_settings_path(env: Mapping[str, str]) -> Path:
    if env.get(MANAGED_ENV):
        return Path(env[MANAGED_ENV])
    if sys.platform == "darwin":
        return Path("/Library/Application Support/ClaudeCode/managed-settings.json")
    if sys.platform == "win32":
        return Path(r"C:\Program Files\ClaudeCode\managed-settings.json")
    return Path("/etc/claude-code/managed-settings.json")


@dataclass(frozen=True)
class Layer:
    """One settings layer that applies to a working directory, with the routing keys it sets."""

    kind: str  # managed | local | project | user
    path: Path
    routing: Mapping[str, Any]  # "env.NAME" or top-level key → value
    error: str | None = None


def routing_keys(data: Any) -> dict[str, Any]:
    """The routing keys a settings document sets: env ANTHROPIC_*, CLAUDE_CODE_USE_*, proxies, ..."""
    out: dict[str, Any] = {}
    if not isinstance(data, dict):
        return out
    env = data.get("env")
    if isinstance(env, dict):
        for k, v in env.items():
            if _ROUTING_ENV.fullmatch(str(k)) or k in PROXY_VARS:
                out[f"env.{k}"] = v
    for k in _ROUTING_TOP:
        if k in data:
            out[k] = data[k]
    return out


def read_layer(kind: str, path: Path) -> Layer | None:
    try:
        text = read_text(path)
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        return Layer(kind, path, {}, error=f"cannot read: {decode_error_line(exc)}")
    except OSError as exc:
        return Layer(kind, path, {}, error=f"cannot read: {exc}")
    try:
        data = loads_json(text)
    except ValueError as exc:
        return Layer(kind, path, {}, error=f"not valid JSON: {exc}")
    return Layer(kind, path, routing_keys(data))


def settings_layers(cwd: Path, config_dir: Path | None, env: Mapping[str, str]) -> list[Layer]:
    """Every layer that applies to ``cwd``, highest precedence first (the ``--settings`` flag aside)."""
    candidates = [
        ("managed", managed_settings_path(env)),
        ("local", cwd / ".claude" / "settings.local.json"),
        ("project", cwd / ".claude" / "settings.json"),
    ]
    if config_dir is not None:
        candidates.append(("user", config_dir / "settings.json"))
    return [layer for kind, path in candidates if (layer := read_layer(kind, path)) is not None]


def layer_refusals(layers: Sequence[Layer], ours: set[str], isolate: bool) -> tuple[list[Refusal], list[str]]:
    """Refusals for layers that set routing keys ccs's own ``--settings`` does not override."""
    refusals: list[Refusal] = []
    warnings: list[str] = []
    for layer in layers:
        if layer.error:
            warnings.append(f"Claude Code settings layer {layer.path} ({layer.kind}): {layer.error}")
            continue
        if isolate and layer.kind in ("project", "local"):
            continue
        if layer.kind == "managed":
            beaten: list[str] = []
        else:
            beaten = [k for k in layer.routing if k in ours]
        live = [k for k in layer.routing if k not in beaten]
        if not live:
            continue
        names = ", ".join(live)
        if layer.kind == "managed":
            refusals.append(Refusal(
                "settings-override",
                f"the managed Claude Code settings {layer.path} set {names}, which beat every other "
                "layer and the environment; ccs cannot override them",
                ("--force to launch anyway (recorded in the manifest)",
                 "ask whoever manages this machine to remove them"),
                overridable_by="force",
            ))
        else:
            refusals.append(Refusal(
                "settings-override",
                f"{layer.path} ({layer.kind} settings) sets {names}, which would override the profile",
                ("--isolate to load only ccs's own settings layers",
                 "--force to launch anyway (recorded in the manifest)",
                 f"remove {names} from {layer.path}"),
                overridable_by="force",
            ))
    return refusals, warnings


class ClaudeTool:
    name = "claude"
    program = "claude"

    def plan(self, profile: Profile, key: str, parent_env: Mapping[str, str], cwd: Path, *,
             paths: Paths, args: Sequence[str] = (), launch_id: str | None = None,
             isolate: bool = False) -> LaunchPlan:
        c = profile.claude
        assert c is not None
        launch_id = launch_id or new_launch_id()
        config_dir = paths.tool_dir(profile.name, "claude")
        b = EnvBuilder(profile, parent_env)
        quiet = quiet_for(profile, c.base_url)
        quiet_env = {k: v for k, v in CLAUDE_QUIET_ENV.items() if quiet and k not in {**profile.env, **c.env}}
        b.add(quiet_env, SOURCE_PROFILE)
        b.add(c.env, SOURCE_TOOL)
        routing = {"ANTHROPIC_BASE_URL": c.base_url, **c.model_vars()}
        b.add(routing, SOURCE_ROUTING)
        b.add({"CLAUDE_CONFIG_DIR": str(config_dir)}, SOURCE_ROUTING)
        key_var = "ANTHROPIC_API_KEY" if c.auth == "api-key" else "ANTHROPIC_AUTH_TOKEN"
        b.add_secret(key_var, key)
        b.add_markers(profile, self.name, launch_id)

        settings_env = {**quiet_env, **profile.env, **c.env, **routing}
        settings_path = config_dir / SETTINGS_FILE
        argv = [self.program, "--settings", str(settings_path)]
        if isolate:
            argv += ["--setting-sources", "user"]
        argv += list(args)

        ours = {f"env.{k}" for k in settings_env} | ({"model"} if c.model else set())
        layers = settings_layers(cwd, config_dir, parent_env)
        refusals, warnings = layer_refusals(layers, ours, isolate)
        if c.base_url.rstrip("/").endswith("/v1"):
            warnings.append(
                f"[claude].base_url {c.base_url} ends in /v1; Claude Code appends /v1/messages, "
                "so requests will go to …/v1/v1/messages"
            )
        pieces = share.DEFAULT_PIECES if profile.share is None else profile.share
        user = share.user_home(parent_env)
        state, shared, share_warnings = share.claude_state(pieces, user, config_dir)
        shared += share.links(pieces, share.CLAUDE_LINKS, user / ".claude", config_dir)
        warnings += share_warnings
        files = [FileToWrite(settings_path, json.dumps({"env": settings_env}, indent=2) + "\n")]
        if state is not None:
            files.append(FileToWrite(config_dir / ".claude.json", state))
        return LaunchPlan(
            profile=profile.name, tool=self.name, argv=tuple(argv), env=b.env, sources=b.sources,
            secret_names=frozenset(b.secret_names), cwd=cwd, launch_id=launch_id,
            dirs=paths.tool_dirs(profile.name, self.name),
            files=tuple(files),
            base_urls={"ANTHROPIC_BASE_URL": c.base_url}, models=c.model_vars(), key_id=profile.key_id,
            warnings=tuple(warnings), refusals=tuple(refusals),
            extra={"config_dir": str(config_dir), "isolate": isolate, "quiet": quiet,
                   "shared": [x.to_dict() for x in shared],
                   "settings_layers": [str(layer.path) for layer in layers]},
        )


TOOL = ClaudeTool()

"""OpenCode (`opencode-ai`): a per-profile config dir holding one ``opencode.json`` provider entry
(Chat Completions through the bundled ``@ai-sdk/openai-compatible``), the key only in the child's
environment, referenced as ``{env:CCS_OPENCODE_API_KEY}``.

Measured with opencode 1.18.33 against a loopback stub:
- Requests go to ``POST {baseURL}/chat/completions`` with ``Authorization: Bearer <the env value>``
  and the model named under ``models``; a title request uses ``small_model`` (else the same model).
- Config precedence, later wins: the user's global config, ``OPENCODE_CONFIG``, the project's
  ``opencode.json``/``.opencode/``, ``OPENCODE_CONFIG_DIR``, ``OPENCODE_CONFIG_CONTENT``. ccs's file
  sits in ``OPENCODE_CONFIG_DIR`` (beats the project), and ``OPENCODE_DISABLE_PROJECT_CONFIG=1``
  keeps a project file from adding providers or a ``small_model`` that goes elsewhere.
- Sessions, the database and ``auth.json`` live in ``$XDG_DATA_HOME/opencode``: each profile gets
  its own (``XDG_CONFIG_HOME``/``XDG_STATE_HOME`` stay the user's, which a nested ccs needs).
- Besides the provider it fetches models.opencode.ai (stopped by ``OPENCODE_DISABLE_MODELS_FETCH``)
  and, on the first use of a config dir, installs ``@opencode-ai/plugin`` from the npm registry
  (nothing stops that; a failure is only a warning in its log).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ccswitch_tui.model import SOURCE_ROUTING, SOURCE_TOOL, FileToWrite, LaunchPlan, Profile, Provider, new_launch_id
from ccswitch_tui.paths import Paths
from ccswitch_tui.safe_read import loads_json, read_text
from ccswitch_tui.tools.checker import Checker
from ccswitch_tui.tools.environment import EnvBuilder
from ccswitch_tui.tools.quiet import quiet_for
from ccswitch_tui.tools.spec import EditorField, ProbeSpec, ToolSpec, chat_probe

KEY_VAR = "CCS_OPENCODE_API_KEY"
CONFIG = "opencode.json"
NPM_PROVIDER = "@ai-sdk/openai-compatible"  # bundled in the binary: works offline
PROVIDER_ID_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
QUIET_ENV = {"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_SHARE": "1"}


@dataclass(frozen=True)
class OpenCodeSide:
    base_url: str  # OpenAI-compatible: requests go to {base_url}/chat/completions
    model: str
    provider_id: str
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def model_ref(self) -> str:
        return f"{self.provider_id}/{self.model}"


def config_content(path: Path, profile: Profile, side: OpenCodeSide, quiet: bool) -> str:
    """The profile's ``opencode.json``: ccs's provider entry and models set, the rest of the file
    (MCP servers, agents, keybinds someone added) kept."""
    try:
        data = loads_json(read_text(path))
        if not isinstance(data, dict):
            data = {}
    except FileNotFoundError:
        data = {}
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        from ccswitch_tui.errors import UsageError

        raise UsageError(f"{path}: cannot read ({exc}); remove it (ccs writes a new one)") from None
    data.setdefault("$schema", "https://opencode.ai/config.json")
    data["model"] = data["small_model"] = side.model_ref
    providers = data.get("provider") if isinstance(data.get("provider"), dict) else {}
    providers[side.provider_id] = {
        "npm": NPM_PROVIDER,
        "name": profile.provider.name,
        "options": {"baseURL": side.base_url, "apiKey": "{env:" + KEY_VAR + "}"},
        "models": {side.model: {"name": side.model}},
    }
    data["provider"] = providers
    data["enabled_providers"] = [side.provider_id]  # no built-in provider picks up a stray key
    if quiet:
        data["autoupdate"] = False
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


class OpenCodeSpec(ToolSpec):
    name = "opencode"
    label = "OpenCode"
    short = "OpenCode"
    program = "opencode"
    install_hint = "install it with `npm install -g opencode-ai`"
    tui_key = "o"
    fields = ("base_url", "model", "provider_id", "env")
    families = {"opencode": r"OPENCODE_.*|CCS_OPENCODE_API_KEY"}
    family_effects = {"opencode": "OpenCode"}
    reads = ("opencode",)
    exe_names = ("opencode", "opencode.exe")
    scripts = ("opencode-ai/bin/opencode",)
    editor = (
        EditorField("base_url", "base URL", placeholder="default: the provider's; requests go to …/chat/completions"),
        EditorField("model", "model", placeholder="required, e.g. kimi-k2.7-code"),
        EditorField("provider_id", "provider id", placeholder="default: from the profile name"),
        EditorField("env", "[opencode.env]", "env"),
    )

    def parse(self, t: Mapping[str, Any], c: Checker, provider: Provider, profile_name: str) -> OpenCodeSide:
        pid = c.string(t, "provider_id", "[opencode]") or (re.sub(r"[^a-z0-9_-]+", "-", profile_name).strip("-")
                                                          or "ccs")
        if not PROVIDER_ID_RE.fullmatch(pid):
            raise c.fail(f"[opencode].provider_id {pid!r} may hold only a-z, 0-9, '_' and '-'",
                         "[opencode].provider_id")
        return OpenCodeSide(
            base_url=c.url(t, "base_url", "[opencode]") or provider.base_url,
            model=str(c.string(t, "model", "[opencode]", required=True)),
            provider_id=pid,
            env=c.env_table(t.get("env"), "[opencode.env]"),
        )

    def summary(self, side: OpenCodeSide) -> list[str]:
        return [f"model={side.model_ref}"]

    def plan(self, profile: Profile, key: str, parent_env: Mapping[str, str], cwd: Path, *,
             paths: Paths, args: Sequence[str] = (), launch_id: str | None = None,
             isolate: bool = False) -> LaunchPlan:
        side: OpenCodeSide = profile.sides["opencode"]
        launch_id = launch_id or new_launch_id()
        home = paths.tool_dir(profile.name, self.name)
        quiet = quiet_for(profile, side.base_url)
        b = EnvBuilder(profile, parent_env)
        b.add({k: v for k, v in QUIET_ENV.items() if quiet and k not in {**profile.env, **side.env}}, SOURCE_ROUTING)
        b.add(side.env, SOURCE_TOOL)
        b.add({"OPENCODE_CONFIG_DIR": str(home / "config"), "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
               "XDG_DATA_HOME": str(home / "data"), "XDG_CACHE_HOME": str(home / "cache")}, SOURCE_ROUTING)
        b.add_secret(KEY_VAR, key)
        b.add_markers(profile, self.name, launch_id)
        config = home / "config" / CONFIG
        return LaunchPlan(
            profile=profile.name, tool=self.name, argv=(self.program or "opencode", *args), env=b.env,
            sources=b.sources, secret_names=frozenset(b.secret_names), cwd=cwd, launch_id=launch_id,
            dirs=(*paths.tool_dirs(profile.name, self.name), home / "config", home / "data", home / "cache"),
            files=(FileToWrite(config, config_content(config, profile, side, quiet)),),
            base_urls={f"provider.{side.provider_id}.options.baseURL": side.base_url},
            models={"model": side.model_ref}, key_id=profile.key_id,
            extra={"config_dir": str(home / "config"), "quiet": quiet},
        )

    def endpoint(self, side: OpenCodeSide) -> str | None:
        return side.base_url.rstrip("/") + "/chat/completions"

    def probes(self, plan: LaunchPlan, profile: Profile) -> list[ProbeSpec]:
        side: OpenCodeSide = profile.sides["opencode"]
        return [chat_probe(plan.base_urls[f"provider.{side.provider_id}.options.baseURL"], side.model)]


TOOL = OpenCodeSpec()

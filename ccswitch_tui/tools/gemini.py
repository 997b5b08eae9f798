"""Gemini CLI (`@google/gemini-cli`): a per-profile GEMINI_CLI_HOME, routing in the environment, the
key only in the child's environment, and the workspace untrusted so that no project layer can
redirect it.

Measured with gemini-cli 0.61.0 against a loopback stub:
- ``GOOGLE_GEMINI_BASE_URL`` routes it (a path prefix is kept: requests go to
  ``{base}/v1beta/models/{model}:streamGenerateContent?alt=sse``); ``GEMINI_BASE_URL`` is ignored.
- The key travels in ``x-goog-api-key`` and comes from ``GEMINI_API_KEY`` only.
- With a base URL the CLI refuses to start (exit 41, "Invalid auth method selected") unless a
  settings layer says ``security.auth.selectedType = "gemini-api-key"``: ccs writes it into the
  profile's own user layer, ``$GEMINI_CLI_HOME/.gemini/settings.json``.
- ``GEMINI_MODEL`` beats every settings layer's ``model.name`` (only ``-m`` beats it).
- A project ``.gemini/settings.json`` can replace the auth type, and a project ``.env`` fills in
  any variable the environment lacks (a proxy, a second base URL). In an untrusted workspace
  neither applies: ccs's user layer turns folder trust off and the child gets
  ``GEMINI_CLI_TRUST_WORKSPACE=false`` (without them a headless run in an untrusted folder exits 55).
- The system layer (``/etc/gemini-cli/settings.json``) beats every other layer: one that sets
  routing keys refuses the launch, as Claude Code's managed layer does.
- Besides the provider it contacts play.googleapis.com (usage statistics) unless
  ``privacy.usageStatisticsEnabled = false``, which a quiet launch writes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ccswitch_tui.model import (
    SOURCE_ROUTING,
    SOURCE_TOOL,
    ClientSetup,
    FileToWrite,
    LaunchPlan,
    Profile,
    new_launch_id,
)
from ccswitch_tui.paths import Paths
from ccswitch_tui.policy.families import Families
from ccswitch_tui.tools import fields
from ccswitch_tui.tools import gemini_family as family
from ccswitch_tui.tools.capabilities import Probing, ReadingEnvFiles, Resuming, TuiFace
from ccswitch_tui.tools.environment import EnvBuilder
from ccswitch_tui.tools.fields import string, url
from ccswitch_tui.tools.layers import Key, Layer, Package, folder, project, system, working
from ccswitch_tui.tools.quiet import quiet_for
from ccswitch_tui.tools.spec import ProbeSpec, ToolSpec, has_option
from ccswitch_tui.valueclass import valueclass

KEY_VAR = "GEMINI_API_KEY"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
SYSTEM_ENV = "CCS_GEMINI_SYSTEM_SETTINGS"  # where to look for the system layer instead (tests)
# settings keys that decide where requests go or with which credentials
_ROUTING_KEYS = ("security.auth.selectedType", "security.auth.useExternal", "model.name")
_ROUTING_ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GEMINI_MODEL",
                "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA", "GOOGLE_VERTEX_BASE_URL",
                "GOOGLE_CLOUD_PROJECT", "HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")
QUIET_SETTINGS = {"privacy": {"usageStatisticsEnabled": False},
                  "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False}}


@valueclass(frozen=True, kw_only=True)
class GeminiSide:
    """The [gemini] table, declared once (tools/fields.py)."""

    base_url: str = url(hint="default: the provider's; requests go to …/v1beta/models")
    model: str = string("model", hint="required (GEMINI_MODEL), e.g. gemini-2.5-pro", required=True)
    env: Mapping[str, str] = fields.env()


_SETTINGS_KEYS = (Key("security.auth.selectedType", "auth"), Key("security.auth.useExternal", "auth"),
                  Key("model.name", "model", beaten_by=("env:GEMINI_MODEL",)))  # measured: GEMINI_MODEL beats it
_UNTRUSTED = ("the launch's workspace is untrusted (folder trust off in its user layer, "
              "GEMINI_CLI_TRUST_WORKSPACE=false)")
_OFF = ("GEMINI_CLI_TRUST_WORKSPACE", ("false",))
LAYERS = (
    Layer("system", "system", "jsonc", system("/etc/gemini-cli/settings.json", test_var=SYSTEM_ENV,
                                              moved_by="GEMINI_CLI_SYSTEM_SETTINGS_PATH"), _SETTINGS_KEYS,
          why="beats every other layer"),
    Layer("project", "project", "jsonc", working(".gemini/settings.json"), _SETTINGS_KEYS, off_when=_OFF,
          why=_UNTRUSTED),
    Layer("user", "ccs", "jsonc", folder("GEMINI_CLI_HOME", ".gemini/settings.json", default="~"), _SETTINGS_KEYS,
          why="a launch's GEMINI_CLI_HOME is the profile's own"),
    Layer("system-defaults", "system", "jsonc", system("/etc/gemini-cli/system-defaults.json", test_var=SYSTEM_ENV,
                                                       moved_by="GEMINI_CLI_SYSTEM_DEFAULTS_PATH", sibling=True),
          _SETTINGS_KEYS, why="the lowest layer"),
    # .env: the first one from the working folder up; trusted, every variable it sets that the environment
    # lacks (.gemini/.env first); untrusted, only these four (measured in gemini-cli 0.61.0's loader)
    Layer("project-env", "project", "dotenv", project(".gemini/.env", ".env", first=True, stop="root"),
          (Key("*", "env", fills=True),), off_when=_OFF, why=_UNTRUSTED + ": only the next layer's names are read"),
    Layer("untrusted-env", "project", "dotenv", project(".env", first=True, stop="root"),
          (Key("GEMINI_API_KEY", "key", fills=True),
           Key("*", "key", names="GOOGLE_API_KEY|GOOGLE_CLOUD_PROJECT|GOOGLE_CLOUD_LOCATION",
               others="only Vertex AI reads them; the launch's auth type is gemini-api-key")),
          on_when=_OFF, why="an untrusted workspace still reads these names from the first .env up the tree"),
    Layer("home-env", "user", "dotenv", folder("GEMINI_CLI_HOME", ".gemini/.env", ".env", default="~"),
          (Key("*", "env", fills=True),), why="read when no folder up the tree has a .env"),
)


def settings_content(path: Path, side: GeminiSide, quiet: bool) -> str:
    """The profile's user layer: ccs's keys set, whatever Gemini CLI or the user wrote there kept."""
    owned: dict[str, Any] = {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "model": {"name": side.model},
        **(QUIET_SETTINGS if quiet else {}),
    }
    return family.owned_settings(path, owned)


class GeminiSpec(ToolSpec[GeminiSide], Probing, Resuming, TuiFace, ReadingEnvFiles):
    name = "gemini"
    label = "Gemini CLI"
    short = "Gemini"
    program = "gemini"
    install_hint = "install it with `npm install -g @google/gemini-cli`"
    tui_key = "g"
    side = GeminiSide
    families = {"gemini": r"GEMINI_.*|GOOGLE_GEMINI_BASE_URL|GOOGLE_API_KEY|GOOGLE_GENAI_.*|GOOGLE_VERTEX_BASE_URL"}
    family_effects = {"gemini": "Gemini CLI and Google GenAI SDK programs"}
    reads = ("gemini",)
    official_hosts = frozenset({"generativelanguage.googleapis.com"})
    layers = LAYERS
    package = Package("npm", "@google/gemini-cli", "0.61.0")
    exe_names = ("gemini",)
    scripts = ("@google/gemini-cli/dist/index.js", "@google/gemini-cli/bundle/gemini.js")
    def env_fields(self, env: Mapping[str, str]) -> dict[str, Any] | None:
        """GOOGLE_GEMINI_BASE_URL and GEMINI_MODEL; none without the model, which the table requires."""
        if not env.get("GEMINI_MODEL"):
            return None
        out: dict[str, Any] = {"model": env["GEMINI_MODEL"]}
        if env.get("GOOGLE_GEMINI_BASE_URL"):
            out["base_url"] = env["GOOGLE_GEMINI_BASE_URL"]
        return out

    def summary(self, side: GeminiSide) -> list[str]:
        return [f"GEMINI_MODEL={side.model}"]

    def batch(self, args: Sequence[str]) -> bool:
        return has_option(args, "-p", "--prompt")

    def resume_command(self, plan: LaunchPlan, since: float) -> str | None:
        """``--resume ID``: the newest main session the launch wrote in this folder's chats."""
        home = plan.client.home
        return None if not home else (f"--resume {sid}" if (sid := newest_chat(Path(home) / ".gemini",
                                                                                plan.cwd, since)) else None)

    def plan(self, profile: Profile, key: str, parent_env: Mapping[str, str], cwd: Path, *,
             paths: Paths, families: Families, args: Sequence[str] = (), launch_id: str | None = None,
             isolate: bool = False) -> LaunchPlan:
        side: GeminiSide = profile.sides["gemini"]
        launch_id = launch_id or new_launch_id()
        home = paths.tool_dir(profile.name, self.name)
        quiet = quiet_for(self, profile, side.base_url)
        b = EnvBuilder(profile, parent_env)
        b.add(side.env, SOURCE_TOOL)
        routing = {"GOOGLE_GEMINI_BASE_URL": side.base_url, "GEMINI_MODEL": side.model}
        b.add(routing, SOURCE_ROUTING)
        # its own home, and an untrusted workspace: project settings and .env files cannot reach it; the
        # machine's system layers named, so that what ccs judges is what it reads
        system_settings = Path(parent_env.get(SYSTEM_ENV) or "/etc/gemini-cli/settings.json")
        b.add({"GEMINI_CLI_HOME": str(home), "GEMINI_CLI_TRUST_WORKSPACE": "false",
               "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(system_settings),
               "GEMINI_CLI_SYSTEM_DEFAULTS_PATH": str(system_settings.parent / "system-defaults.json")},
              SOURCE_ROUTING)
        b.add_secret(KEY_VAR, key)
        b.add_markers(profile, self.name, launch_id)
        settings = home / ".gemini" / "settings.json"

        return LaunchPlan(
            profile=profile.name, tool=self.name, argv=(self.program or "gemini", *args), env=b.env,
            sources=b.sources, secret_names=frozenset(b.secret_names), cwd=cwd, launch_id=launch_id,
            dirs=paths.tool_dirs(profile.name, self.name),
            files=(FileToWrite(settings, settings_content(settings, side, quiet)),),
            base_urls={"GOOGLE_GEMINI_BASE_URL": side.base_url}, models={"GEMINI_MODEL": side.model},
            key_id=profile.key_id, client=ClientSetup(home_key="gemini_home", home=str(home), quiet=quiet),
        )

    def endpoint(self, side: GeminiSide) -> str | None:
        return f"{side.base_url.rstrip('/')}/v1beta/models/{side.model}:streamGenerateContent"

    def probes(self, plan: LaunchPlan, profile: Profile) -> list[ProbeSpec]:
        base, model = plan.base_urls["GOOGLE_GEMINI_BASE_URL"], plan.models["GEMINI_MODEL"]
        body = {"contents": [{"role": "user", "parts": [{"text": "ping"}]}],
                "generationConfig": {"maxOutputTokens": 1}}
        return [ProbeSpec("gemini", f"{base.rstrip('/')}/v1beta/models/{model}:generateContent", model,
                          "x-goog-api-key", body=body)]


TOOL = GeminiSpec()


def newest_chat(gemini_dir: Path, cwd: Path, since: float) -> str | None:
    """The session id of the newest main chat written since ``since`` for ``cwd``. Measured with 0.61.0:
    ``projects.json`` maps a folder to its short name, and each session is
    ``tmp/<short name>/chats/session-<time>-<8 hex>.jsonl`` whose first line names its ``sessionId``
    (``kind`` ``main``; a sub-agent's is not); ``--resume <sessionId>`` continues it."""
    import json  # lazy: read only after an interactive session

    try:
        projects = json.loads((gemini_dir / "projects.json").read_text()).get("projects") or {}
        short = projects.get(str(cwd)) or projects.get(str(cwd.resolve()))
    except (OSError, ValueError, AttributeError):
        short = None
    if not isinstance(short, str) or not short or "/" in short or short.startswith("."):
        return None
    best: tuple[float, str] | None = None
    for f in (gemini_dir / "tmp" / short / "chats").glob("session-*.json*"):
        try:
            mtime = f.stat().st_mtime
            if mtime < since or (best is not None and mtime <= best[0]):
                continue
            with f.open("rb") as fh:
                head = json.loads(fh.readline(64 * 1024) or b"{}")
        except (OSError, ValueError):
            continue
        sid = head.get("sessionId") if isinstance(head, dict) else None
        if head.get("kind", "main") == "main" and isinstance(sid, str) and _UUID.fullmatch(sid):
            best = (mtime, sid)
    return best[1] if best else None

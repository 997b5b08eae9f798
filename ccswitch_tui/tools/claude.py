"""Claude Code: a per-profile CLAUDE_CONFIG_DIR, routing through ``--settings``, the key only in
the child's environment, and a look at every settings layer that could redirect the launch.

The ``env`` table of any settings layer beats the process environment, so a repository's
``.claude/settings.json`` can silently reroute a cleanly launched tool. ``--settings`` beats the
project and local layers but not the managed one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ccswitch_tui.model import (
    SOURCE_PROFILE,
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
from ccswitch_tui.tools import fields, share
from ccswitch_tui.tools.capabilities import (
    FixingUrls,
    Probing,
    ReadingEnvFiles,
    Resuming,
    ShellHinting,
    TrimmingArgs,
    TuiFace,
)
from ccswitch_tui.tools.environment import EnvBuilder
from ccswitch_tui.tools.fields import select, string, url
from ccswitch_tui.tools.layers import ISOLATE, Key, Layer, Package, folder, state, system, working
from ccswitch_tui.tools.quiet import CLAUDE_QUIET_ENV, CLAUDE_QUIET_SETTINGS_ENV, is_official, quiet_for
from ccswitch_tui.tools.spec import ProbeSpec, ToolSpec, has_option, newest_session_id
from ccswitch_tui.valueclass import replace, valueclass

SETTINGS_FILE = "ccs-settings.json"
_ROUTING_ENV = re.compile(r"ANTHROPIC_.*|CLAUDE_CODE_USE_.*|CLAUDE_CODE_SUBAGENT_MODEL")
# Measured with Claude Code 2.1.332 (`claude -p`, API key or token): with no ANTHROPIC_MODEL its main
# model is its opus tier, ANTHROPIC_DEFAULT_OPUS_MODEL when set, else this id of its own.
CLIENT_DEFAULT_MODEL = "claude-opus-5-5"

AUTH = ("token", "api-key")  # "token" → ANTHROPIC_AUTH_TOKEN (Bearer), "api-key" → through API_KEY_HELPER
# Measured (2.1.332): an interactive Claude Code that finds ANTHROPIC_API_KEY asks "Detected a custom API
# key … use it?" with "No" preselected, and remembers a "yes" as the key's last 20 characters in
# .claude.json. ANTHROPIC_AUTH_TOKEN and an ``apiKeyHelper`` are used without asking; the helper's output
# is sent as x-api-key and as Bearer. So "api-key" puts the key under a name of ccs's own, which the
# helper in ccs's settings prints: nothing of the key is written anywhere.
API_KEY_VAR = "CCS_ANTHROPIC_API_KEY"
API_KEY_HELPER = f"printenv {API_KEY_VAR}"
# What the first interactive launch needs in the profile's .claude.json when the provider is not
# Anthropic's: without it the onboarding checks api.anthropic.com and exits 1 when it cannot reach it.
ONBOARDED = {"hasCompletedOnboarding": True}
MODEL_VARS = {  # the variable Claude Code reads → the [claude] field that sets it
    "ANTHROPIC_MODEL": "model",
    "ANTHROPIC_DEFAULT_OPUS_MODEL": "opus",
    "ANTHROPIC_DEFAULT_SONNET_MODEL": "sonnet",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL": "haiku",
    "CLAUDE_CODE_SUBAGENT_MODEL": "subagent",
}


@valueclass(frozen=True, kw_only=True)
class ClaudeSide:
    """The [claude] table, declared once (tools/fields.py)."""

    base_url: str = url(hint="default: the provider's")
    auth: str = select("auth", AUTH, default="token")
    model: str | None = string("model", hint="ANTHROPIC_MODEL (optional)")
    opus: str | None = string("opus", hint="optional")
    sonnet: str | None = string("sonnet", hint="optional")
    haiku: str | None = string("haiku", hint="optional")
    subagent: str | None = string("subagent", hint="optional")
    env: Mapping[str, str] = fields.env()

    def model_vars(self) -> dict[str, str]:
        pairs = {var: getattr(self, f) for var, f in MODEL_VARS.items()}
        return {k: v for k, v in pairs.items() if v}

    @property
    def key_var(self) -> str:
        return API_KEY_VAR if self.auth == "api-key" else "ANTHROPIC_AUTH_TOKEN"


def launch_model(models: Mapping[str, str]) -> tuple[str, str | None]:
    """The main model a launch with these model variables sends, and a note when Claude Code picks it
    (not the profile's ANTHROPIC_MODEL)."""
    if models.get("ANTHROPIC_MODEL"):
        return models["ANTHROPIC_MODEL"], None
    if models.get("ANTHROPIC_DEFAULT_OPUS_MODEL"):
        return models["ANTHROPIC_DEFAULT_OPUS_MODEL"], (
            "no [claude].model: Claude Code picks its own default, its opus tier, which [claude].opus sets")
    return CLIENT_DEFAULT_MODEL, (
        f"no [claude].model or .opus: Claude Code picks its own default, {CLIENT_DEFAULT_MODEL} "
        "(measured with Claude Code 2.1.332)")


MANAGED_ENV = "CCS_CLAUDE_MANAGED_SETTINGS"  # where to look for the managed layer instead (tests)
_SETTINGS_KEYS = (
    Key("env.*", "env"),  # its env table beats the process environment
    Key("apiKeyHelper", "key-helper"),
    # measured: ANTHROPIC_MODEL in the environment beats a settings `model` key
    Key("model", "model", beaten_by=("env:ANTHROPIC_MODEL",)),
)
LAYERS = (
    Layer("managed", "managed", "json", system(
        "/etc/claude-code/managed-settings.json", test_var=MANAGED_ENV,
        platforms=(("darwin", "/Library/Application Support/ClaudeCode/managed-settings.json"),
                   ("win32", r"C:\Program Files\ClaudeCode\managed-settings.json"))),
          _SETTINGS_KEYS, why="beats every other layer and the environment, --settings included"),
    Layer("flag", "ccs", "json", state(SETTINGS_FILE), _SETTINGS_KEYS,
          why="ccs's --settings file: beats the project, local and user layers, not the managed one"),
    Layer("local", "project", "json", working(".claude/settings.local.json"), _SETTINGS_KEYS, launch=ISOLATE,
          why="--isolate passes --setting-sources user"),
    Layer("project", "project", "json", working(".claude/settings.json"), _SETTINGS_KEYS, launch=ISOLATE,
          why="--isolate passes --setting-sources user"),
    Layer("user", "user", "json", folder("CLAUDE_CONFIG_DIR", "settings.json", default="~/.claude"), _SETTINGS_KEYS,
          why="a launch's is the profile's own (its CLAUDE_CONFIG_DIR)"),
)


class ClaudeSpec(ToolSpec[ClaudeSide], Probing, Resuming, ShellHinting, TuiFace, FixingUrls, ReadingEnvFiles,
                 TrimmingArgs):
    name = "claude"
    label = "Claude Code"
    short = "Claude"
    program = "claude"
    install_hint = "install it with `npm install -g @anthropic-ai/claude-code`"
    default = True  # a blank profile serves Claude Code
    importer = "claude_import"  # `ccs import claude`, CC Switch's claude rows
    proxy_note = "sends even loopback requests through it unless NO_PROXY covers them"
    model_option = "[claude].model (ANTHROPIC_MODEL)."
    probe_hints = {
        "anthropic:double-v1": "remove the trailing /v1 from the base_url (Claude Code appends /v1/messages itself)",
        "anthropic:not-found": "check the base_url's path prefix: Claude Code posts to {base_url}/v1/messages, so "
                               "base_url must stop before /v1 (e.g. https://host/api or https://host/anthropic)",
        "anthropic:auth": "check the auth kind ([claude].auth)",
    }
    tui_key = "c"
    side = ClaudeSide
    families = {"claude": r"ANTHROPIC_.*|CLAUDE_CODE_USE_.*|CLAUDE_CODE_SUBAGENT_MODEL|CLAUDE_CONFIG_DIR"}
    family_effects = {"claude": "Claude Code and Anthropic SDK programs"}
    cloud_switches = (r"CLAUDE_CODE_USE_.*",)  # Bedrock, Vertex, Foundry: every request goes to that cloud
    multiline_vars = frozenset({"ANTHROPIC_CUSTOM_HEADERS"})  # one header per line
    reads = ("claude",)
    exe_names = ("claude", "claude.exe")
    official_hosts = frozenset({"api.anthropic.com"})
    layers = LAYERS
    package = Package("npm", "@anthropic-ai/claude-code", "2.1.332")
    scripts = ("@anthropic-ai/claude-code/cli.js", "@anthropic-ai/claude-code/cli.mjs",
               "@anthropic-ai/claude-code/cli-wrapper.cjs", "@anthropic-ai/claude-code/bin/claude.exe")
    def url_fix(self, url: str) -> tuple[str, str] | None:
        base = url.rstrip("/")
        if base.endswith("/v1") and base[:-3].count("/") >= 2:
            return base[:-3], "Claude Code appends /v1/messages, so requests would go to …/v1/v1/messages"
        return None

    def endpoint(self, side: ClaudeSide) -> str | None:
        return side.base_url.rstrip("/") + "/v1/messages"

    def env_fields(self, env: Mapping[str, str]) -> dict[str, Any] | None:
        """ANTHROPIC_BASE_URL, the key's variable (which says the auth) and the model variables."""
        if not any(_ROUTING_ENV.fullmatch(k) for k in env):
            return None
        out: dict[str, Any] = {}
        if env.get("ANTHROPIC_BASE_URL"):
            out["base_url"] = env["ANTHROPIC_BASE_URL"]
        if env.get("ANTHROPIC_API_KEY") and not env.get("ANTHROPIC_AUTH_TOKEN"):
            out["auth"] = "api-key"
        elif env.get("ANTHROPIC_AUTH_TOKEN"):
            out["auth"] = "token"
        out.update({f: env[var] for var, f in MODEL_VARS.items() if env.get(var)})
        return out

    def summary(self, side: ClaudeSide) -> list[str]:
        return [f"{k}={v}" for k, v in side.model_vars().items()] or ["Claude Code's own default models"]

    def show(self, side: ClaudeSide) -> str:
        models = ", ".join(f"{k}={v}" for k, v in side.model_vars().items()) or "(Claude Code defaults)"
        return f"{side.base_url}  auth={side.auth}  {models}"

    def shell_hint(self, plan: LaunchPlan) -> str | None:
        settings = f"{plan.client.home or ''}/{SETTINGS_FILE}"
        return f"in this shell start Claude Code as: claude --settings {settings}"

    def resume_command(self, plan: LaunchPlan, since: float) -> str | None:
        config_dir = plan.client.home
        if not config_dir:
            return None
        sid = newest_session_id((Path(config_dir) / "projects").glob("*/*.jsonl"), since)
        return None if sid is None else f"--resume {sid}"

    def batch(self, args: Sequence[str]) -> bool:
        return has_option(args, "-p", "--print")

    def user_argv(self, argv: Sequence[str]) -> list[str]:
        """Without ``--settings <ccs-settings.json>`` and ``--setting-sources user``."""
        out, rest = list(argv[:1]), list(argv[1:])
        while len(rest) >= 2 and (rest[:2] == ["--setting-sources", "user"]
                                  or (rest[0] == "--settings" and rest[1].endswith(SETTINGS_FILE))):
            rest = rest[2:]
        return out + rest

    def probes(self, plan: LaunchPlan, profile: Profile) -> list[ProbeSpec]:
        side: ClaudeSide = profile.sides["claude"]
        model, note = launch_model(plan.models)  # the model the launch sends, from the same plan
        return [replace(anthropic_probe(plan.base_urls["ANTHROPIC_BASE_URL"], model, side.auth), note=note)]

    def plan(self, profile: Profile, key: str, parent_env: Mapping[str, str], cwd: Path, *,
             paths: Paths, families: Families, args: Sequence[str] = (), launch_id: str | None = None,
             isolate: bool = False) -> LaunchPlan:
        c: ClaudeSide = profile.sides["claude"]
        launch_id = launch_id or new_launch_id()
        config_dir = paths.tool_dir(profile.name, "claude")
        b = EnvBuilder(profile, parent_env)
        quiet = quiet_for(self, profile, c.base_url)
        quiet_env = {k: v for k, v in CLAUDE_QUIET_ENV.items() if quiet and k not in {**profile.env, **c.env}}
        b.add(quiet_env, SOURCE_PROFILE)
        b.add(c.env, SOURCE_TOOL)
        routing = {"ANTHROPIC_BASE_URL": c.base_url, **c.model_vars()}
        b.add(routing, SOURCE_ROUTING)
        b.add({"CLAUDE_CONFIG_DIR": str(config_dir)}, SOURCE_ROUTING)
        b.add_secret(c.key_var, key)
        b.add_markers(profile, self.name, launch_id)

        settings_env = {**quiet_env, **profile.env, **c.env, **routing}
        if quiet:
            settings_env = {**{k: v for k, v in CLAUDE_QUIET_SETTINGS_ENV.items() if k not in settings_env},
                            **settings_env}
        settings: dict[str, Any] = {"env": settings_env}
        if c.auth == "api-key":
            settings["apiKeyHelper"] = API_KEY_HELPER
        settings_path = config_dir / SETTINGS_FILE
        argv = [self.program, "--settings", str(settings_path)]
        if isolate:
            argv += ["--setting-sources", "user"]
        argv += list(args)

        warnings: list[str] = []
        if fix := self.url_fix(c.base_url):
            warnings.append(f"[claude].base_url {c.base_url} ends in /v1; {fix[1]}: set it to {fix[0]}")
        pieces = share.DEFAULT_PIECES if profile.share is None else profile.share
        user = share.user_home(parent_env)
        require = ONBOARDED if not is_official(self, c.base_url) else None
        state, shared, share_warnings = share.claude_state(pieces, user, config_dir, families, require)
        shared += share.links(pieces, share.CLAUDE_LINKS, user / ".claude", config_dir)
        warnings += share_warnings
        files = [FileToWrite(settings_path, json.dumps(settings, indent=2) + "\n")]
        if state is not None:
            files.append(FileToWrite(config_dir / ".claude.json", state))
        return LaunchPlan(
            profile=profile.name, tool=self.name, argv=tuple(argv), env=b.env, sources=b.sources,
            secret_names=frozenset(b.secret_names), cwd=cwd, launch_id=launch_id,
            dirs=paths.tool_dirs(profile.name, self.name),
            files=tuple(files),
            base_urls={"ANTHROPIC_BASE_URL": c.base_url}, models=c.model_vars(), key_id=profile.key_id,
            warnings=tuple(warnings),
            client=ClientSetup(home_key="config_dir", home=str(config_dir), isolate=isolate, quiet=quiet,
                               shared=tuple(x.to_dict() for x in shared)),
        )


def anthropic_probe(base: str, model: str, auth: str) -> ProbeSpec:
    """The cheapest Messages request: one output token."""
    body = {"model": model, "max_tokens": 1, "messages": [{"role": "user", "content": "ping"}]}
    return ProbeSpec("anthropic", base.rstrip("/") + "/v1/messages", model,
                     "x-api-key" if auth == "api-key" else "bearer", body=body)


TOOL = ClaudeSpec()

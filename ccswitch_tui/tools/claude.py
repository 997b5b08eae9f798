"""Claude Code: a per-profile CLAUDE_CONFIG_DIR, routing through ``--settings``, the key only in
the child's environment, and a look at every settings layer that could redirect the launch.

The ``env`` table of any settings layer beats the process environment, so a repository's
``.claude/settings.json`` can silently reroute a cleanly launched tool. ``--settings`` beats the
project and local layers but not the managed one.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ccswitch_tui.model import (
    ERROR,
    SOURCE_PROFILE,
    SOURCE_ROUTING,
    SOURCE_TOOL,
    WARN,
    FileToWrite,
    Finding,
    LaunchPlan,
    Profile,
    Refusal,
    new_launch_id,
)
from ccswitch_tui.paths import Paths
from ccswitch_tui.policy import PROXY_VARS, shown
from ccswitch_tui.safe_read import decode_error_line, loads_json, read_text
from ccswitch_tui.tools import fields, share
from ccswitch_tui.tools.environment import EnvBuilder
from ccswitch_tui.tools.fields import select, string, url
from ccswitch_tui.tools.quiet import CLAUDE_QUIET_ENV, CLAUDE_QUIET_SETTINGS_ENV, is_official, quiet_for
from ccswitch_tui.tools.spec import (
    DoctorContext,
    DoctorPart,
    ProbeSpec,
    ToolSpec,
    has_option,
    newest_session_id,
)

SETTINGS_FILE = "ccs-settings.json"
MANAGED_ENV = "CCS_CLAUDE_MANAGED_SETTINGS"  # where to look for the managed layer instead (tests)
_ROUTING_ENV = re.compile(r"ANTHROPIC_.*|CLAUDE_CODE_USE_.*|CLAUDE_CODE_SUBAGENT_MODEL")
_ROUTING_TOP = ("apiKeyHelper", "model")
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


@dataclass(frozen=True, kw_only=True)
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
                flags=("force",),
            ))
        else:
            refusals.append(Refusal(
                "settings-override",
                f"{layer.path} ({layer.kind} settings) sets {names}, which would override the profile",
                ("--isolate to load only ccs's own settings layers",
                 "--force to launch anyway (recorded in the manifest)",
                 f"remove {names} from {layer.path}"),
                flags=("isolate", "force"),
            ))
    return refusals, warnings


class ClaudeSpec(ToolSpec[ClaudeSide]):
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
        settings = f"{plan.extra.get('config_dir', '')}/{SETTINGS_FILE}"
        return f"in this shell start Claude Code as: claude --settings {settings}"

    def resume_command(self, plan: LaunchPlan, since: float) -> str | None:
        config_dir = plan.extra.get("config_dir")
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

    def doctor(self, ctx: DoctorContext) -> DoctorPart:
        rows, found = layer_findings(ctx.cwd, ctx.environ)
        part = DoctorPart("claude_layers", rows, found + profile_layer_findings(ctx.profiles, ctx.paths))
        part.lines.append("claude code settings layers (highest first)")
        for layer in rows:
            state = "absent" if not layer["exists"] else (
                f"unreadable: {layer['error']}" if layer["error"] else (
                    ", ".join(f"{k}={v}" for k, v in layer["routing"].items()) or "no routing keys"))
            part.lines.append(f"  {layer['kind']:<8} {layer['path']}: {state}")
        return part

    def plan(self, profile: Profile, key: str, parent_env: Mapping[str, str], cwd: Path, *,
             paths: Paths, args: Sequence[str] = (), launch_id: str | None = None,
             isolate: bool = False) -> LaunchPlan:
        c: ClaudeSide = profile.sides["claude"]
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

        ours = ({f"env.{k}" for k in settings_env} | ({"model"} if c.model else set())
                | ({"apiKeyHelper"} if "apiKeyHelper" in settings else set()))
        layers = settings_layers(cwd, config_dir, parent_env)
        refusals, warnings = layer_refusals(layers, ours, isolate)
        if fix := self.url_fix(c.base_url):
            warnings.append(f"[claude].base_url {c.base_url} ends in /v1; {fix[1]}: set it to {fix[0]}")
        pieces = share.DEFAULT_PIECES if profile.share is None else profile.share
        user = share.user_home(parent_env)
        require = ONBOARDED if not is_official(c.base_url) else None
        state, shared, share_warnings = share.claude_state(pieces, user, config_dir, require)
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
            warnings=tuple(warnings), refusals=tuple(refusals),
            extra={"config_dir": str(config_dir), "isolate": isolate, "quiet": quiet,
                   "shared": [x.to_dict() for x in shared],
                   "settings_layers": [str(layer.path) for layer in layers]},
        )


def anthropic_probe(base: str, model: str, auth: str) -> ProbeSpec:
    """The cheapest Messages request: one output token."""
    body = {"model": model, "max_tokens": 1, "messages": [{"role": "user", "content": "ping"}]}
    return ProbeSpec("anthropic", base.rstrip("/") + "/v1/messages", model,
                     "x-api-key" if auth == "api-key" else "bearer", body=body)


# --- doctor: the settings layers at rest -----------------------------------------------------------

def _setting_shown(key: str, value: Any) -> str:
    name = key[4:] if key.startswith("env.") else key
    text = value if isinstance(value, str) else json.dumps(value)
    return text if name == "model" else shown(name, text)


def layer_paths(cwd: Path, environ: Mapping[str, str]) -> list[tuple[str, Path]]:
    """The layers of a Claude Code started by hand in ``cwd`` from this shell."""
    home = Path(environ.get("HOME") or os.path.expanduser("~"))
    user_dir = Path(environ["CLAUDE_CONFIG_DIR"]) if environ.get("CLAUDE_CONFIG_DIR") else home / ".claude"
    return [
        ("managed", managed_settings_path(environ)),
        ("local", cwd / ".claude" / "settings.local.json"),
        ("project", cwd / ".claude" / "settings.json"),
        ("user", user_dir / "settings.json"),
    ]


def layer_findings(cwd: Path, environ: Mapping[str, str]) -> tuple[list[dict[str, Any]], list[Finding]]:
    rows: list[dict[str, Any]] = []
    out: list[Finding] = []
    for kind, path in layer_paths(cwd, environ):
        layer = read_layer(kind, path)
        row: dict[str, Any] = {"kind": kind, "path": str(path), "exists": layer is not None, "error": None,
                               "routing": {}}
        rows.append(row)
        if layer is None:
            continue
        if layer.error:
            row["error"] = layer.error
            out.append(Finding("settings-invalid", WARN,
                               f"{kind} settings layer {layer.error}; Claude Code may refuse or ignore it; "
                               "fix the file",
                               path=str(path)))
            continue
        row["routing"] = {k: _setting_shown(k, v) for k, v in layer.routing.items()}
        for key, value in layer.routing.items():
            show = f"{key}={_setting_shown(key, value)}"
            if key == "model" and kind != "managed":
                # Measured: ANTHROPIC_MODEL in the environment beats a settings `model` key.
                out.append(Finding(
                    "settings-override", WARN,
                    f"{kind} settings set {show}, which picks the model of Claude Code started "
                    f"{'in ' + str(cwd) if kind != 'user' else 'directly'} unless ANTHROPIC_MODEL is set (the "
                    "environment wins); ccs launches of a profile with [claude].model are not affected; remove it "
                    "from the file to pick the model in one place", path=str(path), variable=key))
            elif kind == "managed":
                out.append(Finding(
                    "settings-override", ERROR,
                    f"managed settings set {show}, which beats every other layer and the environment, "
                    "ccs launches included; ask whoever manages this machine to remove it (ccs only launches past "
                    "it with --force)", path=str(path), variable=key))
            elif kind in ("project", "local"):
                out.append(Finding(
                    "settings-override", ERROR,
                    f"{kind} settings set {show}, which beats the environment of any Claude Code started in "
                    f"{cwd}; remove it from the file, or launch with `ccs launch PROFILE claude --isolate`",
                    path=str(path), variable=key))
            else:
                out.append(Finding(
                    "settings-override", WARN,
                    f"user settings set {show}, which beats the environment of Claude Code started directly "
                    "(ccs launches use their own CLAUDE_CONFIG_DIR); remove it from the file",
                    path=str(path), variable=key))
    return rows, out


def profile_layer_findings(profiles: Sequence[Profile], paths: Paths) -> list[Finding]:
    """Routing keys someone added to a profile's own Claude Code user layer (ccs's --settings beats
    only the keys the profile sets; apiKeyHelper and the rest would still apply)."""

    out: list[Finding] = []
    for p in profiles:
        c: ClaudeSide | None = p.sides.get("claude")
        if c is None:
            continue
        path = paths.tool_dir(p.name, "claude") / "settings.json"
        layer = read_layer("user", path)
        if layer is None or layer.error:
            continue
        ours = {f"env.{k}" for k in {**p.env, **c.env, "ANTHROPIC_BASE_URL": "",
                                      **c.model_vars()}} | ({"model"} if c.model else set())
        ours |= {"apiKeyHelper"} if c.auth == "api-key" else set()
        for key, value in layer.routing.items():
            if key in ours:
                continue
            out.append(Finding(
                "settings-override", ERROR,
                f"profile {p.name!r}'s own Claude Code user layer sets {key}={_setting_shown(key, value)}, "
                "which ccs's --settings does not override; remove it from the file", path=str(path), variable=key))
    return out


TOOL = ClaudeSpec()

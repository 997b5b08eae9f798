"""Codex CLI: a per-profile CODEX_HOME whose config.toml routes to the profile; the key only in the env.

Codex 0.171 speaks only the Responses API (``wire_api = "responses"``), refuses a provider entry
that reuses a built-in id, and rejects a top-level ``profile`` key: the owned part of the file
avoids all three; the rest of the file is Codex's and the user's (codex_config.py).
A profile whose provider speaks Chat Completions (``[codex] wire_api = "chat"``) still gets a
Responses config: the launch points it at the loopback bridge, which translates (see ``bridge/translate``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ccswitch_tui.errors import ProfileError
from ccswitch_tui.model import (
    ERROR,
    SOURCE_ROUTING,
    SOURCE_TOOL,
    WARN,
    ClientSetup,
    FileToWrite,
    Finding,
    LaunchPlan,
    Profile,
    Provider,
    new_launch_id,
)
from ccswitch_tui.paths import Paths
from ccswitch_tui.policy.families import Families
from ccswitch_tui.safe_read import parse_toml
from ccswitch_tui.tools import fields, share
from ccswitch_tui.tools.capabilities import (
    Doctoring,
    Hooking,
    OwningProcesses,
    Probing,
    Resuming,
    SeedingTables,
    TuiFace,
)
from ccswitch_tui.tools.checker import Checker
from ccswitch_tui.tools.codex import config as codex_config
from ccswitch_tui.tools.codex.config import KEY_VAR, toml_string
from ccswitch_tui.tools.environment import EnvBuilder
from ccswitch_tui.tools.fields import select, string, url
from ccswitch_tui.tools.layers import ISOLATE, SKIPPED, Key, Layer, Package, argv, folder, project, project_dirs
from ccswitch_tui.tools.quiet import quiet_for
from ccswitch_tui.tools.spec import (
    DoctorContext,
    DoctorPart,
    LaunchHook,
    LaunchRecords,
    ProbeSpec,
    ToolSpec,
    chat_probe,
    first_word,
    newest_session_id,
    responses_probe,
)
from ccswitch_tui.valueclass import valueclass

__all__ = ["KEY_VAR", "TOOL", "toml_string"]

# Ids Codex reserves: a [model_providers.<id>] entry with one of them stops Codex at start-up
# ("reserved built-in provider IDs"); amazon-bedrock accepts only a few fields. oss and azure are free ids.
BUILTIN_PROVIDERS = frozenset({"openai", "ollama", "lmstudio", "amazon-bedrock"})
PROVIDER_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
WIRE_APIS = ("responses", "chat")  # chat: Codex talks Responses to ccs's bridge, which talks Chat Completions


def default_provider_id(profile_name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", profile_name).strip("-") or "ccs"
    return f"{slug}-ccs" if slug in BUILTIN_PROVIDERS else slug


def _default_provider_id(provider: Provider, profile_name: str) -> str:
    return default_provider_id(profile_name)


@valueclass(frozen=True, kw_only=True)
class CodexSide:
    """The [codex] table, declared once (tools/fields.py)."""

    base_url: str = url(hint="default: the provider's; requests go to …/responses")
    model: str = string("model", hint="required, e.g. gpt-4.1", required=True)
    provider_id: str = string("provider id", hint="default: from the profile name", default_from=_default_provider_id)
    reasoning_effort: str | None = select("effort", REASONING_EFFORTS)
    # what the provider speaks: "responses", or "chat" (Chat Completions)
    wire_api: str = select("wire API", WIRE_APIS, default="responses")
    env: Mapping[str, str] = fields.env()


# --- the layers ------------------------------------------------------------------------------
#
# Measured with Codex 0.171.0: in a project the Codex home trusts ([projects."<root>"] trust_level =
# "trusted", written there when the user answers Codex's trust prompt), the project's
# .codex/config.toml (at the working directory or any directory up to the git root) is layered over
# CODEX_HOME/config.toml and over the file `--profile NAME` selects: its `model` and
# `model_reasoning_effort` win over both. `-c key=value` (and `-m`) win over the project.
# `model_provider` and `[model_providers.*]` there are ignored (the provider, base URL, wire API and
# key variable stay the home's), and so is a top-level `profile`. An untrusted project's file is ignored;
# `-c 'projects={"<root>"={trust_level="untrusted"}}'` makes it untrusted for one launch.

def _untrust(cwd: Path) -> str:
    """`projects={...}` marking every directory Codex may take as this project's root untrusted."""
    roots = sorted(str(d) for d in project_dirs(cwd))
    return "projects={" + ",".join(f"{toml_string(r)}={{trust_level=\"untrusted\"}}" for r in roots) + "}"


def _config_problems(data: Any, text: str, path: str, environ: Mapping[str, str]) -> list[Finding]:
    return config_problems(Path(path), text, environ, main=not Path(path).name.endswith(".config.toml"))


_CONFIG_KEYS = (Key("model", "model"), Key("model_reasoning_effort", "model"), Key("model_provider", "provider"),
                Key("model_providers.*", "provider", others="model_provider names the one Codex uses"))
LAYERS = (
    Layer("flags", "ccs", "argv", argv("-c"), _CONFIG_KEYS, why="-c options beat every config file"),
    Layer("project", "project", "toml", project(".codex/config.toml"), _CONFIG_KEYS, launch=ISOLATE,
          why="a trusted project's model and effort beat CODEX_HOME's; --isolate makes the folder untrusted"),
    Layer("home", "ccs", "toml", folder("CODEX_HOME", "config.toml", default="~/.codex"), _CONFIG_KEYS,
          why="a launch's CODEX_HOME is the profile's own", check=_config_problems),
    Layer("profiles", "user", "toml", folder("CODEX_HOME", "*.config.toml", default="~/.codex"), _CONFIG_KEYS,
          launch=SKIPPED, why="only `codex --profile NAME` loads one", check=_config_problems),
)


class CodexSpec(ToolSpec[CodexSide], Probing, Doctoring, Resuming, Hooking, OwningProcesses, TuiFace,
                SeedingTables):
    name = "codex"
    label = "Codex"
    short = "Codex"
    program = "codex"
    install_hint = "install it with `npm install -g @openai/codex`"
    importer = "codex.importing"  # `ccs import codex`, CC Switch's codex rows
    model_option = "[codex].model; adds a [codex] table when missing."
    model_example = "gpt-4.1"
    probe_hints = {"openai:no-responses": 'if it serves Chat Completions, set wire_api = "chat" in the profile\'s '
                                          "[codex] table and ccs translates for Codex"}
    tui_key = "x"
    side = CodexSide
    families = {"codex": r"CODEX_.*|CCS_CODEX_API_KEY"}
    family_effects = {"codex": "Codex"}
    reads = ("codex", "openai")
    exe_names = ("codex", "codex.exe", "codex.js")
    scripts = ("@openai/codex/bin/codex.js",)
    official_hosts = frozenset({"api.openai.com"})
    layers = LAYERS
    package = Package("npm", "@openai/codex", "0.171.0")
    internal_vars = frozenset({
        "CODEX_MANAGED_BY_NPM", "CODEX_MANAGED_BY_BUN", "CODEX_MANAGED_BY_PNPM", "CODEX_MANAGED_BY_VITE_PLUS",
        "CODEX_MANAGED_PACKAGE_ROOT", "CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED", "CODEX_THREAD_ID",
        "CODEX_CI", "CODEX_INTERNAL_APP_SERVER_REMOTE_CONTROL_DISABLED",  # set by Codex in its app-server daemons
    })
    def refine(self, values: dict[str, Any], t: Mapping[str, Any], c: Checker, provider: Provider,
               profile_name: str) -> None:
        pid = values["provider_id"]
        if pid in BUILTIN_PROVIDERS:
            raise c.fail(f'[codex].provider_id "{pid}" is a built-in Codex provider id; pick another',
                         "[codex].provider_id")
        if not PROVIDER_ID_RE.fullmatch(pid):
            raise c.fail(f"[codex].provider_id {pid!r} may hold only letters, digits, '_' and '-'",
                         "[codex].provider_id")

    def new_table_fields(self, profile_name: str) -> dict[str, Any]:
        return {"provider_id": default_provider_id(profile_name)}

    def summary(self, side: CodexSide) -> list[str]:
        out = [f"model={side.model}"]
        if side.reasoning_effort:
            out.append(f"reasoning_effort={side.reasoning_effort}")
        if side.wire_api == "chat":
            out.append("wire_api=chat (translated by ccs's bridge)")
        return out

    def show(self, side: CodexSide) -> str:
        effort = f"  effort={side.reasoning_effort}" if side.reasoning_effort else ""
        effort += "  wire_api=chat (translated by ccs's bridge)" if side.wire_api == "chat" else ""
        return f"{side.base_url}  model={side.model}  provider_id={side.provider_id}{effort}"

    def endpoint(self, side: CodexSide) -> str | None:
        if side.wire_api == "chat":
            return side.base_url.rstrip("/") + "/chat/completions (Codex's Responses translated by ccs's bridge)"
        return side.base_url.rstrip("/") + "/responses"

    def hooks(self, plan: LaunchPlan) -> Sequence[LaunchHook]:
        # lazy: keeps ccswitch_tui.tools.codex.daemons off `ccs run`'s imports
        from ccswitch_tui.tools.codex.daemons import DaemonHook

        return (DaemonHook(),) if plan.client.home else ()

    def translations(self, plan: LaunchPlan) -> Mapping[str, str]:
        """A provider that speaks Chat Completions: Codex's Responses requests are translated."""
        if plan.client.wire_api != "chat":
            return {}
        return {loc: "responses-to-chat" for loc in plan.base_urls if loc.startswith("model_providers.")}

    def resume_command(self, plan: LaunchPlan, since: float) -> str | None:
        home = plan.client.home
        if not home:
            return None
        sid = newest_session_id((Path(home) / "sessions").rglob("rollout-*.jsonl"), since)
        return None if sid is None else f"resume {sid}"

    def batch(self, args: Sequence[str]) -> bool:
        return first_word(args) in ("exec", "e")

    def process_findings(self, pid: int, argv: Sequence[str], env: Mapping[str, str] | None,
                         runs: LaunchRecords) -> list[Finding]:
        # lazy: keeps ccswitch_tui.tools.codex.daemons off `ccs run`'s imports
        from ccswitch_tui.tools.codex.daemons import orphan_findings

        return orphan_findings(pid, argv, env, runs)

    def before_remove(self, state_dir: Path) -> None:
        # lazy: keeps ccswitch_tui.tools.codex.daemons off `ccs run`'s imports
        from ccswitch_tui.tools.codex import daemons

        home = state_dir / "codex"
        daemons.end(daemons.find(home), home)

    def probes(self, plan: LaunchPlan, profile: Profile) -> list[ProbeSpec]:
        side: CodexSide = profile.sides["codex"]
        base = plan.base_urls[f"model_providers.{side.provider_id}.base_url"]
        return [(chat_probe if side.wire_api == "chat" else responses_probe)(base, plan.models.get("model"))]

    def doctor(self, ctx: DoctorContext) -> DoctorPart:
        """Where a Codex started from this shell keeps its config (its layers are read by the engine)."""
        home = Path(ctx.environ["CODEX_HOME"]) if ctx.environ.get("CODEX_HOME") else \
            Path(ctx.environ.get("HOME") or os.path.expanduser("~")) / ".codex"
        part = DoctorPart("codex", {"home": str(home)})
        part.lines.append(f"codex home {home}")
        return part

    def plan(self, profile: Profile, key: str, parent_env: Mapping[str, str], cwd: Path, *,
             paths: Paths, families: Families, args: Sequence[str] = (), launch_id: str | None = None,
             isolate: bool = False) -> LaunchPlan:
        side: CodexSide = profile.sides["codex"]
        launch_id = launch_id or new_launch_id()
        home = paths.tool_dir(profile.name, "codex")
        b = EnvBuilder(profile, parent_env)
        b.add(side.env, SOURCE_TOOL)
        b.add({"CODEX_HOME": str(home)}, SOURCE_ROUTING)
        b.add_secret(KEY_VAR, key)
        b.add_markers(profile, self.name, launch_id)
        quiet = quiet_for(self, profile, side.base_url)
        pieces = share.DEFAULT_PIECES if profile.share is None else profile.share
        user_codex = share.user_home(parent_env) / ".codex"
        mcp, shared, warnings = share.codex_mcp(pieces, user_codex, home, families)
        shared += share.links(pieces, share.CODEX_LINKS, user_codex, home)
        shared += share.packages_link(pieces, user_codex, paths.state / "shared", home)
        # parsed through the cache (toml_cache.py) unless it carries the user's MCP servers: their
        # tokens are in this file already, and the cache would be one more copy
        config = codex_config.content(home / "config.toml", profile, quiet, mcp, None if mcp else paths.toml_cache)
        # what a trusted project's .codex/config.toml could change, pinned where it loses (the engine
        # judges the rest); --isolate makes every folder Codex may take as the project untrusted
        pins = ["-c", f"model={toml_string(side.model)}", "-c", f"model_provider={toml_string(side.provider_id)}"]
        if side.reasoning_effort:
            pins += ["-c", f"model_reasoning_effort={toml_string(side.reasoning_effort)}"]
        if isolate:
            pins += ["-c", _untrust(cwd)]
        chat = side.wire_api == "chat"
        return LaunchPlan(
            profile=profile.name, tool=self.name, argv=(self.program, *pins, *args), env=b.env,
            sources=b.sources, secret_names=frozenset(b.secret_names), cwd=cwd, launch_id=launch_id,
            dirs=paths.tool_dirs(profile.name, self.name), files=(FileToWrite(home / "config.toml", config),),
            warnings=tuple(warnings),
            base_urls={f"model_providers.{side.provider_id}.base_url": side.base_url},
            models={"model": side.model}, key_id=profile.key_id,
            client=ClientSetup(home_key="codex_home", home=str(home), provider_id=side.provider_id, quiet=quiet,
                               isolate=True if isolate else None, shared=tuple(x.to_dict() for x in shared),
                               wire_api="chat" if chat else None,
                               provider_name=profile.provider.name if chat else None),
        )


# --- doctor: Codex's config files at rest --------------------------------------------------

def _line_of(text: str, pattern: str) -> int | None:
    for i, line in enumerate(text.splitlines(), 1):
        if re.search(pattern, line):
            return i
    return None


def config_problems(path: Path, text: str, environ: Mapping[str, str], main: bool = True) -> list[Finding]:  # noqa: C901
    """What Codex 0.171 refuses (or ignores) in one of its config files, with the way out."""

    codex = "Codex"
    try:
        data = parse_toml(text, str(path)).unwrap()
    except ProfileError as exc:  # "path:line:col: message", or "path: message" for a table defined twice
        where = str(exc).split(": ")[0]
        return [Finding("codex-config-invalid", ERROR,
                        f"not valid TOML ({exc}); {codex} will not start; fix the file", path=where)]

    out: list[Finding] = []

    def at(pattern: str) -> str:
        line = _line_of(text, pattern)
        return f"{path}:{line}" if line else str(path)

    if "profile" in data:
        out.append(Finding(
            "codex-config-invalid", ERROR,
            f"top-level profile = {data['profile']!r} is a hard error in {codex}; move that profile's settings "
            f"to {path.parent}/{data['profile']}.config.toml, remove the line and select it with "
            "`codex --profile NAME`",
            path=at(r"^\s*profile\s*="), variable="profile"))
    profiles = data.get("profiles")
    if isinstance(profiles, dict) and profiles:
        for name in profiles:
            out.append(Finding(
                "codex-config-invalid", WARN,
                f"[profiles.{name}] is legacy: {codex} ignores it, and `codex --profile {name}` fails while it is "
                f"there; move it to {path.parent}/{name}.config.toml",
                path=at(rf"^\s*\[profiles\.{re.escape(str(name))}\]"), variable=f"profiles.{name}"))
    providers = data.get("model_providers")
    selected = data.get("model_provider")
    if not isinstance(providers, dict):
        providers = {}
    for pid, entry in providers.items():
        where = at(rf"^\s*\[model_providers\.\"?{re.escape(str(pid))}\"?\]")
        if not isinstance(entry, dict):
            continue
        if entry.get("wire_api") == "chat":
            out.append(Finding(
                "codex-config-invalid", ERROR,
                f'[model_providers.{pid}] wire_api = "chat" is no longer supported by {codex} (a hard error); '
                "for a Chat Completions endpoint, import it (`ccs import codex`) or put wire_api = \"chat\" in a "
                "ccs profile's [codex] table, and launch with `ccs launch PROFILE codex`: ccs translates for Codex; "
                'or use wire_api = "responses" if the endpoint serves the Responses API',
                path=at(r"^\s*wire_api\s*=\s*[\"']chat"), variable=f"model_providers.{pid}.wire_api"))
        if pid in BUILTIN_PROVIDERS:
            url = entry.get("base_url")
            out.append(Finding(
                "codex-config-invalid", ERROR,
                f"[model_providers.{pid}] reuses the built-in provider id {pid!r}"
                + (f" for {url}" if url else "")
                + f"; {codex} refuses to start (built-in provider ids are reserved); rename it to a custom id "
                "(and model_provider with it)", path=where, variable=f"model_providers.{pid}"))
        env_key = entry.get("env_key")
        if isinstance(env_key, str) and env_key and not environ.get(env_key):
            chosen = main and selected == pid
            out.append(Finding(
                "codex-config-invalid", ERROR if chosen else WARN,
                f"[model_providers.{pid}] env_key = {env_key!r}, but {env_key} is not set in this shell; "
                f"{codex} {'fails' if chosen else 'fails when this provider is used'} with "
                f"\"Missing environment variable: `{env_key}`\"; export it, or launch with `ccs launch PROFILE codex`",
                path=where, variable=env_key))
    if main and isinstance(selected, str) and selected not in providers and selected not in BUILTIN_PROVIDERS:
        out.append(Finding(
            "codex-config-invalid", ERROR,
            f"model_provider = {selected!r} names no [model_providers.{selected}] table and no built-in provider; "
            "add the table or fix the name", path=at(r"^\s*model_provider\s*="), variable="model_provider"))
    return out


TOOL = CodexSpec()

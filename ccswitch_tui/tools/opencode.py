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
- Its configuration layers, measured with ``opencode debug config`` (each key merged separately): the
  global ``$XDG_CONFIG_HOME/opencode/`` (``~/.config/opencode/``) ``config.json``, ``opencode.json``,
  ``opencode.jsonc`` (comments allowed); then ``OPENCODE_CONFIG`` (a file); then the project's
  ``opencode.json[c]`` and ``.opencode/opencode.json[c]`` in every directory from the working one up to
  the git root (up to ``/`` outside a repository; the nearer wins; ``OPENCODE_DISABLE_PROJECT_CONFIG=1``
  drops them all); then ``OPENCODE_CONFIG_DIR``'s files; then ``OPENCODE_CONFIG_CONTENT``. ``doctor``
  reads them (``config_layers``).
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ccswitch_tui.errors import UsageError
from ccswitch_tui.model import (
    ERROR,
    SOURCE_ROUTING,
    SOURCE_TOOL,
    WARN,
    FileToWrite,
    Finding,
    LaunchPlan,
    Profile,
    Provider,
    new_launch_id,
)
from ccswitch_tui.paths import Paths
from ccswitch_tui.policy import redact_url, shown
from ccswitch_tui.safe_read import decode_error_line, loads_json, read_text
from ccswitch_tui.tools import fields
from ccswitch_tui.tools.checker import Checker
from ccswitch_tui.tools.environment import EnvBuilder
from ccswitch_tui.tools.fields import string, url
from ccswitch_tui.tools.quiet import quiet_for
from ccswitch_tui.tools.spec import DoctorContext, DoctorPart, ProbeSpec, ToolSpec, chat_probe

KEY_VAR = "CCS_OPENCODE_API_KEY"
CONFIG = "opencode.json"
NPM_PROVIDER = "@ai-sdk/openai-compatible"  # bundled in the binary: works offline
PROVIDER_ID_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
QUIET_ENV = {"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_SHARE": "1"}


def _default_provider_id(provider: Provider, profile_name: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", profile_name).strip("-") or "ccs"


@dataclass(frozen=True, kw_only=True)
class OpenCodeSide:
    """The [opencode] table, declared once (tools/fields.py)."""

    # OpenAI-compatible: requests go to {base_url}/chat/completions
    base_url: str = url(hint="default: the provider's; requests go to …/chat/completions")
    model: str = string("model", hint="required, e.g. kimi-k2.7-code", required=True)
    provider_id: str = string("provider id", hint="default: from the profile name", default_from=_default_provider_id)
    env: Mapping[str, str] = fields.env()

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


class OpenCodeSpec(ToolSpec[OpenCodeSide]):
    name = "opencode"
    label = "OpenCode"
    short = "OpenCode"
    program = "opencode"
    install_hint = "install it with `npm install -g opencode-ai`"
    tui_key = "o"
    side = OpenCodeSide
    families = {"opencode": r"OPENCODE_.*|CCS_OPENCODE_API_KEY"}
    family_effects = {"opencode": "OpenCode"}
    reads = ("opencode",)
    exe_names = ("opencode", "opencode.exe")
    scripts = ("opencode-ai/bin/opencode",)
    def refine(self, values: dict[str, Any], t: Mapping[str, Any], c: Checker, provider: Provider,
               profile_name: str) -> None:
        if not PROVIDER_ID_RE.fullmatch(pid := values["provider_id"]):
            raise c.fail(f"[opencode].provider_id {pid!r} may hold only a-z, 0-9, '_' and '-'",
                         "[opencode].provider_id")

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

    def doctor(self, ctx: DoctorContext) -> DoctorPart:
        """The configuration layers of an OpenCode started by hand in ``ctx.cwd`` from this shell."""
        rows: list[dict[str, Any]] = []
        part = DoctorPart("opencode_layers", rows,
                          lines=["opencode configuration layers (highest first; each key merged separately)"])
        project_seen = False
        for kind, path in config_layers(ctx.cwd, ctx.environ):
            keys, error = read_config_layer(path)
            if keys is None and error is None and kind != "global":
                continue  # the many places a project file may be: only those that exist are listed
            project_seen |= kind == "project"
            rows.append({"kind": kind, "path": str(path), "exists": keys is not None or error is not None,
                         "error": error, "routing": keys or {}})
            state = "absent" if keys is None and error is None else (error or (
                ", ".join(f"{k}={v}" for k, v in (keys or {}).items()) or "no routing keys"))
            part.lines.append(f"  {kind:<8} {path}: {state}")
            if error:
                part.findings.append(Finding("settings-invalid", WARN, f"{kind} OpenCode config {error}; OpenCode "
                                             "may refuse or ignore it; fix the file", path=str(path)))
            for k, v in (keys or {}).items():
                if kind == "project":
                    severity, effect = ERROR, (
                        f"which an OpenCode started in {ctx.cwd} follows (it beats the global config); ccs "
                        "launches are not affected (they set OPENCODE_DISABLE_PROJECT_CONFIG=1)")
                elif kind == "global" and k.split(".")[0] == "disabled_providers":
                    severity, effect = WARN, (
                        "which every OpenCode reads, ccs launches included: a profile whose provider id it "
                        "names gets no provider")
                else:
                    severity, effect = WARN, (
                        "which an OpenCode started directly follows; ccs launches are not affected (their own "
                        "config dir sets model, small_model, provider and enabled_providers)")
                part.findings.append(Finding(
                    "settings-override", severity,
                    f"{kind} OpenCode config sets {k}={v}, {effect}; remove it from the file to choose the "
                    "provider in one place", path=str(path), variable=k))
        if not project_seen:
            dirs = _project_dirs(ctx.cwd)
            part.lines.append(f"  project  no opencode.json[c] or .opencode/ from {ctx.cwd} up to {dirs[-1]}")
        return part


# --- doctor: the configuration layers at rest -------------------------------------------------------

ROUTING_KEYS = ("model", "small_model", "provider", "enabled_providers", "disabled_providers")
CONFIG_NAMES = ("opencode.jsonc", "opencode.json")  # read in each project directory and .opencode/


def config_layers(cwd: Path, environ: Mapping[str, str]) -> list[tuple[str, Path]]:
    """Every OpenCode configuration file that applies to ``cwd`` from this shell, highest precedence
    first (OPENCODE_CONFIG_CONTENT, a value, is the shell's to report)."""
    out: list[tuple[str, Path]] = []
    if environ.get("OPENCODE_CONFIG_DIR"):
        out += [("dir", Path(environ["OPENCODE_CONFIG_DIR"]) / n) for n in CONFIG_NAMES]
    if environ.get("OPENCODE_DISABLE_PROJECT_CONFIG", "").lower() not in ("1", "true"):
        for folder in _project_dirs(cwd):
            out += [("project", folder / ".opencode" / n) for n in CONFIG_NAMES]
            out += [("project", folder / n) for n in CONFIG_NAMES]
    if environ.get("OPENCODE_CONFIG"):
        out.append(("env", Path(environ["OPENCODE_CONFIG"])))
    home = Path(environ.get("HOME") or Path.home())
    base = Path(environ["XDG_CONFIG_HOME"]) if environ.get("XDG_CONFIG_HOME") else home / ".config"
    out += [("global", base / "opencode" / n) for n in (*CONFIG_NAMES, "config.json")]
    return out


def _project_dirs(cwd: Path) -> list[Path]:
    """``cwd`` and its parents up to the git root (the folder holding ``.git``), or to ``/``."""
    out: list[Path] = []
    for folder in (cwd, *cwd.parents):
        out.append(folder)
        if (folder / ".git").exists():
            break
    return out


def read_config_layer(path: Path) -> tuple[dict[str, str] | None, str | None]:
    """(the routing keys the file sets, shown without secrets; None when absent), or an error line."""
    try:
        text = read_text(path)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None, None
    except UnicodeDecodeError as exc:
        return None, f"{path}: cannot read: {decode_error_line(exc)}"
    except OSError as exc:
        return None, f"{path}: cannot read: {exc.strerror or exc}"
    try:
        data = loads_json(strip_jsonc(text))
    except ValueError as exc:
        return None, f"{path}: not valid JSON(C): {exc}"
    if not isinstance(data, dict):
        return None, f"{path}: not a JSON object"
    keys: dict[str, str] = {}
    for k in ROUTING_KEYS:
        if k not in data:
            continue
        value = data[k]
        if k == "provider" and isinstance(value, dict):
            for pid, entry in value.items():
                opts = entry.get("options") if isinstance(entry, dict) else None
                opts = opts if isinstance(opts, dict) else {}
                url = opts.get("baseURL")
                keys[f"provider.{pid}"] = redact_url(str(url)) if url else "(its default endpoint)"
                if "apiKey" in opts:
                    keys[f"provider.{pid}.options.apiKey"] = shown("apiKey", str(opts["apiKey"]))
        else:
            keys[k] = value if isinstance(value, str) else json.dumps(value)
    return keys, None


def strip_jsonc(text: str) -> str:
    """JSON with comments (``//``, ``/* */``) and trailing commas, as plain JSON (strings kept)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            out.append(c)
            i += 1
    return re.sub(r",(\s*[}\]])", r"\1", "".join(out))


TOOL = OpenCodeSpec()

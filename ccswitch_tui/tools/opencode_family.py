"""What the clients built on OpenCode's code share (OpenCode itself, Kilo Code CLI): the table, the
config file ccs writes into the client's own config dir, the launch, the probe and the doctor's
reading of the configuration layers. Each client's module names its variables, files and layers.

Both read JSON(C) config files merged key by key, a later layer beating an earlier one; both take a
provider entry ``{"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": …, "apiKey":
"{env:VAR}"}, "models": {…}}`` (the SDK is bundled in their binaries: it works offline) and send
``POST {baseURL}/chat/completions`` with ``Authorization: Bearer <the env value>``; both keep their
sessions and database under ``$XDG_DATA_HOME/<client>``.
"""

from __future__ import annotations

import json
import re
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

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
    Refusal,
    new_launch_id,
)
from ccswitch_tui.paths import Paths
from ccswitch_tui.policy import redact_url, shown
from ccswitch_tui.safe_read import decode_error_line, loads_json, read_text, strip_jsonc
from ccswitch_tui.tools import fields
from ccswitch_tui.tools.checker import Checker
from ccswitch_tui.tools.environment import EnvBuilder
from ccswitch_tui.tools.fields import string, url
from ccswitch_tui.tools.quiet import quiet_for
from ccswitch_tui.tools.spec import DoctorContext, DoctorPart, ProbeSpec, ToolSpec, chat_probe, first_word

NPM_PROVIDER = "@ai-sdk/openai-compatible"  # bundled in the binaries: works offline
PROVIDER_ID_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
ROUTING_KEYS = ("model", "small_model", "provider", "enabled_providers", "disabled_providers")


def _default_provider_id(provider: Provider, profile_name: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", profile_name).strip("-") or "ccs"


@dataclass(frozen=True, kw_only=True)
class FamilySide:
    """The table of a client of the family ([opencode], [kilo]), declared once (tools/fields.py)."""

    # OpenAI-compatible: requests go to {base_url}/chat/completions
    base_url: str = url(hint="default: the provider's; requests go to …/chat/completions")
    model: str = string("model", hint="required, e.g. kimi-k2.7-code", required=True)
    provider_id: str = string("provider id", hint="default: from the profile name", default_from=_default_provider_id)
    env: Mapping[str, str] = fields.env()

    @property
    def model_ref(self) -> str:
        return f"{self.provider_id}/{self.model}"


class OpenCodeFamilySpec(ToolSpec[FamilySide]):
    """A client of the family: the subclass names its variables, its config file and its layers."""

    side = FamilySide
    key_var: ClassVar[str]  # the variable holding the key in the child ("{env:VAR}" in the config)
    config_file: ClassVar[str]  # the file ccs writes in the config dir, e.g. "opencode.json"
    config_dir_var: ClassVar[str]  # the variable naming the config dir whose files beat the project's
    disable_project_var: ClassVar[str]  # the variable that drops the project's config files and dirs
    schema_url: ClassVar[str]  # the config file's "$schema"
    quiet_env: ClassVar[Mapping[str, str]]  # what quiets it besides the provider (a quiet launch sets them)
    quiet_config: ClassVar[Mapping[str, Any]] = {"autoupdate": False}  # … and in the config file
    agent_models: ClassVar[bool] = False  # doctor: an agent's model (agent.NAME.model) is routing too
    project_files: ClassVar[str] = ""  # doctor: how the project's files are named, for "none found"

    def refine(self, values: dict[str, Any], t: Mapping[str, Any], c: Checker, provider: Provider,
               profile_name: str) -> None:
        if not PROVIDER_ID_RE.fullmatch(pid := values["provider_id"]):
            raise c.fail(f"[{self.name}].provider_id {pid!r} may hold only a-z, 0-9, '_' and '-'",
                         f"[{self.name}].provider_id")

    def summary(self, side: FamilySide) -> list[str]:
        return [f"model={side.model_ref}"]

    def endpoint(self, side: FamilySide) -> str | None:
        return side.base_url.rstrip("/") + "/chat/completions"

    def base_url_key(self, side: FamilySide) -> str:
        """Where the plan's base URL sits in the config file (the manifest's and probe's key)."""
        return f"provider.{side.provider_id}.options.baseURL"

    def probes(self, plan: LaunchPlan, profile: Profile) -> list[ProbeSpec]:
        side: FamilySide = profile.sides[self.name]
        return [chat_probe(plan.base_urls[self.base_url_key(side)], side.model)]

    # --- the layers -----------------------------------------------------------------------------

    @abstractmethod
    def config_layers(self, cwd: Path, environ: Mapping[str, str]) -> list[tuple[str, Path]]:
        """Every configuration file that applies to ``cwd`` from this shell, highest precedence
        first, each with its kind (managed, dir, project, env, global …)."""

    def managed_layers(self, environ: Mapping[str, str]) -> list[Path]:
        """Files a machine's administrator puts above every layer ccs writes (none by default)."""
        return []

    def batch(self, args: Sequence[str]) -> bool:
        return first_word(args) == "run"

    def resume_command(self, plan: LaunchPlan, since: float) -> str | None:
        """``--session ses_…``: the newest top-level session in the working folder, from the client's
        database in the profile's data dir (``<XDG_DATA_HOME>/<name>/<name>.db``)."""
        data = plan.env.get("XDG_DATA_HOME")
        sid = newest_session(Path(data) / self.name / f"{self.name}.db", plan.cwd, since) if data else None
        return None if sid is None else f"--session {sid}"

    def layer_effect(self, kind: str, key: str, cwd: Path) -> tuple[str, str]:
        """(severity, what follows) for a routing key a layer of this kind sets."""
        if kind == "managed":
            return ERROR, ("which beats every other layer, ccs's own included: ccs launches refuse it (--force "
                           "to launch anyway)")
        if kind == "project":
            return ERROR, (f"which {_a(self.label)} started in {cwd} follows (it beats the global config); ccs "
                           f"launches are not affected (they set {self.disable_project_var}=1)")
        if key.split(".")[0] == "disabled_providers" and kind in ("global", "home"):
            return WARN, (f"which every {self.label} reads, ccs launches included: a profile whose provider id it "
                          "names gets no provider")
        if key.startswith("agent.") and kind in ("global", "home", "env"):
            return WARN, (f"which every {self.label} reads, ccs launches included: an agent's model beats the "
                          "profile's (a launch then fails on a provider ccs did not enable)")
        return WARN, (f"which {_a(self.label)} started directly follows; ccs launches are not affected (their own "
                      "config dir sets model, small_model, provider and enabled_providers)")

    # --- launching ------------------------------------------------------------------------------

    def plan(self, profile: Profile, key: str, parent_env: Mapping[str, str], cwd: Path, *,
             paths: Paths, args: Sequence[str] = (), launch_id: str | None = None,
             isolate: bool = False) -> LaunchPlan:
        side: FamilySide = profile.sides[self.name]
        launch_id = launch_id or new_launch_id()
        home = paths.tool_dir(profile.name, self.name)
        quiet = quiet_for(profile, side.base_url)
        b = EnvBuilder(profile, parent_env)
        b.add({k: v for k, v in self.quiet_env.items() if quiet and k not in {**profile.env, **side.env}},
              SOURCE_ROUTING)
        b.add(side.env, SOURCE_TOOL)
        b.add({self.config_dir_var: str(home / "config"), self.disable_project_var: "1",
               "XDG_DATA_HOME": str(home / "data"), "XDG_CACHE_HOME": str(home / "cache")}, SOURCE_ROUTING)
        b.add_secret(self.key_var, key)
        b.add_markers(profile, self.name, launch_id)
        config = home / "config" / self.config_file
        warnings: list[str] = []
        refusals: list[Refusal] = []
        managed: list[str] = []
        for path in self.managed_layers(parent_env):
            keys, error = read_config_layer(path, self.agent_models)
            if error:
                warnings.append(f"managed {self.label} config {error}")
            elif keys:
                managed.append(f"{path} ({', '.join(keys)})")
        if managed:
            refusals.append(Refusal(
                "settings-override",
                f"the managed {self.label} config {'; '.join(managed)} beats every other layer, ccs's own "
                "included; ccs cannot override it",
                ("--force to launch anyway (recorded in the manifest)",
                 "ask whoever manages this machine to remove it"),
                flags=("force",)))
        return LaunchPlan(
            profile=profile.name, tool=self.name, argv=(self.program or self.name, *args), env=b.env,
            sources=b.sources, secret_names=frozenset(b.secret_names), cwd=cwd, launch_id=launch_id,
            dirs=(*paths.tool_dirs(profile.name, self.name), home / "config", home / "data", home / "cache"),
            files=(FileToWrite(config, self.config_content(config, profile, side, quiet)),),
            base_urls={self.base_url_key(side): side.base_url},
            models={"model": side.model_ref}, key_id=profile.key_id,
            warnings=tuple(warnings), refusals=tuple(refusals),
            extra={"config_dir": str(home / "config"), "quiet": quiet},
        )

    def config_content(self, path: Path, profile: Profile, side: FamilySide, quiet: bool) -> str:
        """The profile's config file: ccs's provider entry and models set, the rest of the file (MCP
        servers, agents, keybinds someone added) kept."""
        try:
            data = loads_json(read_text(path))
            if not isinstance(data, dict):
                data = {}
        except FileNotFoundError:
            data = {}
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path}: cannot read ({exc}); remove it (ccs writes a new one)") from None
        data.setdefault("$schema", self.schema_url)
        data["model"] = data["small_model"] = side.model_ref
        providers = data.get("provider") if isinstance(data.get("provider"), dict) else {}
        providers[side.provider_id] = {
            "npm": NPM_PROVIDER,
            "name": profile.provider.name,
            "options": {"baseURL": side.base_url, "apiKey": "{env:" + self.key_var + "}"},
            "models": {side.model: {"name": side.model}},
        }
        data["provider"] = providers
        data["enabled_providers"] = [side.provider_id]  # no built-in provider picks up a stray key
        if quiet:
            data.update(self.quiet_config)
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"

    # --- diagnosis ------------------------------------------------------------------------------

    def doctor(self, ctx: DoctorContext) -> DoctorPart:
        """The configuration layers of the client started by hand in ``ctx.cwd`` from this shell."""
        rows: list[dict[str, Any]] = []
        part = DoctorPart(f"{self.name}_layers", rows,
                          lines=[f"{self.name} configuration layers (highest first; each key merged separately)"])
        project_seen = False
        for kind, path in self.config_layers(ctx.cwd, ctx.environ):
            keys, error = read_config_layer(path, self.agent_models)
            if keys is None and error is None and kind != "global":
                continue  # the many places a project file may be: only those that exist are listed
            project_seen |= kind == "project"
            rows.append({"kind": kind, "path": str(path), "exists": keys is not None or error is not None,
                         "error": error, "routing": keys or {}})
            state = "absent" if keys is None and error is None else (error or (
                ", ".join(f"{k}={v}" for k, v in (keys or {}).items()) or "no routing keys"))
            part.lines.append(f"  {kind:<8} {path}: {state}")
            if error:
                part.findings.append(Finding("settings-invalid", WARN, f"{kind} {self.label} config {error}; "
                                             f"{self.label} may refuse or ignore it; fix the file", path=str(path)))
            for k, v in (keys or {}).items():
                severity, effect = self.layer_effect(kind, k, ctx.cwd)
                part.findings.append(Finding(
                    "settings-override", severity,
                    f"{kind} {self.label} config sets {k}={v}, {effect}; remove it from the file to choose the "
                    "provider in one place", path=str(path), variable=k))
        if not project_seen:
            dirs = project_dirs(ctx.cwd)
            part.lines.append(f"  project  no {self.project_files} from {ctx.cwd} up to {dirs[-1]}")
        return part


# --- the configuration layers at rest ---------------------------------------------------------------

def xdg_config(environ: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME``, else ``~/.config``, of the shell in ``environ``."""
    if environ.get("XDG_CONFIG_HOME"):
        return Path(environ["XDG_CONFIG_HOME"])
    return home_of(environ) / ".config"


def home_of(environ: Mapping[str, str]) -> Path:
    return Path(environ.get("HOME") or Path.home())


def disabled(environ: Mapping[str, str], name: str) -> bool:
    return environ.get(name, "").lower() in ("1", "true")


def project_dirs(cwd: Path) -> list[Path]:
    """``cwd`` and its parents up to the git root (the folder holding ``.git``), or to ``/``."""
    out: list[Path] = []
    for folder in (cwd, *cwd.parents):
        out.append(folder)
        if (folder / ".git").exists():
            break
    return out


def read_config_layer(path: Path, agent_models: bool = False) -> tuple[dict[str, str] | None, str | None]:
    """(the routing keys the file sets, shown without secrets; None when absent), or an error line.
    With ``agent_models``, an agent's model (``agent.NAME.model``) is one of them."""
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
                base = opts.get("baseURL")
                keys[f"provider.{pid}"] = redact_url(str(base)) if base else "(its default endpoint)"
                if "apiKey" in opts:
                    keys[f"provider.{pid}.options.apiKey"] = shown("apiKey", str(opts["apiKey"]))
        else:
            keys[k] = value if isinstance(value, str) else json.dumps(value)
    agents = data.get("agent")
    if agent_models and isinstance(agents, dict):
        for name, agent in agents.items():
            if isinstance(agent, dict) and isinstance(agent.get("model"), str):
                keys[f"agent.{name}.model"] = agent["model"]
    return keys, None


def _a(label: str) -> str:
    """``a Kilo Code``, ``an OpenCode``."""
    return f"{'an' if label[:1].lower() in 'aeiou' else 'a'} {label}"


def newest_session(db: Path, cwd: Path, since: float) -> str | None:
    """The id of the newest top-level session in ``cwd`` updated since ``since`` (epoch seconds), read
    from the client's database without writing to it; None when there is none or the database is unreadable."""
    import sqlite3  # lazy: read only after an interactive session

    if not db.is_file():
        return None
    try:
        con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=1)
        try:
            row = con.execute("SELECT id FROM session WHERE parent_id IS NULL AND directory IN (?, ?) "
                              "AND time_updated >= ? ORDER BY time_updated DESC LIMIT 1",
                              (str(cwd), str(cwd.resolve()), int(since * 1000))).fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return None
    sid = row[0] if row else None
    return sid if isinstance(sid, str) and sid.replace("_", "").isalnum() else None

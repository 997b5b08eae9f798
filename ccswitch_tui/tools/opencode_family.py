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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from ccswitch_tui.errors import UsageError
from ccswitch_tui.model import (
    SOURCE_ROUTING,
    SOURCE_TOOL,
    ClientSetup,
    FileToWrite,
    LaunchPlan,
    Profile,
    Provider,
    new_launch_id,
)
from ccswitch_tui.paths import Paths
from ccswitch_tui.policy.families import Families
from ccswitch_tui.safe_read import loads_json, read_text
from ccswitch_tui.tools import fields
from ccswitch_tui.tools.capabilities import Probing, Resuming
from ccswitch_tui.tools.checker import Checker
from ccswitch_tui.tools.environment import EnvBuilder
from ccswitch_tui.tools.fields import string, url
from ccswitch_tui.tools.layers import Key
from ccswitch_tui.tools.quiet import quiet_for
from ccswitch_tui.tools.spec import ProbeSpec, ToolSpec, chat_probe, first_word
from ccswitch_tui.valueclass import valueclass

NPM_PROVIDER = "@ai-sdk/openai-compatible"  # bundled in the binaries: works offline
PROVIDER_ID_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
# The keys of the family's config files that route (tools/layers.py); a client whose agents' models
# route too (Kilo) adds AGENT_KEYS
CONFIG_KEYS = (
    Key("model", "model"), Key("small_model", "model"),
    Key("provider.*.options.baseURL", "base-url", others="the launch enables only its own provider id"),
    Key("provider.*.options.apiKey", "key", others="the launch enables only its own provider id"),
    Key("provider.*.options.headers", "headers", others="the launch enables only its own provider id"),
    Key("provider.*", "provider", others="the launch enables only its own provider id"),
    Key("enabled_providers", "provider"),
    Key("disabled_providers", "provider"),
)
AGENT_KEYS = (Key("agent.*.model", "model"),)


def _default_provider_id(provider: Provider, profile_name: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", profile_name).strip("-") or "ccs"


@valueclass(frozen=True, kw_only=True)
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


class OpenCodeFamilySpec(ToolSpec[FamilySide], Probing, Resuming):
    """A client of the family: the subclass names its variables, its config file and its layers."""

    side = FamilySide
    key_var: ClassVar[str]  # the variable holding the key in the child ("{env:VAR}" in the config)
    config_file: ClassVar[str]  # the file ccs writes in the config dir, e.g. "opencode.json"
    config_dir_var: ClassVar[str]  # the variable naming the config dir whose files beat the project's
    disable_project_var: ClassVar[str]  # the variable that drops the project's config files and dirs
    schema_url: ClassVar[str]  # the config file's "$schema"
    quiet_env: ClassVar[Mapping[str, str]]  # what quiets it besides the provider (a quiet launch sets them)
    quiet_config: ClassVar[Mapping[str, Any]] = {"autoupdate": False}  # … and in the config file
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

    def batch(self, args: Sequence[str]) -> bool:
        return first_word(args) == "run"

    def resume_command(self, plan: LaunchPlan, since: float) -> str | None:
        """``--session ses_…``: the newest top-level session in the working folder, from the client's
        database in the profile's data dir (``<XDG_DATA_HOME>/<name>/<name>.db``)."""
        data = plan.env.get("XDG_DATA_HOME")
        sid = newest_session(Path(data) / self.name / f"{self.name}.db", plan.cwd, since) if data else None
        return None if sid is None else f"--session {sid}"

    # --- launching ------------------------------------------------------------------------------

    def plan(self, profile: Profile, key: str, parent_env: Mapping[str, str], cwd: Path, *,
             paths: Paths, families: Families, args: Sequence[str] = (), launch_id: str | None = None,
             isolate: bool = False) -> LaunchPlan:
        side: FamilySide = profile.sides[self.name]
        launch_id = launch_id or new_launch_id()
        home = paths.tool_dir(profile.name, self.name)
        quiet = quiet_for(self, profile, side.base_url)
        b = EnvBuilder(profile, parent_env)
        b.add({k: v for k, v in self.quiet_env.items() if quiet and k not in {**profile.env, **side.env}},
              SOURCE_ROUTING)
        b.add(side.env, SOURCE_TOOL)
        b.add({self.config_dir_var: str(home / "config"), self.disable_project_var: "1",
               "XDG_DATA_HOME": str(home / "data"), "XDG_CACHE_HOME": str(home / "cache")}, SOURCE_ROUTING)
        b.add_secret(self.key_var, key)
        b.add_markers(profile, self.name, launch_id)
        config = home / "config" / self.config_file
        return LaunchPlan(
            profile=profile.name, tool=self.name, argv=(self.program or self.name, *args), env=b.env,
            sources=b.sources, secret_names=frozenset(b.secret_names), cwd=cwd, launch_id=launch_id,
            dirs=(*paths.tool_dirs(profile.name, self.name), home / "config", home / "data", home / "cache"),
            files=(FileToWrite(config, self.config_content(config, profile, side, quiet)),),
            base_urls={self.base_url_key(side): side.base_url},
            models={"model": side.model_ref}, key_id=profile.key_id,
            client=ClientSetup(home_key="config_dir", home=str(home / "config"), quiet=quiet),
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
        providers = got if isinstance(got := data.get("provider"), dict) else {}
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

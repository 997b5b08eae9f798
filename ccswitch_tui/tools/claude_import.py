"""Importing Claude Code's providers: its live ``settings.json`` (the ``env`` table), a CC Switch row of
the ``claude`` app (a whole settings object), and the way back (`ccs export --format json`).

A settings object becomes a ``ClaudeSide``, the same as a profile's.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ccswitch_tui.model import Profile
from ccswitch_tui.tools.checker import ENV_NAME_RE
from ccswitch_tui.tools.claude import MODEL_VARS, ClaudeSide
from ccswitch_tui.tools.importing import (
    ClientImporter,
    EnvCheck,
    EnvCleaner,
    LiveOption,
    LiveRead,
    Parsed,
    RowProblem,
    env_value,
    fail,
    nonblank,
    norm_url,
    own_dir,
    read_json_file,
    routing,
    skip,
    truthy,
)

ANTHROPIC_DEFAULT_URL = "https://api.anthropic.com"
KEY_VARS = ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY")
AUTH_OF = {"ANTHROPIC_AUTH_TOKEN": "token", "ANTHROPIC_API_KEY": "api-key"}
CLOUD_SWITCHES = ("CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY")
# set by ccs itself for every launch: an imported value would only be confusing
CCS_OWNED = ("CLAUDE_CONFIG_DIR", "CODEX_HOME")


def settings_path(environ: Mapping[str, str], home: Path) -> Path:
    base = own_dir(environ, "CLAUDE_CONFIG_DIR")
    return (Path(base).expanduser() if base else home / ".claude") / "settings.json"


def parse_settings(settings: Any, api_key_field: str | None = None, env_check: EnvCheck | None = None) -> Parsed:
    """A Claude Code settings object → [claude] fields and the key. Raises RowProblem. ``env_check``
    says why an env value may not be written into a profile (validation's rule)."""
    env = _env_table(settings)
    warnings: list[str] = []

    for switch in CLOUD_SWITCHES:
        if truthy(env.get(switch)):
            raise skip(f"routes Claude Code to a cloud platform ({switch}); ccs profiles do not cover that")

    key, key_var, auth = _settings_key(env, api_key_field)
    key_vars = [v for v in KEY_VARS if key and nonblank(env.get(v)) == key]
    for var in KEY_VARS:
        other = nonblank(env.get(var))
        if other and key and other != key:
            warnings.append(f"env.{var} holds a second, different key; not imported (only env.{key_var} is)")

    base_url = routing(env, "ANTHROPIC_BASE_URL", "env.")
    if base_url is None:
        if key is None:
            raise skip("no ANTHROPIC_BASE_URL and no key: it uses Claude Code's own login; nothing to import")
        base_url = ANTHROPIC_DEFAULT_URL
    base_url = base_url.rstrip("/")

    models = _settings_models(settings, env, warnings)
    if settings.get("apiKeyHelper"):
        warnings.append("apiKeyHelper (a command that prints a key) is not imported; ccs reads keys from the keyring")
    extra_env = _settings_env(env, key, key_vars, warnings, env_check)
    fields = ClaudeSide(base_url=base_url, auth=auth, env=extra_env, **models)
    return Parsed(fields=fields, key=key, key_vars=key_vars, warnings=warnings)


def _env_table(settings: object) -> Mapping[str, Any]:
    """The settings' ``env`` object (none: empty); settings or an env that are no object: RowProblem."""
    if not isinstance(settings, Mapping):
        raise fail("the settings are not a JSON object")
    env = settings.get("env", {})
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        raise fail("settings `env` is not an object")
    return env


def _settings_key(env: Mapping[str, Any], api_key_field: str | None) -> tuple[str | None, str | None, str]:
    """The key, its variable and the auth it means: the field CC Switch names, else the first
    non-empty of the two."""
    order = list(KEY_VARS)
    if api_key_field in AUTH_OF:
        order.remove(api_key_field)
        order.insert(0, api_key_field)
    key, key_var = None, None
    for var in order:
        value = routing(env, var, "env.")
        if value:
            key, key_var = value, var
            break
    if key_var:
        auth = AUTH_OF[key_var]
    elif api_key_field in AUTH_OF:
        auth = AUTH_OF[api_key_field]
    else:
        auth = "api-key" if "ANTHROPIC_API_KEY" in env and "ANTHROPIC_AUTH_TOKEN" not in env else "token"
    return key, key_var, auth


def _settings_models(settings: Mapping[str, Any], env: Mapping[str, Any], warnings: list[str]) -> dict[str, str | None]:
    """The [claude] model fields: the env's model variables (the deprecated small-fast one as haiku),
    the settings' own ``model`` when the env names none."""
    models = {attr: routing(env, var, "env.") for var, attr in MODEL_VARS.items()}
    small_fast = nonblank(env.get("ANTHROPIC_SMALL_FAST_MODEL"))
    if small_fast:
        if models["haiku"] is None:
            models["haiku"] = small_fast
            warnings.append("ANTHROPIC_SMALL_FAST_MODEL is deprecated; imported as [claude].haiku")
        elif small_fast != models["haiku"]:
            warnings.append("ANTHROPIC_SMALL_FAST_MODEL (deprecated) differs from the haiku model; not imported")
    if models["model"] is None:
        models["model"] = nonblank(settings.get("model"))
    return models


def _settings_env(env: Mapping[str, Any], key: str | None, key_vars: list[str], warnings: list[str],
                  env_check: EnvCheck | None) -> dict[str, str]:
    """The env's other variables that a profile's [claude].env may hold; a variable holding the key
    joins ``key_vars``, every one left out says why in ``warnings``."""
    extra_env: dict[str, str] = {}
    handled = {*KEY_VARS, "ANTHROPIC_BASE_URL", "ANTHROPIC_SMALL_FAST_MODEL", *MODEL_VARS, *CLOUD_SWITCHES}
    for name, raw in env.items():
        name = str(name)
        if name in handled:
            continue
        value = env_value(raw)
        if value is None:
            if raw is not None:
                warnings.append(f"env.{name} is not a string, number or boolean; not imported")
            continue
        if key and key in value:
            key_vars.append(name)
            warnings.append(f"env.{name} contains the key; not imported")
            continue
        problem = _env_problem(name, value, env_check)
        if problem:
            warnings.append(problem)
        else:
            extra_env[name] = value
    return extra_env


def _env_problem(name: str, value: str, env_check: EnvCheck | None) -> str | None:
    """Why ``env.NAME`` is not imported into the profile's env, or None."""
    if not ENV_NAME_RE.fullmatch(name):
        return f"env.{name!s} is not a valid variable name; not imported"
    if env_check is not None and env_check(name, value):
        return (f"env.{name} holds a credential; not imported (profiles hold no secrets): store it "
                f"with `ccs key set ID` and add {name} = \"ID\" under [secrets]")
    if name in CCS_OWNED or name.startswith("CCS_"):
        return f"env.{name} is set by ccs itself at launch; not imported"
    return None


class ClaudeImporter(ClientImporter[ClaudeSide]):
    cc_switch_app = "claude"
    live_label = "Claude Code's live settings"
    live_what = "a Claude Code settings.json"
    live_option = LiveOption("--settings", "settings", False,
                             "Claude Code settings file (default $CLAUDE_CONFIG_DIR/settings.json, else "
                             "~/.claude/settings.json).")
    command_help = "Import the provider that Claude Code's settings.json `env` points at."
    scrub_help = "Then remove the key from the settings file (atomic rewrite, everything else kept)."
    run_export = "anthropic"
    run_rank = 1  # a profile with a Codex side too exports OpenAI's API to `ccs run`
    carries_env = True  # its settings' env holds the profile's [env] too

    def live_path(self, environ: Mapping[str, str], home: Path) -> Path:
        return settings_path(environ, home)

    def read_live(self, where: Path, environ: Mapping[str, str], env_check: EnvCheck) -> LiveRead:
        settings = read_json_file(where)
        out = LiveRead(source=str(where), origin=f"Claude Code settings {where}", read=[str(where)],
                       files={"settings": where}, formats={"settings": "json"})
        try:
            if not isinstance(settings, Mapping):
                raise RowProblem("error", "the file does not hold a JSON object")
            out.parsed = parse_settings(settings, env_check=env_check)
        except RowProblem as p:
            out.problem = p
        return out

    def from_cc_switch(self, settings: Mapping[str, Any], meta: Mapping[str, Any], env_check: EnvCheck) -> Parsed:
        fmt = meta.get("apiFormat")
        if isinstance(fmt, str) and fmt not in ("", "anthropic"):
            raise skip(f"meta.apiFormat = {fmt!r}: CC Switch converts this endpoint's API through its own "
                       "proxy; Claude Code cannot use it directly")
        field_name = meta.get("apiKeyField") if isinstance(meta.get("apiKeyField"), str) else None
        return parse_settings(settings, field_name, env_check)

    def compared(self, side: ClaudeSide) -> dict[str, Any]:
        """The base URL, the auth, the models and the env."""
        return {
            "base_url": norm_url(side.base_url),
            "auth": side.auth,
            **{f: getattr(side, f) for f in MODEL_VARS.values()},
            "env": dict(sorted(side.env.items())),
        }

    def table(self, side: ClaudeSide, provider_base_url: str, profile_name: str) -> dict[str, Any]:
        t: dict[str, Any] = {}
        if norm_url(side.base_url) != norm_url(provider_base_url):
            t["base_url"] = side.base_url
        t["auth"] = side.auth
        for name in MODEL_VARS.values():
            if getattr(side, name):
                t[name] = getattr(side, name)
        if side.env:
            t["env"] = dict(side.env)
        return t

    def to_cc_switch(self, profile: Profile, side: ClaudeSide, shared_env: Mapping[str, str], env_elsewhere: bool,
                     clean: EnvCleaner, warnings: list[str]) -> dict[str, Any]:
        key_field = "ANTHROPIC_AUTH_TOKEN" if side.auth == "token" else "ANTHROPIC_API_KEY"
        env: dict[str, str] = {"ANTHROPIC_BASE_URL": side.base_url, key_field: ""}
        env.update(side.model_vars())
        env.update(shared_env)
        env.update(clean(side.env, "[claude.env]", warnings))
        for name, ref in getattr(profile, "secrets", {}).items():  # secondary credentials: empty, like the key
            env[name] = ""
            warnings.append(f"{profile.name}: {name} exported empty (its value is in the keyring under {ref!r})")
        return {"settingsConfig": {"env": env}, "meta": {"apiKeyField": key_field}}


IMPORTER = ClaudeImporter()

"""From the clients' own shapes to profile fields: a Claude Code settings object (its ``env`` table)
and a Codex ``config.toml`` text with its ``auth.json`` object. Used for CC Switch rows and for the
live files alike. Nothing here reads or writes files."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ccswitch_tui.importers.model import CodexFields, fail, skip
from ccswitch_tui.profiles.schema import value_problem
from ccswitch_tui.tools.checker import ENV_NAME_RE
from ccswitch_tui.tools.claude import MODEL_VARS as CLAUDE_MODEL_VARS
from ccswitch_tui.tools.claude import ClaudeSide
from ccswitch_tui.tools.codex import BUILTIN_PROVIDERS as BUILTIN_CODEX_PROVIDERS
from ccswitch_tui.tools.codex import PROVIDER_ID_RE, REASONING_EFFORTS

ANTHROPIC_DEFAULT_URL = "https://api.anthropic.com"
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"

CLAUDE_KEY_VARS = ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY")
CLAUDE_AUTH = {"ANTHROPIC_AUTH_TOKEN": "token", "ANTHROPIC_API_KEY": "api-key"}
CLOUD_SWITCHES = ("CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY")
# set by ccs itself for every launch: an imported value would only be confusing
CCS_OWNED = ("CLAUDE_CONFIG_DIR", "CODEX_HOME")


@dataclass
class ClaudeParse:
    fields: ClaudeSide
    key: str | None = field(default=None, repr=False)
    key_vars: list[str] = field(default_factory=list)   # env names that hold the key
    warnings: list[str] = field(default_factory=list)


@dataclass
class CodexParse:
    fields: CodexFields
    provider_name: str | None = None
    key: str | None = field(default=None, repr=False)
    key_from: str | None = None                         # "auth", "config" or "env:VAR"
    warnings: list[str] = field(default_factory=list)


def nonblank(v: Any) -> str | None:
    """A string with its surrounding blanks dropped; None for a blank string or anything else."""
    return v.strip() if isinstance(v, str) and v.strip() else None


def routing(table: Mapping[str, Any], name: str, where: str) -> str | None:
    """``nonblank`` for a field that decides where requests (or the key) go: a value of the wrong type
    (``ANTHROPIC_BASE_URL: 5``) makes the entry skipped instead of silently falling back to a default."""
    v = table.get(name)
    if v is None or isinstance(v, str):
        return nonblank(v)
    kind = {bool: "a boolean", int: "a number", float: "a number", list: "a list", dict: "an object"}.get(
        type(v), type(v).__name__)
    raise skip(f"{where}{name} is {kind}, not text; ccs will not guess where this provider routes: "
               "fix the value in the source")


def _truthy(v: Any) -> bool:
    return str(v).strip().lower() in ("1", "true", "yes", "on") if v is not None else False


def _env_value(v: Any) -> str | None:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
        return v
    return None


def parse_claude_settings(settings: Any, api_key_field: str | None = None) -> ClaudeParse:
    """A Claude Code settings object → [claude] fields and the key. Raises RowProblem."""
    if not isinstance(settings, Mapping):
        raise fail("the settings are not a JSON object")
    env = settings.get("env", {})
    if env is None:
        env = {}
    if not isinstance(env, Mapping):
        raise fail("settings `env` is not an object")
    warnings: list[str] = []

    for switch in CLOUD_SWITCHES:
        if _truthy(env.get(switch)):
            raise skip(f"routes Claude Code to a cloud platform ({switch}); ccs profiles do not cover that")

    # the key: the field CC Switch names, else the first non-empty of the two
    order = list(CLAUDE_KEY_VARS)
    if api_key_field in CLAUDE_AUTH:
        order.remove(api_key_field)
        order.insert(0, api_key_field)
    key, key_var = None, None
    for var in order:
        value = routing(env, var, "env.")
        if value:
            key, key_var = value, var
            break
    if key_var:
        auth = CLAUDE_AUTH[key_var]
    elif api_key_field in CLAUDE_AUTH:
        auth = CLAUDE_AUTH[api_key_field]
    else:
        auth = "api-key" if "ANTHROPIC_API_KEY" in env and "ANTHROPIC_AUTH_TOKEN" not in env else "token"
    key_vars = [v for v in CLAUDE_KEY_VARS if key and nonblank(env.get(v)) == key]
    for var in CLAUDE_KEY_VARS:
        other = nonblank(env.get(var))
        if other and key and other != key:
            warnings.append(f"env.{var} holds a second, different key; not imported (only env.{key_var} is)")

    base_url = routing(env, "ANTHROPIC_BASE_URL", "env.")
    if base_url is None:
        if key is None:
            raise skip("no ANTHROPIC_BASE_URL and no key: it uses Claude Code's own login; nothing to import")
        base_url = ANTHROPIC_DEFAULT_URL
    base_url = base_url.rstrip("/")

    models = {attr: routing(env, var, "env.") for var, attr in CLAUDE_MODEL_VARS.items()}
    small_fast = nonblank(env.get("ANTHROPIC_SMALL_FAST_MODEL"))
    if small_fast:
        if models["haiku"] is None:
            models["haiku"] = small_fast
            warnings.append("ANTHROPIC_SMALL_FAST_MODEL is deprecated; imported as [claude].haiku")
        elif small_fast != models["haiku"]:
            warnings.append("ANTHROPIC_SMALL_FAST_MODEL (deprecated) differs from the haiku model; not imported")
    if models["model"] is None:
        models["model"] = nonblank(settings.get("model"))
    if settings.get("apiKeyHelper"):
        warnings.append("apiKeyHelper (a command that prints a key) is not imported; ccs reads keys from the keyring")

    extra_env: dict[str, str] = {}
    handled = {*CLAUDE_KEY_VARS, "ANTHROPIC_BASE_URL", "ANTHROPIC_SMALL_FAST_MODEL", *CLAUDE_MODEL_VARS,
               *CLOUD_SWITCHES}
    for name, raw in env.items():
        name = str(name)
        if name in handled:
            continue
        value = _env_value(raw)
        if value is None:
            if raw is not None:
                warnings.append(f"env.{name} is not a string, number or boolean; not imported")
            continue
        if key and key in value:
            key_vars.append(name)
            warnings.append(f"env.{name} contains the key; not imported")
            continue
        if not ENV_NAME_RE.fullmatch(name):
            warnings.append(f"env.{name!s} is not a valid variable name; not imported")
        elif value_problem(("env", name), value):
            warnings.append(f"env.{name} holds a credential; not imported (profiles hold no secrets): store it "
                            f"with `ccs key set ID` and add {name} = \"ID\" under [secrets]")
        elif name in CCS_OWNED or name.startswith("CCS_"):
            warnings.append(f"env.{name} is set by ccs itself at launch; not imported")
        else:
            extra_env[name] = value
    fields = ClaudeSide(base_url=base_url, auth=auth, env=extra_env, **models)
    return ClaudeParse(fields=fields, key=key, key_vars=key_vars, warnings=warnings)


def parse_codex_config(config: Mapping[str, Any], auth: Any, environ: Mapping[str, str] | None = None
                       ) -> CodexParse:
    """A parsed Codex config.toml (plain dict) and its auth.json object → [codex] fields and the key.
    Raises RowProblem."""
    environ = environ or {}
    warnings: list[str] = []
    cfg = dict(config)
    selected = nonblank(cfg.get("profile"))
    if selected:
        overlay = (cfg.get("profiles") or {}).get(selected) if isinstance(cfg.get("profiles"), Mapping) else None
        if isinstance(overlay, Mapping):
            cfg.update({k: v for k, v in overlay.items() if k in ("model", "model_provider", "model_reasoning_effort")})
            warnings.append(f"imported the settings of profile {selected!r} named by the top-level `profile` key")
        else:
            warnings.append(f"top-level `profile = {selected!r}` names no [profiles.{selected}] table; ignored")
    pid = routing(cfg, "model_provider", "") or "openai"
    providers = cfg.get("model_providers") or {}
    if not isinstance(providers, Mapping):
        raise fail("`model_providers` is not a table")
    entry = providers.get(pid)
    if entry is not None and not isinstance(entry, Mapping):
        raise fail(f"[model_providers.{pid}] is not a table")
    auth = auth if isinstance(auth, Mapping) else {}
    auth_key = nonblank(auth.get("OPENAI_API_KEY"))
    wire: str | None = None

    if entry is None:
        if pid != "openai":
            if pid in BUILTIN_CODEX_PROVIDERS:
                raise skip(f"uses Codex's built-in provider {pid!r} (a local server without a key); nothing to import")
            raise fail(f"model_provider = {pid!r} but there is no [model_providers.{pid}] table")
        if auth_key is None:
            if auth.get("tokens"):
                raise skip("signs in with a ChatGPT account (auth tokens), which ccs does not import")
            raise skip("the built-in OpenAI provider without an API key; nothing to import")
        base_url = routing(cfg, "openai_base_url", "") or OPENAI_DEFAULT_URL
        provider_name: str | None = "OpenAI"
        entry = {}
    else:
        base_url = routing(entry, "base_url", f"[model_providers.{pid}] ")
        if base_url is None:
            raise fail(f"[model_providers.{pid}] has no base_url")
        provider_name = nonblank(entry.get("name"))
        wire = nonblank(entry.get("wire_api"))
        if wire not in (None, "responses", "chat"):
            warnings.append(f"wire_api = {wire!r} is unknown; the profile uses \"responses\"")
        ignored = sorted(k for k in ("query_params", "http_headers", "env_http_headers") if entry.get(k))
        if ignored:
            warnings.append(f"[model_providers.{pid}] {', '.join(ignored)} not imported (profiles have no such field)")

    provider_id: str | None = pid
    if pid in BUILTIN_CODEX_PROVIDERS:
        provider_id = None
        if entry:
            warnings.append(f"provider id {pid!r} is built into Codex, which refuses such an entry; "
                            "the profile uses its own id")
    elif not PROVIDER_ID_RE.fullmatch(pid):
        warnings.append(f"provider id {pid!r} is not usable; the profile uses its own id")
        provider_id = None

    model = routing(cfg, "model", "")
    if model is None:
        raise fail("no `model` in the Codex config; a profile needs one")
    effort = nonblank(cfg.get("model_reasoning_effort"))
    if effort is not None and effort not in REASONING_EFFORTS:
        warnings.append(f"model_reasoning_effort = {effort!r} is not one of {', '.join(REASONING_EFFORTS)}; dropped")
        effort = None

    key, key_from = None, None
    bearer = nonblank(entry.get("experimental_bearer_token"))
    env_key = nonblank(entry.get("env_key"))
    if bearer:
        key, key_from = bearer, "config"
    elif env_key:  # Codex sends the value of env_key, whatever auth.json holds
        key = nonblank(environ.get(env_key))
        key_from = f"env:{env_key}" if key else None
        if key is None and auth_key:
            key, key_from = auth_key, "auth"
            warnings.append(f"the provider reads its key from ${env_key}, which is not set here; the key in "
                            "auth.json was imported instead")
        elif key is None:
            warnings.append(f"the key is read from ${env_key}, which is not set here")
    elif auth_key:
        key, key_from = auth_key, "auth"

    # A Chat Completions provider stays one: ccs's bridge translates for Codex (wire_api = "chat").
    fields = CodexFields(base_url=base_url.rstrip("/"), model=model, provider_id=provider_id,
                         reasoning_effort=effort, wire_api="chat" if wire == "chat" else "responses")
    return CodexParse(fields=fields, provider_name=provider_name, key=key, key_from=key_from, warnings=warnings)


def parse_toml_text(text: str) -> dict[str, Any]:
    """A TOML text → plain dict; a syntax error → RowProblem naming line and column."""
    import tomlkit
    from tomlkit.exceptions import ParseError

    try:
        return tomlkit.parse(text).unwrap()
    except RecursionError:
        raise fail("config is nested too deeply for ccs to read") from None
    except ParseError as exc:
        msg = str(exc).split(" at line ")[0]
        raise fail(f"config is not valid TOML (line {exc.line}, column {exc.col}: {msg})") from None

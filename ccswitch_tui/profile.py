"""Profiles (schema 1): the dataclasses and the validation that turns a TOML table into one.

Validation names the place of every problem (``name.toml: [codex].provider_id ...``) and refuses
unknown fields, with a did-you-mean where one is close.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import ProfileError, UsageError

SCHEMA = 1
NAME_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
KEY_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,127}")
ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
INHERIT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\*?")
PROVIDER_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
SECRET_NAME_RE = re.compile(r".*(_API_KEY|_TOKEN|_SECRET|_PASSWORD)$|^(API_KEY|TOKEN|SECRET|PASSWORD)$")

# Ids Codex reserves: a [model_providers.<id>] entry with one of them stops Codex at start-up
# ("reserved built-in provider IDs"); amazon-bedrock accepts only a few fields. oss and azure are free ids.
BUILTIN_CODEX_PROVIDERS = frozenset({"openai", "ollama", "lmstudio", "amazon-bedrock"})
CLAUDE_AUTH = ("token", "api-key")
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
WIRE_APIS = ("responses", "chat")  # chat: Codex talks Responses to ccs's bridge, which talks Chat Completions
RUN_EXPORTS = ("openai", "anthropic")
TOOLS = ("claude", "codex", "run")
CLAUDE_MODEL_VARS = {  # the variable Claude Code reads → the [claude] field that sets it
    "ANTHROPIC_MODEL": "model",
    "ANTHROPIC_DEFAULT_OPUS_MODEL": "opus",
    "ANTHROPIC_DEFAULT_SONNET_MODEL": "sonnet",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL": "haiku",
    "CLAUDE_CODE_SUBAGENT_MODEL": "subagent",
}


@dataclass(frozen=True)
class Provider:
    name: str
    base_url: str
    key: str
    website: str | None = None

    @property
    def key_env_var(self) -> str | None:
        """The variable named by ``key = "env:VAR"``, or None for a keyring key."""
        return self.key[4:] if self.key.startswith("env:") else None


@dataclass(frozen=True)
class ClaudeSide:
    base_url: str
    auth: str = "token"
    model: str | None = None
    opus: str | None = None
    sonnet: str | None = None
    haiku: str | None = None
    subagent: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)

    def model_vars(self) -> dict[str, str]:
        pairs = {var: getattr(self, f) for var, f in CLAUDE_MODEL_VARS.items()}
        return {k: v for k, v in pairs.items() if v}


@dataclass(frozen=True)
class CodexSide:
    base_url: str
    model: str
    provider_id: str
    reasoning_effort: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    wire_api: str = "responses"  # what the provider speaks: "responses", or "chat" (Chat Completions)


@dataclass(frozen=True)
class RunSide:
    export: tuple[str, ...] = ()
    model: str | None = None


@dataclass(frozen=True)
class Profile:
    name: str
    provider: Provider
    description: str = ""
    claude: ClaudeSide | None = None
    codex: CodexSide | None = None
    run: RunSide = field(default_factory=RunSide)
    env: Mapping[str, str] = field(default_factory=dict)
    inherit: tuple[str, ...] = ()
    record: bool = False  # [policy].record: launches go through the recording bridge by default
    secrets: Mapping[str, str] = field(default_factory=dict)  # [secrets]: VARIABLE → key id (secondary.py)
    quiet: bool | None = None  # [policy].quiet; None: on for every provider but the official ones
    share: tuple[str, ...] | None = None  # [policy].share; None: the default pieces (see share.py)

    @property
    def tools(self) -> tuple[str, ...]:
        """The tools this profile serves, in a fixed order. ``run`` is always served."""
        served = [t for t in ("claude", "codex") if getattr(self, t) is not None]
        return (*served, "run")

    @property
    def key_id(self) -> str:
        return self.provider.key

    def base_urls(self) -> dict[str, str]:
        urls = {"provider": self.provider.base_url}
        if self.claude:
            urls["claude"] = self.claude.base_url
        if self.codex:
            urls["codex"] = self.codex.base_url
        return urls


def check_name(name: str) -> str:
    """Refuse any profile name that is not ``[a-z0-9][a-z0-9._-]{0,63}`` (before any path is built)."""
    if not isinstance(name, str) or not NAME_RE.fullmatch(name) or name in (".", ".."):
        raise UsageError(
            f"invalid profile name {name!r}: use 1-64 characters of a-z, 0-9, '.', '_', '-', "
            "starting with a letter or digit"
        )
    return name


def looks_like_a_key(text: str) -> bool:
    """A key id that is probably a key pasted in the wrong place (it would end up in a file)."""
    from .shapes import looks_like_key

    return looks_like_key(text)


def key_looks_pasted(key_id: str) -> str:
    return (f"key id '{key_id[:3]}…{key_id[-4:]}' looks like a key itself; a key id is a name "
            "(e.g. taotoken) and the key goes into the keyring with `ccs key set ID`")


def check_key_id(key_id: str) -> str:
    if isinstance(key_id, str) and looks_like_a_key(key_id):  # first: the key itself is never echoed
        raise UsageError(key_looks_pasted(key_id))
    if not isinstance(key_id, str) or not KEY_ID_RE.fullmatch(key_id):
        raise UsageError(
            f"invalid key id {key_id!r}: use 1-128 characters of A-Z, a-z, 0-9, '.', '_', '@', '-'"
        )
    if looks_like_a_key(key_id):
        raise UsageError(key_looks_pasted(key_id))
    return key_id


def default_provider_id(profile_name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", profile_name).strip("-") or "ccs"
    return f"{slug}-ccs" if slug in BUILTIN_CODEX_PROVIDERS else slug


# --- validation -----------------------------------------------------------------------------

_TOP = ("schema", "description", "provider", "claude", "codex", "run", "env", "policy", "secrets")
_PROVIDER = ("name", "base_url", "key", "website")
_CLAUDE = ("base_url", "auth", "model", "opus", "sonnet", "haiku", "subagent", "env")
_CODEX = ("base_url", "model", "provider_id", "reasoning_effort", "wire_api", "env")
_RUN = ("export", "model")
_POLICY = ("inherit", "record", "quiet", "share")


class _Checker:
    def __init__(self, where: str):
        self.where = where

    def fail(self, msg: str) -> ProfileError:
        return ProfileError(f"{self.where}: {msg}")

    def table(self, data: Any, path: str, allowed: tuple[str, ...]) -> Mapping[str, Any]:
        if not isinstance(data, Mapping):
            raise self.fail(f"{path} must be a table")
        for k in data:
            if k not in allowed:
                hint = difflib.get_close_matches(str(k), allowed, n=1)
                label = f"{path}.{k}" if path != "top level" else str(k)
                extra = f"; did you mean {hint[0]!r}?" if hint else f"; allowed: {', '.join(allowed)}"
                raise self.fail(f"unknown field {label}{extra}")
        return data

    def string(self, data: Mapping[str, Any], key: str, path: str, required: bool = False) -> str | None:
        value = data.get(key)
        if value is None:
            if required:
                raise self.fail(f"{path}.{key} is required")
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"{path}.{key} must be a non-empty string")
        return str(value)

    def url(self, data: Mapping[str, Any], key: str, path: str, required: bool = False) -> str | None:
        value = self.string(data, key, path, required)
        if value is None:
            return None
        if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", value):
            raise self.fail(f"{path}.{key} {value!r} is not an http(s) URL like https://host/path")
        return value

    def choice(self, data: Mapping[str, Any], key: str, path: str, choices: tuple[str, ...]) -> str | None:
        value = self.string(data, key, path)
        if value is not None and value not in choices:
            raise self.fail(f"{path}.{key} {value!r} must be one of: {', '.join(choices)}")
        return value

    def env_table(self, data: Any, path: str) -> dict[str, str]:
        if data is None:
            return {}
        if not isinstance(data, Mapping):
            raise self.fail(f"{path} must be a table of NAME = \"value\"")
        out: dict[str, str] = {}
        for k, v in data.items():
            if not ENV_NAME_RE.fullmatch(str(k)):
                raise self.fail(f"{path}.{k} is not a valid environment variable name")
            if not isinstance(v, str):
                raise self.fail(f"{path}.{k} must be a string (quote it: {k} = \"{v}\")")
            if SECRET_NAME_RE.match(str(k).upper()):
                raise self.fail(
                    f"{path}.{k} looks like a secret; keys belong in the keyring "
                    f"(provider.key + `ccs key set`), not in a profile file"
                )
            out[str(k)] = str(v)
        return out

    def string_list(self, data: Mapping[str, Any], key: str, path: str) -> list[str]:
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise self.fail(f"{path}.{key} must be a list of strings")
        return [str(x) for x in value]


def profile_from_data(name: str, data: Mapping[str, Any], where: str | None = None) -> Profile:
    """Validate a parsed schema-1 document and build a Profile. Raises ProfileError naming the place."""
    from .secondary import read_table as read_secrets
    from .secret_rules import check_document

    check_name(name)
    check_document(data, where or f"{name}.toml")  # keys, URL credentials, routing globs: refused first
    c = _Checker(where or f"{name}.toml")
    c.table(data, "top level", _TOP)
    schema = data.get("schema", SCHEMA)
    if type(schema) is not int or schema != SCHEMA:  # 1.0 and true equal 1 in Python, not in TOML
        raise c.fail(f"schema = {schema!r} is not supported; this ccs reads schema = {SCHEMA}")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise c.fail("description must be a string")

    if "provider" not in data:
        raise c.fail("[provider] table is required (name, base_url, key)")
    p = c.table(data["provider"], "[provider]", _PROVIDER)
    key = c.string(p, "key", "[provider]", required=True)
    assert key is not None
    if key.startswith("env:"):
        if not ENV_NAME_RE.fullmatch(key[4:]):
            raise c.fail(f"[provider].key {key!r}: after env: comes a variable name, e.g. env:TAOTOKEN_KEY")
    elif looks_like_a_key(key):
        raise c.fail(f"[provider].{key_looks_pasted(key)}")
    elif not KEY_ID_RE.fullmatch(key):
        raise c.fail(
            f"[provider].key {key!r} is not a key id; use letters, digits, '.', '_', '@', '-' "
            "(the key itself goes in the keyring: ccs key set ID)"
        )
    provider = Provider(
        name=str(c.string(p, "name", "[provider]", required=True)),
        base_url=str(c.url(p, "base_url", "[provider]", required=True)),
        key=key,
        website=c.url(p, "website", "[provider]"),
    )

    claude = None
    if "claude" in data:
        t = c.table(data["claude"], "[claude]", _CLAUDE)
        claude = ClaudeSide(
            base_url=c.url(t, "base_url", "[claude]") or provider.base_url,
            auth=c.choice(t, "auth", "[claude]", CLAUDE_AUTH) or "token",
            model=c.string(t, "model", "[claude]"),
            opus=c.string(t, "opus", "[claude]"),
            sonnet=c.string(t, "sonnet", "[claude]"),
            haiku=c.string(t, "haiku", "[claude]"),
            subagent=c.string(t, "subagent", "[claude]"),
            env=c.env_table(t.get("env"), "[claude.env]"),
        )

    codex = None
    if "codex" in data:
        t = c.table(data["codex"], "[codex]", _CODEX)
        pid = c.string(t, "provider_id", "[codex]") or default_provider_id(name)
        if pid in BUILTIN_CODEX_PROVIDERS:
            raise c.fail(f'[codex].provider_id "{pid}" is a built-in Codex provider id; pick another')
        if not PROVIDER_ID_RE.fullmatch(pid):
            raise c.fail(f"[codex].provider_id {pid!r} may hold only letters, digits, '_' and '-'")
        codex = CodexSide(
            base_url=c.url(t, "base_url", "[codex]") or provider.base_url,
            model=str(c.string(t, "model", "[codex]", required=True)),
            provider_id=pid,
            reasoning_effort=c.choice(t, "reasoning_effort", "[codex]", REASONING_EFFORTS),
            env=c.env_table(t.get("env"), "[codex.env]"),
            wire_api=c.choice(t, "wire_api", "[codex]", WIRE_APIS) or "responses",
        )

    run = RunSide()
    if "run" in data:
        t = c.table(data["run"], "[run]", _RUN)
        exports = c.string_list(t, "export", "[run]")
        for e in exports:
            if e not in RUN_EXPORTS:
                raise c.fail(f"[run].export {e!r} must be one of: {', '.join(RUN_EXPORTS)}")
        run = RunSide(export=tuple(dict.fromkeys(exports)), model=c.string(t, "model", "[run]"))

    inherit: list[str] = []
    record = False
    quiet: bool | None = None
    share: tuple[str, ...] | None = None
    if "policy" in data:
        t = c.table(data["policy"], "[policy]", _POLICY)
        inherit = c.string_list(t, "inherit", "[policy]")
        record = t.get("record", False)
        if not isinstance(record, bool):
            raise c.fail(f"[policy].record must be true or false, not {record!r}")
        for n in inherit:
            if not INHERIT_RE.fullmatch(n):
                raise c.fail(f"[policy].inherit {n!r} must be a variable name or a NAME_* prefix glob")
        if "quiet" in t:
            if not isinstance(t["quiet"], bool):
                raise c.fail("[policy].quiet must be true or false")
            quiet = bool(t["quiet"])
        if "share" in t:
            share = _share_value(c, t["share"])

    return Profile(
        name=name,
        provider=provider,
        description=description,
        claude=claude,
        codex=codex,
        run=run,
        env=c.env_table(data.get("env"), "[env]"),
        inherit=tuple(inherit),
        record=record,
        secrets=read_secrets(data, c.where),
        quiet=quiet,
        share=share,
    )


def _share_value(c: _Checker, value: Any) -> tuple[str, ...]:
    """``share = true`` (the default pieces), ``false`` (nothing) or a list of piece names."""
    from .share import DEFAULT_PIECES, PIECES

    if isinstance(value, bool):
        return DEFAULT_PIECES if value else ()
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise c.fail(f"[policy].share must be true, false or a list of: {', '.join(PIECES)}")
    for x in value:
        if x not in PIECES:
            hint = difflib.get_close_matches(x, PIECES, n=1)
            more = f"did you mean {hint[0]!r}?" if hint else f"choose from: {', '.join(PIECES)}"
            raise c.fail(f"[policy].share {x!r} is not a piece ccs can share; {more}")
    return tuple(dict.fromkeys(str(x) for x in value))

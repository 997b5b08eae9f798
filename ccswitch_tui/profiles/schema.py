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

from ccswitch_tui.errors import ProfileError, UsageError

SCHEMA = 1
NAME_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
KEY_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,127}")
ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
INHERIT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\*?")
SECRET_NAME_RE = re.compile(r".*(_API_KEY|_TOKEN|_SECRET|_PASSWORD)$|^(API_KEY|TOKEN|SECRET|PASSWORD)$")


@dataclass(frozen=True)
class Provider:
    name: str
    base_url: str
    key: str  # a key id in the keyring, or "env:VAR"
    website: str | None = None

    @property
    def key_env_var(self) -> str | None:
        """The variable named by ``key = "env:VAR"``, or None for a keyring key."""
        return env_var_of(self.key)


def env_var_of(key_ref: str) -> str | None:
    """``env:VAR`` → ``VAR``; None for a keyring key id."""
    return key_ref[4:] if key_ref.startswith("env:") else None


@dataclass(frozen=True)
class Profile:
    """One profile. ``sides`` maps each client the profile serves to its side (the dataclass its
    ``tools/<name>.py`` spec builds from the table of that name); ``run`` is always there.
    ``profile.<client>`` reads ``sides`` (None when the profile does not serve that client)."""

    name: str
    provider: Provider
    description: str = ""
    sides: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    inherit: tuple[str, ...] = ()
    record: bool = False  # [policy].record: launches go through the recording bridge by default
    secrets: Mapping[str, str] = field(default_factory=dict)  # [secrets]: VARIABLE → key id (secondary.py)
    quiet: bool | None = None  # [policy].quiet; None: on for every provider but the official ones
    share: tuple[str, ...] | None = None  # [policy].share; None: the default pieces (see share.py)
    pricing: Mapping[str, Any] = field(default_factory=dict)  # [pricing]: model → pricing.Price

    def __getattr__(self, name: str) -> Any:
        # only reached for names that are not fields: a registered client's side, or None
        if not name.startswith("_") and name != "sides":
            from ccswitch_tui.tools import get, names

            if name in names():
                side = self.sides.get(name)
                return side if side is not None else get(name).default_side(self.provider)
        raise AttributeError(name)

    def side(self, tool: str) -> Any | None:
        return self.sides.get(tool)

    @property
    def tools(self) -> tuple[str, ...]:
        """The tools this profile serves, in the registry's order. ``run`` is always served."""
        from ccswitch_tui.tools import names

        return tuple(t for t in names() if t in self.sides)

    @property
    def key_id(self) -> str:
        return self.provider.key

    def base_urls(self) -> dict[str, str]:
        from ccswitch_tui.tools import get

        urls = {"provider": self.provider.base_url}
        for tool, side in self.sides.items():
            url = get(tool).base_url(side)
            if url:
                urls[tool] = url
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
    from ccswitch_tui.policy.shapes import looks_like_key

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


# --- validation -----------------------------------------------------------------------------

_TOP = ("schema", "description", "provider", "env", "policy", "secrets", "pricing")  # and one table per client
_PROVIDER = ("name", "base_url", "key", "website")
_POLICY = ("inherit", "record", "quiet", "share")


class Checker:
    """Field checks that name the place of every problem; a client spec validates its table with it."""

    def __init__(self, where: str):
        self.where = where

    def fail(self, msg: str, field: str | None = None) -> ProfileError:
        """``field``: the place as ``[table].name`` (``[codex.env].X``), for the editor to point at."""
        return ProfileError(f"{self.where}: {msg}", field=field)

    def table(self, data: Any, path: str, allowed: tuple[str, ...]) -> Mapping[str, Any]:
        if not isinstance(data, Mapping):
            raise self.fail(f"{path} must be a table", path)
        for k in data:
            if k not in allowed:
                hint = difflib.get_close_matches(str(k), allowed, n=1)
                label = f"{path}.{k}" if path != "top level" else str(k)
                extra = f"; did you mean {hint[0]!r}?" if hint else f"; allowed: {', '.join(allowed)}"
                raise self.fail(f"unknown field {label}{extra}", label)
        return data

    def string(self, data: Mapping[str, Any], key: str, path: str, required: bool = False) -> str | None:
        value = data.get(key)
        if value is None:
            if required:
                raise self.fail(f"{path}.{key} is required", f"{path}.{key}")
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"{path}.{key} must be a non-empty string", f"{path}.{key}")
        return str(value)

    def url(self, data: Mapping[str, Any], key: str, path: str, required: bool = False) -> str | None:
        value = self.string(data, key, path, required)
        if value is None:
            return None
        if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", value):
            raise self.fail(f"{path}.{key} {value!r} is not an http(s) URL like https://host/path", f"{path}.{key}")
        return value

    def choice(self, data: Mapping[str, Any], key: str, path: str, choices: tuple[str, ...]) -> str | None:
        value = self.string(data, key, path)
        if value is not None and value not in choices:
            raise self.fail(f"{path}.{key} {value!r} must be one of: {', '.join(choices)}", f"{path}.{key}")
        return value

    def boolean(self, data: Mapping[str, Any], key: str, path: str) -> bool | None:
        value = data.get(key)
        if value is not None and not isinstance(value, bool):
            raise self.fail(f"{path}.{key} must be true or false, not {value!r}", f"{path}.{key}")
        return value

    def env_table(self, data: Any, path: str) -> dict[str, str]:
        if data is None:
            return {}
        if not isinstance(data, Mapping):
            raise self.fail(f"{path} must be a table of NAME = \"value\"", path)
        out: dict[str, str] = {}
        for k, v in data.items():
            if not ENV_NAME_RE.fullmatch(str(k)):
                raise self.fail(f"{path}.{k} is not a valid environment variable name", f"{path}.{k}")
            if not isinstance(v, str):
                raise self.fail(f"{path}.{k} must be a string (quote it: {k} = \"{v}\")", f"{path}.{k}")
            if SECRET_NAME_RE.match(str(k).upper()):
                raise self.fail(
                    f"{path}.{k} looks like a secret; keys belong in the keyring "
                    f"(provider.key + `ccs key set`), not in a profile file", f"{path}.{k}"
                )
            out[str(k)] = str(v)
        return out

    def string_list(self, data: Mapping[str, Any], key: str, path: str) -> list[str]:
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise self.fail(f"{path}.{key} must be a list of strings", f"{path}.{key}")
        return [str(x) for x in value]


def profile_from_data(name: str, data: Mapping[str, Any], where: str | None = None) -> Profile:
    """Validate a parsed schema-1 document and build a Profile. Raises ProfileError naming the place.
    Each client's table is validated by its spec (``tools/<name>.py``)."""
    from ccswitch_tui.keys.extra import read_table as read_secrets
    from ccswitch_tui.pricing import read_table as read_pricing
    from ccswitch_tui.profiles.secret_rules import check_document
    from ccswitch_tui.tools import specs

    check_name(name)
    check_document(data, where or f"{name}.toml")  # keys, URL credentials, routing globs: refused first
    c = Checker(where or f"{name}.toml")
    clients = specs()
    c.table(data, "top level", (*_TOP[:3], *(s.name for s in clients), *_TOP[3:]))
    schema = data.get("schema", SCHEMA)
    if type(schema) is not int or schema != SCHEMA:  # 1.0 and true equal 1 in Python, not in TOML
        raise c.fail(f"schema = {schema!r} is not supported; this ccs reads schema = {SCHEMA}", "schema")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise c.fail("description must be a string", "description")

    if "provider" not in data:
        raise c.fail("[provider] table is required (name, base_url, key)", "[provider]")
    p = c.table(data["provider"], "[provider]", _PROVIDER)
    key = c.string(p, "key", "[provider]", required=True)
    assert key is not None
    if key.startswith("env:"):
        if not ENV_NAME_RE.fullmatch(key[4:]):
            raise c.fail(f"[provider].key {key!r}: after env: comes a variable name, e.g. env:TAOTOKEN_KEY",
                         "[provider].key")
    elif looks_like_a_key(key):
        raise c.fail(f"[provider].{key_looks_pasted(key)}", "[provider].key")
    elif not KEY_ID_RE.fullmatch(key):
        raise c.fail(
            f"[provider].key {key!r} is not a key id; use letters, digits, '.', '_', '@', '-' "
            "(the key itself goes in the keyring: ccs key set ID)", "[provider].key"
        )
    provider = Provider(
        name=str(c.string(p, "name", "[provider]", required=True)),
        base_url=str(c.url(p, "base_url", "[provider]", required=True)),
        key=key,
        website=c.url(p, "website", "[provider]"),
    )

    sides: dict[str, Any] = {}
    for spec in clients:
        if spec.name in data:
            t = c.table(data[spec.name], f"[{spec.name}]", spec.fields)
            sides[spec.name] = spec.parse(t, c, provider, name)
        elif (default := spec.default_side(provider)) is not None:
            sides[spec.name] = default

    inherit: list[str] = []
    record = False
    quiet: bool | None = None
    share: tuple[str, ...] | None = None
    if "policy" in data:
        t = c.table(data["policy"], "[policy]", _POLICY)
        inherit = c.string_list(t, "inherit", "[policy]")
        record = bool(c.boolean(t, "record", "[policy]"))
        for n in inherit:
            if not INHERIT_RE.fullmatch(n):
                raise c.fail(f"[policy].inherit {n!r} must be a variable name or a NAME_* prefix glob",
                             "[policy].inherit")
        quiet = c.boolean(t, "quiet", "[policy]")
        if "share" in t:
            share = _share_value(c, t["share"])

    return Profile(
        name=name,
        provider=provider,
        description=description,
        sides=sides,
        env=c.env_table(data.get("env"), "[env]"),
        inherit=tuple(inherit),
        record=record,
        secrets=read_secrets(data, c.where),
        quiet=quiet,
        share=share,
        pricing=read_pricing(data, c.where),
    )


def _share_value(c: Checker, value: Any) -> tuple[str, ...]:
    """``share = true`` (the default pieces), ``false`` (nothing) or a list of piece names."""
    from ccswitch_tui.tools.share import DEFAULT_PIECES, PIECES

    if isinstance(value, bool):
        return DEFAULT_PIECES if value else ()
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise c.fail(f"[policy].share must be true, false or a list of: {', '.join(PIECES)}", "[policy].share")
    for x in value:
        if x not in PIECES:
            hint = difflib.get_close_matches(x, PIECES, n=1)
            more = f"did you mean {hint[0]!r}?" if hint else f"choose from: {', '.join(PIECES)}"
            raise c.fail(f"[policy].share {x!r} is not a piece ccs can share; {more}", "[policy].share")
    return tuple(dict.fromkeys(str(x) for x in value))

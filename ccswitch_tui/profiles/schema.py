"""Profiles (schema 1): the validation that turns a parsed TOML document into a ``model.Profile``.

Validation names the place of every problem (``name.toml: [codex].provider_id ...``) and refuses
unknown fields, with a did-you-mean where one is close. Before the fields, the whole document is
checked for what a profile file may never hold — keys by their shape anywhere (a key id, a model, an
``[env]`` value, a description), credentials inside URLs, values of secret-named variables in any
env table, ``policy.inherit`` globs reaching routing, loader or trust variables — so the line a user
sees for a pasted key says where keys belong. Each client's table is validated by its spec, from the
registry the profile is read with: a registry that has loaded one spec (the launch path) validates
that client's table at once and another client's when something reads it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ccswitch_tui import policy, tools
from ccswitch_tui.errors import ProfileError
from ccswitch_tui.model import Profile, Provider, Sides
from ccswitch_tui.policy.families import Families
from ccswitch_tui.policy.shapes import URL_CREDENTIALS_HINT, LazyPattern, looks_like_key, url_secrets
from ccswitch_tui.profiles.pricing import read_table as read_pricing
from ccswitch_tui.tools.capabilities import ServingUnasked
from ccswitch_tui.tools.checker import (
    ENV_NAME_RE,
    INHERIT_RE,
    KEY_ID_RE,
    Checker,
    check_name,
    key_looks_pasted,
    looks_like_a_key,
)
from ccswitch_tui.tools.share import DEFAULT_PIECES, PIECES

if TYPE_CHECKING:
    from ccswitch_tui.tools.registry import Registry

SCHEMA = 1
_LONG_TOKEN = LazyPattern(r"[A-Za-z0-9+/_.~-]{20}")


def env_table_paths(clients: Iterable[str]) -> tuple[str, ...]:
    """Where a document holds variables: ``env`` and each client's ``<client>.env``."""
    return ("env", *(f"{name}.env" for name in clients))


def _leaves(data: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    if isinstance(data, Mapping):
        for k, v in data.items():
            yield from _leaves(v, (*path, str(k)))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _leaves(v, (*path, str(i)))
    elif isinstance(data, str):
        yield path, data


def label(path: tuple[str, ...]) -> str:
    """``[provider].base_url``, ``[claude.env].X``, ``description``, ``[policy].inherit[0]``."""
    if len(path) == 1:
        return path[0]
    if path[-1].isdigit():
        return f"{label(path[:-1])}[{path[-1]}]"
    return f"[{'.'.join(path[:-1])}].{path[-1]}"


def value_problem(path: tuple[str, ...], value: str, clients: Iterable[str] = ()) -> str | None:
    """Why this value may not be in a profile file, or None. ``clients``: the registered names (whose
    ``<client>.env`` tables hold variables, as ``[env]`` does)."""
    stripped = value.strip()
    if stripped.startswith("env:") and (path == ("provider", "key") or path[:1] == ("secrets",)):
        return None  # names a variable of ccs's own environment: a name, not a value
    is_url = re.match(r"[A-Za-z][A-Za-z0-9+.-]{0,31}://\S*$", stripped) is not None
    if is_url:
        found = url_secrets(stripped)
        if found:
            return f"{label(path)} holds a credential in its URL ({', '.join(found)}); {URL_CREDENTIALS_HINT}"
    elif _LONG_TOKEN.search(value) and looks_like_key(value):
        if path == ("provider", "key"):
            return ("[provider].key looks like a key itself; a key id is a name (e.g. taotoken) and the key "
                    "goes into the keyring with `ccs key set ID`")
        return (f"{label(path)} holds a value shaped like a key; keys belong in the keyring: `ccs key set ID`, "
                f"then name the id in the profile ([provider].key, or a [secrets] entry VARIABLE = \"ID\")")
    in_env_table = len(path) >= 2 and ".".join(path[:-1]) in env_table_paths(clients)
    if not in_env_table or is_url or not policy.is_secret(path[-1], value):
        return None
    if policy.secret_name(path[-1]):
        return (f"{label(path)} looks like a secret; keys belong in the keyring: `ccs key set ID`, "
                f"then a [secrets] entry {path[-1]} = \"ID\"")
    return (f"{label(path)} holds a credential (a header, or a URL with a password); keys belong in the "
            "keyring: `ccs key set ID`, then a [secrets] entry naming the variable and that id")


def check_document(data: Any, where: str, clients: Iterable[str], families: Families) -> None:
    """Raise ProfileError (``where: what; where keys belong``) for the first secret or open door."""
    if not isinstance(data, Mapping):
        return
    clients = tuple(clients)
    for path, value in _leaves(data):
        problem = value_problem(path, value, clients)
        if problem:
            raise ProfileError(f"{where}: {problem}", field=label(path))
    table = data.get("policy")
    inherit = table.get("inherit") if isinstance(table, Mapping) else None
    if isinstance(inherit, list):
        for pattern in inherit:
            problem = policy.inherit_problem(pattern, families) if isinstance(pattern, str) else None
            if problem:
                raise ProfileError(f"{where}: {problem}", field="[policy].inherit")


def read_secrets_table(doc: Mapping[str, Any], where: str, clients: Iterable[str]) -> dict[str, str]:
    """The validated ``[secrets]`` table of a profile document: variable name → key id or ``env:VAR``."""
    data = doc.get("secrets")
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ProfileError(f'{where}: [secrets] must be a table of VARIABLE = "key-id"', field="[secrets]")
    out: dict[str, str] = {}
    for name, ref in data.items():
        name = str(name)
        if not ENV_NAME_RE.fullmatch(name):
            raise ProfileError(f"{where}: [secrets].{name} is not a valid environment variable name",
                               field=f"[secrets].{name}")
        if name.startswith("CCS_"):
            raise ProfileError(f"{where}: [secrets].{name}: CCS_* variables are set by ccs itself",
                               field=f"[secrets].{name}")
        ok = isinstance(ref, str) and (
            ENV_NAME_RE.fullmatch(ref[4:]) if ref.startswith("env:") else KEY_ID_RE.fullmatch(ref))
        if not ok:
            raise ProfileError(
                f"{where}: [secrets].{name} must name a key id (letters, digits, '.', '_', '@', '-') or env:VAR, "
                f"e.g. {name} = \"{name.lower().replace('_', '-')}\", and the key goes in with `ccs key set ID`")
        for table in ("env", *clients):
            t = doc.get(table)
            env = (t if table == "env" else t.get("env")) if isinstance(t, Mapping) else None
            if isinstance(env, Mapping) and name in env:
                label = "[env]" if table == "env" else f"[{table}.env]"
                raise ProfileError(f"{where}: {name} is both in [secrets] and in {label}; keep it in [secrets] only",
                                   field=f"{label}.{name}")
        out[name] = ref
    return out


# --- validation -----------------------------------------------------------------------------

_TOP = ("schema", "description", "provider", "env", "policy", "secrets", "pricing")  # and one table per client
_PROVIDER = ("name", "base_url", "key", "website")
_POLICY = ("inherit", "record", "quiet", "share", "trust")


def profile_from_data(name: str, data: Mapping[str, Any], where: str | None = None,  # noqa: C901
                      registry: Registry | None = None) -> Profile:
    """Validate a parsed schema-1 document and build a Profile. Raises ProfileError naming the place.
    Each client's table is validated by its spec (``tools/<name>.py``), from ``registry`` (default:
    every spec): at once when the registry has loaded the spec, else when the side is first used."""

    registry = registry or tools.load()
    clients = registry.names()
    check_name(name)
    # keys, URL credentials, routing globs: refused first
    check_document(data, where or f"{name}.toml", clients, registry.families)
    c = Checker(where or f"{name}.toml", registry.families)
    c.table(data, "top level", (*_TOP[:3], *clients, *_TOP[3:]))
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

    def side(tool: str) -> Any:
        spec = registry.get(tool)
        if tool not in data:
            return spec.default_side(provider) if isinstance(spec, ServingUnasked) else None
        return spec.parse(c.table(data[tool], f"[{tool}]", spec.field_names), c, provider, name)

    served = [n for n in clients if n in data or registry.serves_by_default(n)]
    built = {n: side(n) for n in served if registry.loaded(n)}
    sides: Mapping[str, Any] = built if len(built) == len(served) else Sides(tuple(served), built, side)

    inherit: list[str] = []
    record = False
    quiet: bool | None = None
    share: tuple[str, ...] | None = None
    trust = True
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
        trust = c.boolean(t, "trust", "[policy]") is not False

    return Profile(
        name=name,
        provider=provider,
        description=description,
        sides=sides,
        env=c.env_table(data.get("env"), "[env]"),
        inherit=tuple(inherit),
        record=record,
        secrets=read_secrets_table(data, c.where, clients),
        quiet=quiet,
        share=share,
        trust=trust,
        pricing=read_pricing(data, c.where),
    )


def _share_value(c: Checker, value: Any) -> tuple[str, ...]:
    """``share = true`` (the default pieces), ``false`` (nothing) or a list of piece names."""

    if isinstance(value, bool):
        return DEFAULT_PIECES if value else ()
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise c.fail(f"[policy].share must be true, false or a list of: {', '.join(PIECES)}", "[policy].share")
    for x in value:
        if x not in PIECES:
            import difflib  # lazy: only a misspelt piece pays for it

            hint = difflib.get_close_matches(x, PIECES, n=1)
            more = f"did you mean {hint[0]!r}?" if hint else f"choose from: {', '.join(PIECES)}"
            raise c.fail(f"[policy].share {x!r} is not a piece ccs can share; {more}", "[policy].share")
    return tuple(dict.fromkeys(str(x) for x in value))


def configured_tools(profile: Profile, registry: Registry | None = None) -> tuple[str, ...]:
    """The tools the profile sets up itself: every side but one a spec supplies for a missing table
    (``ccs run``'s, which exports nothing). Such a side still launches; it is neither listed as a
    tool the profile serves nor a problem of the profile. ``registry``: the one the profile was read
    with (default: every spec)."""
    registry = registry or tools.load()
    names = registry.names()
    def unasked(tool: str) -> object:
        spec = registry.get(tool)
        return spec.default_side(profile.provider) if isinstance(spec, ServingUnasked) else None

    return tuple(t for t, side in profile.sides.items() if t not in names or side != unasked(t))

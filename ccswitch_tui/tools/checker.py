"""Field checks shared by the profile schema and every client spec's table: profile names, key
ids, variable names, and ``Checker``, which names the place of every problem
(``name.toml: [codex].provider_id ...``) and refuses unknown fields with a did-you-mean."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ccswitch_tui.errors import ProfileError, UsageError
from ccswitch_tui.policy.families import Families
from ccswitch_tui.policy.shapes import looks_like_key

NAME_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
KEY_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,127}")
ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
INHERIT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\*?")


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



class Checker:
    """Field checks that name the place of every problem; a client spec validates its table with it.
    ``families``: the routing families of the registry the profile is read with (a field that names a
    variable is checked against every client's)."""

    def __init__(self, where: str, families: Families):
        self.where = where
        self.families = families

    def fail(self, msg: str, field: str | None = None) -> ProfileError:
        """``field``: the place as ``[table].name`` (``[codex.env].X``), for the editor to point at."""
        return ProfileError(f"{self.where}: {msg}", field=field)

    def table(self, data: Any, path: str, allowed: tuple[str, ...]) -> Mapping[str, Any]:
        if not isinstance(data, Mapping):
            raise self.fail(f"{path} must be a table", path)
        for k in data:
            if k not in allowed:
                import difflib  # lazy: only a misspelt field pays for it

                hint = difflib.get_close_matches(str(k), allowed, n=1)
                label = f"{path}.{k}" if path != "top level" else str(k)
                if isinstance(data[k], Mapping):  # [codx] is a table, not a field: name it as written
                    inside = "" if path == "top level" else f"{path.strip('[]')}."
                    extra = (f"; did you mean [{inside}{hint[0]}]?" if hint
                             else f"; allowed: {', '.join(allowed)}")
                    raise self.fail(f"unknown table [{inside}{k}]{extra}", label)
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
            out[str(k)] = str(v)
        return out

    def string_list(self, data: Mapping[str, Any], key: str, path: str) -> list[str]:
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise self.fail(f"{path}.{key} must be a list of strings", f"{path}.{key}")
        return [str(x) for x in value]

    def integer(self, data: Mapping[str, Any], key: str, path: str) -> int | None:
        value = data.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise self.fail(f"{path}.{key} must be a whole number, not {value!r}", f"{path}.{key}")
        return value

"""The profile's ``$CODEX_HOME/config.toml``: ccs keeps its own keys in line with the profile and
leaves everything else in the file — what Codex writes there (``[projects]`` trust, ``[tui]``
state, ``mcp add``) and what the user writes, comments included.

ccs owns: ``model``, ``model_provider``, ``model_reasoning_effort``, the ``[model_providers.<id>]``
table of the profile's provider id, ``features.shell_snapshot`` (false: a snapshot holds the key),
and, for a quiet launch, ``analytics.enabled``, ``features.plugins`` and
``check_for_update_on_startup`` (all false); with shared MCP servers, the ``[mcp_servers.<name>]``
tables copied from the user's own config.

A missing file is written by hand; an existing file whose owned keys already agree is kept byte for
byte (checked with the standard library's tomllib); only a file that needs an edit is edited with
tomlkit, which costs the launch path ~20 ms to import.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ccswitch_tui.errors import UsageError
from ccswitch_tui.model import Profile
from ccswitch_tui.safe_read import NotRegularFile, decode_error_line, read_text, too_deep_toml
from ccswitch_tui.toml_cache import TomlSyntaxError, TomlTooDeep, loads
from ccswitch_tui.valueclass import field, valueclass

KEY_VAR = "CCS_CODEX_API_KEY"
# table → key → value that a quiet launch sets: no metrics (ab.chatgpt.com), no plugin catalogue
# (api.github.com, chatgpt.com), no release check
QUIET = {"": {"check_for_update_on_startup": False}, "analytics": {"enabled": False},
         "features": {"plugins": False}}
# table → key → value for every launch: Codex's shell snapshots write the session's environment, the
# key variable included, to $CODEX_HOME/shell_snapshots/*.sh while a session runs (measured)
ALWAYS = {"features": {"shell_snapshot": False}}


@valueclass(frozen=True)
class Wanted:
    """What the owned part of the file must say."""

    top: Mapping[str, str | None]  # None: the key must be absent
    provider_id: str
    provider: Mapping[str, str]
    quiet: bool
    mcp: Mapping[str, Any] = field(default_factory=dict)

    @property
    def fixed(self) -> dict[str, dict[str, Any]]:
        """table ("" for the top level) → key → value that ccs sets for this launch."""
        out: dict[str, dict[str, Any]] = {t: dict(v) for t, v in ALWAYS.items()}
        for table, values in (QUIET.items() if self.quiet else ()):
            out.setdefault(table, {}).update(values)
        return out


def wanted(profile: Profile, quiet: bool, mcp: Mapping[str, Any] | None = None) -> Wanted:
    x = profile.side("codex")
    assert x is not None
    return Wanted(
        top={"model": x.model, "model_provider": x.provider_id, "model_reasoning_effort": x.reasoning_effort},
        provider_id=x.provider_id,
        provider={"name": profile.provider.name, "base_url": x.base_url, "env_key": KEY_VAR, "wire_api": "responses"},
        quiet=quiet, mcp=dict(mcp or {}),
    )


def toml_string(value: str) -> str:
    """A TOML basic string. JSON's escapes are a subset of TOML's once DEL is escaped too."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(type(value))


def _key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else toml_string(name)


def header(profile_name: str) -> str:
    return (f"# ccs keeps model, model_provider, model_reasoning_effort, its [model_providers] entry and the\n"
            f"# keys it needs (features.shell_snapshot, quiet launches) in line with profile {profile_name!r}\n"
            "# at every launch; everything else here is kept as written.\n")


def fresh(profile_name: str, w: Wanted) -> str:
    """The whole file when there is none yet (no tomlkit needed)."""
    lines = [header(profile_name).rstrip("\n")]
    lines += [f"{k} = {toml_string(v)}" for k, v in w.top.items() if v is not None]
    lines += [f"{k} = {_toml_value(v)}" for k, v in w.fixed.get("", {}).items()]
    lines += ["", f"[model_providers.{w.provider_id}]"]  # provider ids are validated as bare keys
    lines += [f"{k} = {toml_string(v)}" for k, v in w.provider.items()]
    for table, values in w.fixed.items():
        if table:
            lines += ["", f"[{table}]", *(f"{k} = {_toml_value(v)}" for k, v in values.items())]
    for name, entry in w.mcp.items():
        lines += ["", f"[mcp_servers.{_key(name)}]"]
        lines += [f"{_key(k)} = {_toml_value(v)}" for k, v in entry.items()]
    return "\n".join(lines) + "\n"


def agrees(data: Mapping[str, Any], w: Wanted) -> bool:
    """Whether a parsed file already says what the profile wants."""
    for k, v in w.top.items():
        if data.get(k) != v:
            return False
    providers = data.get("model_providers")
    if not isinstance(providers, Mapping) or providers.get(w.provider_id) != dict(w.provider):
        return False
    for table, values in w.fixed.items():
        t = data if not table else data.get(table)
        if not isinstance(t, Mapping) or any(t.get(k) != v for k, v in values.items()):
            return False
    servers = got if isinstance(got := data.get("mcp_servers"), Mapping) else {}
    return all(servers.get(n) == e for n, e in w.mcp.items())


def _table(doc: Any, name: str) -> Any:
    import tomlkit  # lazy: tomlkit loads only when a profile is written

    if name not in doc or not isinstance(doc[name], dict):
        doc[name] = tomlkit.table()
    return doc[name]


def edit(text: str, w: Wanted) -> str:  # noqa: C901
    """Set the owned keys in an existing file with tomlkit; everything else stays as written."""
    import tomlkit  # lazy: tomlkit loads only when a profile is written

    doc = tomlkit.parse(text)
    tables = [k for k, v in doc.items() if isinstance(v, dict)]
    for k, v in (*w.top.items(), *w.fixed.get("", {}).items()):
        if v is None:
            doc.pop(k, None)
        elif k in doc:
            doc[k] = v
        elif tables:  # a new top-level key goes before the first table, or TOML would read it as that table's
            body = doc.body
            first = next(i for i, (key, _) in enumerate(body) if key is not None and key.key == tables[0])
            body.insert(first, (tomlkit.key(k), tomlkit.item(v)))
            doc = tomlkit.parse(tomlkit.dumps(doc))
        else:
            doc[k] = v
    providers = _table(doc, "model_providers")
    entry = tomlkit.table()
    for k, v in w.provider.items():
        entry[k] = v
    providers[w.provider_id] = entry
    for table, values in w.fixed.items():
        if table:
            t = _table(doc, table)
            for k, v in values.items():
                t[k] = v
    if w.mcp:
        servers = _table(doc, "mcp_servers")
        for name, value in w.mcp.items():
            servers[name] = value
    return tomlkit.dumps(doc)


def content(path: Path, profile: Profile, quiet: bool, mcp: Mapping[str, Any] | None = None,
            cache: Path | None = None) -> str:
    """What the profile's config.toml must hold for this launch: the file as it is when it agrees,
    the file with the owned keys set when it does not, a fresh file when there is none."""
    w = wanted(profile, quiet, mcp)
    remove = "or remove it (ccs writes a new one)"
    try:
        text = read_text(path)
    except FileNotFoundError:
        return _seeded(fresh(profile.name, w), cache)
    except NotRegularFile as exc:  # a FIFO would hang the launch, a device would never end
        raise UsageError(f"{path}: {exc}; remove it (ccs writes a new one)") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: {decode_error_line(exc)}, {remove}") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read ({exc}); fix its permissions or remove it") from None
    if not text.strip():
        return _seeded(fresh(profile.name, w), cache)

    try:
        data = loads(text, cache)
    except TomlTooDeep:
        raise UsageError(f"{path}:{too_deep_toml(text)}, {remove}") from None
    except TomlSyntaxError as exc:
        raise UsageError(f"{path}: not valid TOML ({exc}); Codex would not start either: fix the file or "
                         "remove it (ccs writes a new one)") from None
    if agrees(data, w):
        return text
    from tomlkit.exceptions import TOMLKitError  # lazy: tomlkit loads only when a profile is written

    try:
        return _seeded(edit(text, w), cache)
    except TOMLKitError as exc:  # e.g. nested deeper than tomlkit's 100 levels, which tomllib reads
        raise UsageError(f"{path}: ccs cannot edit this file ({str(exc).rstrip('.')}); simplify it, "
                         f"{remove}") from None


def _seeded(text: str, cache: Path | None) -> str:
    """``text``, which this launch writes, parsed into the cache now (toml_cache.py): the next
    launch reads it back without loading a TOML parser."""
    if cache is not None:
        try:
            loads(text, cache)
        except ValueError:
            pass
    return text

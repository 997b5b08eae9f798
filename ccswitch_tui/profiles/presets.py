"""Presets shipped with ccs (the repository's ``profiles/`` folder, installed as ``ccswitch_tui/presets``)
and the making of a new profile's text from one."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import tomlkit

from ccswitch_tui import tools
from ccswitch_tui.errors import CcsError, UsageError
from ccswitch_tui.model import Profile
from ccswitch_tui.profiles.store import Store, validate_text
from ccswitch_tui.tools.capabilities import FixingUrls, SeedingTables
from ccswitch_tui.tools.checker import check_key_id, check_name
from ccswitch_tui.valueclass import valueclass


def presets_dir() -> Path:
    package = Path(__file__).resolve().parent.parent  # ccswitch_tui/
    installed = package / "presets"
    if installed.is_dir():
        return installed
    return package.parent / "profiles"  # a source checkout or an editable install


@valueclass(frozen=True)
class Preset:
    name: str
    text: str
    profile: Profile

    @property
    def header(self) -> str:
        """The comment block at the top of the file, without the '#'."""
        lines = []
        for line in self.text.splitlines():
            if not line.startswith("#"):
                break
            lines.append(line.lstrip("#").strip())
        return "\n".join(lines)


def list_presets() -> list[Preset]:
    out = []
    for path in sorted(presets_dir().glob("*.toml")):
        text = path.read_text(encoding="utf-8")
        out.append(Preset(path.stem, text, validate_text(path.stem, text, str(path))[1]))
    return out


def load_preset(name: str) -> Preset:
    check_name(name)
    path = presets_dir() / f"{name}.toml"
    if not path.is_file():
        known = ", ".join(p.stem for p in sorted(presets_dir().glob("*.toml")))
        raise UsageError(f"no preset named {name!r}; known presets: {known}")
    text = path.read_text(encoding="utf-8")
    return Preset(name, text, validate_text(name, text, str(path))[1])


@valueclass(frozen=True)
class NewProfileText:
    """A new profile's text, and what to tell its creator: the URL each client will use, and any URL
    that was fixed because the client would have misused it."""

    text: str
    urls: tuple[str, ...]


def new_profile_text(
    name: str,
    preset: str | None = None,
    *,
    base_url: str | None = None,
    key: str | None = None,
    provider_name: str | None = None,
    models: Mapping[str, str] | None = None,
    tool_models: Mapping[str, str] | None = None,
    tool_urls: Mapping[str, str] | None = None,
) -> str:
    """The text of a new profile: a preset (comments kept) with the given fields set, or a blank one.

    The result is validated by the caller through the store when it is saved.
    """
    return new_profile(name, preset, base_url=base_url, key=key, provider_name=provider_name, models=models,
                       tool_models=tool_models, tool_urls=tool_urls).text


def new_profile(  # noqa: C901
    name: str,
    preset: str | None = None,
    *,
    base_url: str | None = None,
    key: str | None = None,
    provider_name: str | None = None,
    models: Mapping[str, str] | None = None,
    tool_models: Mapping[str, str] | None = None,
    tool_urls: Mapping[str, str] | None = None,
) -> NewProfileText:
    """``new_profile_text`` with the URL each client will use. ``tool_urls`` sets one client's URL
    (``--base-url TOOL=URL``): one the client would misuse is refused. A URL a client inherits (the
    provider's, or the one ``base_url`` gives every tool) that it would misuse is fixed in its own
    table, by the client's own rule (its spec's ``url_fix``), and said."""
    doc = _new_document(name, preset, base_url=base_url, key=key, provider_name=provider_name,
                        models=models, tool_models=tool_models)
    explicit = dict(tool_urls or {})
    for tool, url in explicit.items():
        spec = tools.load().get(tool)
        if "base_url" not in spec.field_names:
            raise UsageError(f"--base-url {tool}=URL: {spec.label} has no base URL of its own; "
                             "give one of: "
                             f"{', '.join(s.name for s in tools.load().specs() if 'base_url' in s.field_names)}")
        if isinstance(spec, FixingUrls) and (fix := spec.url_fix(url)):
            raise UsageError(f"--base-url {tool}={url}: {fix[1]}; give --base-url {tool}={fix[0]}")
        if tool not in doc:
            doc.add(tool, tomlkit.table())
        doc[tool]["base_url"] = url
    where = f"the new profile {name!r}"
    try:
        profile = validate_text(name, tomlkit.dumps(doc), where)[1]
    except CcsError:  # the store says what is wrong, where, when the caller saves it
        return NewProfileText(tomlkit.dumps(doc), ())
    notes: dict[str, str] = {}
    for spec in tools.load().specs():
        side = profile.sides.get(spec.name)
        inherited = spec.base_url(side) if side is not None and spec.name not in explicit else None
        if inherited and isinstance(spec, FixingUrls) and (fix := spec.url_fix(inherited)):
            if spec.name not in doc:
                doc.add(spec.name, tomlkit.table())
            doc[spec.name]["base_url"] = fix[0]
            notes[spec.name] = (f"{inherited} was changed to {fix[0]}: {fix[1]} "
                                f"(another URL: --base-url {spec.name}=URL)")
    text = tomlkit.dumps(doc)
    profile = validate_text(name, text, where)[1] if notes else profile
    urls: list[str] = []
    for spec in tools.load().specs():
        side = profile.sides.get(spec.name)
        used = spec.base_url(side) if side is not None else None
        if not used:
            continue
        end = spec.endpoint(side)
        urls.append(f"{spec.name:<9} {used}" + (f"  → {end}" if end and end != used else ""))
        if spec.name in notes:
            urls.append(f"{'':<9} {notes[spec.name]}")
    return NewProfileText(text, tuple(urls))


def _new_document(  # noqa: C901
    name: str,
    preset: str | None,
    *,
    base_url: str | None,
    key: str | None,
    provider_name: str | None,
    models: Mapping[str, str] | None,
    tool_models: Mapping[str, str] | None,
) -> tomlkit.TOMLDocument:
    check_name(name)
    if key is not None and not key.startswith("env:"):
        check_key_id(key)
    if preset:
        doc = tomlkit.parse(load_preset(preset).text)
    else:
        if not base_url:
            raise UsageError("a new profile without --preset needs --base-url URL (see `ccs presets`)")
        doc = tomlkit.document()
        doc.add("schema", 1)
        doc.add("description", "")
        prov = tomlkit.table()
        prov.add("name", provider_name or name)
        prov.add("base_url", base_url)
        prov.add("key", key or name)
        doc.add("provider", prov)
        if not tool_models and not models:
            doc.add(tools.load().default_client().name, tomlkit.table())
        run = tomlkit.table()
        run.add("export", ["openai"])
        doc.add("run", run)
        base_url = key = None  # already placed
    prov = doc["provider"]
    if base_url:
        prov["base_url"] = base_url
        for table in tools.names():  # one URL for every tool: drop the preset's own per-tool URLs
            if table in doc and "base_url" in doc[table]:
                del doc[table]["base_url"]
    if key:
        prov["key"] = key
    for tool, model in (tool_models or {}).items():
        if tool not in doc:
            t = tomlkit.table()
            t.add("model", model)
            seeding = tools.load().get(tool)
            for k, v in (seeding.new_table_fields(name) if isinstance(seeding, SeedingTables) else {}).items():
                t.add(k, v)
            doc.add(tool, t)
        else:
            doc[tool]["model"] = model
    for tool, model in (models or {}).items():  # --model TOOL=MODEL: the table is added when missing
        if tool not in doc:
            doc.add(tool, tomlkit.table())
        doc[tool]["model"] = model
    return doc


def copy_profile_text(store: Store, name: str, new_name: str) -> str:
    """The text of a copy of profile ``name`` under ``new_name``: the same file, comments and all.

    The caller saves it with ``store.save_text(new_name, text, create=True)``, which validates it
    under the new name and refuses to overwrite an existing profile.
    """
    check_name(new_name)
    if new_name == name:
        raise UsageError(f"a copy of {name!r} needs another name")
    text = store.read_text(name)
    validate_text(new_name, text, str(store.path_for(name)))
    return text

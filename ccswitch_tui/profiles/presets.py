"""Presets shipped with ccs (the repository's ``profiles/`` folder, installed as ``ccswitch_tui/presets``)
and the making of a new profile's text from one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import tomlkit

from ccswitch_tui import tools
from ccswitch_tui.errors import UsageError
from ccswitch_tui.model import Profile
from ccswitch_tui.profiles.store import Store, validate_text
from ccswitch_tui.tools.checker import check_key_id, check_name


def presets_dir() -> Path:
    package = Path(__file__).resolve().parent.parent  # ccswitch_tui/
    installed = package / "presets"
    if installed.is_dir():
        return installed
    return package.parent / "profiles"  # a source checkout or an editable install


@dataclass(frozen=True)
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


def new_profile_text(
    name: str,
    preset: str | None = None,
    *,
    base_url: str | None = None,
    key: str | None = None,
    provider_name: str | None = None,
    models: Mapping[str, str] | None = None,
    tool_models: Mapping[str, str] | None = None,
) -> str:
    """The text of a new profile: a preset (comments kept) with the given fields set, or a blank one.

    ``tool_models`` (a spec's own ``--NAME-model`` option) add the table with the fields the spec
    gives a new one; ``models`` (``--model TOOL=MODEL``) add a bare table.

    The result is validated by the caller through the store when it is saved.
    """
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
            doc.add(tools.default_client().name, tomlkit.table())
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
            for k, v in tools.get(tool).new_table_fields(name).items():
                t.add(k, v)
            doc.add(tool, t)
        else:
            doc[tool]["model"] = model
    for tool, model in (models or {}).items():  # --model TOOL=MODEL: the table is added when missing
        if tool not in doc:
            doc.add(tool, tomlkit.table())
        doc[tool]["model"] = model
    return tomlkit.dumps(doc)


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

"""Profiles without any secret, to share or commit: the profile's own TOML (comments kept), or the
CC Switch provider shape (``{"claude": {"providers": {ID: {...}}, "current": ""}, "codex": {...}}``)
with the key fields empty.

Profile files never hold keys; on top of that, an env value that looks like it carries a credential
(an ``*_HEADERS`` variable with an Authorization or key header) is emptied, with a warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import tomlkit

from ccswitch_tui import policy, tools
from ccswitch_tui.model import Profile
from ccswitch_tui.profiles.store import Store
from ccswitch_tui.valueclass import field, valueclass

FORMATS = ("toml", "json")
@valueclass
class Exported:
    name: str
    text: str
    warnings: list[str] = field(default_factory=list)


def _risky(name: str, value: str) -> bool:
    """A value that carries a credential, as the policy says (the same verdict as validation,
    ``ccs env`` and the records)."""
    return policy.is_secret(name, value)


def _clean_env(env: Mapping[str, str], where: str, warnings: list[str]) -> dict[str, str]:
    out = {}
    for k, v in env.items():
        if _risky(k, v):
            warnings.append(f"{where}.{k} looks like it carries a credential; exported empty")
            out[k] = ""
        else:
            out[k] = v
    return out


def export_toml(store: Store, name: str) -> Exported:
    """The profile's file as it is (comments, order), with credential-looking env values emptied."""
    doc = store.load_doc(name)
    profile = store.load(name)

    warnings: list[str] = []
    tables: dict[str, Mapping[str, str]] = {"[env]": profile.env}
    for tool, side in profile.sides.items():
        spec = tools.load().get(tool)
        tables.update(spec.env_tables(side))
        for f in spec.secret_fields:  # a client's own secret fields: never shipped
            if isinstance(doc.get(tool), Mapping) and doc[tool].get(f):
                doc[tool][f] = ""
                warnings.append(f"[{tool}].{f} is secret; exported empty")
    for path, env in tables.items():
        cleaned = _clean_env(env, path, warnings)
        for k, v in cleaned.items():
            if v != env[k]:
                table: Any = doc
                for part in path.strip("[]").split("."):  # "[claude.env]" → doc["claude"]["env"]
                    table = table[part]
                table[k] = v
    key = profile.provider.key
    hint = (f"read from ${key[4:]}" if key.startswith("env:")
            else f"store it with `ccs key set {key}`")
    header = f"Exported by ccs from profile {name!r}; no key inside ({hint}). Save as {name}.toml."
    text = f"# {header}\n" + tomlkit.dumps(doc)
    return Exported(name, text, warnings)


def cc_switch_providers(profiles: list[Profile]) -> tuple[dict[str, Any], list[str]]:
    """The CC Switch shape for these profiles, key fields empty: one app per client whose importer
    names its CC Switch app, each entry as that importer writes it."""

    warnings: list[str] = []
    registry = tools.load()
    # each client whose importer names its CC Switch app, with that app
    apps = [(s, imp, app) for s in registry.importable() for imp in (registry.importer(s),)
            if (app := imp.cc_switch_app)]
    out: dict[str, Any] = {app: {"providers": {}, "current": ""} for _, _, app in apps}
    for p in profiles:
        common: dict[str, Any] = {"id": p.name, "name": p.provider.name}
        extra: dict[str, Any] = {"category": "custom"}
        if p.provider.website:
            extra["websiteUrl"] = p.provider.website
        if p.description:
            extra["notes"] = p.description
        shared_env = _clean_env(p.env, "[env]", warnings)
        served = [(spec, imp, app) for spec, imp, app in apps if p.side(spec.name)]
        for spec, imp, app in served:
            elsewhere = any(other.carries_env for s, other, _ in served if s is not spec)
            entry = imp.to_cc_switch(p, p.side(spec.name), shared_env, elsewhere, _clean_env, warnings)
            settings = entry.pop("settingsConfig")
            out[app]["providers"][p.name] = {**common, "settingsConfig": settings, **extra, **entry}
        if not served:
            labels = registry.client_labels("nor", [spec for spec, _, _ in apps])
            warnings.append(f"{p.name}: serves neither {labels}; nothing to export in this format")
        exported = {spec.name for spec, _, _ in apps}
        for other in (t for t in p.tools if t not in exported and registry.get(t).launchable):
            warnings.append(f"{p.name}: [{other}] has no place in a CC Switch provider; not exported "
                            "(use --format toml)")
    return out, warnings

"""Secondary credentials: a profile's ``[secrets]`` table names, for each extra variable that must
carry a credential (a gateway's second header, a proxy password, a tool's own token), the key id
that holds it in the keyring — or ``env:VAR`` to read it from ccs's own environment::

    [secrets]
    MY_GATEWAY_AUTH = "gateway-auth"          # ccs key set gateway-auth
    ANTHROPIC_CUSTOM_HEADERS = "gw-headers"   # the whole header line, e.g. "x-api-key: …"

At launch each value is read from the keyring and put into the child's environment only (masked in
``ccs env``, never written to the Claude Code settings file, a manifest or any other file), like the
profile's own key. A variable that ccs itself sets for the tool cannot be named here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ccswitch_tui.errors import KeyError_, ProfileError, UsageError
from ccswitch_tui.launch.plan import SOURCE_KEY, SOURCE_MARKER, SOURCE_ROUTING, LaunchPlan

TABLE = "secrets"


def read_table(doc: Mapping[str, Any], where: str) -> dict[str, str]:
    """The validated ``[secrets]`` table of a profile document: variable name → key id or ``env:VAR``."""
    from ccswitch_tui.profiles.schema import ENV_NAME_RE, KEY_ID_RE

    data = doc.get(TABLE)
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
        from ccswitch_tui.tools import names

        for table in ("env", *names()):
            t = doc.get(table)
            env = (t if table == "env" else t.get("env")) if isinstance(t, Mapping) else None
            if isinstance(env, Mapping) and name in env:
                label = "[env]" if table == "env" else f"[{table}.env]"
                raise ProfileError(f"{where}: {name} is both in [secrets] and in {label}; keep it in [secrets] only",
                                   field=f"{label}.{name}")
        out[name] = ref
    return out


def refs(profile: Any) -> dict[str, str]:
    return dict(getattr(profile, "secrets", None) or {})


def resolve(profile: Any, keys: Any) -> dict[str, str]:
    """Each ``[secrets]`` variable's value, read from the keyring (or ccs's environment)."""
    from ccswitch_tui.keys.keyring import has_control_chars

    out: dict[str, str] = {}
    for name, ref in refs(profile).items():
        value = keys.lookup(ref)
        if not value or not value.strip():
            fix = (f"export {ref[4:]}=… before running ccs" if ref.startswith("env:")
                   else f"store it with `ccs key set {ref}`")
            raise KeyError_(f"profile {profile.name!r}: [secrets].{name} names {ref!r}, which holds no value; {fix}")
        if has_control_chars(value) and name != "ANTHROPIC_CUSTOM_HEADERS":
            raise KeyError_(f"profile {profile.name!r}: the value for [secrets].{name} ({ref!r}) holds control "
                            "characters an environment variable cannot carry; store it again")
        out[name] = value
    return out


def with_secondary(plan: LaunchPlan, values: Mapping[str, str]) -> LaunchPlan:
    """The plan with the secondary credentials in the child's environment, as secrets."""
    if not values:
        return plan
    env, sources = dict(plan.env), dict(plan.sources)
    for name, value in values.items():
        if sources.get(name) in (SOURCE_ROUTING, SOURCE_KEY, SOURCE_MARKER):
            raise UsageError(
                f"profile {plan.profile!r}: [secrets].{name} would replace {name}, which ccs sets for {plan.tool} "
                "itself; remove it from [secrets]")
        env[name] = value
        sources[name] = SOURCE_KEY
    return replace(plan, env=env, sources=sources, secret_names=plan.secret_names | frozenset(values))

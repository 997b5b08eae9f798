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

from collections.abc import Iterable
from typing import Protocol

from ccswitch_tui.errors import KeyError_, StoreKey
from ccswitch_tui.keys.keyring import has_control_chars
from ccswitch_tui.model import Profile


class Lookup(Protocol):
    def lookup(self, key_ref: str) -> str | None: ...


def resolve(profile: Profile, keys: Lookup, multiline: Iterable[str]) -> dict[str, str]:
    """Each ``[secrets]`` variable's value, read from the keyring (or ccs's environment). ``multiline``:
    the variables a client reads as several lines (the registry's ``multiline_vars``), the only ones
    whose value may hold a line break."""
    multiline = frozenset(multiline)
    out: dict[str, str] = {}
    for name, ref in profile.secrets.items():
        value = keys.lookup(ref)
        if not value or not value.strip():
            problem = f"profile {profile.name!r}: [secrets].{name} names {ref!r}, which holds no value"
            if ref.startswith("env:"):
                raise KeyError_(f"{problem}; export {ref[4:]}=… before running ccs")
            raise KeyError_(problem, StoreKey(ref))
        if has_control_chars(value) and name not in multiline:
            raise KeyError_(f"profile {profile.name!r}: the value for [secrets].{name} ({ref!r}) holds control "
                            "characters an environment variable cannot carry; store it again")
        out[name] = value
    return out

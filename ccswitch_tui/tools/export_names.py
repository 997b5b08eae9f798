"""A program's own names for the key and the base URL, e.g. ``{ key = "TAOTOKEN_API_KEY", base_url =
"TAOTOKEN_BASE_URL" }``: parsed and checked against the policy, added to a plan's environment as its
key and one of its base URLs, and declared in the plan's ``routing_names`` so that the policy treats
them as the family's own (masked, routed through the bridge, judged by ``inspect``, compared by the
verdict). ``[run].export`` uses it; a client whose commands read such names can use it for its table
the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ccswitch_tui.model import SOURCE_ROUTING
from ccswitch_tui.policy import custom_name_problem
from ccswitch_tui.tools.checker import Checker
from ccswitch_tui.tools.environment import EnvBuilder
from ccswitch_tui.valueclass import valueclass


@valueclass(frozen=True)
class ExportNames:
    """Variables a program reads for a family's key and base URL under names of its own."""

    key: str | None = None
    base_url: str | None = None
    family: str = "openai"  # whose base URL the names carry

    def as_dict(self) -> dict[str, str]:
        out = {k: v for k, v in (("key", self.key), ("base_url", self.base_url)) if v}
        return out if self.family == "openai" else {**out, "family": self.family}

    def shown(self) -> str:
        return "+".join(n for n in (self.key, self.base_url) if n)


def parse_names(t: Mapping[str, Any], c: Checker, where: str, field: str, families: tuple[str, ...],
                taken: set[str]) -> ExportNames:
    """One table, checked: known fields, a family of ``families``, names the policy accepts (each once
    across ``taken``), at least one name. ``where`` names the table in messages, ``field`` the field
    the editor points at."""
    for k in t:
        if k not in ("key", "base_url", "family"):
            raise c.fail(f"{where}: unknown field {k!r} (a table names key, base_url and optionally family)", field)
    family = t.get("family", families[0])
    if family not in families:
        raise c.fail(f"{where}.family {family!r} must be one of: {', '.join(families)}", field)
    found: dict[str, str | None] = {}
    for role in ("key", "base_url"):
        name = t.get(role)
        if name is None:
            found[role] = None
            continue
        problem = custom_name_problem(name, role, c.families) if isinstance(name, str) else \
            f"{name!r} is not a variable name"
        if problem is None and name in taken:
            problem = f"{name} is exported twice"
        if problem:
            raise c.fail(f"{where}.{role}: {problem}", field)
        taken.add(name)
        found[role] = name
    if not found["key"] and not found["base_url"]:
        raise c.fail(f"{where} names no variable: give key = \"NAME_API_KEY\" and/or base_url = \"NAME_BASE_URL\"",
                     field)
    return ExportNames(found["key"], found["base_url"], family)


def add_names(builder: EnvBuilder, names: Iterable[ExportNames], url_of: Callable[[str], str],
              key: str) -> dict[str, str]:
    """Put each table's names into the environment: the key as a secret, the base URL of its family
    (``url_of(family)``) as routing. Returns the base URLs by variable, for the plan."""
    urls: dict[str, str] = {}
    for n in names:
        if n.base_url:
            url = url_of(n.family)
            builder.add({n.base_url: url}, SOURCE_ROUTING)
            urls[n.base_url] = url
        if n.key:
            builder.add_secret(n.key, key)
    return urls


def routing_names(names: Iterable[ExportNames]) -> dict[str, str]:
    """Each named variable with its family: the plan's ``routing_names``."""
    return {v: n.family for n in names for v in (n.key, n.base_url) if v}

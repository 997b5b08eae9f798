"""From the clients' own shapes to profile fields. Each client's importer (``tools.load().importer(spec)``)
parses its own settings; this module hands them validation's rule for env values (``env_check``), so
an import keeps out of a profile exactly what a hand-written one may not hold. Nothing here reads or
writes files."""

from __future__ import annotations

from ccswitch_tui.profiles.schema import value_problem
from ccswitch_tui.tools.importing import nonblank, parse_toml_text, routing

__all__ = ["env_check", "nonblank", "parse_toml_text", "routing"]


def env_check(name: str, value: str) -> str | None:
    """Why ``value`` may not be written into a profile's env table as ``name``, or None."""
    return value_problem(("env", name), value)

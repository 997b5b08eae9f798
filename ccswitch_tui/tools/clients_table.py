"""The README's table of the registered clients (tests/test_docs_links.py checks that the README holds
exactly this between its markers; ``scripts/doc_tables.py`` writes it). Everything in it comes from the
specs: a client added to the registry gets its row without anyone editing the README."""

from __future__ import annotations

from collections.abc import Sequence

from ccswitch_tui.tools.capabilities import TuiFace
from ccswitch_tui.tools.spec import AnySpec


def _install(spec: AnySpec) -> str:
    package = spec.package
    if package is None:
        return "-"
    if package.manager == "npm":
        return f"`npm install -g {package.name}@{package.version}`"
    if package.manager == "pypi":
        return f"`pipx install {package.name}=={package.version}`"
    return f"{package.manager}: `{package.name}` {package.version}"


def clients_table(specs: Sequence[AnySpec]) -> str:
    """One row per launchable client, in the registry's order: what to type, its TUI key, the version ccs
    is tested with and how to install that version."""
    lines = ["| client | launch | TUI key | tested with | install |", "|---|---|---|---|---|"]
    for spec in specs:
        if not spec.launchable:
            continue
        tested = spec.package.version if spec.package else "-"
        key = f"`{spec.tui_key}`" if isinstance(spec, TuiFace) else "-"
        lines.append(f"| {spec.label} | `ccs launch P {spec.name}` | {key} | {tested} | {_install(spec)} |")
    return "\n".join(lines)

"""Loader variables where the shell is judged: in a process ccs did not launch (`inspect`, `ps`) and in
the shell `doctor` runs in. A loader (``policy.is_loader``) is an error where the program it reaches
loads the code itself — its runtime (``runtimes``) reads the variable (``policy.loader_runtimes``), or
it is the client's own (its spec's ``loaders``) — since that code then runs inside a client holding
its keys; elsewhere it reaches only the commands the program runs, and is named without alarm.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ccswitch_tui.model import ERROR, INFO, WARN, Finding, Severity
from ccswitch_tui.policy import RUNTIME_LABELS, loader_runtimes, shown

if TYPE_CHECKING:
    from ccswitch_tui.policy.families import Families
    from ccswitch_tui.tools.registry import Registry

CODE = "loader"


def unexpected_loaders(actual: Mapping[str, str], expected: Mapping[str, str], internal: Collection[str],
                       families: Families) -> list[str]:
    """The loader variables a process holds that its plan (or a clean environment) does not give it."""
    return [n for n in sorted(actual)
            if families.is_loader(n) and n not in internal and expected.get(n) != actual[n]]


def process_findings(pid: int, actual: Mapping[str, str], names: Sequence[str], tool: str | None, way: str,
                     runtimes: frozenset[str] | None, registry: Registry) -> list[Finding]:
    """One finding per loader variable ``names`` of process ``pid`` (whose runtimes, None: unknown)."""
    known = tool is not None and tool in registry.names()
    own = registry.get(tool).loaders if known and tool is not None else frozenset()
    what = f"this {registry.label(tool)} process" if known and tool is not None else "this process"
    out = []
    for name in names:
        sev: Severity
        show = shown(name, actual[name])
        readers = [rt for rt in loader_runtimes(name) if runtimes is not None and rt in runtimes]
        if name in own:
            sev, msg = ERROR, f"{name}={show} names the program {what}'s own launcher runs instead of its own"
        elif readers:
            sev, msg = ERROR, (f"{name}={show} loads code into {what} ({RUNTIME_LABELS[readers[0]]} reads it), "
                               "which holds its keys")
        elif runtimes is None and (loader_runtimes(name) or registry.families.client_loader(name)):
            sev, msg = WARN, f"{name}={show} may load code into {what} (what runs it cannot be told)"
        else:
            sev, msg = INFO, (f"{name}={show} reaches every command {what} runs (it loads no code into the "
                              "process itself)")
        out.append(Finding(CODE, sev, f"{msg}; {way}", pid=pid, variable=name))
    return out


def shell_findings(environ: Mapping[str, str], clients: Mapping[str, frozenset[str]], internal: Collection[str],
                   registry: Registry, inside: bool) -> tuple[list[dict[str, Any]], list[Finding]]:
    """`doctor`'s rows and findings for the loader variables of its shell. ``clients``: each installed
    client's runtimes (by its tool name). An error when a client started from here would load the
    code; a warning when none would (it still reaches the commands they run)."""
    rows: list[dict[str, Any]] = []
    out: list[Finding] = []
    for name in sorted(environ):
        if not registry.families.is_loader(name) or name in internal:
            continue
        show = shown(name, environ[name])
        loading = [registry.label(t) for t, rts in clients.items()
                   if name in registry.get(t).loaders or set(loader_runtimes(name)) & rts]
        runtime = ", ".join(RUNTIME_LABELS[rt] for rt in loader_runtimes(name)) or "its program"
        affects = ", ".join(loading) if loading else f"commands run on {runtime}"
        rows.append({"name": name, "family": CODE, "value": show, "affects": affects})
        tail = "set by the ccs profile of this shell" if inside else \
            f"ccs launches drop it; unset {name} (and remove it from your shell's startup files) so tools started " \
            "directly do not load it"
        if loading:
            what = f"{name}={show} in this shell loads code into {', '.join(loading)} started from here " \
                   f"({runtime} reads it), where it can read their keys"
        else:
            what = (f"{name}={show} in this shell reaches the commands any tool started from here runs "
                    f"({runtime} reads it; no installed client does)")
        if name.startswith("PYTHON"):
            what += ("; ccs itself ignores it (it starts isolated)" if sys.flags.isolated else
                     "; it reached this ccs too, which was started without isolation (`python -m`): the `ccs` "
                     "command ignores it")
        out.append(Finding(CODE, (ERROR if loading else WARN) if not inside else INFO, f"{what}; {tail}",
                           path="shell", variable=name))
    return rows, out

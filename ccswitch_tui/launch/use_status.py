"""What the shims would do here, and why: for `ccs status`, `ccs doctor` and the TUI's header.

The shims themselves (``shims.py``) never import the client registry; this module joins the two.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccswitch_tui import tools
from ccswitch_tui.errors import CcsError
from ccswitch_tui.launch import shim_setup, shims
from ccswitch_tui.model import ERROR, WARN, Finding
from ccswitch_tui.paths import Paths

if TYPE_CHECKING:
    from ccswitch_tui.profiles.store import Store


def programs() -> dict[str, str]:
    """tool → program, for every client `ccs launch` takes that has a program on PATH."""

    return {s.name: s.program for s in tools.load().clients() if s.program}


def shim_report(paths: Paths, environ: Mapping[str, str], cwd: Path, store: Store | None = None) -> dict[str, Any]:
    """The shim folder, whether it is installed and first on PATH, and each tool's choice here."""
    progs = programs()
    folder = shims.shim_dir(paths.state, environ)
    path_env = environ.get("PATH", "")
    installed = sorted(p for p in progs.values() if shims.is_shim(folder / p))
    position = shim_setup.path_position(folder, path_env)
    report: dict[str, Any] = {
        "shim_dir": str(folder),
        "installed": installed,
        "on_path": position is not None,
        "first_on_path": position is not None and not shim_setup.shadowed(folder, installed, path_env),
        "shadowed": shim_setup.shadowed(folder, installed, path_env),
        "inside_launch": ({"launch_id": environ["CCS_LAUNCH_ID"], "profile": environ.get("CCS_PROFILE"),
                           "tool": environ.get("CCS_TOOL")} if environ.get("CCS_LAUNCH_ID") else None),
        "tools": [],
        "ignored": [],  # project files that are not the user's own: named, never obeyed
        "error": None,
    }
    ignored: dict[str, shims.Ignored] = {}
    for tool, program in progs.items():
        row: dict[str, Any] = {"tool": tool, "program": program}
        try:
            choice = shims.choose(tool, cwd, paths.state, tuple(progs), paths.profiles)
        except shims.SelectionError as exc:
            report["error"] = str(exc)
            row.update(profile=None, source="error", where=None, why=str(exc))
            report["tools"].append(row)
            continue
        row.update(profile=choice.profile, source=choice.source, where=choice.where, why=choice.why())
        if choice.profile and store is not None:
            row["problem"] = profile_problem(store, choice.profile, tool)
        report["tools"].append(row)
        ignored.update((i.path, i) for i in choice.ignored)
    report["ignored"] = [i.to_dict() for i in ignored.values()]
    return report


def profile_problem(store: Store, name: str, tool: str) -> str | None:
    """Why a shim of ``tool`` could not launch ``name`` (missing, invalid, no table); None when it can."""

    try:
        profile = store.load(name)
    except CcsError as exc:
        return str(exc)
    if tool not in profile.tools:
        return f"profile {name!r} has no [{tool}] table; add one with `ccs edit {name}` or pick another profile"
    return None


def lines(report: Mapping[str, Any]) -> list[str]:
    """`ccs status` as text."""
    out = []
    for i in report.get("ignored", ()):
        out.append(f"ignored: {i['path']} ({i['why']}); {i['fix']}")
    for row in report["tools"]:
        if row["source"] == "error":
            out.append(f"{row['program']}: cannot tell: {row['why']}")
            continue
        what = f"profile {row['profile']}" if row["profile"] else "the real binary"
        out.append(f"{row['program']}: {what} ({row['why']})")
        if row.get("problem"):
            out.append(f"  problem: {row['problem']}")
    folder = report["shim_dir"]
    if not report["installed"]:
        out.append(f"shims: not installed; `ccs use PROFILE` writes them to {folder}")
    elif not report["on_path"]:
        out.append(f"shims: {folder} is not on PATH; add `export PATH=\"{folder}:$PATH\"` to your shell's rc file")
    elif report["shadowed"]:
        names = ", ".join(f"{p} ({b})" for p, b in report["shadowed"].items())
        out.append(f"shims: {folder} comes after the real {names} on PATH; put it first")
    else:
        out.append(f"shims: {folder} (first on PATH)")
    if inside := report["inside_launch"]:
        out.append(f"inside launch {inside['launch_id']} of profile {inside['profile']} ({inside['tool']}): "
                   "a shim of that tool runs the real binary directly")
    return out


def header(paths: Paths, environ: Mapping[str, str], cwd: Path) -> str:
    """One line for the TUI's header: each tool's profile here and why, shortly."""
    try:
        report = shim_report(paths, environ, cwd)
    except OSError:
        return ""
    if report["error"]:
        return f"shims: {report['error']}"
    line = _header_choice(report)
    if report["ignored"]:  # a file the shims pass over is worth a word where the choice is shown
        line = (line or "shims:") + f" — a {shims.PROJECT_FILE} here is not yours, ignored (`ccs status`)"
    return line


def _header_choice(report: Mapping[str, Any]) -> str:
    parts = []
    for row in report["tools"]:
        if row["profile"]:
            why = {"project": os.path.basename(str(row["where"])), "use": "ccs use"}.get(row["source"], "")
            parts.append(f"{row['program']}→{row['profile']} ({why})")
    if not parts:
        return "shims: pass through (`ccs use PROFILE` to pick one)" if report["installed"] else ""
    if not report["installed"]:
        return "shims: " + ", ".join(parts) + " — not installed (`ccs use`)"
    return "shims: " + ", ".join(parts) + ("" if report["on_path"] else " — not on PATH")


def doctor_findings(report: Mapping[str, Any]) -> list[Any]:
    """The shim setup as doctor findings: a folder missing from PATH or shadowed, a selection that
    names a profile that cannot launch the tool, a damaged project file, one that is not the user's
    own (ignored)."""

    out = []
    folder = report["shim_dir"]
    if report["installed"] and not report["on_path"]:
        out.append(Finding("shims-not-on-path", WARN, f"the shims in {folder} are not on PATH, so tools started "
                           f"by name skip ccs; add `export PATH=\"{folder}:$PATH\"` to your shell's rc file",
                           path=folder, variable="PATH"))
    for program, real in report["shadowed"].items():
        out.append(Finding("shims-shadowed", WARN, f"{real} comes before the shim {folder}/{program} on PATH, "
                           "so it starts without ccs; put the shim folder first", path=real, variable="PATH"))
    if report["error"]:
        out.append(Finding("shim-selection", ERROR, report["error"]))
    for i in report.get("ignored", ()):
        out.append(Finding("project-file-ignored", WARN, f"{i['path']} {i['why']}, so tools started here by name "
                           f"do not follow it; {i['fix']}", path=i["path"]))
    for row in report["tools"]:
        if row.get("problem"):
            program = row["program"]
            out.append(Finding("shim-selection", ERROR, f"{'an' if program[:1] in 'aeiou' else 'a'} {program} "
                               "started here would fail: "
                               f"{row['problem']} (chosen by {row['why']})", path=row.get("where")))
    return out

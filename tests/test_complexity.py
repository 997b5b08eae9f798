"""Branchy functions only get fewer: ruff's C901 (mccabe, limit 10 in pyproject.toml) over the package.

A function over the limit today carries ``# noqa: C901`` and is listed below with its complexity,
which is its ceiling; none may pass 20. A new function over the limit fails here even under a ``noqa`` (the check
ignores them); a listed one that grew fails; a listed one that is back under the limit, or below
its ceiling, fails too, saying what to write: the list only shrinks."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ccswitch_tui"
RUFF = Path(sys.executable).parent / "ruff"
MOST = 20  # no function may be more complex than this, listed or not

# "module (relative to the package)::qualified function name" → its complexity, the most it may have
CEILINGS = {
    "launch/supervise.py::supervise_here": 20,
    "runs/manifests.py::well_typed": 20,
    "bridge/records.py::summarize": 18,
    "bridge/translate/request.py::chat_request": 18,
    "diagnose/inspect.py::Inspector.judge": 18,
    "importers/dotenv.py::_word": 18,
    "runs/verdict.py::compare_views": 18,
    "tui/render.py::overview": 18,
    "bridge/framing.py::ChunkedDecoder.feed": 17,
    "bridge/translate/exchange.py::Exchange.feed": 17,
    "bridge/upstream.py::Upstream.chunks": 17,
    "launch/launcher.py::execute": 17,
    "runs/verdict.py::_cause": 17,
    "tui/screens/editor.py::apply_changes": 17,
    "bridge/server.py::Bridge._forward": 15,
    "diagnose/check.py::check_profiles": 16,
    "launch/uninstall.py::plan": 16,
    "bridge/translate/tools.py::_normalise": 15,
    "commands/profiles.py::show_cmd": 15,
    "diagnose/processes.py::_scan_proc": 15,
    "importers/scrub_text.py::_containers": 15,
    "runs/archive_read.py::_check": 15,
    "tools/share.py::claude_state": 15,
    "bridge/observe.py::_object_in_steps": 14,
    "bridge/upstream.py::Pool.request": 14,
    "commands/imports.py::export_cmd": 14,
    "diagnose/doctor.py::run_doctor": 14,
    "importers/env_file.py::_decide": 14,
    "launch/layer_files.py::locate": 14,
    "profiles/presets.py::_new_document": 14,
    "profiles/schema.py::profile_from_data": 14,
    "bridge/server.py::Bridge._handle": 13,
    "commands/launching.py::read_args": 13,
    "importers/scrub_text.py::scrub_toml_text": 13,
    "launch/ptytail.py::supervise_on_pty": 13,
    "runs/outcomes.py::_rows": 13,
    "runs/outcomes.py::read_outcomes": 13,
    "runs/rounds.py::round_row": 13,
    "runs/usage.py::totals": 13,
    "tools/codex/__init__.py::config_problems": 13,
    "bridge/guard_program.py::launch_processes": 12,
    "bridge/provider_errors.py::classify": 12,
    "bridge/translate/stream.py::ResponsesStream.feed": 12,
    "cli.py::run": 12,
    "commands/diagnose.py::check_cmd": 12,
    "diagnose/check.py::run_probe": 12,
    "importers/cc_switch.py::plan_cc_switch": 12,
    "importers/env_file.py::_fill": 12,
    "launch/layers.py::_judge_one": 12,
    "profiles/presets.py::new_profile": 12,
    "runs/archive_write.py::known_secrets": 12,
    "importers/cc_switch.py::read_db": 11,
    "launch/uninstall.py::carry_out": 11,
    "runs/archive_read.py::import_archives": 11,
    "runs/archive_write.py::select": 11,
    "tools/codex/config.py::edit": 11,
}


def _qualnames(path: Path) -> dict[int, str]:
    """Each def's line (where ruff reports it) → its dotted name inside the module (``Class.method``)."""
    names: dict[int, str] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    names[child.lineno] = name
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return names


def measured() -> dict[str, int]:
    """Every function of the package over the limit → its complexity, ``noqa`` comments ignored."""
    done = subprocess.run(
        [str(RUFF), "check", "--select", "C901", "--ignore-noqa", "--output-format", "json", "--exit-zero",
         str(PACKAGE)], capture_output=True, text=True, check=True, cwd=ROOT)
    found: dict[str, int] = {}
    for item in json.loads(done.stdout):
        path = Path(item["filename"])
        complexity = re.search(r"\((\d+) > \d+\)", item["message"])
        assert complexity, item["message"]
        name = _qualnames(path)[item["location"]["row"]]
        found[f"{path.relative_to(PACKAGE).as_posix()}::{name}"] = int(complexity.group(1))
    return found


def test_no_function_gets_more_complex_and_the_list_only_shrinks() -> None:
    found = measured()
    assert found, "ruff reported no C901 at all: is the check still selecting it?"
    new = {name: value for name, value in found.items() if name not in CEILINGS}
    grown = {name: (CEILINGS[name], value) for name, value in found.items() if value > CEILINGS.get(name, value)}
    gone = sorted(name for name in CEILINGS if name not in found)
    lower = {name: value for name, value in found.items() if value < CEILINGS.get(name, value)}
    assert not new, f"over the complexity limit, split it along its steps: {new}"
    assert not grown, f"more complex than its ceiling (ceiling, now): {grown}"
    assert not gone, f"back under the limit: remove these from CEILINGS and their `# noqa: C901`: {gone}"
    assert not lower, f"below their ceiling: write these values in CEILINGS: {lower}"


def test_no_function_is_above_the_hard_ceiling() -> None:
    assert {name: value for name, value in measured().items() if value > MOST} == {}
    assert {name: value for name, value in CEILINGS.items() if value > MOST} == {}


def test_the_noqa_comments_are_the_listed_functions() -> None:
    """A ``# noqa: C901`` on a function that is not listed would hide it from ruff for nothing."""
    marked = set()
    for path in PACKAGE.rglob("*.py"):
        names = _qualnames(path)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if "noqa: C901" in line:
                marked.add(f"{path.relative_to(PACKAGE).as_posix()}::{names.get(number, f'line {number}')}")
    assert marked == set(CEILINGS)

"""``Any`` in annotations only goes down: each module's count, outside JSON values, is a ceiling.

A JSON value is the value of a string-keyed mapping (``dict[str, Any]``, ``Mapping[str, Any]``): a
parsed or written JSON object, whose values are whatever JSON holds. Every other ``Any`` in a
parameter, a return, an annotated name or a type alias (string annotations included) is counted. A
module that uses fewer than its ceiling fails too, saying the new ceiling: the list only shrinks."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ccswitch_tui"
MAPPINGS = {"dict", "Dict", "Mapping", "MutableMapping"}

# module (relative to the package) → most ``Any`` it may annotate outside JSON values
CEILINGS = {
    "launch/layer_files.py": 16,
    "tools/fields.py": 16,
    "valueclass.py": 9,  # field() and valueclass() typed as dataclasses' own are (a default of any type)
    "tui/host.py": 13,
    "bridge/observe.py": 11,
    "tui/render.py": 11,
    "bridge/server.py": 10,
    "keys/secret_service.py": 7,
    "tui/service.py": 10,
    "tui/screens/editor.py": 8,
    "bridge/provider_errors.py": 7,
    "bridge/translate/request.py": 7,
    "bridge/translate/sse.py": 5,
    "commands/launch.py": 7,
    "runs/cells.py": 6,
    "tui/profile_actions.py": 6,
    "bridge/translate/tools.py": 5,
    "keys/keyring.py": 5,
    "tools/importing.py": 5,
    "tui/widgets/detail.py": 5,
    "bridge/framing.py": 4,  # from wire.py (split): a header's default, the decompressors
    "bridge/translate/parts.py": 4,
    "bridge/translate/stream.py": 4,
    "importers/cc_switch.py": 4,
    "importers/scrub_text.py": 4,
    "profiles/schema.py": 4,
    "tui/app.py": 4,
    "tui/widgets/running.py": 4,
    "diagnose/check.py": 3,
    "launch/launcher.py": 2,
    "model.py": 3,
    "policy/secret_forms.py": 3,  # one pattern and filter over str and bytes alike
    "runs/archive_write.py": 3,
    "runs/board.py": 3,
    "runs/board_charts.py": 3,
    "runs/round_changes.py": 3,
    "safe_read.py": 1,
    "tools/codex/config.py": 3,
    "tools/gemini_family.py": 3,
    "tools/share.py": 3,
    "tui/grid.py": 3,
    "tui/widgets/requests.py": 3,
    "bridge/loading.py": 2,
    "bridge/records.py": 2,
    "bridge/tally.py": 2,
    "commands/diagnose.py": 2,
    "commands/held.py": 2,
    "commands/launching.py": 2,
    "commands/profiles.py": 2,
    "importers/writer.py": 2,
    "policy/redact.py": 2,
    "profiles/digest.py": 2,
    "runs/outcomes.py": 2,
    "runs/rounds.py": 2,
    "runs/verdict.py": 2,
    "tools/checker.py": 2,
    "tools/registry.py": 2,
    "tools/spec.py": 2,
    "tui/commands.py": 2,
    "tui/importing.py": 2,
    "tui/messages.py": 2,
    "bridge/session.py": 1,
    "fast_json.py": 1,
    "bridge/translate/calls.py": 1,
    "bridge/usage_cells.py": 1,
    "cli.py": 1,
    "commands/common.py": 1,
    "importers/env_file.py": 1,
    "importers/export.py": 1,
    "importers/planner.py": 1,
    "launch/layers.py": 1,
    "launch/use_status.py": 1,
    "policy/shapes.py": 1,
    "profiles/edit_session.py": 1,
    "profiles/store.py": 1,
    "runs/archive_read.py": 1,
    "runs/manifests.py": 1,
    "runs/record_reader.py": 1,
    "runs/report.py": 1,
    "runs/rerun_lock.py": 1,
    "runs/round_tasks.py": 1,
    "runs/rounds_text.py": 1,
    "tools/claude_import.py": 1,
    "tools/codex/__init__.py": 1,
    "tools/codex/importing.py": 1,
    "tools/layers.py": 1,
    "tui/launching.py": 1,
    "tui/screens/modals.py": 1,
}


def _name(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _anys(node: ast.AST, json_value: bool = False) -> Iterator[bool]:
    """One item per ``Any`` under an annotation: True where it is a JSON value."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # "ToolSpec[Any]"
        try:
            yield from _anys(ast.parse(node.value, mode="eval").body, json_value)
        except SyntaxError:
            pass
        return
    if isinstance(node, (ast.Name, ast.Attribute)) and _name(node) == "Any":
        yield json_value
        return
    if isinstance(node, ast.Subscript):
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        keyed = _name(node.value) in MAPPINGS and len(args) == 2 and _name(args[0]) == "str"
        yield from _anys(node.value)
        for i, arg in enumerate(args):
            yield from _anys(arg, keyed and i == 1)
        return
    for child in ast.iter_child_nodes(node):  # ``Any | None`` keeps the place it is in
        yield from _anys(child, json_value and isinstance(node, ast.BinOp))


def _annotations(tree: ast.AST) -> Iterator[ast.AST]:
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = n.args
            yield from (arg.annotation for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)
                        if arg is not None and arg.annotation is not None)
            if n.returns is not None:
                yield n.returns
        elif isinstance(n, ast.AnnAssign):
            yield n.annotation
            if _name(n.annotation) == "TypeAlias" and n.value is not None:
                yield n.value


def counted(source: str) -> int:
    """The ``Any`` in ``source``'s annotations that are not JSON values."""
    return sum(not json_value for ann in _annotations(ast.parse(source)) for json_value in _anys(ann))


def test_any_outside_json_values_stays_under_each_modules_ceiling():
    counts = Counter({str(p.relative_to(PACKAGE)): n for p in sorted(PACKAGE.rglob("*.py"))
                      if (n := counted(p.read_text()))})
    over = {m: f"{n} > {CEILINGS.get(m, 0)}" for m, n in counts.items() if n > CEILINGS.get(m, 0)}
    assert not over, f"new Any annotations (type them, or a JSON object's values as dict[str, Any]): {over}"
    under = {m: counts[m] for m, c in CEILINGS.items() if counts[m] < c}
    assert not under, f"fewer Any than the ceiling: lower CEILINGS in this file to {under}"


def test_the_count_tells_json_values_from_the_rest():
    source = '''
from typing import Any, TypeAlias
Alias: TypeAlias = "Spec[Any]"
def f(a: Any, b: dict[str, Any], c: Mapping[str, Any | None], d: list[Any], e: dict[int, Any]) -> Any | None:
    x: tuple[Any, ...] = ()
    y: Mapping[str, list[Any]] = {}
    return None
'''
    # counted: the alias, a, d, e's value, the return, x, and list[Any] inside a JSON value (only the
    # mapping's own value slot is a JSON value)
    assert counted(source) == 7
    assert counted("def g(data: Mapping[str, Any]) -> dict[str, Any]: ...") == 0

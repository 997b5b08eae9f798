"""How the TUI is put together, checked on the source and the app class: controllers reach the app
only through Host, one parameterised launch action serves every client of the registry, and the few
``type: ignore`` left in the package each say why."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "ccswitch_tui"
CONTROLLERS = ("tui/launching.py", "tui/importing.py", "tui/profile_actions.py", "tui/host.py",
               "tui/profile_reading.py", "tui/detail_feed.py", "tui/live_tabs.py")
IGNORE = re.compile(r"#\s*type:\s*ignore(\[[^\]]*\])?(?P<rest>.*)$")


def imported_modules(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{alias.name}" for alias in node.names}
    return out


def test_controllers_do_not_import_the_app():
    for rel in CONTROLLERS:
        found = {m for m in imported_modules(PACKAGE / rel) if m.startswith("ccswitch_tui.tui.app")}
        assert found == set(), f"{rel} imports {found}"


def test_no_tui_class_is_a_mixin_and_no_action_is_made_at_import():
    for path in sorted((PACKAGE / "tui").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        mixins = [n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and "Mixin" in n.name]
        assert mixins == [], f"{path.name}: {mixins}"
        module_calls = [n for top in tree.body if not isinstance(top, (ast.FunctionDef, ast.ClassDef))
                        for n in ast.walk(top) if isinstance(n, ast.Call)]
        assert not any(isinstance(c.func, ast.Name) and c.func.id == "setattr" for c in module_calls), path.name


def test_the_app_is_its_controllers_host():
    """CcsApp has every member Host names (mypy checks the signatures where the app hands itself over)."""
    from ccswitch_tui.tui.app import CcsApp
    from ccswitch_tui.tui.host import Host

    wanted = {n for n in vars(Host) if not n.startswith("_")}
    assert {"current_entry", "open_screen", "post_message", "run_worker", "suspend"} <= wanted
    assert [n for n in sorted(wanted) if not hasattr(CcsApp, n)] == []


def test_launch_keys_are_one_parameterised_action_from_the_registry():
    from ccswitch_tui import tools
    from ccswitch_tui.tui.app import CcsApp

    bindings = {b.id: b for b in CcsApp.BINDINGS if not isinstance(b, tuple)}
    from ccswitch_tui.tools.capabilities import TuiFace

    specs = [s for s in tools.load().clients() if isinstance(s, TuiFace)]
    assert len(specs) >= 4
    for spec in specs:
        b = bindings[f"launch_{spec.name}"]
        assert (b.key, b.action) == (spec.tui_key, f"launch('{spec.name}')")
        assert not hasattr(CcsApp, f"action_launch_{spec.name}")
    assert callable(CcsApp.action_launch)


def test_type_ignores_are_few_and_each_says_why():
    lines = [(path, n, line) for path in sorted(PACKAGE.rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1) if "type: ignore" in line]
    assert len(lines) <= 5, [f"{p.relative_to(PACKAGE)}:{n}" for p, n, _ in lines]
    for path, n, line in lines:
        m = IGNORE.search(line)
        assert m and m.group(1), f"{path.relative_to(PACKAGE)}:{n}: name the error code"
        assert re.search(r"#\s*\w+.*\w", m.group("rest")), f"{path.relative_to(PACKAGE)}:{n}: say why"


def test_the_ignore_check_works():
    """The pattern really tells a bare ignore from one with a reason (so the test above can fail)."""
    bare = IGNORE.search("x = f()  # type: ignore[arg-type]")
    said = IGNORE.search("import tomli as tomllib  # type: ignore[no-redef]  # its 3.10 name")
    assert bare and not re.search(r"#\s*\w+.*\w", bare.group("rest"))
    assert said and re.search(r"#\s*\w+.*\w", said.group("rest"))

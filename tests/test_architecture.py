"""The architecture holds: the import contracts in pyproject.toml (layers, Textual only in the TUI,
httpx only in check, client modules independent) are kept, each one breaks on a probe import, and
no import cycle exists, counting imports inside functions and under TYPE_CHECKING."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ccswitch_tui import tools

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "ccswitch_tui"
LINT = Path(sys.executable).parent / "lint-imports"
LAYERS = "layers: each imports only the layers below it"
CONTRACTS = ("core modules import no Textual", "only check.py imports httpx",
             "client modules do not import each other", LAYERS)


INDEPENDENT = re.compile(r'(name = "client modules do not import each other"\ntype = "independence"\n'
                         r'modules = )\[[^\]]*\]')


def client_modules() -> list[str]:
    """Every registered client's module: a client added with its one registry line is in the
    independence contract without anyone editing pyproject.toml."""
    return [f"ccswitch_tui.tools.{module}" for module in tools._MODULES.values()]


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports over ``root`` with pyproject.toml's contracts, the client list taken from the registry."""
    config = root / ".importlinter-registry.toml"
    text, n = INDEPENDENT.subn(lambda m: m.group(1) + json.dumps(client_modules()),
                               (root / "pyproject.toml").read_text())
    assert n == 1, "pyproject.toml's independence contract was not found"
    config.write_text(text)
    try:
        return subprocess.run([str(LINT), str(config)], cwd=root, capture_output=True, text=True,
                              timeout=180, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)})
    finally:
        config.unlink()


def test_every_contract_is_kept():
    r = lint(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{len(CONTRACTS)} kept, 0 broken" in r.stdout
    for name in CONTRACTS:
        assert f"{name} KEPT" in r.stdout


# (module to change, the import a careless change would add, the contract it must break)
PROBES = [
    ("launch/launcher.py", "import textual\n", "core modules import no Textual"),
    ("launch/launcher.py", "import httpx\n", "only check.py imports httpx"),
    ("tools/claude.py", "from ccswitch_tui.tools import codex\n", "client modules do not import each other"),
    # the newest clients too: the contract's list comes from the registry
    *[(f"tools/{m}.py", "from ccswitch_tui.tools import claude\n", "client modules do not import each other")
      for m in list(tools._MODULES.values())[-3:-1]],
    # an upward import hidden in a function body still counts
    ("model.py", "def _probe():\n    from ccswitch_tui import tools\n", LAYERS),
    ("policy/__init__.py", "from ccswitch_tui.profiles import store\n", LAYERS),
    ("tools/spec.py", "from ccswitch_tui.launch import liveness\n", LAYERS),
]


@pytest.mark.parametrize("module,probe,contract", PROBES, ids=[f"{m}:{c}" for m, _, c in PROBES])
def test_each_contract_breaks_on_a_probe_import(tmp_path, module, probe, contract):
    copy = tmp_path / "tree"
    shutil.copytree(PACKAGE, copy / "ccswitch_tui", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    target = copy / "ccswitch_tui" / module
    target.write_text(target.read_text() + "\n" + probe)
    r = lint(copy)
    assert r.returncode == 1, r.stdout  # lint-imports: a broken contract
    assert f"{contract} BROKEN" in r.stdout, r.stdout
    assert f"{len(CONTRACTS) - 1} kept, 1 broken" in r.stdout, r.stdout


def module_imports(package: Path) -> dict[str, set[str]]:
    """Every import between the package's modules: module level, inside functions, under
    TYPE_CHECKING, relative or absolute, ``from pkg import module`` included."""
    mods: dict[str, Path] = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = path

    def resolve(candidate: str) -> str | None:
        while candidate and candidate not in mods:
            candidate = candidate.rpartition(".")[0]
        return candidate or None

    edges: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_pkg else name.split(".")[:-1]
                    base = base[: len(base) - node.level + 1]
                    module = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    module = node.module or ""
                targets = [module, *(f"{module}.{a.name}" for a in node.names)]
            for t in targets:
                found = resolve(t) if t.startswith(package.name) else None
                if found and found != name:
                    edges[name].add(found)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10000))
    try:  # put back: the tests that run after this one rely on the default limit (deep JSON must recurse too far)
        for v in edges:
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


def test_no_import_cycle_counting_function_and_type_checking_imports():
    assert cycles(module_imports(PACKAGE)) == []


def test_the_cycle_finder_sees_imports_inside_functions(tmp_path):
    """A two-module cycle made only by an import inside a function and one under TYPE_CHECKING."""
    pkg = tmp_path / "ccswitch_tui"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from ccswitch_tui import b\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n")
    assert cycles(module_imports(pkg)) == [["ccswitch_tui.a", "ccswitch_tui.b"]]


def late_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """The imports inside a function body, TYPE_CHECKING blocks aside."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, in_function = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            stack.append((child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))))
    return sorted(found, key=lambda n: n.lineno)


def unexplained_local_imports(package: Path) -> list[str]:
    """Late imports without a ``# lazy: why`` comment on their last line or on the line above:
    imports inside a function that nobody explained."""
    found = []
    for path in sorted(package.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in late_imports(ast.parse("\n".join(lines))):
            last = lines[(node.end_lineno or node.lineno) - 1]
            above = lines[node.lineno - 2] if node.lineno > 1 else ""
            if "# lazy:" not in last and not above.strip().startswith("# lazy:"):
                found.append(f"{path.relative_to(package.parent)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    return found


def test_every_import_inside_a_function_says_why_it_is_late():
    # A late import keeps something heavy (Textual, httpx, aiohttp, tomlkit) or unneeded off the launch
    # path; any other import belongs at the top of its module, where the cycle check sees it.
    assert unexplained_local_imports(PACKAGE) == []


def test_the_late_import_check_sees_an_unexplained_one(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "a.py").write_text(
        "def f():\n"
        "    import json\n"
        "    import textwrap  # lazy: a reason\n"
        "    # lazy: a reason too long for the line\n"
        "    import shlex\n"
        "    if True:\n"
        "        from os import path\n"
        "    return json, textwrap, shlex, path\n"
    )
    assert unexplained_local_imports(pkg) == ["pkg/a.py:2: import json", "pkg/a.py:7: from os import path"]

"""docs/adding-a-client.md, executed: its module (a client installed from PyPI) is written to a temporary
folder and registered under its registry line's name, with no file of ccs changed, and then every
conformance flow (tests/conformance_flows.py) runs for it: launch from a contaminated shell, ps/inspect,
doctor, a recorded launch, export, the TUI; the install script reads its pin. Nothing here names a
client or imports one: what the page promises — a module, a registry line, a pin — is all it takes."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conformance_flows import FLOWS, World

from ccswitch_tui import tools
from ccswitch_tui.tools.capabilities import TuiFace

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "adding-a-client.md"
PACKAGE = "recipe_clients"  # the temporary folder's package the page's module is written into


def recipe(part: str) -> str:
    """The code block the page marks ``<!-- recipe:PART -->``."""
    text = DOC.read_text()
    block = text.split(f"<!-- recipe:{part} -->\n```python\n", 1)[1]
    return block.split("\n```", 1)[0] + "\n"


def registry_line() -> tuple[str, str]:
    """(name, module) from the page's line for ``_MODULES``."""
    m = re.fullmatch(r'\s*"([a-z0-9_-]+)": "([a-z0-9_]+)",\s*', recipe("registry"))
    assert m, "the page's registry line is not `\"NAME\": \"MODULE\",`"
    return m.group(1), m.group(2)


def without_tui_face(code: str) -> str:
    """The page's module without its TUI face (capabilities.TuiFace): its base and its two lines."""
    lines = [line for line in code.replace(", TuiFace", "").splitlines(keepends=True)
             if not line.lstrip().startswith(("tui_key =", "short ="))]
    out = "".join(lines)
    assert "TuiFace" not in out and len(lines) == len(code.splitlines()) - 2, "the page's TuiFace lines moved"
    return out


@pytest.fixture(scope="module")
def recipe_client(request: pytest.FixtureRequest,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The page's client, registered here and (through a sitecustomize) in every ccs child; its name
    and the folder to put on PYTHONPATH. Parametrized "faceless" (indirectly), the module lacks its
    TUI face."""
    name, module = registry_line()
    code = recipe("module")
    if getattr(request, "param", "face") == "faceless":
        code = without_tui_face(code)
    folder = tmp_path_factory.mktemp("recipe")
    (folder / PACKAGE).mkdir()
    (folder / PACKAGE / "__init__.py").write_text("")
    (folder / PACKAGE / f"{module}.py").write_text(code)
    full = f"{PACKAGE}.{module}"
    site = folder / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        f"import sys\nsys.path.insert(0, {str(folder)!r})\ntry:\n    from ccswitch_tui import tools\n"
        f"except ImportError:\n    pass\nelse:\n    tools.register({name!r}, {full!r})\n")
    sys.path.insert(0, str(folder))
    tools.register(name, full)
    yield name, site
    tools.unregister(name)
    sys.path.remove(str(folder))
    for mod in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[mod]


@pytest.fixture
def world(ccs, base_env, stubs, key_id, tmp_path: Path, recipe_client) -> World:
    _, site = recipe_client
    stub_dir, work = tmp_path / "bin", tmp_path / "work"
    work.mkdir()
    env = {**base_env, "PATH": f"{stub_dir}:{base_env['PATH']}", "PYTHONPATH": str(site)}
    return World(ccs=ccs, env=env, stubs=stubs, key_id=key_id, stub_dir=stub_dir, work=work)


def test_the_page_registers_a_client_that_is_not_an_npm_package(recipe_client):
    name, _ = recipe_client
    spec = tools.load().get(name)
    assert spec in tools.load().clients() and spec.package is not None and spec.package.manager != "npm"
    assert tools.load().recognise(spec.program or "", None) == name


@pytest.mark.parametrize("flow", list(FLOWS))
def test_every_conformance_flow_serves_it(world: World, recipe_client, flow: str):
    name, _ = recipe_client
    if flow == "ps-inspect":  # the sitecustomize on PYTHONPATH is a loader inspect names: ours, not the client's
        FLOWS[flow](world, tools.load().get(name), frozenset({"loader"}))
    else:
        FLOWS[flow](world, tools.load().get(name))


@pytest.mark.parametrize("recipe_client", ["faceless"], indirect=True)
@pytest.mark.parametrize("flow", ["launch", "tui"])
def test_without_its_tui_face_it_launches_from_the_cli_and_the_tui_menu(world: World, recipe_client, flow: str):
    """The TUI face is optional: without it the client registers, `ccs launch` starts it, and the TUI
    has no key for it but launches it from its launch menu (the tui flow clicks the menu's button)."""
    name, _ = recipe_client
    spec = tools.load().get(name)
    assert not isinstance(spec, TuiFace) and spec in tools.load().clients()
    FLOWS[flow](world, spec)


def test_the_install_script_installs_its_pin(recipe_client):
    """The rows scripts/install-clients.sh installs come from the registry: the page's pin is one."""
    name, site = recipe_client
    script = (ROOT / "scripts" / "install-clients.sh").read_text()
    rows_code = script.split("<<'PYEOF'\n", 1)[1].split("\nPYEOF", 1)[0]
    r = subprocess.run([sys.executable, "-c", rows_code], env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    p = tools.load().get(name).package
    assert p is not None
    assert f"{p.manager}\t{p.name}\t{p.version}\t{tools.load().get(name).program}\t" in r.stdout, r.stdout


def test_the_flows_and_this_test_name_no_client():
    """What the flows do for a client comes from its spec: neither they nor this test import a client's
    module or name a built-in client."""
    built_in = {s.name for s in tools.load().clients()} - {registry_line()[0]}
    tests = Path(__file__).resolve().parent
    for path in (tests / "conformance_flows.py", tests / "client_stub.py", tests / "tui_client_probe.py",
                 Path(__file__)):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom | ast.Import):
                modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                assert not any(m.startswith("ccswitch_tui.tools.") and m.split(".")[2] in built_in
                               or m.startswith("fake_client") for m in modules), (path.name, modules)
            words = set()
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                words = set(re.findall(r"[a-z0-9_-]+", node.value.lower()))
            elif isinstance(node, ast.Name | ast.Attribute):
                words = {(node.id if isinstance(node, ast.Name) else node.attr).lower()}
            assert not words & built_in, (path.name, sorted(words & built_in))


def test_the_pages_module_type_checks_as_strictly_as_the_client_modules(tmp_path: Path):
    """tools/ is checked with mypy's strict flags (pyproject.toml): the page's module passes them too."""
    module = tmp_path / "pipcli_module.py"
    module.write_text(recipe("module"))
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", "/dev/null", "--config-file",
                        str(ROOT / "pyproject.toml"), str(module)], capture_output=True, text=True, timeout=300,
                       cwd=ROOT)  # the package's source, as the type check of the package sees it
    assert r.returncode == 0 and "Success" in r.stdout, r.stdout + r.stderr

"""Every flow of tests/conformance_flows.py for every registered client and ``fakecli`` (tests/fake_client),
each with a stub client named after the spec's program: what ccs does for a client comes from its spec
alone, whether or not the real client is installed. The real clients' own behaviour is tested in their
files (test_launch.py, test_new_clients.py, test_kilo.py, test_qwen.py, …) and, layer by layer, in
test_conformance_layers.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from conformance_flows import FLOWS, World
from fake_client.spec import TOOL as FAKE

from ccswitch_tui import tools
from ccswitch_tui.tools.spec import ToolSpec

FAKE_DIR = Path(__file__).resolve().parent / "fake_client"
SPECS: dict[str, ToolSpec] = {**{s.name: s for s in tools.load().clients()}, FAKE.name: FAKE}
# the fake client reaches ccs's children through a sitecustomize on PYTHONPATH, which ccs reports as a
# loader in the client's environment: the only finding its flows may show
ALLOWED = {FAKE.name: frozenset({"loader"})}


@pytest.fixture(scope="module", autouse=True)
def fake_registered():
    tools.register(FAKE.name, "fake_client.spec")
    yield
    tools.unregister(FAKE.name)


@pytest.fixture
def world(ccs, base_env, stubs, key_id, tmp_path: Path) -> World:
    stub_dir, work = tmp_path / "bin", tmp_path / "work"
    work.mkdir()
    env = {**base_env, "PATH": f"{stub_dir}:{base_env['PATH']}"}
    return World(ccs=ccs, env=env, stubs=stubs, key_id=key_id, stub_dir=stub_dir, work=work)


@pytest.mark.parametrize("flow", list(FLOWS))
@pytest.mark.parametrize("name", list(SPECS))
def test_every_flow_serves_every_client(world: World, name: str, flow: str):
    spec = SPECS[name]
    if name == FAKE.name:  # the children register it from a sitecustomize
        world.env["PYTHONPATH"] = str(FAKE_DIR / "site")
    if flow == "ps-inspect":
        FLOWS[flow](world, spec, ALLOWED.get(name, frozenset()))
    else:
        FLOWS[flow](world, spec)


def test_an_unknown_client_name_lists_every_registered_one(ccs, base_env):
    """The registered clients, the fake one too (its sitecustomize registers it in the child)."""
    r = ccs("launch", "p", "no-such-client", env={**base_env, "PYTHONPATH": str(FAKE_DIR / "site")})
    names = ", ".join(s.name for s in tools.load().clients())
    assert r.returncode == 2 and f"choose one of: {names} (or `ccs run`" in r.stderr and FAKE.name in names, r.stderr

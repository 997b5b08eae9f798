"""Shared fixtures: a private CCS_HOME, the real Secret Service, the real pinned clients (one at a
time, as the registry declares them), and a way to run `ccs` as a real child process.

Tests that need the keyring daemon or a real client skip when those are missing on a developer
machine, but fail under CI (``CI`` set), where skipping would hide a broken setup. They are marked
``keyring`` and ``clients`` from the fixtures they use, so ``pytest -m "not clients"`` is a fast subset.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ccswitch_tui import tools
from ccswitch_tui.paths import Paths, resolve_paths
from ccswitch_tui.tools.spec import ToolSpec

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = ROOT / ".cache" / "clients"
CLIENTS_BIN = CLIENTS / "bin"  # one link per client, npm's and PyPI's alike (scripts/install-clients.sh)
IN_CI = bool(os.environ.get("CI"))


def skip_or_fail(reason: str) -> None:
    """Skip locally; under CI a missing prerequisite is a failure, never a silent skip."""
    if IN_CI:
        pytest.fail(f"{reason} (CI is set, so this cannot be skipped)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture
def ccs_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    home = tmp_path / "ccs-home"
    monkeypatch.setenv("CCS_HOME", str(home))
    return resolve_paths({"CCS_HOME": str(home)})


@pytest.fixture(scope="session")
def secret_service() -> str:
    """Assert that a real, unlocked Secret Service answers; returns the backend's name."""
    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        skip_or_fail("no D-Bus session: run the suite through scripts/test.sh (a real Secret Service)")
    try:
        from keyring.backends import SecretService

        backend = SecretService.Keyring()
        backend.priority  # noqa: B018 — raises when no Secret Service answers
        probe = f"probe-{uuid.uuid4().hex[:8]}"
        backend.set_password("ccswitch-tui-probe", probe, "x")
        backend.delete_password("ccswitch-tui-probe", probe)
    except Exception as exc:  # noqa: BLE001
        skip_or_fail(f"no usable Secret Service on the session bus: {exc}")
    return "SecretService.Keyring"


@pytest.fixture
def key_id(secret_service: str) -> Iterator[str]:
    """A fresh key id in the real keyring, removed afterwards."""
    kid = f"test-{uuid.uuid4().hex[:10]}"
    yield kid
    import keyring

    try:
        keyring.delete_password("ccswitch-tui", kid)
    except Exception:  # noqa: BLE001 — already gone
        pass


def forget_indexed_keys(paths: Paths) -> None:
    """Remove from the real keyring every key ccs indexed under ``paths`` (test clean-up)."""
    import json

    import keyring

    try:
        ids = json.loads(paths.key_index.read_text())["keys"]
    except (FileNotFoundError, ValueError):
        ids = []
    for kid in ids:
        try:
            keyring.delete_password("ccswitch-tui", kid)
        except Exception:  # noqa: BLE001 — already gone
            pass


def _installed(program: str) -> bool:
    return (CLIENTS_BIN / program).exists()


def _program(client: str | ToolSpec) -> str:
    spec = tools.load().get(client) if isinstance(client, str) else client
    if not spec.program or spec.package is None:
        raise ValueError(f"client {spec.name!r} declares no pinned package: no real binary to ask for")
    return spec.program


ClientBin = Callable[..., Path]


@pytest.fixture(scope="session")
def client_bin() -> ClientBin:
    """``client_bin(spec_or_name, ...)``: the folder holding the real, pinned executable of each client
    asked for (a test asks for the clients it starts, and only those must be installed). A missing one is
    installed from the registry's pins (scripts/install-clients.sh), else the test skips, or fails
    under CI. Tests that use this fixture carry the ``clients`` marker."""

    def ask(*clients: str | ToolSpec) -> Path:
        programs = [_program(c) for c in clients]
        if not programs:
            raise ValueError("client_bin() needs at least one client")
        if not all(_installed(p) for p in programs):
            rc = subprocess.run(["bash", str(ROOT / "scripts" / "install-clients.sh")]).returncode
            missing = [p for p in programs if not _installed(p)]
            if rc != 0 or missing:
                skip_or_fail(f"the pinned {', '.join(missing)} is not installed (scripts/install-clients.sh)")
        return CLIENTS_BIN

    return ask


@pytest.fixture(scope="session")
def clients_bin(client_bin: ClientBin) -> Path:
    """The folder holding every registered client's real executable: the older form, for tests written
    before ``client_bin``; a new test asks ``client_bin`` for the clients it starts, so that a client
    that is not installed skips (or, under CI, fails) only its own tests."""
    return client_bin(*(s for s in tools.load().clients() if s.program and s.package))


# fixture → marker: `pytest -m "not clients"` leaves out every test that starts a real client,
# `-m "not keyring"` every test that needs the Secret Service (fixtures they use indirectly count)
_MARKERS_BY_FIXTURE = {"client_bin": "clients", "secret_service": "keyring"}  # clients_bin uses client_bin


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for fixture, marker in _MARKERS_BY_FIXTURE.items():
            if fixture in used and item.get_closest_marker(marker) is None:
                item.add_marker(marker)


@pytest.fixture
def base_env(ccs_home: Paths, tmp_path: Path) -> dict[str, str]:
    """A minimal parent environment for ccs children: its own HOME, the session bus, a PATH, and no
    managed Claude Code settings (so a file in /etc on the test machine cannot change results)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        "PATH": f"/usr/local/bin:/usr/bin:/bin:{Path(sys.executable).parent}",
        "HOME": str(home),
        "CCS_HOME": os.environ["CCS_HOME"],
        "DBUS_SESSION_BUS_ADDRESS": os.environ.get("DBUS_SESSION_BUS_ADDRESS", ""),
        "LANG": "C.UTF-8",
        "CCS_CLAUDE_MANAGED_SETTINGS": str(tmp_path / "no-managed-settings.json"),
    }


@pytest.fixture
def home(ccs_home: Paths, key_id: str) -> Paths:
    """The TUI tests' CCS_HOME: their fixed profiles, and a real key for them in the keyring."""
    from test_tui_support import KEY_VALUE, make_profiles, parent_env  # Textual only for the TUI tests

    from ccswitch_tui.keys.keyring import KeyStore

    make_profiles(ccs_home, key_id)
    KeyStore(ccs_home, parent_env()).set(key_id, KEY_VALUE)
    return ccs_home


CcsRunner = Callable[..., subprocess.CompletedProcess]


@pytest.fixture
def ccs(ccs_home: Paths) -> CcsRunner:
    """Run `ccs ARGS...` as a real child process with this test's CCS_HOME; returns the result."""

    def run(*args: str, input: str | None = None, env: dict[str, str] | None = None,
            timeout: float = 60, cwd: Path | None = None) -> subprocess.CompletedProcess:
        full_env = dict(os.environ if env is None else env)
        full_env.setdefault("CCS_HOME", os.environ["CCS_HOME"])
        return subprocess.run(
            [sys.executable, "-m", "ccswitch_tui", *args], input=input, env=full_env, cwd=cwd,
            capture_output=True, text=True, timeout=timeout, stdin=None if input is not None else subprocess.DEVNULL,
        )

    return run


@pytest.fixture
def stubs():
    """Make loopback stub servers (tests/stub_server.py) by name; all are closed afterwards."""
    from stub_server import StubServer

    made: list[StubServer] = []

    def make(name: str = "stub") -> StubServer:
        s = StubServer(name)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()

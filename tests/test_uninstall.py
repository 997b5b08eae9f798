"""Taking ccs off a machine: shims that outlive ccs run the real client (and say so once), `ccs use
--uninstall` and `ccs uninstall` remove what ccs wrote, listing it first. Real parts: the real pinned
clients behind the shims, the real keyring, the real state tree."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import keyring
import pytest
from test_launch import KEY, make_profile
from test_shims import by_name, shim_dir

from ccswitch_tui.keys.keyring import SERVICE


def ccs_home() -> Path:
    return Path(os.environ["CCS_HOME"])


def gone_python(tmp_path: Path) -> Path:
    """A venv of ccs's own that can disappear, as a pipx venv does on `pipx uninstall`: this test
    venv's configuration and packages, under another folder."""
    real = Path(sys.prefix)
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    shutil.copy(real / "pyvenv.cfg", venv / "pyvenv.cfg")
    (venv / "lib").symlink_to(real / "lib")
    python = venv / "bin" / "python"
    python.symlink_to(Path(sys.executable).resolve())
    return python


@pytest.mark.usefixtures("secret_service")
def test_a_shim_whose_ccs_is_gone_runs_the_real_client_and_says_so_once(ccs, base_env, stubs, client_bin,
                                                                       key_id, tmp_path):
    """After `pipx uninstall`, `claude --version` said `…/shims/claude: exec: …/python: not found`, 127."""
    clients_bin = client_bin("claude", "codex")
    good = stubs("good")
    make_profile(ccs, base_env, "p", good.url, key_id)
    python = gone_python(tmp_path)
    r = subprocess.run([str(python), "-m", "ccswitch_tui", "use", "p"], env=base_env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert str(python) in (shim_dir() / "claude").read_text()  # the shims run ccs's own Python
    env = {**base_env, "PATH": f"{shim_dir()}:{clients_bin}:{base_env['PATH']}"}
    r = by_name(env, "claude", "--version", cwd=tmp_path)
    assert r.returncode == 0 and "2.1.332" in r.stdout, r.stderr
    runs = json.loads(ccs("runs", "--json").stdout)["runs"]
    assert [m["tool"] for m in runs] == ["claude"]  # through ccs while it is there

    shutil.rmtree(tmp_path / "venv")  # ccs is gone
    for program, version in (("claude", "2.1.332"), ("codex", "0.171.0")):
        r = by_name(env, program, "--version", cwd=tmp_path)
        assert r.returncode == 0 and version in r.stdout, (program, r.returncode, r.stderr)
    first = by_name(env, "gemini", "--version", cwd=tmp_path)
    assert first.returncode == 0 and "0.61.0" in first.stdout, first.stderr
    said = [ln for ln in first.stderr.splitlines() if ln.startswith("ccs:")]
    assert not said  # said once: by the first shim that found ccs gone (claude above)
    r = by_name({**env, "PATH": f"{shim_dir()}:{base_env['PATH']}"}, "claude", "--version", cwd=tmp_path)
    assert r.returncode == 127 and "no real claude on PATH" in r.stderr
    assert len(json.loads(ccs("runs", "--json").stdout)["runs"]) == 1  # no launch without ccs


def test_the_gone_note_is_one_line_naming_the_way_to_remove_the_shims(ccs, base_env, client_bin, tmp_path):
    clients_bin = client_bin("codex")
    python = gone_python(tmp_path)
    r = subprocess.run([str(python), "-m", "ccswitch_tui", "new", "p", "--base-url", "https://x.invalid/v1",
                        "--key", "env:K"], env=base_env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(python), "-m", "ccswitch_tui", "use", "p"], env=base_env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    shutil.rmtree(tmp_path / "venv")
    env = {**base_env, "PATH": f"{shim_dir()}:{clients_bin}:{base_env['PATH']}"}
    r = by_name(env, "codex", "--version", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("ccs")]  # codex says things of its own
    assert len(lines) == 1, r.stderr
    line = lines[0]
    assert line.startswith("ccs: ccs is no longer installed") and f"rm -r {shim_dir()}" in line, line
    again = by_name(env, "codex", "--version", cwd=tmp_path)
    assert again.returncode == 0 and "ccs" not in again.stderr


@pytest.mark.usefixtures("secret_service")
def test_use_uninstall_removes_the_shims_and_the_choice(ccs, base_env, stubs, client_bin, key_id, tmp_path):
    clients_bin = client_bin("claude")
    good = stubs("good")
    make_profile(ccs, base_env, "p", good.url, key_id)
    assert ccs("use", "p").returncode == 0
    (shim_dir() / "notes.txt").write_text("mine")  # not a shim: never ccs's to remove
    r = ccs("use", "--uninstall")
    assert r.returncode == 0, r.stderr
    assert "removed" in r.stdout and "export PATH=" in r.stdout  # the rc file's line is named
    assert sorted(p.name for p in shim_dir().iterdir()) == ["notes.txt"]
    assert not (ccs_home() / "state" / "use").exists()
    assert (ccs_home() / "profiles" / "p.toml").exists() and keyring.get_password(SERVICE, key_id) == KEY
    env = {**base_env, "PATH": f"{shim_dir()}:{clients_bin}:{base_env['PATH']}"}
    r = by_name(env, "claude", "--version", cwd=tmp_path)
    assert r.returncode == 0 and "2.1.332" in r.stdout


@pytest.mark.usefixtures("secret_service")
def test_uninstall_all_lists_first_then_removes_state_packages_profiles_and_keys(ccs, base_env, stubs, key_id,
                                                                                 tmp_path):
    """567 MB stayed behind (shared Codex packages, tool folders) and keys went one id at a time."""
    good = stubs("good")
    make_profile(ccs, base_env, "p", good.url, key_id)
    make_profile(ccs, base_env, "q", good.url, f"{key_id}-q")
    assert ccs("use", "p").returncode == 0
    assert ccs("run", "p", "--", "true").returncode == 0
    state = ccs_home() / "state"
    packages = state / "shared" / "codex-packages"
    packages.mkdir(parents=True)
    (packages / "app-server.bin").write_bytes(b"\0" * 300_000)
    codex = state / "tools" / "p" / "codex"
    codex.mkdir(parents=True)
    (codex / "packages").symlink_to(packages)
    users = Path(base_env["HOME"]) / ".codex" / "AGENTS.md"
    users.parent.mkdir(parents=True)
    users.write_text("mine\n")
    (codex / "AGENTS.md").symlink_to(users)

    listed = ccs("uninstall", "--all", "--keys", "--profiles", "--dry-run")
    assert listed.returncode == 0, listed.stderr
    for what in (f"{state / 'tools' / 'p'}  (tool state of profile 'p'", f"{state / 'shared'}  (pieces shared",
                 f"{state / 'runs'}  (run manifests", f"{shim_dir() / 'claude'}  (a ccs launcher",
                 f"{ccs_home() / 'profiles' / 'q.toml'}  (profile 'q'", f"would remove key '{key_id}-q'"):
        assert what in listed.stdout, (what, listed.stdout)
    assert re.search(r"shared  \(pieces shared by every profile \(a client's downloads\), 29\d\.\d KB\)", listed.stdout)
    assert state.exists() and keyring.get_password(SERVICE, key_id) == KEY  # a dry run removes nothing

    refused = ccs("uninstall", "--all", "--keys", "--profiles")
    assert refused.returncode == 2 and "pass --yes" in refused.stderr and state.exists()

    r = ccs("uninstall", "--all", "--keys", "--profiles", "--yes")
    assert r.returncode == 0, r.stderr
    assert not state.exists() and not (ccs_home() / "profiles").exists() and not ccs_home().exists()
    assert keyring.get_password(SERVICE, key_id) is None and keyring.get_password(SERVICE, f"{key_id}-q") is None
    assert users.read_text() == "mine\n"  # a link's target is the user's own
    assert "pipx uninstall ccswitch-tui" in r.stdout


@pytest.mark.usefixtures("secret_service")
def test_uninstall_all_is_refused_while_a_launch_runs(ccs, base_env, stubs, key_id):
    good = stubs("good")
    make_profile(ccs, base_env, "p", good.url, key_id)
    child = subprocess.Popen([sys.executable, "-m", "ccswitch_tui", "run", "p", "--", "sleep", "60"], env=base_env)
    try:
        for _ in range(100):
            runs = json.loads(ccs("runs", "--json").stdout)["runs"]
            if runs and runs[0]["state"] == "running":
                break
        r = ccs("uninstall", "--all", "--yes")
        assert r.returncode == 2 and "launches still running" in r.stderr, r.stderr
        assert (ccs_home() / "state" / "runs").is_dir()
    finally:
        child.kill()
        child.wait()

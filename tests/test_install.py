"""The README's first command, run for real as a new user would on Debian 12 / recent Ubuntu: the
system Python (externally managed, so plain `pip install .` is refused), a fresh HOME, pipx from the
distribution. Downloads the dependencies from the package index (cached in .cache/pip-install)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, skip_or_fail

SYSTEM_PYTHON = Path("/usr/bin/python3")
PIPX = Path("/usr/bin/pipx")


def readme_install_command() -> str:
    """The first line of the README's first shell block, without its comment."""
    block = re.search(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    assert block, "the README has no shell block"
    return block.group(1).splitlines()[0].split(" #")[0].strip()


def new_user_env(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
            "PIP_CACHE_DIR": str(ROOT / ".cache" / "pip-install"), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


@pytest.mark.timeout(600)
def test_readme_install_command_works_on_an_externally_managed_python(tmp_path: Path):
    if not PIPX.exists() or not SYSTEM_PYTHON.exists():
        skip_or_fail("no system python3 with pipx (Debian package pipx; scripts/install-test-deps.sh installs it)")
    command = readme_install_command()
    assert command.endswith("ccs"), command  # it opens the TUI; here it prints its version instead
    home = tmp_path / "home"
    home.mkdir()
    env = new_user_env(home)
    marker = list(Path("/usr/lib").glob("python3*/EXTERNALLY-MANAGED"))
    if marker:  # what the README steers around: the system Python refuses a plain pip install
        r = subprocess.run([str(SYSTEM_PYTHON), "-m", "pip", "install", "--dry-run", str(ROOT)], cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=120)
        # pip's own status (not ccs's contract): the refusal's name is what says why
        assert r.returncode != 0 and "externally-managed-environment" in r.stderr, r.stderr
    r = subprocess.run(["sh", "-c", f"{command} --version"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=540)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1].startswith("ccs, version "), r.stdout
    # both names run the same command (`ccswitch` for machines where another package's `ccs` comes first)
    for name in ("ccs", "ccswitch"):
        exe = home / ".local" / "bin" / name
        presets = subprocess.run([str(exe), "presets"], env=env, capture_output=True, text=True, timeout=60)
        assert presets.returncode == 0 and "deepseek" in presets.stdout, (name, presets.stderr)
        version = subprocess.run([str(exe), "--version"], env=env, capture_output=True, text=True, timeout=60)
        assert version.returncode == 0 and version.stdout.startswith("ccs, version "), (name, version.stdout)
        # pipx links the command into ~/.local/bin; its Python still starts isolated
        marker, evil = tmp_path / "marker", tmp_path / "evil"
        evil.mkdir(exist_ok=True)
        (evil / "sitecustomize.py").write_text(EVIL.format(marker=str(marker)))
        hostile = subprocess.run([str(exe), "--version"], env={**env, "PYTHONPATH": str(evil)}, cwd=evil,
                                 capture_output=True, text=True, timeout=60)
        assert hostile.returncode == 0 and not marker.exists(), (name, hostile.stderr)


# --- the installed commands start isolated ------------------------------------------------------------

EVIL = "import pathlib; pathlib.Path({marker!r}).write_text('evil code ran inside ccs')\n"


def venv_with_ccs(tmp_path: Path, editable: bool) -> Path:
    """A fresh virtual environment with this checkout installed by pip (as `pip install [-e] .` does);
    its dependencies come from the environment running the tests; the build backend from the package
    index (cached in .cache/pip-install), as pip builds it for a user."""
    import sysconfig

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    (site,) = venv.glob("lib/python3*/site-packages")
    (site / "_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    r = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        "--no-deps", *(["-e"] if editable else []), str(ROOT)],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path,
                       env={**new_user_env(tmp_path), "PATH": f"{venv / 'bin'}:/usr/bin:/bin"})
    assert r.returncode == 0, r.stdout + r.stderr
    return venv


@pytest.mark.timeout(600)
@pytest.mark.parametrize("editable", [False, True], ids=["pip install", "pip install -e"])
def test_installed_commands_ignore_python_variables_and_the_current_folder(tmp_path: Path, editable: bool):
    venv = venv_with_ccs(tmp_path, editable)
    marker = tmp_path / "marker"
    evil = tmp_path / "evil"
    (evil / "ccswitch_tui").mkdir(parents=True)
    for name in ("sitecustomize.py", "usercustomize.py", "click.py", "ccswitch_tui/__init__.py"):
        (evil / name).write_text(EVIL.format(marker=str(marker)))
    linked = tmp_path / "local-bin"  # pipx links the commands from another folder
    linked.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "CCS_HOME": str(tmp_path / "ccs-home")}
    hostile = {**env, "PYTHONPATH": str(evil), "PYTHONHOME": str(evil), "PYTHONSTARTUP": str(evil / "click.py"),
               "PYTHONUSERBASE": str(evil), "PYTHONWARNINGS": "error::sitecustomize.Warning", "PYTHONINSPECT": "1"}
    for name in ("ccs", "ccswitch"):
        (linked / name).symlink_to(venv / "bin" / name)
        for exe in (venv / "bin" / name, linked / name):
            for cwd, run_env in ((tmp_path, env), (tmp_path, {**env, "PYTHONPATH": str(evil)}), (evil, env),
                                 (tmp_path, {**env, "PYTHONHOME": str(evil)}), (evil, hostile)):
                r = subprocess.run([str(exe), "--version"], env=run_env, cwd=cwd, capture_output=True, text=True,
                                   timeout=60, stdin=subprocess.DEVNULL)
                assert not marker.exists(), (exe, cwd, run_env)
                assert r.returncode == 0 and r.stdout.startswith("ccs, version "), (exe, cwd, r.stdout, r.stderr)
        r = subprocess.run([str(linked / name), "presets"], env=hostile, cwd=evil, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0 and "deepseek" in r.stdout and not marker.exists(), r.stderr


def test_the_two_commands_are_one_launcher_and_say_when_their_python_is_missing(tmp_path: Path):
    assert (ROOT / "bin" / "ccs").read_bytes() == (ROOT / "bin" / "ccswitch").read_bytes()
    for name in ("ccs", "ccswitch"):
        assert os.access(ROOT / "bin" / name, os.X_OK)
        copy = tmp_path / name  # a launcher copied away from its virtual environment
        copy.write_bytes((ROOT / "bin" / name).read_bytes())
        copy.chmod(0o755)
        r = subprocess.run([str(copy), "--version"], env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                           timeout=30)
        (line,) = r.stderr.splitlines()
        assert r.returncode == 1 and line.startswith(f"{name}: no Python beside {copy}") and "pipx" in line

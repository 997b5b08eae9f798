"""Empty and relative PATH entries never find a client's real binary: with PATH `shims::/usr/bin` (or a
`.` entry) and no client installed, a repository's own `./codex` would otherwise get the profile's
key. The shims and `ccs launch` share the rule, and one line says so."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ccswitch_tui.launch import shims

KEY = "sk-pathrule-0123456789abcdefXYZ"
REPO_BINARY = '#!/bin/sh\necho "REPOSITORY BINARY RAN with $(env | grep -c 0123456789abcdef) key variables"\n'


def shim_dir() -> Path:
    return Path(os.environ["CCS_HOME"]) / "state" / "shims"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A cloned repository that ships an executable named like a client."""
    r = tmp_path / "repo"
    (r / "bin").mkdir(parents=True)
    for where in (r / "codex", r / "bin" / "codex"):
        where.write_text(REPO_BINARY)
        where.chmod(0o755)
    return r


@pytest.fixture
def profile_env(ccs, base_env) -> dict[str, str]:
    r = ccs("new", "p", "--base-url", "http://127.0.0.1:9", "--key", "env:PK", "--codex-model", "m", env=base_env)
    assert r.returncode == 0, r.stderr
    assert ccs("use", "p", env=base_env).returncode == 0
    return {**base_env, "PK": KEY}


def run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("entry", ["", ".", "bin", "./bin"])
def test_a_shim_never_runs_a_binary_found_through_a_relative_entry(profile_env, repo, entry):
    env = {**profile_env, "PATH": f"{shim_dir()}:{entry}:/usr/bin:/bin"}
    r = run(["codex", "exec", "hi"], env, repo)
    assert "REPOSITORY BINARY RAN" not in r.stdout
    assert r.returncode == 127, r.stdout + r.stderr
    (line,) = r.stderr.strip().splitlines()
    shown = "the empty entry" if entry == "" else repr(entry)
    assert "no real 'codex'" in line and shown in line and "absolute" in line, line


@pytest.mark.parametrize("entry", ["", "."])
def test_ccs_launch_never_runs_a_binary_found_through_a_relative_entry(ccs, profile_env, repo, entry):
    env = {**profile_env, "PATH": f"/usr/bin:{entry}:/bin"}
    r = ccs("launch", "p", "codex", "--", "exec", "hi", env=env, cwd=repo)
    assert "REPOSITORY BINARY RAN" not in r.stdout
    assert r.returncode == 2, r.stdout + r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert "'codex' not found on PATH" in line and "absolute" in line, line


def test_the_real_binary_further_on_is_used_and_one_line_names_the_skipped_one(ccs, profile_env, repo, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "codex").write_text('#!/bin/sh\necho "the installed codex ran"\n')
    (real / "codex").chmod(0o755)
    env = {**profile_env, "PATH": f"{shim_dir()}:.:{real}:/usr/bin:/bin"}
    r = run(["codex", "exec", "hi"], env, repo)
    assert (r.returncode, r.stdout) == (0, "the installed codex ran\n"), r.stderr
    lines = [line for line in r.stderr.splitlines() if "PATH" in line]
    assert len(lines) == 1 and str(repo / "codex") in lines[0] and "'.'" in lines[0], r.stderr
    r = ccs("launch", "p", "codex", "--", "exec", "hi", env=env, cwd=repo)
    assert (r.returncode, r.stdout) == (0, "the installed codex ran\n"), r.stderr
    assert len([line for line in r.stderr.splitlines() if str(repo / "codex") in line]) == 1, r.stderr


def test_the_rule_itself(repo, monkeypatch):
    monkeypatch.chdir(repo)
    found = shims.find_real("codex", ":.:bin:./bin:/nowhere")
    assert found.path is None and found.relative == ("", ".", "bin", "./bin")
    assert found.skipped == (str(repo / "codex"), str(repo / "bin" / "codex"))
    assert shims.find_real("codex", "").path is None  # an empty PATH is one empty entry
    # an explicit path is the caller's own choice: `ccs run p -- ./tool` still runs ./tool
    assert shims.find_real("./codex", "").path == "./codex"

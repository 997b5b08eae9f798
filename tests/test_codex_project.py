"""A repository's own `.codex/config.toml`, with the real, pinned Codex against a loopback stub: in a
project the profile's Codex trusts, the file cannot change the model silently. What the profile pins is
overridden with `-c` (it wins over the project layer in Codex 0.171.0), what it does not pin is refused
with the same ways out as Claude Code's settings layers (--isolate, --force); the manifest records the
file, `ccs runs diff` names a forced layer, and `ccs doctor` names the file."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

KEY = "sk-codex-project-0123456789abcdef"
pytestmark = pytest.mark.usefixtures("secret_service")


def setup(ccs, env, stub, key_id: str, repo: Path) -> None:
    assert ccs("new", "p", "--base-url", stub.url, "--key", key_id, "--codex-model", "p-codex",
               env=env).returncode == 0
    assert ccs("key", "set", key_id, input=KEY, env=env).returncode == 0
    (repo / ".codex").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    # The profile's Codex trusts the project, as after answering Codex's trust prompt once.
    home = Path(os.environ["CCS_HOME"]) / "state" / "tools" / "p" / "codex"
    home.mkdir(parents=True)
    (home / "config.toml").write_text(f'[projects."{repo}"]\ntrust_level = "trusted"\n')


def codex(ccs, env, cwd: Path, *flags: str):
    return ccs("launch", "p", "codex", *flags, "--", "exec", "--skip-git-repo-check", "-c", "analytics.enabled=false",
               "say hi", env=env, cwd=cwd, timeout=120)


def runs(ccs, env) -> list[dict]:
    return json.loads(ccs("runs", "--json", env=env).stdout)["runs"]


def test_a_trusted_projects_model_is_overridden(ccs, base_env, stubs, client_bin, key_id, tmp_path):
    clients_bin = client_bin("codex")
    stub = stubs("good")
    env = {**base_env, "PATH": f"{clients_bin}:{base_env['PATH']}"}
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    elsewhere.mkdir()
    setup(ccs, env, stub, key_id, repo)
    project = repo / ".codex" / "config.toml"
    project.write_text('model = "evil-codex-model"\n')
    assert codex(ccs, env, elsewhere).returncode == 0
    r = codex(ccs, env, repo / ".codex")  # from a subdirectory too: Codex reads up to the git root
    assert r.returncode == 0, r.stderr
    assert [p.body["model"] for p in stub.posts()] == ["p-codex", "p-codex"]
    inside, clean = runs(ccs, env)
    assert inside["layers"] == [f"{project} (project): sets model; beaten by ccs: model"]
    assert inside["project_layers"] == [] and "-c" in inside["argv"]
    r = ccs("runs", "diff", clean["launch_id"], inside["launch_id"], env=env)
    assert r.returncode == 0 and "comparable" in r.stdout, r.stdout  # overridden: the same run as elsewhere

    r = ccs("doctor", "--json", env=env, cwd=repo)
    found = [f for f in json.loads(r.stdout)["findings"] if f["code"] == "settings-override"
             and f["path"] == str(project)]
    assert found and "sets model=evil-codex-model" in found[0]["message"]


def test_an_unpinned_effort_is_refused_with_the_ways_out(ccs, base_env, stubs, client_bin, key_id, tmp_path):
    clients_bin = client_bin("codex")
    stub = stubs("good")
    env = {**base_env, "PATH": f"{clients_bin}:{base_env['PATH']}"}
    repo = tmp_path / "repo"
    setup(ccs, env, stub, key_id, repo)
    project = repo / ".codex" / "config.toml"
    project.write_text('model = "evil-codex-model"\nmodel_reasoning_effort = "high"\n')
    assert codex(ccs, env, tmp_path).returncode == 0  # a clean run, outside the project
    r = codex(ccs, env, repo)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert str(project) in r.stderr and "model_reasoning_effort" in r.stderr
    assert "--isolate" in r.stderr and "--force" in r.stderr
    assert len(stub.posts()) == 1

    r = codex(ccs, env, repo, "--isolate")  # the project untrusted for this launch: its file is not read
    assert r.returncode == 0, r.stderr
    isolated = stub.posts()[-1].body
    assert isolated["model"] == "p-codex" and "effort" not in (isolated.get("reasoning") or {})

    r = codex(ccs, env, repo, "--force")
    assert r.returncode == 0, r.stderr
    forced = stub.posts()[-1].body
    assert forced["model"] == "p-codex" and forced["reasoning"]["effort"] == "high"
    forced_run, isolated_run, clean_run = runs(ccs, env)
    assert forced_run["forced"] is True and forced_run["project_layers"] == [f"{project}: model_reasoning_effort"]
    r = ccs("runs", "diff", clean_run["launch_id"], isolated_run["launch_id"], forced_run["launch_id"], env=env)
    assert r.returncode == 3
    first, second = r.stdout.split(f"{forced_run['launch_id']} vs")
    assert "comparable (no drift)" in first  # --isolate: as if the file were not there
    assert "project_layers (project)" in second and "forced (override)" in second and str(project) in second

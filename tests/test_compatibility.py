"""Users keep their files: a state tree written by the release before the package was reorganised
(tests/fixtures/state-0.1.0: four profiles, the salt, the key index, the tools' config dirs, plain
and recorded run manifests with their records, one with a rotated key) loads and compares with
this version as it did with that one."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "state-0.1.0"
OLD_KEY = "3f9a1c7e5b2d4f608a1e9c3b7d5f2a4e.Xk9Lm2Pq7Rt4Vw8Z"  # the value of env:OLD_KEY those runs used
OLD_FP = "fp:f375eff24640"  # its fingerprint with the tree's salt, as the old release recorded it
ROTATED_FP = "fp:e0f88233c003"


@pytest.fixture
def old_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    shutil.copytree(FIXTURE, home)
    monkeypatch.setenv("CCS_HOME", str(home))
    return home


def env(old_home: Path, base_env: dict[str, str], **extra: str) -> dict[str, str]:
    return {**base_env, "CCS_HOME": str(old_home), "OLD_KEY": OLD_KEY, **extra}


def runs(ccs, e) -> list[dict]:
    r = ccs("runs", "--json", env=e)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["runs"]


def test_old_profiles_load_and_show_as_before(ccs, old_home, base_env):
    e = env(old_home, base_env)
    listed = ccs("list", "--json", env=e)
    assert listed.returncode == 0, listed.stderr
    assert {p["name"] for p in json.loads(listed.stdout)["profiles"]} == {"tt", "deepseek", "kimi", "glm"}
    shown = json.loads(ccs("show", "tt", "--json", env=e).stdout)
    assert shown["tools"] == ["claude", "codex", "gemini", "opencode", "run"]
    assert shown["codex"]["model"] == "gpt-4.1" and shown["claude"]["haiku"] == "claude-haiku-4-5"
    assert shown["policy"]["share"] == ["mcp", "memory"] and shown["policy"]["inherit"] == ["BENCH_SEED"]
    for name in ("deepseek", "kimi", "glm"):
        assert ccs("show", name, "--json", env=e).returncode == 0


def test_the_key_index_and_the_salt_still_serve(ccs, old_home, base_env, secret_service):
    e = env(old_home, base_env)
    r = ccs("key", "list", "--json", env=e)
    assert r.returncode == 0, r.stderr
    assert "deepseek" in r.stdout
    # the same key gives the same fingerprint as the old release recorded: runs stay comparable
    r = ccs("run", "tt", "--", sys.executable, "-c", "pass", env=e)
    assert r.returncode == 0, r.stderr
    newest = runs(ccs, e)[0]
    assert newest["key_fingerprint"] == OLD_FP


def test_old_runs_list_diff_and_report(ccs, old_home, base_env):
    e = env(old_home, base_env)
    old = {m["launch_id"]: m for m in runs(ccs, e)}
    assert len(old) == 6
    recorded = sorted(i for i, m in old.items() if m.get("requests"))
    assert len(recorded) == 3
    baseline, rotated = recorded[0], recorded[1]
    assert old[baseline]["key_fingerprint"] == OLD_FP and old[rotated]["key_fingerprint"] == ROTATED_FP
    same = ccs("runs", "diff", baseline, baseline, env=e)
    assert same.returncode == 0, same.stdout + same.stderr
    drift = ccs("runs", "diff", baseline, rotated, "--json", env=e)
    assert drift.returncode == 3, drift.stdout + drift.stderr
    assert "key_fingerprint" in drift.stdout
    for label in ("baseline", "rotated"):
        r = ccs("runs", "report", "--label", label, env=e)
        assert r.returncode == 0, r.stderr
    assert "Traceback" not in drift.stderr


def test_a_run_of_this_version_compares_with_an_old_one(ccs, old_home, base_env):
    e = env(old_home, base_env)
    before = {m["launch_id"] for m in runs(ccs, e)}
    r = ccs("run", "tt", "--label", "baseline", "--", sys.executable, "-c", "print('plain')", env=e)
    assert r.returncode == 0, r.stderr
    after = runs(ccs, e)
    new = next(m for m in after if m["launch_id"] not in before)
    old_plain = next(m for m in after if m["launch_id"] in before and not m.get("requests") and m["tool"] == "run"
                     and m.get("label") == "baseline")
    d = ccs("runs", "diff", old_plain["launch_id"], new["launch_id"], "--json", env=e)
    assert d.returncode == 3 and "Traceback" not in d.stderr, d.stderr  # found: the two runs differ
    comparison = json.loads(d.stdout)["comparisons"][0]
    assert "key_fingerprint" not in comparison["drifted"] and "base_urls" not in comparison["drifted"]


def test_the_old_tool_config_dirs_are_kept(ccs, old_home, base_env):
    e = env(old_home, base_env)
    config = old_home / "state" / "tools" / "tt" / "codex" / "config.toml"
    before = config.read_text()
    r = ccs("env", "tt", "--tool", "codex", "--format", "json", env=e)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["env"]["CODEX_HOME"] == str(config.parent)
    assert config.read_text() == before  # planning writes nothing

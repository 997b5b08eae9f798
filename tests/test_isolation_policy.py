"""Routing, cloud-switch, proxy and loader variables that a profile lets into the clean environment:
a policy.inherit glob reaching them is refused; a name listed in full, or a value in an env table,
passes but is a warning in env/run, a finding in doctor and, for a running child, in inspect and ps —
each naming where it came from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from leakcheck import assert_one_line, write_profile

HEAD = """schema = 1
[provider]
name = "P"
base_url = "https://gw.example/v1"
key = "env:PKEY"
[run]
export = ["anthropic"]
"""

REFUSED_GLOBS = [["ANTHROPIC_*"], ["CLAUDE_*"], ["A*", "C*"], ["L*"], ["LD_*"], ["OPENAI_*"], ["O*"], ["CODEX_*"],
                 ["AWS_*"], ["PY*"], ["PYTHON*"], ["NODE_*"], ["N*"], ["HTTP*"], ["DYLD_*"], ["_*"], ["ANTHROPIC_X*"],
                 ["MY_VAR", "GOOGLE_*"]]


@pytest.mark.parametrize("globs", REFUSED_GLOBS, ids=lambda g: ",".join(g))
def test_a_glob_reaching_routing_families_is_refused(ccs, ccs_home, globs):
    write_profile(ccs_home.profiles, "p", HEAD + f"[policy]\ninherit = {json.dumps(globs)}\n")
    for args in (("show", "p"), ("run", "p", "--", "true"), ("env", "p")):
        line = assert_one_line(ccs(*args, env={**os.environ, "PKEY": "k" * 20}), 2, says="[policy].inherit")
        assert "full name" in line


@pytest.mark.parametrize("globs", [["MY_TOOL_*"], ["TERM_*", "BENCH_*"], ["ANTHROPIC_LOG"], ["LD_LIBRARY_PATH"]])
def test_other_globs_and_full_names_pass(ccs, ccs_home, globs):
    write_profile(ccs_home.profiles, "p", HEAD + f"[policy]\ninherit = {json.dumps(globs)}\n")
    r = ccs("show", "p")
    assert r.returncode == 0, r.stderr


DOORS = {  # name → (where it is set, what the warning must name)
    "CLAUDE_CODE_USE_BEDROCK": ("[env]", "cloud platform"),
    "OPENAI_BASE_URL": ("[env]", "where the tool sends requests"),
    "NODE_OPTIONS": ("[env]", "what code the child loads"),
    "LD_PRELOAD": ("[env]", "what code the child loads"),
    "ANTHROPIC_LOG": ("policy.inherit", "where the tool sends requests"),
    "LD_LIBRARY_PATH": ("policy.inherit", "what code the child loads"),
    "HTTPS_PROXY": ("policy.inherit", "proxy"),
}


@pytest.fixture
def opened(ccs_home):
    write_profile(ccs_home.profiles, "p", HEAD + """[env]
CLAUDE_CODE_USE_BEDROCK = "1"
AWS_EC2_METADATA_DISABLED = "true"
OPENAI_BASE_URL = "https://other.example/v1"
NODE_OPTIONS = "--max-old-space-size=256"
LD_PRELOAD = ""
API_TIMEOUT_MS = "1000"
[policy]
inherit = ["ANTHROPIC_LOG", "LD_LIBRARY_PATH", "HTTPS_PROXY", "BENCH_*"]
""")
    return ccs_home


def _env() -> dict[str, str]:
    return {**os.environ, "PKEY": "k" * 20, "ANTHROPIC_LOG": "debug", "LD_LIBRARY_PATH": "/opt/lib",
            "HTTPS_PROXY": "http://127.0.0.1:9", "BENCH_SEED": "1"}


def _named(lines: list[str]) -> dict[str, str]:
    return {name: next((w for w in lines if w.startswith(f"{name} ") or f" {name} " in w), "") for name in DOORS}


def test_env_and_run_warn_for_each_door_with_its_source(ccs, opened):
    r = ccs("env", "p", env=_env())
    assert r.returncode == 0, r.stderr
    warns = [w.removeprefix("ccs: warning: ") for w in r.stderr.splitlines()]
    for name, line in _named(warns).items():
        source, effect = DOORS[name]
        assert source in line and effect in line and "'p'" in line, (name, warns)
    assert not any("API_TIMEOUT_MS" in w or "BENCH_SEED" in w or "AWS_EC2" in w for w in warns)

    data = json.loads(ccs("env", "p", "--format", "json", env=_env()).stdout)
    assert all(any(n in w for w in data["warnings"]) for n in DOORS)

    r = ccs("run", "p", "--", "true", env=_env())
    assert r.returncode == 0
    assert all(_named(r.stderr.splitlines()).values())


def test_doctor_reports_each_door_of_each_profile(ccs, opened, tmp_path):
    r = ccs("doctor", "--json", env=_env(), cwd=tmp_path)
    found = [f for f in json.loads(r.stdout)["findings"] if f["code"] == "opened-routing"]
    by_var = {f["variable"]: f for f in found}
    assert set(by_var) == set(DOORS)
    for name, (source, _) in DOORS.items():
        assert source in by_var[name]["message"] and by_var[name]["path"].endswith("p.toml")
        assert by_var[name]["severity"] == "warn"
    text = ccs("doctor", env=_env(), cwd=tmp_path).stdout
    assert "opened-routing" in text and "LD_PRELOAD" in text


def test_inspect_and_ps_do_not_call_such_a_child_clean(ccs, opened, tmp_path):
    pidfile = tmp_path / "pid"
    code = f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    runner = subprocess.Popen([sys.executable, "-m", "ccswitch_tui", "run", "p", "--", sys.executable, "-c", code],
                              env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        pid = int(pidfile.read_text())
        data = json.loads(ccs("inspect", str(pid), "--json", env=_env()).stdout)
        doors = {f["variable"]: f["message"] for f in data["findings"] if f["code"] == "opened-routing"}
        assert set(doors) == set(DOORS)
        for name, (source, _) in DOORS.items():
            assert source in doors[name]
        assert data["counts"]["warn"] >= len(DOORS)
        rows = json.loads(ccs("ps", "--json", env=_env()).stdout)["processes"]
        row = next(p for p in rows if p["pid"] == pid)
        assert row["findings"]["warn"] >= len(DOORS)
    finally:
        runner.terminate()
        runner.wait(timeout=20)

"""Portable fingerprints: two state folders (two machines) given one shared salt fingerprint one key the
same, and a round split between them is clean; without the shared salt the round says its fingerprints
cannot be compared — never that the key rotated. Runs written before salts were named keep their
fingerprints and compare as before."""

from __future__ import annotations

import hashlib
import hmac
import json
import shutil
import sys
from pathlib import Path

import pytest
from leakcheck import assert_hidden, assert_one_line
from provider_stub import ProviderStub
from test_compatibility import FIXTURE, OLD_FP, OLD_KEY
from test_rounds import example_agent

KEY = "sk-portable-0123456789abcdef0123"
SALT = "5f0c2e9a7b1d3f4e6a8c0b2d4f6e8a1c"  # a CI secret: 32 hex digits, read as 16 bytes


def machine(base_env: dict, tmp_path: Path, name: str, salt: str | None = SALT) -> dict[str, str]:
    env = {**base_env, "CCS_HOME": str(tmp_path / name), "CCS_MACHINE": name, "GW_KEY": KEY}
    if salt:
        env["CCS_FINGERPRINT_SALT"] = salt
    return env


def setup(ccs, env: dict, url: str) -> None:
    r = ccs("new", "gw", "--base-url", url, "--key", "env:GW_KEY", env=env)
    assert r.returncode == 0, r.stderr


def rerun(ccs, env: dict, tmp_path: Path, label: str, i: int, *extra: str) -> None:
    agent = tmp_path / "agent.py"
    if not agent.exists():
        agent.write_text(example_agent())
    out = tmp_path / f"out-{env['CCS_MACHINE']}-{label}-{i}.jsonl"
    r = ccs("run", "--record", "--label", label, "--outcomes", str(out), *extra, "gw", "--",
            sys.executable, str(agent), str(out), str(i), env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr


def runs(ccs, env: dict) -> list[dict]:
    return json.loads(ccs("runs", "--json", env=env).stdout)["runs"]


def split_round(ccs, base_env, tmp_path, salt_a: str | None, salt_b: str | None) -> tuple[dict, dict, dict]:
    """Reruns 1-2 on machine a, 3-4 on machine b, both imported into the reporting folder c."""
    stub = ProviderStub()
    try:
        a, b = machine(base_env, tmp_path, "a", salt_a), machine(base_env, tmp_path, "b", salt_b)
        c = machine(base_env, tmp_path, "c", None)
        for env in (a, b):
            setup(ccs, env, stub.url + "/v1")
        for i, env in ((1, a), (2, a), (3, b), (4, b)):
            rerun(ccs, env, tmp_path, "R", i)
        for env in (a, b):
            r = ccs("runs", "export", "--label", "R", "-o", str(tmp_path / f"{env['CCS_MACHINE']}.tar.gz"), env=env)
            assert r.returncode == 0, r.stderr
        r = ccs("runs", "import", str(tmp_path / "a.tar.gz"), str(tmp_path / "b.tar.gz"), env=c)
        assert r.returncode == 0, r.stderr
        return a, b, c
    finally:
        stub.close()


def test_one_shared_salt_one_fingerprint_and_a_clean_round(ccs, base_env, tmp_path):
    a, b, c = split_round(ccs, base_env, tmp_path, SALT, SALT)
    fps = {m["key_fingerprint"] for env in (a, b) for m in runs(ccs, env)}
    expected = "fp:" + hmac.new(bytes.fromhex(SALT), KEY.encode(), hashlib.sha256).hexdigest()[:12]
    assert fps == {expected}
    assert {m["key_salt"] for env in (a, b) for m in runs(ccs, env)} == {
        json.loads(ccs("key", "salt", "--json", env=a).stdout)["id"]}
    (row,) = json.loads(ccs("runs", "report", "--rounds", "R", "--json", env=c).stdout)["rounds"]
    assert row["k"] == 4 and row["comparable"], row["verdict"]
    assert row["verdict"] == "clean: the gap is the agent's" and row["key_strategy"] == f"fixed: {expected}"
    assert row["machines"] == ["a", "b"]
    assert_hidden(ccs("runs", "report", "--rounds", "R", env=c), KEY, SALT)


def test_without_a_shared_salt_the_round_says_its_fingerprints_cannot_be_compared(ccs, base_env, tmp_path):
    a, b, c = split_round(ccs, base_env, tmp_path, None, None)
    fp_a, fp_b = ({m["key_fingerprint"] for m in runs(ccs, env)} for env in (a, b))
    assert len(fp_a) == len(fp_b) == 1 and fp_a != fp_b  # one key, two install salts
    (row,) = json.loads(ccs("runs", "report", "--rounds", "R", "--json", env=c).stdout)["rounds"]
    assert not row["comparable"] and row["drifted"] == ["fingerprint_salt"]
    assert row["verdict"].startswith("not comparable: fingerprints from different salts")
    assert "rotat" not in row["verdict"] and row["key_strategy"] == "salts differ"
    table = ccs("runs", "report", "--rounds", "R", env=c).stdout
    assert "rotated" not in table and "R: not comparable: fingerprints from different salts" in table
    first_a, first_b = runs(ccs, a)[-1]["launch_id"], runs(ccs, b)[-1]["launch_id"]
    diff = json.loads(ccs("runs", "diff", first_a, first_b, "--json", env=c).stdout)["comparisons"][0]
    assert diff["drifted"] == ["fingerprint_salt"] and "key_fingerprint" not in diff["drifted"]
    assert f"{first_b} ran on b, {first_a} on a" in diff["notes"]


def test_one_machine_with_the_shared_salt_and_one_without(ccs, base_env, tmp_path):
    *_, c = split_round(ccs, base_env, tmp_path, SALT, None)
    (row,) = json.loads(ccs("runs", "report", "--rounds", "R", "--json", env=c).stdout)["rounds"]
    assert row["verdict"].startswith("not comparable: fingerprints from different salts")


def test_the_salt_command_and_what_each_salt_gives(ccs, base_env, tmp_path):
    a, b = machine(base_env, tmp_path, "a", None), machine(base_env, tmp_path, "b", None)
    for env in (a, b):
        setup(ccs, env, "http://127.0.0.1:9/v1")

    def fp(env: dict) -> str:
        return json.loads(ccs("show", "gw", "--json", env=env).stdout)["key"]["fingerprint"]

    assert fp(a) != fp(b)
    assert "this install's own" in ccs("key", "salt", env=a).stdout
    child = ccs("run", "gw", "--", "env", env={**a, "CCS_FINGERPRINT_SALT": SALT})
    assert child.returncode == 0 and SALT not in child.stdout and "CCS_FINGERPRINT_SALT" not in child.stdout
    r = ccs("key", "salt", "set", input=SALT, env=a)
    assert r.returncode == 0 and SALT not in r.stdout and "shared, stored with `ccs key salt set`" in r.stdout
    assert (Path(a["CCS_HOME"]) / "state" / "shared-salt").stat().st_mode & 0o777 == 0o600
    assert fp(a) == fp({**b, "CCS_FINGERPRINT_SALT": SALT}) != fp(b)
    # the hex of one machine's own salt makes another fingerprint as that one does
    own_b = (Path(b["CCS_HOME"]) / "state" / "salt").read_text().strip()
    assert fp({**a, "CCS_FINGERPRINT_SALT": own_b}) == fp(b)
    assert ccs("key", "salt", "rm", env=a).returncode == 0 and fp(a) != fp(b)
    assert_one_line(ccs("key", "salt", "rm", env=a), 2, says="no shared salt is stored")
    assert_one_line(ccs("run", "gw", "--", "true", env={**a, "CCS_FINGERPRINT_SALT": "short"}), 2,
                    says="CCS_FINGERPRINT_SALT: a shared fingerprint salt must be one line of 16 characters")
    assert_one_line(ccs("key", "salt", "set", "x" * 20, env=a), 2, says="takes no salt on the command line")


@pytest.fixture
def old_home(tmp_path):
    home = tmp_path / "old"
    shutil.copytree(FIXTURE, home)
    return home


def test_old_runs_keep_their_fingerprints(ccs, base_env, old_home):
    """The fixture's runs name no salt: they were taken under the tree's own. A new run under it compares
    with them as before; one under a shared salt is not comparable with them, and not rotated."""
    e = {**base_env, "CCS_HOME": str(old_home), "OLD_KEY": OLD_KEY}
    old = [m for m in runs(ccs, e) if m.get("label") == "baseline" and not m.get("requests")]
    assert old and all(m["key_fingerprint"] == OLD_FP and "key_salt" not in m for m in old)

    def new_run(env: dict) -> dict:
        before = {m["launch_id"] for m in runs(ccs, env)}
        r = ccs("run", "tt", "--label", "baseline", "--", sys.executable, "-c", "print()", env=env)
        assert r.returncode == 0, r.stderr
        return next(m for m in runs(ccs, env) if m["launch_id"] not in before)

    same = new_run(e)
    assert same["key_fingerprint"] == OLD_FP
    d = json.loads(ccs("runs", "diff", old[0]["launch_id"], same["launch_id"], "--json", env=e).stdout)
    assert not {"key_fingerprint", "fingerprint_salt"} & set(d["comparisons"][0]["drifted"])
    shared = new_run({**e, "CCS_FINGERPRINT_SALT": SALT})
    d = json.loads(ccs("runs", "diff", old[0]["launch_id"], shared["launch_id"], "--json", env=e).stdout)
    drifted = d["comparisons"][0]["drifted"]
    assert "fingerprint_salt" in drifted and "key_fingerprint" not in drifted
    assert all(m["key_fingerprint"] == OLD_FP for m in runs(ccs, e) if m["launch_id"] in {x["launch_id"] for x in old})


def test_rounds_under_different_salts_do_not_say_the_key_changed(ccs, base_env, tmp_path):
    """Two rounds whose fingerprints were taken under different salts: "what changed since the round
    before" says the fingerprints cannot be compared, not that the key changed."""
    env = {**base_env, "CCS_HOME": str(tmp_path / "h")}
    runs_dir = tmp_path / "h" / "state" / "runs"
    runs_dir.mkdir(parents=True)
    for i, (label, salt, fp) in enumerate((("R1", "aaaaaaaaaaaa", "fp:1"), ("R1", "aaaaaaaaaaaa", "fp:1"),
                                           ("R2", "bbbbbbbbbbbb", "fp:2"), ("R2", "bbbbbbbbbbbb", "fp:2"))):
        lid = f"20260101T00000{i}Z-0000000{i}"
        (runs_dir / f"{lid}.json").write_text(json.dumps({
            "launch_id": lid, "profile": "p", "tool": "run", "started": f"2026-01-01T00:00:0{i}Z",
            "ended": "2026-01-01T00:01:00Z", "exit_status": 0, "base_urls": {"OPENAI_BASE_URL": "https://a/v1"},
            "models": {}, "key_id": "k", "key_fingerprint": fp, "key_salt": salt, "env_hash": "sha256:1",
            "label": label}))
    r1, r2 = json.loads(ccs("runs", "report", "--rounds", "R1", "R2", "--json", env=env).stdout)["rounds"]
    assert r1["comparable"] and r2["comparable"] and r2["key_salts"] == ["bbbbbbbbbbbb"]
    assert [c["text"] for c in r2["changed"]] == ["key: fingerprints from different salts (cannot be compared)"]

"""The TaoToken rerun walk-through, end to end, with its own files as written: the `.env.taotoken`
is imported (and scrubbed), the check script runs unchanged through `ccs run --record`, the real
Claude Code (`-p`) and Codex (`exec`) run on the same profile, `env | grep` inside `ccs run` shows one
coherent set although the shell holds stale values, and the rounds table compares a baseline round
with a key-drift round. The gateway is a loopback stand-in serving Chat Completions, Responses and
Messages; every request it got appears once in the records, and the child never held the key."""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import tomlkit
from stub_server import StubServer

KEY = "sk-tt-walkthrough-0a1b2c3d4e5f60718293a4b5"
ROTATED = "sk-tt-walkthrough-rotated-99887766554433221100"
STALE_KEY = "sk-stale-shell-key-7f6e5d4c3b2a19081726"

# The walk-through's file, with the user's key where it says YOUR_API_KEY.
ENV_TAOTOKEN = textwrap.dedent("""\
    export TAOTOKEN_BASE_URL=https://taotoken.net/api
    export TAOTOKEN_API_KEY=YOUR_API_KEY
    export OPENAI_API_KEY=$TAOTOKEN_API_KEY
    export OPENAI_BASE_URL=$TAOTOKEN_BASE_URL
    export ANTHROPIC_BASE_URL=$TAOTOKEN_BASE_URL
    export ANTHROPIC_AUTH_TOKEN=$TAOTOKEN_API_KEY
    """).replace("YOUR_API_KEY", KEY)

# The walk-through's check script, unchanged: it reads TAOTOKEN_* and uses the openai SDK.
CHECK_PY = textwrap.dedent("""\
    import os
    from openai import OpenAI

    client = OpenAI(
        api_key=os.environ["TAOTOKEN_API_KEY"],
        base_url=os.environ["TAOTOKEN_BASE_URL"],
    )
    resp = client.chat.completions.create(
        model="gpt-4.1",
        messages=[{"role": "user", "content": "Reply with OK."}],
    )
    print(resp.choices[0].message.content)
    """)

NAMES = ("TAOTOKEN_BASE_URL", "TAOTOKEN_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
         "ANTHROPIC_AUTH_TOKEN")
URL_NAMES = ("TAOTOKEN_BASE_URL", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
KEY_NAMES = ("TAOTOKEN_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN")


def grep_env(text: str) -> dict[str, str]:
    pairs = [line.split("=", 1) for line in text.splitlines() if "=" in line]
    found: dict[str, list[str]] = {}
    for k, v in pairs:
        found.setdefault(k, []).append(v)
    assert all(len(v) == 1 for v in found.values()), found
    return {k: v[0] for k, v in found.items()}


@pytest.fixture
def forget_keys(ccs_home):
    yield
    from conftest import forget_indexed_keys

    forget_indexed_keys(ccs_home)


@pytest.mark.usefixtures("secret_service", "forget_keys")
def test_the_walkthrough_as_written(ccs, base_env, client_bin, tmp_path):
    clients_bin = client_bin("claude", "codex")
    repo = tmp_path / "appworld-rerun"
    repo.mkdir()
    env_file = repo / ".env.taotoken"
    env_file.write_text(ENV_TAOTOKEN)
    (repo / "check.py").write_text(CHECK_PY)
    home = Path(os.environ["CCS_HOME"])
    stub = StubServer("taotoken")
    try:
        # 1. the .env file comes in: the preset of its host, the key in the keyring, the file scrubbed
        r = ccs("import", "env", str(env_file), "--scrub", env=base_env, cwd=repo)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "created   taotoken" in r.stdout and "preset taotoken" in r.stdout
        assert "line 3 OPENAI_API_KEY, line 6 ANTHROPIC_AUTH_TOKEN referenced the key" in r.stdout
        assert KEY not in env_file.read_text() and KEY not in r.stdout
        profile = home / "profiles" / "taotoken.toml"
        data = tomlkit.parse(profile.read_text()).unwrap()
        assert data["run"]["export"] == ["openai", "anthropic", {"key": "TAOTOKEN_API_KEY",
                                                                 "base_url": "TAOTOKEN_BASE_URL"}]
        key_id = data["provider"]["key"]
        # the gateway here is the loopback stand-in (the one edit the test makes to the profile)
        profile.write_text(profile.read_text().replace("https://taotoken.net/api", stub.url + "/api"))
        upstream = stub.url + "/api"

        # a shell that still holds an older setup's values
        stale = {**base_env, "PATH": f"{clients_bin}:{base_env['PATH']}",
                 "TAOTOKEN_BASE_URL": "https://stale.example/api", "TAOTOKEN_API_KEY": STALE_KEY,
                 "OPENAI_BASE_URL": "https://stale.example/v1", "OPENAI_API_KEY": STALE_KEY,
                 "ANTHROPIC_BASE_URL": "https://stale.example/anthropic", "ANTHROPIC_AUTH_TOKEN": STALE_KEY}

        # 2. env | grep inside ccs run: one coherent set, no stale value
        show = "env | grep -E 'TAOTOKEN|OPENAI|ANTHROPIC'"
        r = ccs("run", "taotoken", "--", "sh", "-c", show, env=stale, cwd=repo)
        assert r.returncode == 0, r.stderr
        plain = grep_env(r.stdout)
        assert set(plain) == set(NAMES)
        assert {plain[n] for n in URL_NAMES} == {upstream} and {plain[n] for n in KEY_NAMES} == {KEY}
        r = ccs("run", "--record", "taotoken", "--", "sh", "-c", show, env=stale, cwd=repo)
        assert r.returncode == 0, r.stderr
        recorded = grep_env(r.stdout)
        assert set(recorded) == set(NAMES) and "stale" not in r.stdout and STALE_KEY not in r.stdout
        assert KEY not in r.stdout  # under --record the child never holds the key
        bridges = {urlsplit(recorded[n]).netloc for n in URL_NAMES}
        assert len(bridges) == 1 and next(iter(bridges)).startswith("127.0.0.1:")
        assert all(recorded[n].split("/")[-1] in ("openai", "openai-2", "anthropic") for n in URL_NAMES)
        tokens = {recorded[n] for n in KEY_NAMES}
        assert len(tokens) == 1 and next(iter(tokens)).startswith("ccs-bridge-")
        r = ccs("env", "taotoken", "--diff", env=stale, cwd=repo)  # the stale values are named, masked
        assert all(f"~{n}" in r.stdout.splitlines()[0] for n in NAMES) and STALE_KEY not in r.stdout

        # 3. the check script, unchanged, through the bridge: a baseline round of two reruns
        for _ in range(2):
            r = ccs("run", "--record", "--label", "baseline", "taotoken", "--", sys.executable, "check.py",
                    env=stale, cwd=repo, timeout=120)
            assert r.returncode == 0, r.stderr
            assert r.stdout.strip() == "stub reply"

        # 4. the real Claude Code and Codex on the same profile
        r = ccs("launch", "taotoken", "claude", "--record", "--", "-p", "say hi", "--output-format", "json",
                env=stale, cwd=repo, timeout=180)
        assert r.returncode == 0, r.stdout + r.stderr
        assert json.loads(r.stdout)["result"] == "stub reply"
        r = ccs("launch", "taotoken", "codex", "--record", "--", "exec", "--skip-git-repo-check", "say hi",
                env=stale, cwd=repo, timeout=180)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "stub reply" in r.stdout

        # 5. a key-drift round: the key is rotated between its two reruns
        for i in range(2):
            if i == 1:
                assert ccs("key", "set", key_id, input=ROTATED, env=base_env).returncode == 0
            r = ccs("run", "--record", "--label", "key-drift", "taotoken", "--", sys.executable, "check.py",
                    env=stale, cwd=repo, timeout=120)
            assert r.returncode == 0, r.stderr

        # every request the stand-in received is in the records once, each run with one key fingerprint
        runs = json.loads(ccs("runs", "--json", env=base_env).stdout)["runs"]
        records = []
        for m in runs:
            assert m["base_urls"].get("TAOTOKEN_BASE_URL", upstream) == upstream
            if "recording" not in m:
                continue
            path = home / "state" / "runs" / m["recording"]["records"]
            mine = [json.loads(line) for line in path.read_text().splitlines()]
            assert {x["key_fingerprint"] for x in mine} <= {m["key_fingerprint"]}
            records += [(m, x) for x in mine]
        got = sorted((x["method"], urlsplit(x["upstream_url"]).path) for _, x in records)
        sent = sorted((s.method, s.path.split("?")[0]) for s in stub.requests)
        assert got == sent  # four check-script runs, one Claude Code turn, one Codex turn
        assert sorted(p for _, p in sent) == ["/api/chat/completions"] * 4 + ["/api/responses", "/api/v1/messages"]
        assert {s.headers.get("authorization") or s.headers.get("x-api-key") for s in stub.posts()} <= {
            f"Bearer {KEY}", f"Bearer {ROTATED}", KEY, ROTATED}
        by_label: dict[str, set[str]] = {}
        for m, x in records:
            by_label.setdefault(m.get("label") or "-", set()).add(x["key_fingerprint"])
        assert len(by_label["baseline"]) == 1 and len(by_label["key-drift"]) == 2

        # 6. the rounds table: the baseline is clean, the key-drift round is not comparable
        r = ccs("runs", "report", "--rounds", "baseline", "key-drift", "--json", env=base_env)
        assert r.returncode == 0, r.stderr
        base, drift = json.loads(r.stdout)["rounds"]
        assert base["comparable"] and base["key_strategy"].startswith("fixed: fp:") and base["k"] == 2
        assert base["base_urls"] == [upstream] and base["requests"] == 2
        assert not drift["comparable"] and drift["key_strategy"] == "rotated: 2"
        assert drift["drifted"] == ["key_fingerprint"] and drift["verdict"].startswith("not comparable: key rotated")
        table = ccs("runs", "report", "--rounds", "baseline", "key-drift", env=base_env).stdout
        assert re.search(r"^baseline .* clean$", table, re.M) and re.search(r"^key-drift .*NOT COMPARABLE$", table,
                                                                             re.M)

        # no key anywhere on disk (profiles, manifests, records, generated configs, the scrubbed file)
        for p in [*home.rglob("*"), *repo.rglob("*")]:
            if p.is_file():
                data_bytes = p.read_bytes()
                assert KEY.encode() not in data_bytes and ROTATED.encode() not in data_bytes, p
    finally:
        stub.close()

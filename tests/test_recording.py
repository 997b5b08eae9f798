"""`--record` end to end with real parts: `ccs run` of an openai-SDK program, the real `claude -p`
and `codex exec`, each through the bridge to a loopback provider. The records match what the
provider saw one to one, the child never holds the real key, and the manifest, `ccs runs diff`
and `ccs runs report` see what was sent."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest
from provider_stub import ProviderStub
from stub_server import StubServer

KEY = "sk-record-real-key-0123456789abcdef"

SDK_PROGRAM = textwrap.dedent('''
    import json, os, sys, concurrent.futures as cf
    import openai

    out = sys.argv[1]
    client = openai.OpenAI(max_retries=0)
    model = "gpt-4.1"

    def chat(i):
        r = client.chat.completions.create(model=model, messages=[{"role": "user", "content": f"hi {i}"}])
        return r.choices[0].message.content

    def chat_stream(i):
        s = client.chat.completions.create(model=model, messages=[{"role": "user", "content": f"hi {i}"}],
                                           stream=True, stream_options={"include_usage": True})
        return "".join(c.choices[0].delta.content or "" for c in s if c.choices)

    def responses(i):
        return client.responses.create(model=model, input=f"hi {i}").output_text

    def responses_stream(i):
        with client.responses.stream(model=model, input=f"hi {i}") as s:
            return s.get_final_response().output_text

    kinds = [chat, chat_stream, responses, responses_stream]
    with cf.ThreadPoolExecutor(16) as pool:
        replies = list(pool.map(lambda i: kinds[i % 4](i), range(int(sys.argv[2]) if len(sys.argv) > 2 else 16)))
    with open(out, "w") as f:
        json.dump({"replies": replies, "env": dict(os.environ)}, f)
''')


@pytest.fixture
def provider():
    s = ProviderStub()
    yield s
    s.close()


def make_profile(ccs, env, name: str, url: str, key_id: str, extra: str = "") -> None:
    r = ccs("new", name, "--base-url", url, "--key", key_id, "--claude-model", "claude-pinned",
            "--codex-model", "gpt-4.1", env=env)
    assert r.returncode == 0, r.stderr
    if extra:
        path = Path(os.environ["CCS_HOME"]) / "profiles" / f"{name}.toml"
        path.write_text(path.read_text() + extra)
    r = ccs("key", "set", key_id, input=KEY, env=env)
    assert r.returncode == 0, r.stderr


def runs(ccs, env) -> list[dict]:
    return json.loads(ccs("runs", "--json", env=env).stdout)["runs"]


def records_of(manifest: dict) -> list[dict]:
    path = Path(os.environ["CCS_HOME"]) / "state" / "runs" / manifest["recording"]["records"]
    return [json.loads(line) for line in path.read_text().splitlines()]


def no_key_anywhere_on_disk() -> None:
    for p in Path(os.environ["CCS_HOME"]).rglob("*"):
        if p.is_file():
            assert KEY.encode() not in p.read_bytes(), p


@pytest.mark.usefixtures("secret_service")
def test_sdk_program_records_match_the_provider_one_to_one(ccs, base_env, provider, key_id, tmp_path):
    make_profile(ccs, base_env, "p", provider.url + "/v1", key_id)
    program = tmp_path / "prog.py"
    program.write_text(SDK_PROGRAM)
    out = tmp_path / "out.json"
    r = ccs("run", "--record", "--label", "exp", "p", "--", sys.executable, str(program), str(out),
            env=base_env, timeout=120)
    assert r.returncode == 0, r.stderr
    result = json.loads(out.read_text())
    assert sorted(result["replies"]) == sorted(f"reply {n}" for n in range(1, 17))
    # The child held the bridge's URL and token, never the key; the provider got the key.
    child_env = result["env"]
    assert KEY not in json.dumps(child_env)
    assert child_env["OPENAI_BASE_URL"].startswith("http://127.0.0.1:") and child_env["OPENAI_BASE_URL"].endswith(
        "/openai")
    assert child_env["OPENAI_API_KEY"].startswith("ccs-bridge-")
    assert {s.headers["authorization"] for s in provider.posts()} == {f"Bearer {KEY}"}

    (manifest,) = runs(ccs, base_env)
    assert manifest["label"] == "exp" and manifest["base_urls"] == {"OPENAI_BASE_URL": provider.url + "/v1"}
    records = records_of(manifest)
    seen = provider.posts()
    assert len(records) == len(seen) == 16
    by_id = {r["provider_headers"].get("x-request-id"): r for r in records}
    for n, s in enumerate(seen, 1):  # the stub numbers its answers in the order it got the requests
        rec = by_id[f"req_{n}"]
        assert "/v1" + rec["path"] == s.path and rec["model_requested"] == s.body["model"] == rec["model_served"]
        assert (rec["input_tokens"], rec["output_tokens"]) == (s.usage["input"], s.usage["output"])
        assert (rec["cached_tokens"], rec["reasoning_tokens"]) == (s.usage["cached"], s.usage["reasoning"])
        assert rec["stream"] is bool(s.body.get("stream")) and rec["outcome"] == "ok"
    summary = manifest["requests"]
    assert summary["requests"] == 16 and summary["by_path"] == {"POST /chat/completions": 8, "POST /responses": 8}
    assert summary["tokens"]["input_tokens"] == sum(s.usage["input"] for s in seen)
    assert summary["models_served"] == {"gpt-4.1": 16} and summary["max_concurrency"] > 1
    no_key_anywhere_on_disk()


@pytest.mark.usefixtures("secret_service")
def test_strict_model_blocks_a_hard_coded_model(ccs, base_env, provider, key_id, tmp_path):
    make_profile(ccs, base_env, "p", provider.url + "/v1", key_id)
    path = Path(os.environ["CCS_HOME"]) / "profiles" / "p.toml"
    path.write_text(path.read_text().replace('export = ["openai"]', 'export = ["openai"]\nmodel = "gpt-4.1"'))
    program = tmp_path / "prog.py"
    program.write_text(textwrap.dedent('''
        import openai
        try:
            openai.OpenAI(max_retries=0).chat.completions.create(model="gpt-4o", messages=[])
        except openai.BadRequestError as exc:
            print("refused:", exc.message)
    '''))
    r = ccs("run", "--strict-model", "p", "--", sys.executable, str(program), env=base_env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "refused:" in r.stdout and "gpt-4o" in r.stdout and "gpt-4.1" in r.stdout
    assert provider.posts() == []
    (manifest,) = runs(ccs, base_env)
    (rec,) = records_of(manifest)
    assert rec["outcome"] == "refused" and rec["status"] == 400 and rec["model_requested"] == "gpt-4o"

    # Without --strict-model the request goes through and the mismatch is a finding.
    r = ccs("run", "--record", "p", "--", sys.executable, str(program), env=base_env, timeout=120)
    assert r.returncode == 0 and "refused" not in r.stdout
    findings = runs(ccs, base_env)[0]["requests"]["findings"]
    assert [f["code"] for f in findings] == ["model-not-pinned"] and findings[0]["model"] == "gpt-4o"


@pytest.mark.usefixtures("secret_service")
def test_retries_errors_and_a_killed_client_are_recorded(ccs, base_env, provider, key_id, tmp_path):
    make_profile(ccs, base_env, "p", provider.url + "/v1", key_id)
    provider.fault["/chat/completions"] = ("status", 429, {"error": {"message": "slow down", "type": "rate"}})
    provider.fault["/responses"] = ("slow", 0.5)
    program = tmp_path / "prog.py"
    program.write_text(textwrap.dedent('''
        import os, signal, subprocess, sys, time
        import openai
        if len(sys.argv) > 1:  # the streaming child, killed by its parent after the first event
            s = openai.OpenAI(max_retries=0).responses.create(model="gpt-4.1", input="x", stream=True)
            next(iter(s))
            print("first event", flush=True)
            time.sleep(30)
        try:
            openai.OpenAI(max_retries=2).chat.completions.create(model="gpt-4.1", messages=[])
        except openai.RateLimitError:
            print("rate limited")
        child = subprocess.Popen([sys.executable, __file__, "stream"], stdout=subprocess.PIPE, text=True)
        assert child.stdout.readline() == "first event\\n"
        child.send_signal(signal.SIGKILL)
        child.wait()
        time.sleep(2)
    '''))
    r = ccs("run", "--record", "p", "--", sys.executable, str(program), env=base_env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "rate limited" in r.stdout
    (manifest,) = runs(ccs, base_env)
    records = records_of(manifest)
    limited = [x for x in records if x["path"] == "/chat/completions"]
    assert [x["status"] for x in limited] == [429, 429, 429]  # the SDK's two retries are there too
    assert [x["retry_of"] for x in limited] == [None, limited[0]["id"], limited[0]["id"]]
    assert all(x["outcome"] == "upstream-error" and "slow down" in x["error"] for x in limited)
    (killed,) = [x for x in records if x["path"] == "/responses"]
    assert killed["outcome"] == "client-disconnected" and killed["stream"] is True
    assert manifest["requests"]["errors"] == 4 and manifest["requests"]["by_status"] == {"200": 1, "429": 3}


@pytest.mark.usefixtures("secret_service")
def test_claude_through_the_bridge(ccs, base_env, client_bin, key_id):
    clients_bin = client_bin("claude")
    stub = StubServer("claude")
    try:
        env = {**base_env, "PATH": f"{clients_bin}:{base_env['PATH']}"}
        make_profile(ccs, env, "p", stub.url, key_id,
                     extra='[claude.env]\nCLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1"\n')
        r = ccs("launch", "p", "claude", "--record", "--", "-p", "say hi", "--output-format", "json", env=env,
                timeout=120)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["result"] == "stub reply"
        (post,) = stub.posts()
        assert post.headers["authorization"] == f"Bearer {KEY}" and post.body["model"] == "claude-pinned"
        (manifest,) = runs(ccs, env)
        assert manifest["base_urls"] == {"ANTHROPIC_BASE_URL": stub.url}
        settings = json.loads((Path(manifest["config_dir"]) / "ccs-settings.json").read_text())
        assert settings["env"]["ANTHROPIC_BASE_URL"] == manifest["recording"]["bridge"] + "/anthropic"
        (rec,) = records_of(manifest)
        assert rec["path"] == "/v1/messages?beta=true" and rec["upstream_url"] == stub.url + "/v1/messages?beta=true"
        assert rec["model_requested"] == rec["model_served"] == "claude-pinned" and rec["stream"] is True
        assert (rec["input_tokens"], rec["output_tokens"], rec["outcome"]) == (3, 1, "ok")
        no_key_anywhere_on_disk()
    finally:
        stub.close()


@pytest.mark.usefixtures("secret_service")
def test_codex_through_the_bridge(ccs, base_env, client_bin, key_id):
    clients_bin = client_bin("codex")
    stub = StubServer("codex")
    try:
        env = {**base_env, "PATH": f"{clients_bin}:{base_env['PATH']}"}
        make_profile(ccs, env, "p", stub.url, key_id)
        r = ccs("launch", "p", "codex", "--record", "--", "exec", "--skip-git-repo-check", "say hi", env=env,
                timeout=120)
        assert r.returncode == 0, r.stderr
        assert "stub reply" in r.stdout
        (post,) = stub.posts()
        assert post.headers["authorization"] == f"Bearer {KEY}" and post.body["model"] == "gpt-4.1"
        (manifest,) = runs(ccs, env)
        config = (Path(manifest["codex_home"]) / "config.toml").read_text()
        assert f'base_url = "{manifest["recording"]["bridge"]}/codex"' in config and stub.url not in config
        (rec,) = records_of(manifest)
        assert rec["path"] == "/responses" and rec["model_served"] is None and rec["model_requested"] == "gpt-4.1"
        assert (rec["input_tokens"], rec["output_tokens"], rec["usage_source"]) == (3, 1, "reported")
        no_key_anywhere_on_disk()
    finally:
        stub.close()


@pytest.mark.usefixtures("secret_service")
def test_diff_and_report_see_what_was_sent(ccs, base_env, provider, key_id, tmp_path):
    make_profile(ccs, base_env, "p", provider.url + "/v1", key_id)
    program = tmp_path / "prog.py"
    program.write_text(SDK_PROGRAM)
    env = base_env
    for label in ("exp", "exp"):
        assert ccs("run", "--record", "--label", label, "p", "--", sys.executable, str(program),
                   str(tmp_path / "o.json"), "4", env=env, timeout=120).returncode == 0
    provider.served = "gpt-4.1-mini"  # the gateway swaps the model
    path = Path(os.environ["CCS_HOME"]) / "profiles" / "p.toml"
    path.write_text(path.read_text() + '\n[env]\nEXPERIMENT_SEED = "2"\n')
    env = {**env, "TERM": "xterm-kitty"}  # a different terminal is not drift
    assert ccs("run", "--record", "--label", "exp", "p", "--", sys.executable, str(program),
               str(tmp_path / "o.json"), "4", env=env, timeout=120).returncode == 0
    third, second, first = runs(ccs, env)

    r = ccs("runs", "diff", first["launch_id"], second["launch_id"], env=env)
    assert r.returncode == 0 and "comparable (no drift)" in r.stdout
    r = ccs("runs", "diff", first["launch_id"], third["launch_id"], env=env)
    assert r.returncode == 3, r.stdout + r.stderr
    # the profile was edited ([env]), the environment changed by it, the provider swapped the model
    assert "drifted: profile_digest, env, models_served" in r.stdout and "env: +EXPERIMENT_SEED" in r.stdout
    assert "TERM" not in r.stdout
    data = json.loads(ccs("runs", "diff", first["launch_id"], third["launch_id"], "--json", env=env).stdout)
    (cmp,) = data["comparisons"]
    assert cmp["env_changes"] == {"added": ["EXPERIMENT_SEED"], "removed": [], "changed": []}
    assert cmp["values"]["models_served"] == {"base": ["gpt-4.1"], "run": ["gpt-4.1-mini"]}

    r = ccs("runs", "report", "--label", "exp", env=env)
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert "SERVED*" in lines[0] and [ln.split()[0] for ln in lines[1:4]] == [
        first["launch_id"], second["launch_id"], third["launch_id"]]
    assert "gpt-4.1-mini*" in lines[3] and "*" not in lines[2]
    data = json.loads(ccs("runs", "report", "--label", "exp", "--json", env=env).stdout)
    assert [row["requests"] for row in data["rows"]] == [4, 4, 4]
    assert data["rows"][2]["drifted"] == ["models_served", "profile_digest", "env"]
    assert data["drifted_columns"] == ["models_served", "profile_digest", "env"]
    csv_lines = ccs("runs", "report", first["launch_id"], third["launch_id"], "--csv", env=env).stdout.splitlines()
    assert csv_lines[0].startswith("launch_id,label,tool") and len(csv_lines) == 3
    assert csv_lines[2].endswith("models_served profile_digest env")
    r = ccs("runs", "report", env=env)
    assert r.returncode == 2 and "--label" in r.stderr


def test_policy_record_makes_recording_the_default(ccs, base_env):
    env = {**base_env, "POLICY_KEY": KEY}
    assert ccs("new", "p", "--base-url", "http://127.0.0.1:9/v1", "--key", "env:POLICY_KEY", env=env).returncode == 0
    path = Path(os.environ["CCS_HOME"]) / "profiles" / "p.toml"
    path.write_text(path.read_text() + "\n[policy]\nrecord = true\n")
    show = 'echo "$OPENAI_BASE_URL $OPENAI_API_KEY"'
    r = ccs("run", "p", "--", "sh", "-c", show, env=env)
    url, token = r.stdout.split()
    assert r.returncode == 0 and url.endswith("/openai") and token.startswith("ccs-bridge-")
    r = ccs("run", "--no-record", "p", "--", "sh", "-c", show, env=env)
    assert r.stdout.split() == ["http://127.0.0.1:9/v1", KEY]
    newest, oldest = runs(ccs, env)
    assert "recording" in oldest and "recording" not in newest and oldest["requests"]["requests"] == 0
    r = ccs("run", "--no-record", "--strict-model", "p", "--", "true", env=env)
    assert r.returncode == 2 and "--no-record" in r.stderr
    path.write_text(path.read_text().replace("record = true", 'record = "yes"'))
    r = ccs("run", "p", "--", "true", env=env)
    assert r.returncode == 2 and "[policy].record must be true or false" in r.stderr


@pytest.mark.usefixtures("secret_service")
def test_inspect_judges_a_recorded_child_by_what_it_was_given(ccs, base_env, provider, key_id, tmp_path):
    import subprocess
    import time

    import psutil

    make_profile(ccs, base_env, "p", provider.url + "/v1", key_id)
    full = {**base_env, "CCS_HOME": os.environ["CCS_HOME"]}
    parent = subprocess.Popen([sys.executable, "-m", "ccswitch_tui", "run", "--record", "p", "--", "sleep", "30"],
                              env=full, stdin=subprocess.DEVNULL)
    try:
        def launched() -> list[psutil.Process]:  # not the guard a recorded launch starts beside it
            return [c for c in psutil.Process(parent.pid).children() if c.cmdline()[:1] == ["sleep"]]

        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not launched():
            time.sleep(0.05)
        (child,) = launched()
        r = ccs("inspect", str(child.pid), "--json", env=base_env)
        data = json.loads(r.stdout)
        assert r.returncode == 0, data["findings"]
        assert data["profile"] == "p" and data["findings"] == [] and data["diff"]["changed"] == {}
        assert child.environ()["OPENAI_API_KEY"].startswith("ccs-bridge-")
    finally:
        parent.terminate()
        parent.wait(10)

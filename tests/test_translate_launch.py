"""`ccs launch P codex` for a profile with ``[codex] wire_api = "chat"``: the real, pinned `codex exec`
talks Responses to ccs's bridge, which talks Chat Completions to a scripted loopback provider
(tests/chat_stub.py). Each run's records must match what the provider saw."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from chat_launch import KEY, PID, run_records, setup_profile
from chat_stub import USAGE, ChatStub, Reply, completion_body, text_reply, tool_reply

pytestmark = pytest.mark.usefixtures("secret_service")


@pytest.fixture
def provider():
    made: list[ChatStub] = []

    def make(*script: Reply) -> ChatStub:
        stub = ChatStub(script=list(script))
        made.append(stub)
        return stub

    yield make
    for s in made:
        s.close()


@pytest.fixture
def env(base_env, client_bin):
    clients_bin = client_bin("codex")
    return {**base_env, "PATH": f"{clients_bin}:{base_env['PATH']}"}


def codex(ccs, env, prompt: str, cwd: Path, *extra: str):
    return ccs("launch", "p", "codex", "--", "exec", "--skip-git-repo-check",
               "--dangerously-bypass-approvals-and-sandbox", "-c", "analytics.enabled=false",
               "-c", f"model_providers.{PID}.request_max_retries=0",
               "-c", f"model_providers.{PID}.stream_max_retries=0",
               *extra, prompt, env=env, cwd=cwd, timeout=120)


def assert_records_match(records: list[dict], stub: ChatStub) -> None:
    """One record per request the provider saw, in order, with the same path, model, status and usage."""
    seen = stub.chats()
    assert len(records) == len(seen), (records, [s.path for s in seen])
    for record, got in zip(records, seen, strict=True):
        assert record["path"] == "/responses" and record["method"] == "POST"
        assert record["upstream_url"].endswith("/v1/chat/completions") and got.path == "/v1/chat/completions"
        assert record["model_requested"] == got.body["model"]
        assert record["upstream_status"] == got.status
        # what the translation did, from the translation itself
        assert record["translated"] == "responses->chat" and record["upstream_model"] == got.body["model"]
        # the API Codex speaks to the route, as the translating handler declares it (not guessed from
        # the route's location, model_providers.ID.base_url, which names no family)
        assert record["dialect"] == "openai-responses", record
        assert isinstance(record["dropped"], list) and all(isinstance(d, str) for d in record["dropped"])
        if got.status == 200:
            assert record["model_served"] == "stub-served"
            assert (record["input_tokens"], record["output_tokens"]) == (USAGE["prompt_tokens"],
                                                                         USAGE["completion_tokens"])
            assert record["usage_source"] == "reported"


def assert_no_key_in_child_files(manifest: dict) -> None:
    config = (Path(manifest["codex_home"]) / "config.toml").read_text()
    assert KEY not in config and manifest["recording"]["bridge"] in config
    assert manifest["base_urls"][f"model_providers.{PID}.base_url"].endswith("/v1")  # the real one, for drift


def test_a_plain_answer(ccs, env, provider, key_id, tmp_path):
    stub = provider(text_reply("hello from a chat provider"))
    setup_profile(ccs, env, stub, key_id)
    r = codex(ccs, env, "say hi", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "hello from a chat provider" in r.stdout
    (sent,) = stub.chats()
    assert sent.headers["authorization"] == f"Bearer {KEY}"  # the bridge holds the real key
    assert sent.body["model"] == "chat-model" and sent.body["stream"] is True
    assert sent.body["messages"][0]["role"] == "system" and sent.body["messages"][-1]["content"] == "say hi"
    assert all(t["type"] == "function" for t in sent.body["tools"])
    manifest, records = run_records(ccs, env)
    assert_records_match(records, stub)
    assert {"store", "prompt_cache_key"} <= set(records[0]["dropped"])  # what Codex sends that Chat has not
    assert_no_key_in_child_files(manifest)
    summary = manifest["requests"]
    assert (summary["requests"], summary["by_path"], manifest["exit_status"]) == (1, {"POST /responses": 1}, 0)
    assert summary["models_requested"] == {"chat-model": 1} and summary["models_served"] == {"stub-served": 1}
    assert summary["tokens"]["input_tokens"] == USAGE["prompt_tokens"]


def test_a_shell_call_whose_result_comes_back_next_to_it_from_a_stream_without_indexes(ccs, env, provider, key_id,
                                                                                      tmp_path):
    stub = provider(tool_reply("call_sh1", "exec_command", {"cmd": "echo tool-ran > proof.txt && echo wrote-proof"},
                               index=False),
                    text_reply("The file is written."))
    setup_profile(ccs, env, stub, key_id)
    r = codex(ccs, env, "write the proof", tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "proof.txt").read_text() == "tool-ran\n"
    assert "The file is written." in r.stdout
    first, second = stub.chats()
    messages = second.body["messages"]
    at = next(i for i, m in enumerate(messages) if m.get("tool_calls"))
    assert messages[at]["tool_calls"][0]["id"] == "call_sh1"
    assert json.loads(messages[at]["tool_calls"][0]["function"]["arguments"])["cmd"].startswith("echo tool-ran")
    assert messages[at + 1]["role"] == "tool" and messages[at + 1]["tool_call_id"] == "call_sh1"
    assert "wrote-proof" in messages[at + 1]["content"]
    assert at + 2 == len(messages)
    _, records = run_records(ccs, env)
    assert_records_match(records, stub)


def test_an_apply_patch_edit_lands_in_the_file(ccs, env, provider, key_id, tmp_path):
    (tmp_path / "notes.txt").write_text("old line\n")
    patch = "*** Begin Patch\n*** Update File: notes.txt\n@@\n-old line\n+new line from the patch\n*** End Patch\n"
    stub = provider(tool_reply("call_p1", "apply_patch", {"input": patch}), text_reply("Patched."))
    setup_profile(ccs, env, stub, key_id, model="gpt-5.5")  # a model Codex gives its freeform apply_patch tool
    r = codex(ccs, env, "fix the note", tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "notes.txt").read_text() == "new line from the patch\n"
    first, second = stub.chats()
    patch_tool = next(t for t in first.body["tools"] if t["function"]["name"] == "apply_patch")
    assert patch_tool["function"]["parameters"]["required"] == ["input"]
    result = next(m for m in second.body["messages"] if m.get("tool_call_id") == "call_p1")
    assert "Success" in result["content"]
    _, records = run_records(ccs, env)
    assert_records_match(records, stub)


def needs_reasoning_back(body: dict) -> str | None:
    """What DeepSeek's thinking mode says when an assistant tool-call turn comes without its reasoning."""
    for m in body["messages"]:
        if m.get("tool_calls") and m.get("reasoning_content") != "I should look at the files first.":
            return "Missing `reasoning_content` field in the assistant message at message index 2"
    return None


def test_a_reasoning_provider_gets_its_reasoning_back(ccs, env, provider, key_id, tmp_path):
    stub = provider(tool_reply("call_r1", "exec_command", {"cmd": "ls"}, reasoning="I should look at the files first.",
                               split=False),  # the arguments in one chunk
                    Reply(chunks=text_reply("Nothing there.").chunks, check=needs_reasoning_back))
    setup_profile(ccs, env, stub, key_id)
    r = codex(ccs, env, "what is here", tmp_path)
    assert r.returncode == 0, r.stderr
    assert [s.status for s in stub.chats()] == [200, 200]
    assert "Nothing there." in r.stdout
    assert "I should look at the files first." in r.stdout + r.stderr  # shown to the user as reasoning
    _, records = run_records(ccs, env)
    assert_records_match(records, stub)


def test_an_upstream_that_does_not_stream(ccs, env, provider, key_id, tmp_path):
    stub = provider(Reply(body=completion_body("one whole answer")))
    setup_profile(ccs, env, stub, key_id)
    r = codex(ccs, env, "say hi", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "one whole answer" in r.stdout
    _, records = run_records(ccs, env)
    assert_records_match(records, stub)
    assert records[0]["stream"] is True  # what Codex asked for; the provider answered one body


@pytest.mark.parametrize(("status", "message"), [
    (400, "Invalid request: messages[3] has no matching tool call"),
    (429, "Rate limit reached for requests"),
    (500, "The server had an error while processing your request"),
])
def test_upstream_errors(ccs, env, provider, key_id, tmp_path, status, message):
    stub = provider(Reply(status=status, body={"error": {"message": message, "type": "upstream_error"}}))
    stub.repeat_last = True
    setup_profile(ccs, env, stub, key_id)
    r = codex(ccs, env, "say hi", tmp_path)
    assert r.returncode == 1, r.stderr[-2000:]  # launch passes on the child's status: Codex's for a failed turn
    assert all(s.status == status for s in stub.chats())
    if status == 400:  # Codex shows a 400's body; after a 429 or 5xx (retried or not) it names the status
        assert f"Stub Chat: {message}" in r.stdout + r.stderr
    _, records = run_records(ccs, env)
    assert_records_match(records, stub)
    assert all(rec["status"] == status and message in rec["error"] for rec in records)


def test_the_kimi_preset_launches_codex(ccs, env, provider, tmp_path):
    """The first-use line of docs/clients.md as a user types it, `ccs new k --preset kimi && ccs key set kimi &&
    ccs launch k codex`: the preset as shipped (its key id is the one the line stores), only its
    endpoint pointed at the loopback provider."""
    import keyring

    from ccswitch_tui.keys.keyring import SERVICE

    stub = provider(text_reply("kimi says hi"))
    r = ccs("new", "k", "--preset", "kimi", env=env)
    assert r.returncode == 0, r.stderr
    assert "`ccs key set kimi`" in r.stdout  # what `ccs new` tells to do next
    path = Path(os.environ["CCS_HOME"]) / "profiles" / "k.toml"
    text = path.read_text()
    assert 'wire_api = "chat"' in text and 'key = "kimi"' in text
    path.write_text(text.replace("https://api.moonshot.cn/v1", f"{stub.url}/v1"))
    try:
        r = ccs("key", "set", "kimi", input=KEY, env=env)  # the key on stdin, as the CLI reads it
        assert r.returncode == 0, r.stderr
        # --no-record cannot turn the bridge off here: Codex reaches a Chat Completions provider only through it
        r = ccs("launch", "k", "codex", "--no-record", "--", "exec", "--skip-git-repo-check", "-c",
                "analytics.enabled=false", "hi", env=env, cwd=tmp_path, timeout=120)
        assert r.returncode == 0, r.stderr
        assert "kimi says hi" in r.stdout
        (sent,) = stub.chats()
        assert sent.body["model"] == "kimi-k2.7-code" and sent.headers["authorization"] == f"Bearer {KEY}"
        manifest, records = run_records(ccs, env)
        assert manifest["wire_api"] == "chat" and len(records) == 1 and manifest["key_id"] == "kimi"
    finally:
        try:
            keyring.delete_password(SERVICE, "kimi")
        except Exception:  # noqa: BLE001 — not stored (the test failed before)
            pass


def test_context_compaction_goes_through_the_translation(ccs, env, provider, key_id, tmp_path):
    """Codex compacts a custom provider's context with an ordinary request (no /responses/compact),
    so a session that outgrows its window keeps working on a chat provider."""
    big = {"prompt_tokens": 5000, "completion_tokens": 10, "total_tokens": 5010}
    stub = provider(tool_reply("call_c1", "exec_command", {"cmd": "echo hi"}, usage=big),
                    text_reply("SUMMARY OF THE WORK SO FAR"), text_reply("All done."))
    setup_profile(ccs, env, stub, key_id)
    r = codex(ccs, env, "do it", tmp_path, "-c", "model_auto_compact_token_limit=1000")
    assert r.returncode == 0, r.stderr
    assert "context compacted" in r.stdout + r.stderr and "All done." in r.stdout
    compacting, after = stub.chats()[1:]
    assert [m["role"] for m in compacting.body["messages"]][-3:] == ["assistant", "tool", "user"]
    assert any("SUMMARY OF THE WORK SO FAR" in str(m["content"]) for m in after.body["messages"])
    _, records = run_records(ccs, env)
    assert len(records) == 3 and all(r["path"] == "/responses" and r["status"] == 200 for r in records)


def test_a_key_rotated_during_a_translated_launch_is_key_drift(ccs, env, provider, key_id, tmp_path):
    """The bridge holds the key a translated launch started with; the child holds a token. When the key
    stored under the profile's id changes while the launch goes on, `ccs inspect` and `ccs ps` say
    key-drift (the provider still gets the old key), as for a launch without the bridge."""
    import subprocess
    import sys
    import time

    stop = tmp_path / "stop"
    wait = f"echo started > started.txt; while [ ! -f {stop} ]; do sleep 0.1; done; echo stopped"
    stub = provider(tool_reply("call_w1", "exec_command", {"cmd": wait, "yield_time_ms": 120000}),
                    text_reply("done"))
    setup_profile(ccs, env, stub, key_id)
    argv = [sys.executable, "-m", "ccswitch_tui", "launch", "p", "codex", "--", "exec", "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox", "-c", "analytics.enabled=false", "wait for it"]
    launch = subprocess.Popen(argv, env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 90
        while not (tmp_path / "started.txt").exists():
            assert time.monotonic() < deadline and launch.poll() is None, launch.communicate()
            time.sleep(0.1)
        (manifest,) = json.loads(ccs("runs", "--json", env=env).stdout)["runs"]
        # Codex itself (its node wrapper and native binary), not the shell and `sleep`s of its command,
        # which inherit the launch's markers and come and go
        pids = [p["pid"] for p in json.loads(ccs("ps", "--json", env=env).stdout)["processes"]
                if p["launch_id"] == manifest["launch_id"] and p["name"] in ("codex", "node")]
        assert pids
        before = [json.loads(ccs("inspect", str(pid), "--json", env=env).stdout) for pid in pids]
        assert all(not [f for f in i["findings"] if f["code"] == "key-drift"] for i in before)
        assert {i["key_fingerprint"] for i in before} == {manifest["key_fingerprint"]}  # the real key, not the token
        assert ccs("key", "set", key_id, input="sk-chat-rotated-0123456789abcdef", env=env).returncode == 0
        for pid in pids:
            r = ccs("inspect", str(pid), env=env)
            assert r.returncode == 3, r.stdout  # 3: findings with errors
            assert "key-drift" in r.stdout and "rotated" in r.stdout and manifest["key_fingerprint"] in r.stdout
        listed = [p for p in json.loads(ccs("ps", "--json", env=env).stdout)["processes"] if p["pid"] in pids]
        assert all(p["findings"]["error"] >= 1 for p in listed), listed
    finally:
        stop.touch()
        out, err = launch.communicate(timeout=120)
    assert launch.returncode == 0, err
    assert {s.headers["authorization"] for s in stub.chats()} == {f"Bearer {KEY}"}  # the old key, to the end
FIXTURES = Path(__file__).parent / "fixtures" / "chat"


def test_a_refusal_is_shown(ccs, env, provider, key_id, tmp_path):
    stub = provider(Reply(raw=(FIXTURES / "openai_refusal.sse").read_bytes()))
    setup_profile(ccs, env, stub, key_id)
    r = codex(ccs, env, "do the bad thing", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "I'm sorry, but I can't help with that." in r.stdout
    _, (record,) = run_records(ccs, env)
    assert record["refusal"] is True


def test_reasoning_sent_as_objects_is_shown(ccs, env, provider, key_id, tmp_path):
    stub = provider(Reply(raw=(FIXTURES / "reasoning_objects.sse").read_bytes()))
    setup_profile(ccs, env, stub, key_id)
    r = codex(ccs, env, "hello", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Hello!" in r.stdout
    assert "The user greets me. A short reply fits." in r.stdout + r.stderr


def test_an_error_codex_retries_keeps_nothing_of_the_failed_try(ccs, env, provider, key_id, tmp_path):
    """An error mid-answer that Codex retries (here with its retries turned off, so it gives up at
    once): nothing of the failed try is closed, so Codex neither shows nor keeps the partial answer;
    it shows the provider's error."""
    stub = provider(Reply(raw=(FIXTURES / "openrouter_midstream_error.sse").read_bytes()))
    setup_profile(ccs, env, stub, key_id)
    r = codex(ccs, env, "explain", tmp_path)
    assert r.returncode == 1, r.stderr[-2000:]  # launch passes on the child's status: Codex's for a failed turn
    out = r.stdout + r.stderr
    assert "Here is the first half of the answer" not in out
    assert "Stub Chat: Provider disconnected unexpectedly" in out
    # the record's error: tests/test_translate_bridge.py (here Codex may hang up before the answer's last byte)


def test_cached_tokens_in_the_record_are_the_ones_codex_got(ccs, env, provider, key_id, tmp_path):
    stub = provider(Reply(raw=(FIXTURES / "deepseek_cache_hit.sse").read_bytes()))
    setup_profile(ccs, env, stub, key_id)
    r = codex(ccs, env, "hi", tmp_path, "--json")
    assert r.returncode == 0, r.stderr
    shown = next(json.loads(line)["usage"] for line in r.stdout.splitlines() if '"turn.completed"' in line)
    _, (record,) = run_records(ccs, env)
    assert shown["cached_input_tokens"] == record["cached_tokens"] == 1
    assert shown["input_tokens"] == record["input_tokens"] == 65


RATE_LIMITED = {"error": {"message": "Rate limit reached for requests", "type": "rate_limit_error",
                          "code": "rate_limit_exceeded"}}


@pytest.mark.parametrize("retry_after", [None, "1"])
@pytest.mark.parametrize("translated", [True, False], ids=["translated", "passthrough"])
def test_what_codex_does_with_a_429(ccs, env, provider, key_id, tmp_path, retry_after, translated):
    """Measured with codex 0.171.0: a 429 without Retry-After ends the turn at once (no retry); with
    Retry-After, Codex waits that long and tries again, up to stream_max_retries times. The bridge
    keeps the header, translating or not, so Codex behaves as it would with the provider itself."""
    stub = provider(Reply(status=429, body=RATE_LIMITED, headers={"Retry-After": retry_after} if retry_after else {}))
    stub.repeat_last = True
    stub.any_path = not translated
    setup_profile(ccs, env, stub, key_id)
    if not translated:  # the same provider spoken to in the Responses API: the bridge only records
        path = Path(os.environ["CCS_HOME"]) / "profiles" / "p.toml"
        path.write_text(path.read_text().replace('wire_api = "chat"\n', ""))
    r = ccs("launch", "p", "codex", "--record", "--", "exec", "--skip-git-repo-check", "-c", "analytics.enabled=false",
            "-c", f"model_providers.{PID}.request_max_retries=0", "-c", f"model_providers.{PID}.stream_max_retries=2",
            "hi", env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == 1, r.stderr[-2000:]  # launch passes on the child's status: Codex's for a failed turn
    assert "429 Too Many Requests" in r.stdout + r.stderr
    seen = stub.times
    if retry_after is None:
        assert len(seen) == 1
    else:
        assert len(seen) == 3  # the first try and stream_max_retries more
        assert all(b - a >= 0.9 for a, b in zip(seen, seen[1:], strict=False))  # after each Retry-After
    _, records = run_records(ccs, env)
    assert len(records) == len(seen) and all(x["status"] == 429 for x in records)
    assert all(x["provider_headers"].get("retry-after") == retry_after for x in records if retry_after)
    assert all(x.get("translated") == ("responses->chat" if translated else None) for x in records)

"""The provider shapes of tests/fixtures/chat through the real, pinned `codex exec` (0.171.0), launched
by `ccs launch P codex` on a ``wire_api = "chat"`` profile whose provider is a loopback stub.

Codex runs with its own retry settings (``request_max_retries`` 4, ``stream_max_retries`` 5): what is
measured here is how many requests it sends and what they carry, which smaller settings would
change. The stub answers at once, so a retried failure costs a fraction of a second.

- the answer text is exactly the provider's (content parts, the legacy function_call);
- an error a retry cannot fix (a context window, a refused key, a request too large, a content
  filter) gives exactly one upstream request, and the answer so far is shown once;
- an error Codex retries leaves no copy of the partial answer in the retried request, and the
  retry's record points at the first try (``retry_of``), though Codex wrote its body in another
  key order.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chat_launch import PID, run_records, setup_profile
from chat_stub import ChatStub, Reply, text_reply

FIXTURES = Path(__file__).parent / "fixtures" / "chat"
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


def codex_exec(ccs, env, prompt: str, cwd: Path, *launch: str):
    """`codex exec --json` through ccs, with Codex's own retry settings."""
    return ccs("launch", "p", "codex", *launch, "--", "exec", "--json", "--skip-git-repo-check",
               "--dangerously-bypass-approvals-and-sandbox", "-c", "analytics.enabled=false", prompt,
               env=env, cwd=cwd, timeout=120)


def shown(stdout: str) -> tuple[list[str], list[str], list[str]]:
    """What Codex showed, from its JSON events: the answers, the reasoning, the final error(s)."""
    answers, reasoning, errors = [], [], []
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        item = event.get("item") or {}
        if event.get("type") == "item.completed" and item.get("type") == "agent_message":
            answers.append(item["text"])
        elif event.get("type") == "item.completed" and item.get("type") == "reasoning":
            reasoning.append(item.get("text", ""))
        elif event.get("type") == "turn.failed":
            errors.append(event["error"]["message"])
    return answers, reasoning, errors


def copies(stub: ChatStub, text: str) -> list[int]:
    """For each request the provider got: how many assistant messages carry ``text``."""
    return [sum(1 for m in s.body["messages"] if m["role"] == "assistant" and text in str(m.get("content")))
            for s in stub.chats()]


def test_mistral_content_parts_are_the_answer_exactly(ccs, env, provider, key_id, tmp_path):
    stub = provider(Reply(raw=(FIXTURES / "mistral_content_parts.sse").read_bytes()))
    setup_profile(ccs, env, stub, key_id)
    r = codex_exec(ccs, env, "17 times 23?", tmp_path)
    assert r.returncode == 0, r.stderr
    answers, reasoning, errors = shown(r.stdout)
    assert answers == ["391"] and errors == []
    assert any("17*20 = 340" in text for text in reasoning)
    _, (record,) = run_records(ccs, env)
    assert (record["outcome"], record["model_served"], record["output_tokens"]) == ("ok", "magistral-medium-2509", 46)


def test_a_legacy_function_call_runs(ccs, env, provider, key_id, tmp_path):
    stub = provider(Reply(raw=(FIXTURES / "legacy_function_call.sse").read_bytes()), text_reply("Done."))
    setup_profile(ccs, env, stub, key_id)
    r = codex_exec(ccs, env, "leave a trace", tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "legacy.txt").read_text() == "legacy-call-ran\n"
    assert shown(r.stdout)[0] == ["Done."]
    first, second = stub.chats()
    call = next(m for m in second.body["messages"] if m.get("tool_calls"))["tool_calls"][0]
    assert call["function"]["name"] == "exec_command"
    result = next(m for m in second.body["messages"] if m["role"] == "tool")
    assert result["tool_call_id"] == call["id"]
    _, records = run_records(ccs, env)
    assert [x["outcome"] for x in records] == ["ok", "ok"] and [x["retry_of"] for x in records] == [None, None]


def test_vllm_context_length_error_mid_answer_is_one_request(ccs, env, provider, key_id, tmp_path):
    stub = provider(Reply(raw=(FIXTURES / "vllm_midstream_context_length.sse").read_bytes()))
    stub.repeat_last = True  # a retry would get the same error again
    setup_profile(ccs, env, stub, key_id)
    r = codex_exec(ccs, env, "summarise the log", tmp_path)
    assert r.returncode == 1, r.stderr[-2000:]  # launch passes on the child's status: Codex's for a failed turn
    answers, _, errors = shown(r.stdout)
    assert len(stub.chats()) == 1
    assert answers == ["Reading the whole log first."]  # the answer so far, once
    assert errors and "context window" in errors[-1]  # Codex's own words for a context-window error
    _, (record,) = run_records(ccs, env)
    assert (record["outcome"], record["error_class"]) == ("upstream-error", "context_length")
    assert record["error"].startswith("context_length_exceeded: This model's maximum context length is 8192 tokens")


@pytest.mark.parametrize("form", ["json", "sse"])
def test_minimax_login_failure_in_a_200_is_one_request(ccs, env, provider, key_id, tmp_path, form):
    raw = (FIXTURES / "minimax_login_fail.sse").read_bytes()
    stub = provider(Reply(body=json.loads(raw[len(b"data: "):])) if form == "json" else Reply(raw=raw))
    stub.repeat_last = True
    setup_profile(ccs, env, stub, key_id)
    r = codex_exec(ccs, env, "hi", tmp_path)
    assert r.returncode == 1, r.stderr[-2000:]  # launch passes on the child's status: Codex's for a failed turn
    assert len(stub.chats()) == 1
    _, _, errors = shown(r.stdout)
    assert errors == ["Stub Chat: login fail: Please carry the API secret key in the 'Authorization' field of the "
                      "request header"]
    manifest, (record,) = run_records(ccs, env)
    assert (record["status"], record["error_class"]) == (200, "auth")
    assert record["error"].startswith("authentication_error (1004): login fail")
    assert manifest["requests"]["error_classes"] == {"auth": 1}


@pytest.mark.parametrize(("fixture", "status", "error_class"), [("deepseek_401.json", 401, "auth"),
                                                                ("groq_413.json", 413, "invalid_request")])
def test_an_http_error_a_retry_cannot_fix_is_one_request(ccs, env, provider, key_id, tmp_path, fixture, status,
                                                         error_class):
    """Codex retries a 401 and a 413 five times (measured): it gets them as a 400, which it does not."""
    body = json.loads((FIXTURES / fixture).read_text())
    stub = provider(Reply(status=status, body=body))
    stub.repeat_last = True
    setup_profile(ccs, env, stub, key_id)
    r = codex_exec(ccs, env, "hi", tmp_path)
    assert r.returncode == 1, r.stderr[-2000:]  # launch passes on the child's status: Codex's for a failed turn
    assert len(stub.chats()) == 1
    _, _, errors = shown(r.stdout)
    assert errors == [f"Stub Chat: {body['error']['message']} (HTTP {status})"]
    manifest, (record,) = run_records(ccs, env)
    assert (record["status"], record["upstream_status"], record["error_class"]) == (400, status, error_class)
    assert "rate_limit_exceeded" not in record["error"]
    assert manifest["requests"]["error_classes"] == {error_class: 1}


def test_a_content_filter_is_one_request_with_the_answer_so_far_once(ccs, env, provider, key_id, tmp_path):
    """Codex retries an incomplete content_filter answer five times, each time with the partial
    answer in its history (measured): the filter ends the turn instead."""
    stub = provider(Reply(raw=(FIXTURES / "azure_content_filter.sse").read_bytes()))
    stub.repeat_last = True
    setup_profile(ccs, env, stub, key_id)
    r = codex_exec(ccs, env, "go on", tmp_path)
    assert r.returncode == 1, r.stderr[-2000:]  # launch passes on the child's status: Codex's for a failed turn
    assert len(stub.chats()) == 1
    answers, _, errors = shown(r.stdout)
    assert answers == ["The first step is to"]
    assert errors == ["Stub Chat: the provider's content filter stopped the answer (finish_reason content_filter)"]
    _, (record,) = run_records(ccs, env)
    assert record["error_class"] == "content_filter"


def test_an_error_codex_retries_leaves_no_copy_and_the_retry_is_linked(ccs, env, provider, key_id, tmp_path):
    """An overload mid-answer: Codex retries at once. The partial answer was never closed, so the
    retried request carries no copy of it and Codex shows only the retry's answer; Codex wrote the
    retry's body in another key order (client_metadata), and the record links it to the first try."""
    stub = provider(Reply(raw=(FIXTURES / "midstream_error.sse").read_bytes()), text_reply("The whole answer."))
    setup_profile(ccs, env, stub, key_id)
    r = codex_exec(ccs, env, "explain", tmp_path, "--record-bodies")
    assert r.returncode == 0, r.stderr
    assert len(stub.chats()) == 2
    assert copies(stub, "Part") == [0, 0]
    assert stub.chats()[0].body["messages"] == stub.chats()[1].body["messages"]
    assert shown(r.stdout)[0] == ["The whole answer."]
    manifest, (first, retry) = run_records(ccs, env)
    assert (first["outcome"], first["error_class"], retry["outcome"]) == ("upstream-error", "overloaded", "ok")
    assert retry["retry_of"] == first["id"]
    assert first["request_body"] != retry["request_body"]  # not the same bytes ...
    assert json.loads(first["request_body"]) == json.loads(retry["request_body"])  # ... the same request
    assert manifest["requests"]["retries"] == 1


def test_an_html_502_is_named_and_its_retry_linked(ccs, env, provider, key_id, tmp_path):
    stub = provider(Reply(status=502, page=(FIXTURES / "nginx_502.html").read_bytes()), text_reply("Back again."))
    setup_profile(ccs, env, stub, key_id)
    r = codex_exec(ccs, env, "hi", tmp_path)
    assert r.returncode == 0, r.stderr
    assert shown(r.stdout)[0] == ["Back again."]
    manifest, (first, retry) = run_records(ccs, env)
    assert first["error"] == "server_error: HTTP 502 (an HTML page): 502 Bad Gateway"
    assert (first["status"], first["error_class"], retry["retry_of"]) == (502, "server", first["id"])
    assert manifest["requests"]["retries"] == 1


def test_the_profile_leaves_codex_its_own_retry_settings(ccs, env, provider, key_id, tmp_path):
    """What the tests above measure depends on Codex's defaults: ccs's generated config sets none."""
    stub = provider(text_reply("ok"))
    setup_profile(ccs, env, stub, key_id)
    assert codex_exec(ccs, env, "hi", tmp_path).returncode == 0
    manifest, _ = run_records(ccs, env)
    config = (Path(manifest["codex_home"]) / "config.toml").read_text()
    assert "max_retries" not in config and f"[model_providers.{PID}]" in config

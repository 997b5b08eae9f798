"""The shapes providers' public fixtures, docs and logs show (tests/fixtures/chat), through the
translation alone: content as a list of parts (Mistral), an error inside a 200 stream (vLLM's
integer code, MiniMax's base_resp), a content filter (Azure), the legacy function_call form, and the
error bodies of DeepSeek, Groq, Gemini and an nginx proxy, each read into the error Codex acts on
and the class the record keeps. The real Codex runs them in tests/test_translate_codex.py."""

from __future__ import annotations

import json

import pytest
from translate_helpers import FIXTURES, TOOLS, assert_done_only_at_the_end, assert_well_formed, done_items, run, types

from ccswitch_tui.bridge.observe import finish_steps, request_identity_in_steps
from ccswitch_tui.bridge.provider_errors import classify, read_error
from ccswitch_tui.bridge.translate.errors import responses_status
from ccswitch_tui.bridge.translate.exchange import Exchange
from ccswitch_tui.bridge.translate.stream import ResponsesStream
from ccswitch_tui.bridge.translate.tools import convert_tools
from ccswitch_tui.error_pages import page_error, page_summary


def sent_events(raw: bytes) -> list[dict]:
    return [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: ")]


def exchange(name: str, provider: str = "Stub") -> tuple[list[dict], Exchange]:
    x = Exchange.start({"model": "m", "input": "hi", "tools": TOOLS}, provider=provider)
    raw = (FIXTURES / name).read_bytes()
    events = sent_events(x.opening() + x.feed(raw) + x.end())
    assert_well_formed(events)
    assert_done_only_at_the_end(events)
    return events, x


# --- answers -------------------------------------------------------------------------------------

def test_mistral_thinking_and_text_parts_reach_codex_in_order() -> None:
    """magistral sends content as a list of thinking and text parts, the answer's first character in
    the same delta as the last thinking part: none of it may be lost ("391", not "91")."""
    events, stream = run("mistral_content_parts.sse", split=5)
    assert_well_formed(events)
    reasoning, message = done_items(events)
    assert reasoning["summary"][0]["text"] == ("The user asks for 17 times 23. 17*20 = 340, 17*3 = 51, so 391."
                                               " Answer with the number only.")
    assert message["content"][0]["text"] == "391"
    assert "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta") == "391"
    assert events[-1]["type"] == "response.completed" and events[-1]["response"]["usage"]["output_tokens"] == 46
    assert stream.served_model == "magistral-medium-2509" and stream.skipped_parts == []


def test_a_non_streamed_message_with_content_parts() -> None:
    x = Exchange.start({"model": "magistral", "input": "hi"})
    parts = [{"type": "thinking", "thinking": [{"type": "text", "text": "Short."}]}, {"type": "text", "text": "Hello"},
             {"type": "text", "text": "!"}]
    body = {"id": "c", "object": "chat.completion", "model": "magistral-small-2509", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": parts}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4}}
    events = sent_events(x.opening() + x.whole(json.dumps(body).encode()))
    assert_well_formed(events)
    reasoning, message = done_items(events)
    assert (reasoning["summary"][0]["text"], message["content"][0]["text"]) == ("Short.", "Hello!")


def test_parts_with_no_place_in_the_responses_api_are_named_in_the_record() -> None:
    x = Exchange.start({"model": "m", "input": "hi"})
    chunks = [{"choices": [{"index": 0, "delta": {"content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}, {"type": "text", "text": "Here"},
        {"type": "reference", "reference_ids": [1]}, {"type": "text", "text": " it is."}]}}]},
        {"choices": [{"index": 0, "delta": {"content": [{"type": "reference", "reference_ids": [2]}]},
                      "finish_reason": "stop"}]}]
    raw = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"
    events = sent_events(x.opening() + x.feed(raw) + x.end())
    (message,) = done_items(events)
    assert message["content"][0]["text"] == "Here it is."
    assert x.observed()["skipped_parts"] == ["image_url", "reference"]
    assert "skipped_parts" not in exchange("mistral_content_parts.sse")[1].observed()


def test_thinking_after_text_is_its_own_item_and_every_item_is_done_at_the_end() -> None:
    stream = ResponsesStream(model="m", tools=convert_tools([]))
    events = []
    for content in ([{"type": "text", "text": "a"}], [{"type": "thinking", "thinking": "t"}],
                    [{"type": "text", "text": "b"}]):
        events += stream.feed({"choices": [{"index": 0, "delta": {"content": content}}]})
    events += stream.finish()
    assert_well_formed(events)
    assert_done_only_at_the_end(events)
    assert [(i["type"], i.get("content", i.get("summary"))[0]["text"]) for i in done_items(events)] == [
        ("message", "a"), ("reasoning", "t"), ("message", "b")]


def test_a_legacy_function_call_is_a_call_codex_runs() -> None:
    events, x = exchange("legacy_function_call.sse")
    (call,) = done_items(events)
    assert (call["type"], call["name"], call["status"]) == ("function_call", "exec_command", "completed")
    assert json.loads(call["arguments"]) == {"cmd": "echo legacy-call-ran > legacy.txt"}
    assert call["call_id"].startswith("call_") and events[-1]["type"] == "response.completed"
    assert x.observed()["error"] is None
    whole = Exchange.start({"model": "m", "input": "hi", "tools": TOOLS})
    legacy = {"name": "exec_command", "arguments": '{"cmd":"ls"}'}
    body = {"choices": [{"index": 0, "finish_reason": "function_call",
                         "message": {"role": "assistant", "content": None, "function_call": legacy}}]}
    (call,) = done_items(sent_events(whole.opening() + whole.whole(json.dumps(body).encode())))
    assert (call["name"], call["arguments"]) == ("exec_command", '{"cmd":"ls"}')


# --- failures Codex must not retry -------------------------------------------------------------------

def test_vllm_context_length_error_inside_the_stream_ends_the_turn_with_the_answer_so_far() -> None:
    events, x = exchange("vllm_midstream_context_length.sse", provider="vLLM")
    (message,) = done_items(events)
    assert (message["status"], message["content"][0]["text"]) == ("incomplete", "Reading the whole log first.")
    failed = events[-1]["response"]
    assert failed["error"]["code"] == "context_length_exceeded"  # Codex ends the turn at once on it
    assert failed["error"]["message"].startswith("vLLM: This model's maximum context length is 8192 tokens.")
    seen = x.observed()
    assert seen["error_class"] == "context_length"
    assert seen["error"].startswith("context_length_exceeded: This model's maximum context length is 8192")


@pytest.mark.parametrize("form", ["stream", "body"])
def test_minimax_base_resp_login_failure_ends_the_turn(form: str) -> None:
    raw = (FIXTURES / "minimax_login_fail.sse").read_bytes()
    x = Exchange.start({"model": "MiniMax-M2.7", "input": "hi"}, provider="MiniMax")
    sent = x.opening() + (x.feed(raw) + x.end() if form == "stream" else x.whole(raw[len(b"data: "):]))
    events = sent_events(sent)
    assert_well_formed(events)
    assert done_items(events) == [] and events[-1]["type"] == "response.failed"
    error = events[-1]["response"]["error"]
    assert error["code"] == "invalid_prompt"  # not retried: Codex shows the message and ends the turn
    assert error["message"] == ("MiniMax: login fail: Please carry the API secret key in the 'Authorization' field"
                                " of the request header")
    assert (x.observed()["error_class"], x.observed()["error"]) == (
        "auth", "authentication_error (1004): login fail: Please carry the API secret key in the 'Authorization' "
                "field of the request header")


@pytest.mark.parametrize("reason", ["content_filter", "sensitive"])
def test_a_content_filter_ends_the_turn_with_the_answer_so_far(reason: str) -> None:
    """Codex 0.171.0 retries an incomplete ``content_filter`` answer five times, each with the answer
    so far in its history (measured): the filter ends the turn instead (GLM says ``sensitive``)."""
    raw = (FIXTURES / "azure_content_filter.sse").read_bytes().replace(b'"content_filter","index"',
                                                                      f'"{reason}","index"'.encode())
    x = Exchange.start({"model": "gpt-4o", "input": "hi"}, provider="Azure")
    events = sent_events(x.opening() + x.feed(raw) + x.end())
    assert_well_formed(events)
    assert_done_only_at_the_end(events)
    (message,) = done_items(events)
    assert (message["status"], message["content"][0]["text"]) == ("incomplete", "The first step is to")
    assert events[-1]["response"]["error"]["code"] == "content_policy_violation"
    assert x.observed()["error_class"] == "content_filter" and x.served_model == "gpt-4o-2024-11-20"


# --- HTTP errors -------------------------------------------------------------------------------------

def http(name: str, status: int, provider: str = "Stub") -> tuple[int, dict, dict]:
    x = Exchange.start({"model": "m", "input": "hi"}, provider=provider)
    shown, raw = x.error(status, (FIXTURES / name).read_bytes())
    return shown, json.loads(raw)["error"], x.observed()


def test_deepseek_401_ends_the_turn_with_its_message() -> None:
    """Codex retries a 401 five times (measured); a refused key is not fixed by a retry."""
    status, error, seen = http("deepseek_401.json", 401, "DeepSeek")
    assert (status, error["code"]) == (400, "invalid_prompt")
    assert error["message"] == "DeepSeek: Authentication Fails, Your api key: ****cdef is invalid (HTTP 401)"
    assert (seen["error_class"], seen["error"]) == (
        "auth", "authentication_error: Authentication Fails, Your api key: ****cdef is invalid")


def test_groq_413_is_a_request_too_large_not_a_rate_limit() -> None:
    status, error, seen = http("groq_413.json", 413, "Groq")
    assert (status, error["code"]) == (400, "invalid_prompt") and error["message"].endswith("(HTTP 413)")
    assert seen["error_class"] == "invalid_request"
    assert seen["error"].startswith("invalid_request_error: Request too large for model `llama-3.3-70b-versatile`")
    assert "rate_limit_exceeded" not in seen["error"]


def test_geminis_list_shaped_error_has_its_code() -> None:
    status, error, seen = http("gemini_400_list.json", 400, "Gemini")
    assert status == 400
    assert error["message"] == "Gemini: * GenerateContentRequest.contents: contents is not specified\n"
    assert seen["error"] == "INVALID_ARGUMENT: * GenerateContentRequest.contents: contents is not specified"
    assert seen["error_class"] == "invalid_request"


def test_an_html_error_page_is_its_status_and_heading() -> None:
    status, error, seen = http("nginx_502.html", 502)
    assert status == 502 and error["code"] == "server_error"  # Codex retries a 5xx itself
    assert error["message"] == "Stub: HTTP 502 (an HTML page): 502 Bad Gateway"
    assert (seen["error_class"], seen["error"]) == ("server", "server_error: HTTP 502 (an HTML page): 502 Bad Gateway")
    page = (FIXTURES / "nginx_502.html").read_text()
    assert page_summary(page) == "502 Bad Gateway"
    assert page_error(page, 502) == "HTTP 502 (an HTML page): 502 Bad Gateway"
    titled = "<!DOCTYPE html><html><head><title>example.com | 504: Gateway time-out</title><style>p{}</style></head>"
    assert page_summary(titled + "<body><p>The web server reported a gateway time-out error.</p></body></html>") == (
        "example.com | 504: Gateway time-out")
    assert page_summary("<html><body><p>Service &amp; site down</p></body></html>") == "Service & site down"
    assert page_summary("upstream connect error or disconnect/reset before headers") is None
    assert page_summary('{"error": "a <b> tag in a JSON message"}') is None


@pytest.mark.parametrize(("status", "shown"), [(400, 400), (401, 400), (402, 400), (403, 400), (404, 400), (405, 400),
                                               (413, 400), (422, 400), (408, 408), (409, 409), (429, 429), (500, 500),
                                               (502, 502), (503, 503), (529, 529)])
def test_the_status_codex_gets(status: int, shown: int) -> None:
    """Codex 0.171.0 ends the turn on a 400 and retries 401, 403, 404, 408, 413 and 422 (measured):
    what a retry cannot fix reaches it as a 400."""
    assert responses_status(status) == shown


@pytest.mark.parametrize(("body", "status", "cls", "retryable"), [
    ({"error": {"message": "You exceeded your current quota", "type": "insufficient_quota",
                "code": "insufficient_quota"}}, 429, "auth", False),
    ({"error": {"message": "Rate limit reached for requests", "code": "rate_limit_exceeded"}}, 429, "rate_limit", True),
    ({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, 529, "overloaded", True),
    ({"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}},
     503, "overloaded", True),
    ({"error": {"message": "Insufficient Balance", "type": "unknown_error"}}, 402, "auth", False),
    ({"error": {"code": "1301", "message": "系统检测到输入或生成内容可能包含不安全或敏感内容"}}, 400,
     "content_filter", False),
    ({"error": {"code": "1261", "message": "Prompt 超长"}}, 400, "context_length", False),
    ({"error": {"message": "The response was filtered due to the prompt triggering Azure OpenAI's content "
                "management policy.", "type": None, "param": "prompt", "code": "content_filter"}}, 400,
     "content_filter", False),
    ({"error": {"message": "Invalid request: Your request exceeded model token limit: 131072",
                "type": "invalid_request_error"}}, 400, "context_length", False),
    ({"error": {"message": "prompt is too long: 210000 tokens > 200000 maximum", "type": "invalid_request_error"}},
     400, "context_length", False),
    ({"error": {"message": "Model Not Exist", "type": "invalid_request_error"}}, 400, "invalid_request", False),
    ({"error": {"message": "Provider returned error", "code": 502}}, None, "server", True),  # OpenRouter, in a stream
    ({"error": {"message": "Rate limit exceeded: free-models-per-min", "code": 429}}, None, "rate_limit", True),
    ({"error": {"message": "upstream timed out", "code": "timeout"}}, None, "server", True),
    ({"base_resp": {"status_code": 1002, "status_msg": "rate limit exceeded(RPM)"}}, 200, "rate_limit", True),
    ({"base_resp": {"status_code": 1027, "status_msg": "output new_sensitive"}}, 200, "content_filter", False),
    (b"upstream connect error or disconnect/reset before headers. reset reason: overflow", 503, "server", True),
    (b"", 504, "server", True),
])
def test_each_providers_error_shape_is_classed(body, status, cls, retryable) -> None:
    problem = read_error(body, status)
    assert (problem.error_class, problem.retryable) == (cls, retryable), problem
    assert problem.message and "\n" not in problem.record_text()


def test_an_error_known_only_by_its_words_is_classed() -> None:
    assert classify(None, [], "Requests rate limit exceeded, please retry later") == "rate_limit"
    assert classify(None, ["overloaded_error"], "Overloaded") == "overloaded"
    assert classify(None, [], "something odd happened") == "server"
    assert classify(418, [], "I'm a teapot") == "invalid_request"


# --- the same try, by meaning --------------------------------------------------------------------

def identity(body: object, path: str = "/responses", method: str = "POST") -> str:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return finish_steps(request_identity_in_steps(method, path, raw))


def test_a_retry_is_the_same_try_whatever_the_key_order_and_the_stream_flag() -> None:
    """Measured: Codex 0.171.0 writes client_metadata in another key order on each stream retry;
    Claude Code 2.1.332 retries a stream broken by an error unstreamed, the body otherwise unchanged."""
    first = {"model": "m", "input": [{"role": "user", "content": "hi"}], "stream": True,
             "client_metadata": {"session_id": "s1", "turn_id": "t1", "x-codex-window-id": "s1:0"}}
    again = {"stream": True, "client_metadata": {"x-codex-window-id": "s1:0", "turn_id": "t1", "session_id": "s1"},
             "input": [{"content": "hi", "role": "user"}], "model": "m"}
    assert json.dumps(first).encode() != json.dumps(again).encode() and identity(first) == identity(again)
    assert identity({**first, "stream": False}) == identity(first)
    assert identity({**first, "input": [{"role": "user", "content": "hi!"}]}) != identity(first)
    assert identity({**first, "client_metadata": {**first["client_metadata"], "turn_id": "t2"}}) != identity(first)
    assert identity(first, path="/other") != identity(first) and identity(first, method="PUT") != identity(first)
    assert identity(b"not json") == identity(b"not json") != identity(b"not json!")
    # a large body is digested a piece at a time, with the same result
    big = {"model": "m", "input": [{"role": "user", "content": "x" * 2000, "n": i} for i in range(300)]}
    reordered = {"input": [{"n": i, "content": "x" * 2000, "role": "user"} for i in range(300)], "model": "m"}
    steps = request_identity_in_steps("POST", "/responses", json.dumps(big).encode())
    pauses = 0
    while True:
        try:
            next(steps)
            pauses += 1
        except StopIteration as done:
            assert done.value == identity(reordered)
            break
    assert pauses > 3


def test_types_of_the_failed_sequence() -> None:
    """A failure Codex retries leaves every item open; the events end with the failure."""
    events, _ = run("midstream_error.sse")
    assert types(events) == ["created", "in_progress", "output_item.added", "content_part.added",
                             "output_text.delta", "failed"]


# --- what a hostile provider can make the translation hold ---------------------------------------------

def test_a_provider_cannot_make_the_translation_hold_without_bound() -> None:
    from ccswitch_tui.bridge.handler import Outgoing
    from ccswitch_tui.bridge.translate.handler import MAX_ERROR_BODY, TranslatingHandler

    handler = TranslatingHandler(provider="Hostile")
    error = handler.exchange("POST", "/responses")
    error.request(Outgoing("POST", "/responses", {}, b'{"model": "m", "input": "hi"}'))
    error.response_head(401, {"Content-Type": "application/json"})
    head = b'{"error": {"message": "bad key", "filler": "'
    error.response_chunk(head)
    for _ in range(64):  # 64 MiB of error body
        error.response_chunk(b"x" * 2**20)
    assert len(error.buffer) == MAX_ERROR_BODY
    body = json.loads(error.response_end())
    assert body["error"]["code"] == "invalid_prompt" and "Hostile:" in body["error"]["message"]

    whole = handler.exchange("POST", "/responses")
    whole.request(Outgoing("POST", "/responses", {}, b'{"model": "m", "input": "hi"}'))
    whole.response_head(200, {"Content-Type": "application/json"})
    for _ in range(20):  # 20 MiB of one JSON answer
        whole.response_chunk(b" " * 2**20)
    assert len(whole.buffer) == 16 * 2**20
    events = sent_events(whole.response_end())
    assert_well_formed(events)
    error = events[-1]["response"]["error"]
    assert error["code"] == "invalid_prompt"
    assert error["message"] == "Hostile: the provider's answer (one JSON body) is over 16 MiB"

    stream = ResponsesStream(model="m", tools=convert_tools([]))
    parts = [{"type": f"kind{i}" + "y" * 500} for i in range(1000)] + [{"type": "text", "text": "ok"}]
    stream.feed({"choices": [{"index": 0, "delta": {"content": parts}}]})
    assert len(stream.skipped_parts) == 16 and all(len(t) == 64 for t in stream.skipped_parts)
    huge = read_error({"error": {"message": "m", "code": "9" * 5000, "type": "z" * 5000}}, 400)
    assert huge.codes == () and huge.record_text() == "invalid_request_error: m"

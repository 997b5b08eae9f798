"""Chat Completions stream → Responses events, on recorded provider streams (tests/fixtures/chat)."""

from __future__ import annotations

import json
import random
import re

from translate_helpers import (
    FIXTURES,
    TOOLS,
    assert_done_only_at_the_end,
    assert_well_formed,
    done_items,
    run,
    types,
)

from ccswitch_tui.bridge.translate import ReasoningMemory, chat_usage, error_body
from ccswitch_tui.bridge.translate.exchange import Exchange
from ccswitch_tui.bridge.translate.sse import DONE, SSEDecoder, encode
from ccswitch_tui.bridge.translate.stream import ResponsesStream
from ccswitch_tui.bridge.translate.tools import convert_tools


def test_deepseek_reasoning_then_a_tool_call_with_cached_usage() -> None:
    memory = ReasoningMemory()
    events, stream = run("deepseek_reasoning_tool.sse", memory=memory)
    assert_well_formed(events)
    assert types(events) == [
        "created", "in_progress",
        "output_item.added", "reasoning_summary_part.added", "reasoning_summary_text.delta",
        "reasoning_summary_text.delta", "reasoning_summary_text.done", "reasoning_summary_part.done",
        "output_item.added", "function_call_arguments.delta", "function_call_arguments.delta",
        # every item is done with the response, in output order (a failure would leave them all open)
        "output_item.done", "function_call_arguments.done", "output_item.done", "completed"]
    reasoning, fc = done_items(events)
    assert reasoning["summary"] == [{"type": "summary_text", "text": "The user wants the file list."}]
    assert (fc["type"], fc["name"], fc["call_id"], json.loads(fc["arguments"])) == (
        "function_call", "exec_command", "call_00_ls", {"cmd": "ls"})
    completed = events[-1]["response"]
    assert completed["usage"] == {"input_tokens": 1200, "output_tokens": 40, "total_tokens": 1240,
                                  "input_tokens_details": {"cached_tokens": 1024},
                                  "output_tokens_details": {"reasoning_tokens": 12}}
    assert completed["model"] == "requested-model" and stream.served_model == "deepseek-v4-pro"
    assert [o["type"] for o in completed["output"]] == ["reasoning", "function_call"]
    assert memory.recall(["call_00_ls"]) == "The user wants the file list."


def test_kimi_text_then_parallel_calls_whole_arguments_and_usage_in_the_choice() -> None:
    events, stream = run("kimi_parallel_tools.sse", split=3)
    assert_well_formed(events)
    message, first, second = done_items(events)
    assert message["content"] == [{"type": "output_text", "text": "Checking both.", "annotations": []}]
    assert [(c["call_id"], json.loads(c["arguments"])) for c in (first, second)] == [
        ("exec_command:0", {"cmd": "pwd"}), ("exec_command:1", {"cmd": "id"})]
    assert events[-1]["response"]["usage"]["input_tokens_details"] == {"cached_tokens": 256}


def test_tool_call_deltas_without_index_and_a_namespaced_call() -> None:
    events, _ = run("noindex_tools.sse")
    assert_well_formed(events)
    first, second = done_items(events)
    assert (first["call_id"], first["arguments"]) == ("call_a", '{"cmd":"ls"}')
    assert (second["call_id"], second["name"], second["namespace"], second["arguments"]) == (
        "call_b", "read", "mcp__files", '{"path":"a.txt"}')


def test_finish_reason_length_is_an_incomplete_response() -> None:
    events, _ = run("glm_length.sse")
    assert_well_formed(events)
    assert events[-1]["type"] == "response.incomplete"
    assert events[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    assert done_items(events)[0]["content"][0]["text"] == "The answer is long"


def test_an_error_inside_the_stream_fails_the_response_with_the_providers_message() -> None:
    events, stream = run("midstream_error.sse")
    assert_well_formed(events)
    failed = events[-1]
    assert failed["type"] == "response.failed"
    assert failed["response"]["error"] == {"code": "overloaded", "message": "upstream overloaded, try again later"}
    assert stream.error is not None


def test_a_stream_that_closes_without_an_answer_fails() -> None:
    stream = ResponsesStream(model="m", tools=convert_tools([]))
    events = stream.feed({"choices": [{"index": 0, "delta": {"role": "assistant"}}]}) + stream.finish()
    assert types(events) == ["created", "in_progress", "failed"]


def test_custom_tool_call_from_function_arguments() -> None:
    stream = ResponsesStream(model="m", tools=convert_tools(TOOLS))
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
    events = stream.feed({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "p1", "function": {"name": "apply_patch", "arguments": json.dumps({"input": patch})}}]},
        "finish_reason": "tool_calls"}]}) + stream.finish()
    assert_well_formed(events)
    assert "function_call_arguments.delta" not in types(events)  # Codex wants the input whole
    (item,) = done_items(events)
    assert item == {"type": "custom_tool_call", "id": item["id"], "status": "completed", "call_id": "p1",
                    "name": "apply_patch", "input": patch}


def test_an_upstream_that_ignored_stream_true() -> None:
    x = Exchange.start({"model": "kimi", "input": "hi", "tools": TOOLS})
    body = {"id": "c", "object": "chat.completion", "model": "kimi-served", "choices": [{"index": 0, "message": {
        "role": "assistant", "content": None, "reasoning_content": "think",
        "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "exec_command", "arguments": "{}"}}]},
        "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}
    raw = x.opening() + x.whole(json.dumps(body).encode())
    events = [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: ")]
    assert_well_formed(events)
    assert [i["type"] for i in done_items(events)] == ["reasoning", "function_call"]
    assert events[-1]["response"]["usage"]["total_tokens"] == 7 and x.served_model == "kimi-served"


def test_usage_dialects() -> None:
    assert chat_usage({"prompt_tokens": 10, "completion_tokens": 2, "prompt_cache_hit_tokens": 6}).cached_tokens == 6
    assert chat_usage({"prompt_tokens": 10, "cached_tokens": 4}).cached_tokens == 4
    both = chat_usage({"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 3},
                       "completion_tokens_details": {"reasoning_tokens": 9}})
    assert (both.cached_tokens, both.reasoning_tokens, both.as_responses()["total_tokens"]) == (3, 9, 10)


def test_provider_http_errors_keep_status_and_message() -> None:
    x = Exchange.start({"model": "m", "input": "hi"}, provider="Kimi")
    upstream = {"error": {"message": "Invalid request: tool_call_id not found", "type": "invalid_request_error"}}
    status, raw = x.error(400, json.dumps(upstream).encode())
    body = json.loads(raw)
    assert status == 400 and body["error"]["message"] == "Kimi: Invalid request: tool_call_id not found"
    assert x.problem.message == "Invalid request: tool_call_id not found" and x.problem.error_class == "invalid_request"
    assert error_body(429, b"slow down")["error"] == {"message": "provider: slow down", "type": "rate_limit_error",
                                                      "code": "rate_limit_exceeded", "param": None}
    assert error_body(500, b"")["error"]["message"] == "provider: HTTP 500"
    minimax = error_body(200, {"base_resp": {"status_code": 1004, "status_msg": "login fail"}})
    assert minimax["error"]["message"] == "provider: login fail"


def test_sse_decoder_handles_crlf_comments_and_a_missing_final_blank_line() -> None:
    decoder = SSEDecoder()
    got = list(decoder.feed(b": keep-alive\r\n\r\ndata: {\"a\":1}\r\n\r\ndata: [DO"))
    got += list(decoder.feed(b"NE]\n\ndata: {\"b\":2}"))
    got += list(decoder.close())
    assert got == [{"a": 1}, DONE, {"b": 2}]


# --- the bridge route (no socket: the calls the bridge server makes, in its order) ---------------

def test_the_translating_route_rewrites_path_body_and_answer() -> None:
    from ccswitch_tui.bridge.handler import Outgoing
    from ccswitch_tui.bridge.translate.handler import TranslatingHandler, translated_path

    assert translated_path("/responses") == "/chat/completions"
    assert translated_path("/v1/responses?api-version=1") == "/v1/chat/completions?api-version=1"
    assert translated_path("/models") is None
    handler = TranslatingHandler(provider="Kimi")
    assert handler.exchange("GET", "/models").rewrites_body is False  # anything else passes unchanged

    x = handler.exchange("POST", "/responses")
    out = x.request(Outgoing("POST", "/responses", {"Authorization": "Bearer real", "Accept": "text/event-stream",
                                                    "Content-Type": "application/json"},
                             json.dumps({"model": "kimi", "input": "hi", "stream": True}).encode()))
    assert out.path == "/chat/completions" and out.headers["Authorization"] == "Bearer real"
    assert json.loads(out.body)["messages"] == [{"role": "user", "content": "hi"}]
    status, head = x.response_head(200, {"Content-Type": "text/event-stream", "x-request-id": "r1"})
    assert status == 200 and head["Content-Type"] == "text/event-stream" and head["x-request-id"] == "r1"
    raw = (FIXTURES / "glm_length.sse").read_bytes()
    sent = x.response_chunk(raw[:40]) + x.response_chunk(raw[40:]) + x.response_end()
    events = [json.loads(line[6:]) for line in sent.decode().splitlines() if line.startswith("data: ")]
    assert_well_formed(events)
    assert events[-1]["type"] == "response.incomplete"

    err = handler.exchange("POST", "/responses")
    err.request(Outgoing("POST", "/responses", {}, b'{"model": "kimi", "input": "hi"}'))
    assert err.response_head(429, {"Content-Type": "application/json"}) == (429, {"Content-Type": "application/json"})
    assert err.response_chunk(b'{"error": {"message": "too many"}}') == b""
    body = json.loads(err.response_end())
    assert body["error"]["message"] == "Kimi: too many" and body["error"]["code"] == "rate_limit_exceeded"

    odd = handler.exchange("POST", "/responses")
    assert odd.request(Outgoing("POST", "/responses", {}, b"not json")).body == b"not json"
    assert odd.response_head(400, {"a": "b"}) == (400, {"a": "b"}) and odd.response_chunk(b"x") == b"x"


def test_minimax_errors_inside_a_200() -> None:
    x = Exchange.start({"model": "MiniMax-M2", "input": "hi"}, provider="MiniMax")
    raw = x.opening() + x.whole(b'{"base_resp": {"status_code": 1004, "status_msg": "login fail: invalid key"}}')
    assert b"response.failed" in raw and b"MiniMax: login fail: invalid key" in raw
    stream = ResponsesStream(model="m", tools=convert_tools([]))
    events = stream.feed({"base_resp": {"status_code": 1002, "status_msg": "rate limited"}})
    assert events[-1]["type"] == "response.failed"
    # MiniMax's own number says rate limit: Codex gets the code it retries, the record keeps the number
    assert events[-1]["response"]["error"] == {"code": "rate_limit_exceeded", "message": "rate limited"}
    assert stream.problem.record_text() == "rate_limit_exceeded (1002): rate limited"


# --- answers that used to be lost (own fixtures, in the shapes the providers send) --------------

def test_an_openai_refusal_is_the_message_codex_shows() -> None:
    events, stream = run("openai_refusal.sse", split=11)
    assert_well_formed(events)
    assert events[-1]["type"] == "response.completed"
    (message,) = done_items(events)
    # Codex 0.171.0 knows no "refusal" content (a message carrying one is dropped): the text is output_text
    assert message["content"] == [{"type": "output_text", "text": "I'm sorry, but I can't help with that.",
                                   "annotations": []}]
    assert "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta") == message[
        "content"][0]["text"]
    assert stream.refused is True


def test_reasoning_sent_as_an_object_or_a_list_of_details_is_kept() -> None:
    events, _ = run("reasoning_objects.sse", split=5)
    assert_well_formed(events)
    reasoning, message = done_items(events)
    assert reasoning["summary"] == [{"type": "summary_text", "text": "The user greets me. A short reply fits."}]
    assert message["content"][0]["text"] == "Hello!"
    assert events[-1]["response"]["usage"]["output_tokens_details"] == {"reasoning_tokens": 9}


def test_an_error_codex_retries_closes_nothing_of_the_answer_so_far() -> None:
    """Codex keeps every item that was done before response.failed and sends it again on its retry
    (measured): an error it retries leaves the message open, so the retry starts from the same
    history, and Codex shows the retry's answer instead."""
    events, stream = run("openrouter_midstream_error.sse", split=9)
    assert_well_formed(events)
    assert types(events)[-3:] == ["output_text.delta", "output_text.delta", "failed"]
    assert done_items(events) == []
    failed = events[-1]["response"]
    assert failed["error"] == {"code": "server_error", "message": "Provider disconnected unexpectedly"}
    assert failed["output"] == [] and stream.problem.retryable


def test_an_error_codex_does_not_retry_shows_the_answer_so_far_once() -> None:
    """An error a retry cannot fix ends the turn at once: the reasoning and the message so far are
    closed first (the user sees them once), with a code Codex does not retry."""
    stream = ResponsesStream(model="m", tools=convert_tools(TOOLS), provider="vLLM")
    events = stream.feed({"choices": [{"index": 0, "delta": {"reasoning_content": "count them"}}]})
    events += stream.feed({"choices": [{"index": 0, "delta": {"content": "There are "}}]})
    events += stream.feed({"error": {"object": "error", "message": "This model's maximum context length is 4096 "
                                     "tokens. However, your request has 4100 input tokens.", "type": "BadRequestError",
                                     "param": None, "code": 400}})
    assert_well_formed(events)
    assert types(events)[-4:] == ["content_part.done", "output_item.done", "output_item.done", "failed"]
    reasoning, message = done_items(events)
    assert reasoning["summary"][0]["text"] == "count them"
    assert (message["status"], message["content"][0]["text"]) == ("incomplete", "There are ")
    failed = events[-1]["response"]
    assert failed["error"]["code"] == "context_length_exceeded" and failed["output"] == [reasoning, message]
    assert failed["error"]["message"].startswith("vLLM: This model's maximum context length is 4096 tokens")
    assert stream.problem.error_class == "context_length" and not stream.problem.retryable


def test_a_tool_call_cut_by_an_error_is_never_finished() -> None:
    """Codex runs a call as soon as its item is done: a call whose arguments an error cut off stays open,
    whether Codex retries the error (nothing is done) or not (the reasoning before it is)."""
    for error, kept in (({"message": "overloaded", "code": "overloaded"}, []),
                        ({"message": "Invalid key", "code": "invalid_api_key"}, ["reasoning"])):
        stream = ResponsesStream(model="m", tools=convert_tools(TOOLS))
        events = stream.feed({"choices": [{"index": 0, "delta": {"reasoning_content": "list it", "tool_calls": [
            {"index": 0, "id": "c1", "function": {"name": "exec_command", "arguments": '{"cmd": "rm -rf bu'}}]}}]})
        events += stream.feed({"error": error})
        assert_well_formed(events)
        assert [i["type"] for i in done_items(events)] == kept
        assert events[-1]["type"] == "response.failed"


def test_deepseek_cache_hits_reported_only_in_its_own_field() -> None:
    x = Exchange.start({"model": "deepseek-chat", "input": "hi"}, provider="DeepSeek")
    raw = (FIXTURES / "deepseek_cache_hit.sse").read_bytes()
    sent = x.opening() + x.feed(raw[:100]) + x.feed(raw[100:]) + x.end()
    events = [json.loads(line[6:]) for line in sent.decode().splitlines() if line.startswith("data: ")]
    usage = events[-1]["response"]["usage"]
    assert usage["input_tokens_details"] == {"cached_tokens": 1}
    seen = x.observed()  # what the record keeps: the same mapping
    assert (seen["input_tokens"], seen["output_tokens"], seen["cached_tokens"], seen["usage_source"]) == (
        usage["input_tokens"], usage["output_tokens"], 1, "reported")
    assert (seen["model_served"], seen["system_fingerprint"], seen["error"]) == ("deepseek-chat", "fp_ds01", None)


def test_the_recorded_error_says_its_code_once() -> None:
    deepseek = {"error": {"message": "Model Not Exist", "type": "invalid_request_error", "param": None,
                          "code": "invalid_request_error"}}
    x = Exchange.start({"model": "deepseek-v9", "input": "hi"}, provider="DeepSeek")
    status, raw = x.error(400, json.dumps(deepseek).encode())
    assert json.loads(raw)["error"]["message"] == "DeepSeek: Model Not Exist"  # what Codex shows
    assert x.observed()["error"] == "invalid_request_error: Model Not Exist"
    said = Exchange.start({"model": "m", "input": "hi"})
    said.error(429, b'{"error": {"message": "rate_limit_exceeded: slow down", "code": "rate_limit_exceeded"}}')
    assert said.observed()["error"] == "rate_limit_exceeded: slow down"
    inside = Exchange.start({"model": "m", "input": "hi"}, provider="OpenRouter")
    inside.feed((FIXTURES / "openrouter_midstream_error.sse").read_bytes())
    inside.end()
    assert inside.observed()["error"] == "server_error: Provider disconnected unexpectedly"


def test_a_text_delta_from_its_template_is_what_the_encoder_writes() -> None:
    stream = ResponsesStream(model="m", tools=convert_tools([]))
    events = stream.feed({"choices": [{"index": 0, "delta": {"content": 'quote " backslash \\ é \u2028 \n'}}]})
    delta = events[-1]
    assert delta["type"] == "response.output_text.delta"
    assert encode(delta) == ("event: response.output_text.delta\ndata: "
                             + json.dumps(delta, ensure_ascii=False, separators=(",", ":")) + "\n\n").encode()


def test_the_short_way_for_plain_text_makes_the_same_events() -> None:
    """Exchange.feed sends most text deltas without building the event: same events, same numbers."""
    for name in ("glm_length.sse", "kimi_parallel_tools.sse", "openrouter_midstream_error.sse", "reasoning_objects.sse",
                 "deepseek_cache_hit.sse", "openai_refusal.sse"):
        slow, _ = run(name, split=13)
        x = Exchange.start({"model": "requested-model", "input": "hi", "tools": TOOLS})
        raw = (FIXTURES / name).read_bytes()
        sent = x.opening() + b"".join(x.feed(raw[i:i + 13]) for i in range(0, len(raw), 13)) + x.end()
        fast = [json.loads(line[6:]) for line in sent.decode().splitlines() if line.startswith("data: ")]
        assert_well_formed(fast)
        assert types(fast) == types(slow), name
        assert [e.get("delta") for e in fast] == [e.get("delta") for e in slow], name
        assert [o.get("content") for o in fast[-1]["response"]["output"]] == [
            o.get("content") for o in slow[-1]["response"]["output"]]


def _normalised(sent: bytes) -> list[dict]:
    """The events Codex got, parsed, with what is random per exchange (ids, the time) replaced."""
    text = sent.decode()
    ids = sorted(set(re.findall(r'"((?:resp|msg|rs|fc|ctc|call)_[0-9a-f]{24})"', text)), key=text.index)
    for i, found in enumerate(ids):
        text = text.replace(found, f"id{i}")
    events = [json.loads(line[6:]) for line in text.split("\n") if line.startswith("data: ")]  # not at U+2028
    for e in events:
        if isinstance(e.get("response"), dict):
            e["response"]["created_at"] = 0
    return events


def _unrandom(sent: bytes) -> bytes:
    """The bytes Codex got, with what is random per exchange (ids, the time) replaced."""
    text = sent.decode()
    ids = sorted(set(re.findall(r'"((?:resp|msg|rs|fc|ctc|call)_[0-9a-f]{24})"', text)), key=text.index)
    for i, found in enumerate(ids):
        text = text.replace(found, f"id{i}")
    return re.sub(r'"created_at":[0-9]+', '"created_at":0', text).encode()


def _exchange(raw: bytes, cuts: list[int]) -> tuple[bytes, dict]:
    x = Exchange.start({"model": "requested-model", "input": "hi", "tools": TOOLS})
    sent, last = [x.opening()], 0
    for at in [*cuts, len(raw)]:
        sent.append(x.feed(raw[last:at]))
        last = at
    sent.append(x.end())
    return b"".join(sent), x.observed()


def test_the_answer_does_not_depend_on_how_the_provider_cut_its_stream() -> None:
    """Every fixture whole, an event per chunk, a byte per chunk, cut at random places, CRLF, text
    outside ASCII cut inside a character: Codex gets the same well-formed events and the record the
    same facts (the decoder parses each chunk's
    complete events in one go, the text deltas come from a template)."""
    plain = b"".join(b'data: {"id":"c","object":"chat.completion.chunk","model":"served","choices":[{"index":0,'
                     b'"delta":{"content":"%s"}}]}\n\n' % t.encode() for t in ("h\u00e9", "\u4f60\u597d", ' \\"q\\" ',
                                                                              "\\u2028\\n", "\U0001f600"))
    plain += (b'data: {"id":"c","object":"chat.completion.chunk","model":"served","choices":[{"index":0,'
              b'"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":5}}\n\n'
              b"data: not json\n\ndata: {\"broken\": \n\ndata: [DONE]\n\n")
    streams = {"plain": plain, "plain-crlf": plain.replace(b"\n", b"\r\n")}
    streams |= {path.name: path.read_bytes() for path in sorted(FIXTURES.glob("*.sse"))}  # every recorded shape
    assert len(streams) >= 16
    rng = random.Random(36)
    for name, raw in streams.items():
        whole, facts = _exchange(raw, [])
        events = _normalised(whole)
        assert_well_formed(events)
        assert_done_only_at_the_end(events)
        blank = b"\r\n\r\n" if b"\r\n\r\n" in raw else b"\n\n"
        per_event = [i + len(blank) for i in range(len(raw)) if raw.startswith(blank, i)]
        inside = [i for i in range(1, len(raw)) if raw[i] & 0xC0 == 0x80]  # inside a UTF-8 character
        cut_anywhere = [sorted(rng.sample(range(1, len(raw)), min(k, len(raw) - 1))) for k in (2, 5, 17, 60)]
        for cuts in (per_event, list(range(1, len(raw))), inside, *cut_anywhere):
            sent, seen = _exchange(raw, cuts)
            assert _normalised(sent) == events, name
            assert seen == facts, name
    text = "".join(e.get("delta", "") for e in _normalised(_exchange(plain, [])[0])
                   if e["type"] == "response.output_text.delta")
    assert text == 'h\u00e9\u4f60\u597d "q" \u2028\n\U0001f600'


def test_text_deltas_from_the_template_are_the_encoders_bytes() -> None:
    from ccswitch_tui.bridge.translate.sse import TextDeltas

    for text in ('quote " backslash \\ \u00e9 \u2028 \n', "\x00\x1f\x7f", "\ud800", "\U0001f600", "x" * 5000):
        for item, index, seq in (("msg_0123", 0, 7), ('odd"id\\', 12, 123456)):
            event = {"type": "response.output_text.delta", "sequence_number": seq, "item_id": item,
                     "output_index": index, "content_index": 0, "delta": text}
            assert TextDeltas(item, index).encode(seq, text) == encode(event)
            assert encode(event) == ("event: response.output_text.delta\ndata: "
                                     + json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n\n"
                                     ).encode("utf-8", "backslashreplace")
            assert json.loads(encode(event).decode().split("data: ", 1)[1]) == event  # a lone surrogate too


def test_a_repeated_event_read_by_its_text_alone_makes_the_events_a_full_parse_makes() -> None:
    """The shortcut for an event that repeats the last one with another text (sse.RepeatedText):
    whatever changes besides the text (the id, the finish, usage, a second "content", a role, a
    tool call, a null content) is parsed whole, and the events are those of a full parse."""
    head = 'data: {"id":"c%s","object":"chat.completion.chunk","created":1,"model":"served","choices":[{"index":0,'
    texts = ["a", 'q\\"u\\"o', "\\u00e9\u4f60", '\\"content\\":\\"x', "\\\\", "\\u2028", "b", "plain",
             "runs", " of", " text", "\u00e9", "\\t", "z", "x = [", '\\"a', '\\",', ' \\"b', '\\"]', "\\\\", "\\\\\\\\"]
    lines = [head % 1 + '"delta":{"role":"assistant","content":""},"finish_reason":null}]}']
    lines += [head % 1 + f'"delta":{{"content":"{t}"}},"finish_reason":null}}]}}' for t in texts]
    lines += [head % 1 + '"delta":{"content":"k","role":"assistant"},"finish_reason":null}]}',  # its text
              head % 1 + '"delta":{"content":"m"},"finish_reason":null}]}',  # would be "k","role":"assistant"
              head % 1 + '"delta":{"content":"n"},"finish_reason":null}]}']
    lines += [head % 2 + '"delta":{"content":"new id"},"finish_reason":null}]}',  # the id changed
              head % 2 + '"delta":{"content":""},"finish_reason":null}]}',  # empty text
              head % 2 + '"delta":{"content":"c"},"finish_reason":null}]}',
              head % 2 + '"delta":{"content":null},"finish_reason":null}]}',  # not a text
              head % 2 + '"delta":{"content":"d"},"finish_reason":null}]}',
              head % 2 + '"delta":{"content":"e","role":"assistant"},"finish_reason":null}]}',  # more than text
              head % 2 + '"delta":{"content":"f"},"finish_reason":null}],"x":{"content":"decoy"}}',
              head % 2 + '"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"exec_command",'
                         '"arguments":"{}"}}]},"finish_reason":null}]}',
              head % 2 + '"delta":{"content":"after the call"},"finish_reason":null}]}',
              head % 2 + '"delta":{"content":"g"},"finish_reason":null}]}',
              head % 2 + '"delta":{"content":"i"},"finish_reason":null}],"usage":{"prompt_tokens":3,'
                         '"completion_tokens":9}}',  # usage after the text
              head % 2 + '"delta":{"content":"j"},"finish_reason":null}]}',
              head % 2 + '"delta":{"content":"h"},"finish_reason":"stop"}]}',  # the finish after the text
              "data: [DONE]"]
    raw = "".join(line + "\n\n" for line in lines).encode()
    stream = ResponsesStream(model="requested-model", tools=convert_tools(TOOLS))
    decoder = SSEDecoder()
    slow: list[dict] = []
    for data in decoder.feed(raw):  # no shortcut: every event parsed and fed as a dict
        slow += stream.finish() if data is DONE else stream.feed(data)
    slow += stream.finish()
    rng = random.Random(7)
    # an event per read (each read alone), all at once (runs read together), and reads cut anywhere
    for cuts in [range(1, len(raw)), [], *(sorted(rng.sample(range(1, len(raw)), k)) for k in (3, 10, 40) * 5)]:
        x = Exchange.start({"model": "requested-model", "input": "hi", "tools": TOOLS})
        pieces = [raw[i:j] for i, j in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
        sent = x.opening() + b"".join(x.feed(piece) for piece in pieces) + x.end()
        fast = _normalised(sent)
        assert fast == _normalised(b"".join(encode(e) for e in slow))
        assert _unrandom(sent) == _unrandom(b"".join(encode(e) for e in slow))  # byte for byte
        deltas = [e["delta"] for e in fast if e["type"] == "response.output_text.delta"]
        assert deltas[:len(texts)] == ["a", 'q"u"o', "\u00e9\u4f60", '"content":"x', "\\", "\u2028", "b", "plain",
                                       "runs", " of", " text", "\u00e9", "\t", "z", "x = [", '"a', '",', ' "b',
                                       '"]', "\\", "\\\\"]  # a text that ends in a quote and a comma too
        assert x.observed()["output_tokens"] == 9


def test_a_run_of_texts_is_read_at_once_only_when_every_event_is_the_template() -> None:
    """sse.RepeatedText.texts: a run is taken whole only when each event is the template with a
    well-formed non-empty text; one event that differs anywhere, or a text that is not one JSON
    string (a quote that ends it early, a control character, a broken escape), and it is not."""
    from ccswitch_tui.bridge.translate.sse import RepeatedText, Texts

    head = 'data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"'
    tail = '"},"finish_reason":null}]}'
    template = RepeatedText.of(head + "first" + tail, "first")
    assert template is not None
    frames = [head + t + tail for t in ("a", " b", "\\u00e9\\n\\\"\\/\\ud800", "c")]
    assert template.texts([frames[0], frames[1], frames[3]]) == Texts(["a", " b", "c"], ["a", " b", "c"])
    assert template.texts(frames) == Texts(["a", " b", '\u00e9\n"/\ud800', "c"],
                                           ["a", " b", '\u00e9\\n\\"/\ud800', "c"])  # as `encode` writes it
    odds = (head + 'x","role":"assistant' + tail,  # a text that would close early
            head + 'x","y' + tail,  # ... into a frame that is not JSON, but two texts if the quotes were not checked
            head + "" + tail,  # empty
            head + "x" + tail + " ",  # anything after
            " " + head + "x" + tail,  # anything before
            head.replace("c1", "c2") + "x" + tail,  # another id
            head + "x\nd" + tail,  # a control character
            head + "x\x00" + tail,  # NUL, which joins the texts while they are checked
            head + "x\\" + tail,  # an escape that takes the closing quote
            head + "x\\u12" + tail, head + "x\\q" + tail,  # broken escapes
            head[:-1] + tail,  # too short to hold the template
            "data: [DONE]")
    for odd in odds:
        assert template.texts([frames[0], odd, frames[1]]) is None, odd
        assert template.texts([odd, frames[0]]) is None, odd
        assert template.texts([frames[2], odd]) is None, odd
    # a run ends at the first event of another shape; an event of the template's shape that is not
    # the template with a text (its text is not one JSON string) leaves the run to be read one at a time
    for odd in odds:
        shaped = odd.startswith(head) and odd.endswith(tail)
        found = template.run([frames[0], frames[1], frames[3], odd, frames[0]], 1)
        assert found == ((1, None) if shaped else (3, Texts([" b", "c"], [" b", "c"]))), odd
        assert template.run([frames[0], frames[1], frames[3], odd, frames[0]], 3)[1] is None
    assert template.run([frames[0], frames[1], frames[3]], 0) == (3, Texts(["a", " b", "c"], ["a", " b", "c"]))
    finish = head + "d" + tail.replace("null", '"stop"')
    assert template.run([frames[0], frames[3], finish, "data: [DONE]"], 0) == (2, Texts(["a", "c"], ["a", "c"]))

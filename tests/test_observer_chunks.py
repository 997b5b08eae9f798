"""The response observer reads the same facts from a stream however it is cut into chunks: its
shortcut for plain chunks (whole text deltas, once the model is known) must never skip an event
that ends the stream or carries usage or an error."""

from __future__ import annotations

import random

import pytest

from ccswitch_tui.bridge.observe import TERMINAL_MARKERS, ResponseObserver

CHAT = b"".join(
    [b'data: {"id":"c","object":"chat.completion.chunk","model":"gpt-x","system_fingerprint":"fp_1",'
     b'"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n']
    + [b'data: {"id":"c","object":"chat.completion.chunk","model":"gpt-x","choices":[{"index":0,'
       b'"delta":{"content":"tok %d "}}]}\n\n' % i for i in range(40)]
    + [b'data: {"id":"c","object":"chat.completion.chunk","model":"gpt-x","choices":[],'
       b'"usage":{"prompt_tokens":11,"completion_tokens":40,"prompt_tokens_details":{"cached_tokens":3}}}\n\n',
       b"data: [DONE]\n\n"])
RESPONSES = b"".join(
    [b'event: response.created\ndata: {"type":"response.created","response":{"model":"gpt-r",'
     b'"status":"in_progress"}}\n\n']
    + [b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"w%d"}\n\n' % i
       for i in range(40)]
    + [b'event: response.completed\ndata: {"type":"response.completed","response":{"model":"gpt-r",'
       b'"usage":{"input_tokens":5,"output_tokens":40,"input_tokens_details":{"cached_tokens":1}}}}\n\n'])
MESSAGES = b"".join(
    [b'event: message_start\ndata: {"type":"message_start","message":{"model":"claude-x",'
     b'"usage":{"input_tokens":7,"output_tokens":1}}}\n\n']
    + [b'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"text":"t%d"}}\n\n' % i
       for i in range(40)]
    + [b'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":40}}\n\n',
       b'event: message_stop\ndata: {"type":"message_stop"}\n\n'])
MID_ERROR = CHAT.split(b'data: {"id":"c","object":"chat.completion.chunk","model":"gpt-x","choices":[],')[0] + (
    b'data: {"error":{"code":"overloaded","message":"try later"}}\n\n')
CUT = CHAT[: CHAT.index(b'"tok 20 ')]  # never ends
# The same streams with CRLF line ends (some gateways send them), and the generateContent API's
# stream, whose model and usage are modelVersion and usageMetadata.
CHAT_CRLF = CHAT.replace(b"\n", b"\r\n")
MESSAGES_CRLF = MESSAGES.replace(b"\n", b"\r\n")
GENERATE = b"".join(
    [b'data: {"candidates":[{"content":{"parts":[{"text":"p%d "}],"role":"model"}}],'
     b'"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":%d},"modelVersion":"gem-x"}\r\n\r\n' % (i, i)
     for i in range(30)]
    + [b'data: {"candidates":[{"content":{"parts":[{"text":"."}],"role":"model"},"finishReason":"STOP"}],'
       b'"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":31,"cachedContentTokenCount":2},'
       b'"modelVersion":"gem-x"}\r\n\r\n'])
# A key that starts like "model" comes before the model, in the same event and in an earlier one.
MODEL_LIKE = (b'data: {"model_route":"r1","choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
              b'data: {"id":"c","model_x":1,"model":"gpt-y","choices":[{"index":0,"delta":{"content":"b"}}]}\n\n'
              + CHAT[CHAT.index(b'data: {"id":"c","object":"chat.completion.chunk","model":"gpt-x","choices":[],'):])


def facts(o: ResponseObserver) -> tuple:
    return (o.model, o.system_fingerprint, o.error, o.saw_data, o.terminal, o.usage.as_fields())


def read(stream: bytes, cuts: list[int]) -> tuple:
    o = ResponseObserver(stream=True)
    last = 0
    for at in [*cuts, len(stream)]:
        o.feed(stream[last:at])
        last = at
    o.finish()
    return facts(o)


STREAMS = {"chat": CHAT, "responses": RESPONSES, "messages": MESSAGES, "mid-error": MID_ERROR, "cut": CUT,
           "chat-crlf": CHAT_CRLF, "messages-crlf": MESSAGES_CRLF, "generate": GENERATE, "model-like": MODEL_LIKE}
# What each stream says, read off it by hand: (model, fingerprint, error, terminal, input, output, cached)
EXPECTED = {
    "chat": ("gpt-x", "fp_1", None, True, 11, 40, 3),
    "responses": ("gpt-r", None, None, True, 5, 40, 1),
    "messages": ("claude-x", None, None, True, 7, 40, None),
    "mid-error": ("gpt-x", "fp_1", "overloaded: try later", False, None, None, None),
    "cut": ("gpt-x", "fp_1", None, False, None, None, None),
    "chat-crlf": ("gpt-x", "fp_1", None, True, 11, 40, 3),
    "messages-crlf": ("claude-x", None, None, True, 7, 40, None),
    "generate": ("gem-x", None, None, True, 4, 31, 2),
    "model-like": ("gpt-x", None, None, True, 11, 40, 3),
}


@pytest.mark.parametrize("name", list(STREAMS))
def test_the_facts_do_not_depend_on_the_chunking(name):
    stream = STREAMS[name]
    whole = read(stream, [])
    model, fingerprint, error, terminal, inp, out, cached = EXPECTED[name]
    usage = whole[-1]
    assert whole[:5] == (model, fingerprint, error, True, terminal)
    assert (usage["input_tokens"], usage["output_tokens"], usage["cached_tokens"]) == (inp, out, cached)
    rng = random.Random(7)
    blank = b"\r\n\r\n" if b"\r\n\r\n" in stream else b"\n\n"
    events = [i + len(blank) for i in range(len(stream)) if stream.startswith(blank, i)]
    for _ in range(60):
        # event boundaries (what a provider usually sends: the shortcut's case) and random cuts
        cuts = sorted(set(rng.sample(events, rng.randint(0, len(events))) +
                          [rng.randrange(1, len(stream)) for _ in range(rng.randint(0, 4))]))
        assert read(stream, cuts) == whole
    assert read(stream, events) == whole  # one event per chunk
    assert read(stream, list(range(1, len(stream)))) == whole  # one byte per chunk


def test_every_terminal_marker_after_plain_chunks_ends_the_stream():
    plain = b'data: {"model":"m","choices":[{"delta":{"content":"x"}}]}\n\n'
    for marker in TERMINAL_MARKERS:
        o = ResponseObserver(stream=True)
        for _ in range(3):
            o.feed(plain)
        o.feed(b"data: {\"note\": 1, " + marker + b"}\n\n")
        assert o.terminal, marker


def test_usage_after_plain_chunks_is_read():
    o = ResponseObserver(stream=True)
    for _ in range(5):
        o.feed(b'data: {"model":"m","choices":[{"delta":{"content":"x"}}]}\n\n')
    o.feed(b'data: {"model":"m","choices":[],"usage":{"prompt_tokens":2,"completion_tokens":5}}\n\n')
    o.finish()
    assert (o.usage.input_tokens, o.usage.output_tokens) == (2, 5)

"""json's accelerated parts, as ``fast_json`` reads them, against the pure-Python ones an interpreter
without the C accelerator gets: the same values, ends and errors on one corpus of edge cases; and no
other module reaches into json's private names."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from ccswitch_tui import fast_json

PACKAGE = Path(__file__).resolve().parents[1] / "ccswitch_tui"
FAST = fast_json.ACCELERATED

TEXTS = [
    '{"a":1}', '[1,2,3]', '"plain"', "0", "-0", "-0.0", "1e400", "-1e400", "1.5e-7", "12345678901234567890123",
    "true", "false", "null", "NaN", "Infinity", "-Infinity", '{"a":{"b":[{"c":[]}]}}', "[]", "{}",
    '"\\u00e9\\ud83d\\ude00"', '"\\ud800"', '"\\udc00x"', '"é 😀 \u2028"', '"\\n\\t\\"\\\\\\/\\b\\f\\r"',
    '{"a":1,"a":2}', '{"k" : [ 1 , 2 ] }', ' {"lead":1}', '{"trail":1} ', '{"a":1}{"b":2}', '[1,2]garbage',
    # errors: no value, a broken one, a bad escape, a control character, an unterminated string
    "", " ", "}", "[1,", '{"a"}', '{"a":}', '"\\x"', '"\\u12"', '"a\nb"', '"abc', "[1 2]", "01", "-", "tru",
    '{"a":1,}', "[1,]", "\u00a0[1]", '"\x00"', "[" * 50 + "]" * 50,
]


def outcome(call):
    """What a call gives: ("ok", its result, NaN made comparable), or "failed". The two scanners fail
    differently (the C one raises StopIteration where the Python one raises "Expecting value", and
    their messages differ): every caller takes StopIteration, ValueError and RecursionError alike for
    "not JSON", and a value json cannot write (TypeError, ValueError) alike for "cannot write"."""
    try:
        value = call()
    except (StopIteration, ValueError, TypeError, RecursionError):
        return "failed"
    return ("ok", json.dumps(value, allow_nan=True), repr(value) if isinstance(value, float) else None)


needs_c = pytest.mark.skipif(FAST is None, reason="this interpreter has no json C accelerator to compare with")


@needs_c
@pytest.mark.parametrize("text", TEXTS)
def test_scan_gives_what_the_pure_scanner_gives(text):
    assert FAST is not None
    for start in {0, min(1, len(text)), len(text)}:
        assert outcome(lambda s=start: FAST.scan(text, s)) == outcome(lambda s=start: fast_json.PURE.scan(text, s))


@needs_c
@pytest.mark.parametrize("text", [t for t in TEXTS if t.startswith('"')] + ['x"', '"', "a\\"])
def test_scan_string_gives_what_the_pure_one_gives(text):
    assert FAST is not None
    start = 1 if text.startswith('"') else 0
    assert outcome(lambda: FAST.scan_string(text, start)) == outcome(lambda: fast_json.PURE.scan_string(text, start))


VALUES = [
    {"a": "é", "b": [1.5, None, True, False, 10**30, -0.0, 1e-7, 1e22]}, [math.inf, -math.inf, math.nan],
    "line\u2028sep \x00\x1f\x7f \"q\" \\ / 😀 \ud800", {1: "int key", 1.5: "float", False: "bool", None: "none"},
    {"nested": {"deep": [[[[{"x": ""}]]]]}}, [], {}, "", 0, (1, 2),
    {("tuple", "key"): 1}, {"a": object()}, {"a": {1, 2}},  # errors: a key or a value json cannot write
]


@needs_c
@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_dumps_and_quote_write_what_the_pure_encoder_writes(value):
    assert FAST is not None
    assert outcome(lambda: FAST.dumps(value)) == outcome(lambda: fast_json.PURE.dumps(value))
    if outcome(lambda: FAST.dumps(value)) != "failed":  # and what json.dumps writes with the same options
        assert FAST.dumps(value) == fast_json.PURE.dumps(value) == json.dumps(value, ensure_ascii=False,
                                                                               separators=(",", ":"))
    if isinstance(value, str):
        assert FAST.quote(value) == fast_json.PURE.quote(value) == json.dumps(value, ensure_ascii=False)


@pytest.mark.parametrize("text", TEXTS)
def test_a_json_line_reads_as_json_loads_reads_it(text):
    """The fast path of a JSON Lines reader: json.loads's answer (or its error) for every line."""
    line = text.encode("utf-8", "surrogatepass")
    try:
        expected = json.loads(line)
    except ValueError as exc:
        with pytest.raises(ValueError) as raised:
            fast_json.loads_json_line(line)
        assert str(raised.value) == str(exc)  # the same error, where json.loads says it is
        return
    assert outcome(lambda: fast_json.loads_json_line(line)) == outcome(lambda: expected)


def test_only_fast_json_reads_jsons_private_parts():
    private = re.compile(r"vars\((?:json\.)?(?:scanner|decoder|encoder)\)|c_make_encoder|c_make_scanner|"
                         r"c_scanstring|py_scanstring|encode_basestring|make_scanner|scan_once|_make_iterencode")
    readers = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                     if private.search(p.read_text(encoding="utf-8")))
    assert readers == ["fast_json.py"]

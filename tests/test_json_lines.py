"""``fast_json.loads_json_line``: the records' fast decoding gives what ``loads_json`` gives (a value or
its error) for any line, so `ccs usage` and `runs report` count the same records as before."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccswitch_tui.fast_json import loads_json_line
from ccswitch_tui.safe_read import loads_json

LINES = [b'{"a":1}', b' {"a":1}', b'{"a":1} ', b'{"a":1}\r', b'\xef\xbb\xbf{"a":1}', b'{"a":1}{"b":2}',
         b'{"a":1},{"b":2}', b'{"a":', b"", b"  ", b"1", b'"x"', b"null", b"[1,2]", b"{'a':1}", b'{"a":NaN}',
         b'{"a":"\xff"}', '{"é":"ü"}'.encode(), '{"a":"é"}'.encode("utf-16"), b"[" * 5000 + b"]" * 5000,
         b'{"a":"\\ud800"}', b'{"a":1,}', b"tru", b"true false"]


def outcome(decode, line):
    try:
        return "ok", decode(line)
    except (ValueError, RecursionError) as exc:
        return "error", type(exc)


@pytest.mark.parametrize("line", LINES)
def test_the_fast_decoding_is_loads_json(line):
    assert outcome(loads_json_line, line) == outcome(loads_json, line)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=40),
                 st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                              lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids,
                                                                                        max_size=3),
                              max_leaves=8).map(lambda v: json.dumps(v).encode())))
def test_generated_lines(line):
    assert outcome(loads_json_line, line) == outcome(loads_json, line)

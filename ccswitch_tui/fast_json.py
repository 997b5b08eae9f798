"""The standard library's JSON, without the set-up it repeats on every call, for the hot paths (the
bridge's events and bodies, the run records read back): json's C scanner called straight
(``scan``: a value from a position, no encoding detection, no blank search), its string scanner
(``scan_string``) and string writer (``quote``), and one compact encoder made once (``dumps``:
``json.dumps`` with options builds an encoder per call); and ``loads_json_line``, a JSON Lines
line read through ``scan``, for the records read back.

None of them is in typeshed's stubs, or public: they are read from json's modules here, and only
here. An interpreter without json's C accelerator gets the pure-Python versions of the same
functions (``PURE``), which give the same answers (tests/test_fast_json.py runs both on one corpus).
"""
from __future__ import annotations

import json
from collections.abc import Callable
from json import decoder, encoder, scanner
from math import inf as INFINITY
from typing import Any

from ccswitch_tui.safe_read import loads_json
from ccswitch_tui.valueclass import valueclass

Scan = Callable[[str, int], "tuple[Any, int]"]  # value, end = scan(text, start); StopIteration: no value there
ScanString = Callable[[str, int], "tuple[str, int]"]  # from just after a string's opening quote: value, end


@valueclass(frozen=True)
class JsonParts:
    scan: Scan
    scan_string: ScanString
    dumps: Callable[[object], str]  # compact (``,`` and ``:``), non-ASCII kept, NaN allowed, no circularity check
    quote: Callable[[str], str]  # a string as ``dumps`` writes it, quotes included


def _float_text(value: float) -> str:
    """A float as json writes it, NaN and the infinities allowed."""
    if value != value:
        return "NaN"
    if value in (INFINITY, -INFINITY):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _pure() -> JsonParts:
    # json.JSONEncoder.encode itself takes the C encoder when there is one: the Python one is built here
    quote = vars(encoder)["py_encode_basestring"]
    make = vars(encoder)["_make_iterencode"](None, json.JSONEncoder().default, quote, None, _float_text, ":", ",",
                                            False, False, True)
    return JsonParts(vars(scanner)["py_make_scanner"](json.JSONDecoder()), vars(decoder)["py_scanstring"],
                     lambda value: "".join(make(value, 0)), quote)


def _accelerated() -> JsonParts | None:
    make_scanner, scanstring = vars(scanner)["c_make_scanner"], vars(decoder)["c_scanstring"]
    make_encoder, quote = vars(encoder)["c_make_encoder"], vars(encoder)["c_encode_basestring"]
    if make_scanner is None or scanstring is None or make_encoder is None or quote is None:
        return None
    # (markers, default, encoder, indent, key_separator, item_separator, sort_keys, skipkeys, allow_nan)
    make = make_encoder(None, None, quote, None, ":", ",", False, False, True)
    return JsonParts(make_scanner(json.JSONDecoder()), scanstring, lambda value: "".join(make(value, 0)), quote)


PURE = _pure()
ACCELERATED = _accelerated()
_used = ACCELERATED or PURE
scan: Scan = _used.scan
scan_string: ScanString = _used.scan_string
dumps: Callable[[object], str] = _used.dumps
quote: Callable[[str], str] = _used.quote


def loads_json_line(line: bytes) -> Any:
    """``loads_json(line)`` for one line of a JSON Lines file, without json.loads's per-call set-up
    (encoding detection, the leading and trailing blank search) for the usual compact UTF-8 line; any
    other line (blanks around it, another encoding, an error) goes through ``loads_json`` itself."""
    try:
        text = line.decode("utf-8")
        value, end = scan(text, 0)
    except (UnicodeDecodeError, StopIteration, ValueError, RecursionError):
        return loads_json(line)  # the whole rule, and its error
    return value if end == len(text) else loads_json(line)

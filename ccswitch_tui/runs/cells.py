"""Values from elsewhere made safe for the reports: numbers bounded, spreadsheet and Markdown cells
neutralised.

A provider reports the token counts a record keeps, a profile's ``[pricing]`` sets prices, an agent
names its tasks and a provider its models: none of them is trusted to be sensible. A token count
of 401 digits is not a number a report can divide, a price of 1e300 makes an infinite cost (not
JSON), a model named ``=HYPERLINK(…)`` is a formula to a spreadsheet, and ``<img onerror=…>`` is
markup in a Markdown viewer. Numbers beyond what any real run produces are left out and said so;
texts are written so that they stay texts.
"""

from __future__ import annotations

import math
import re
from typing import Any

# Far above any real request (a context of millions of tokens) and any real run's total.
MAX_REQUEST_TOKENS = 10**12
MAX_TOTAL = 10**18
MAX_COST = 1e15


def token_count(value: Any) -> int | None:
    """A record's token count when it is a plausible one (a whole number from 0 to 10^12), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_REQUEST_TOKENS:
        return value
    return None


def implausible_count(value: Any) -> bool:
    """A whole number a record holds as a token count that no request can have used."""
    return isinstance(value, int) and not isinstance(value, bool) and (value < 0 or value > MAX_REQUEST_TOKENS)


def total(value: Any) -> int | None:
    """A summary's total (tokens, requests) when plausible (0 to 10^18), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOTAL:
        return value
    return None


def finite(value: Any, limit: float = MAX_COST) -> float | None:
    """A float that JSON can carry and a person can read: None for inf, nan and anything past ``limit``."""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) and abs(number) <= limit else None


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def csv_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as text: a text that would start a formula gets a leading
    apostrophe (numbers are left as they are)."""
    if isinstance(value, str) and value.lstrip(" ").startswith(_FORMULA_START):
        return "'" + value
    return value


_MD_SPECIAL = re.compile(r"[|\\<&\r\n]")
_MD_REPLACE = {"|": "\\|", "\\": "\\\\", "<": "&lt;", "&": "&amp;", "\r": " ", "\n": " "}


def md_cell(text: str) -> str:
    """A Markdown table cell that stays one cell of text: pipes and backslashes escaped, ``<`` and ``&``
    as entities (no tag, no entity of its own), line breaks as spaces."""
    return _MD_SPECIAL.sub(lambda m: _MD_REPLACE[m.group()], text)

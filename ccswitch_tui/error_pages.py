"""An error page a proxy or web server answered instead of an API's JSON error (nginx's 502, a
gateway's 504, a login page), read for the few words that say what happened.

``ccs check`` shows them as a probe's detail; the bridge names them in the error Codex shows and
in the request's record. Both read a page the same way: its first heading, else its title, else
its visible words, never its markup, scripts or styles.
"""

from __future__ import annotations

import html
import re

_BLOCKS = re.compile(r"(?is)<(script|style|head|noscript|template)\b.*?</\1\s*>")
_TAG = re.compile(r"(?s)<[^>]*>")
_TITLE = re.compile(r"(?is)<title\b[^>]*>(.*?)</title\s*>")
_HEADING = re.compile(r"(?is)<h1\b[^>]*>(.*?)</h1\s*>")
_MARKUP = re.compile(r"(?is)<!doctype\s+html|<(?:html|head|body|title|h1)[\s>]|</[a-z][a-z0-9]*\s*>")
MAX_SUMMARY = 300


def is_page(text: str) -> bool:
    """Whether ``text`` is an HTML page (or a piece of one), not an API's error text."""
    return "<" in text and ">" in text and _MARKUP.search(text[:65536]) is not None


def _words(fragment: str) -> str:
    return " ".join(html.unescape(_TAG.sub(" ", fragment)).split())


def page_summary(text: str) -> str | None:
    """The words that say what an HTML error page is about (its first heading, else its title, else
    its visible text), at most ``MAX_SUMMARY`` characters; None when ``text`` is not HTML."""
    if not is_page(text):
        return None
    text = text[:65536]
    for pattern in (_HEADING, _TITLE):
        found = pattern.search(text)
        if found is not None and _words(found.group(1)):
            return _words(found.group(1))[:MAX_SUMMARY]
    return _words(_BLOCKS.sub(" ", text))[:MAX_SUMMARY]


def page_error(text: str, status: int | None) -> str | None:
    """An HTML error page as one line that names the status and what the page says: ``HTTP 502
    (an HTML page): 502 Bad Gateway``; None when ``text`` is not HTML."""
    summary = page_summary(text)
    if summary is None:
        return None
    head = f"HTTP {status} (an HTML page)" if status else "an HTML page"
    return f"{head}: {summary}" if summary else head

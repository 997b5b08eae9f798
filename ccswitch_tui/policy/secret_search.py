"""The forms a secret can travel in, and a search for any of them in bytes.

A key written out by mistake rarely stays as typed: it is URL-encoded in a query, escaped in JSON,
base64-encoded in a Basic header, hex-dumped, or upper-cased by a proxy. ``SecretSearch`` looks for
every secret given in each of those forms, in bytes read in pieces (a form cut between two pieces is
still found), and says which secret it found and in which form.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from urllib.parse import quote, quote_plus

MIN_FORM = 8  # bytes: a shorter form (of a short secret) would be found in ordinary text


def _base64_inner(raw: bytes) -> Iterator[tuple[str, bytes]]:
    """The part of the base64 of ``raw`` that does not depend on what comes before or after it, for each
    of the three places it can start at within a 3-byte group; standard and URL-safe alphabets."""
    for lead in range(3):
        enc = base64.b64encode(b"\0" * lead + raw)
        cut_front = 4 if lead else 0
        cut_back = 4 if (lead + len(raw)) % 3 else 0
        inner = enc[cut_front:len(enc) - cut_back]
        if len(inner) >= MIN_FORM:
            yield f"base64 (offset {lead})", inner
            yield f"base64url (offset {lead})", inner.replace(b"+", b"-").replace(b"/", b"_")


def forms(secret: str) -> tuple[dict[bytes, str], dict[bytes, str]]:
    """(forms matched without regard to case, forms matched exactly): each form's bytes → its name."""
    raw = secret.encode("utf-8")
    folded: dict[bytes, str] = {}
    for name, text in (("as is", secret), ("URL-encoded", quote(secret, safe="")),
                       ("URL-encoded (+)", quote_plus(secret, safe="")),
                       ("JSON-escaped", json.dumps(secret)[1:-1]),
                       ("JSON-escaped (UTF-8)", json.dumps(secret, ensure_ascii=False)[1:-1]),
                       ("hex", raw.hex())):
        form = text.encode("utf-8").lower()
        if len(form) >= MIN_FORM:
            folded.setdefault(form, name)
    exact: dict[bytes, str] = {}
    for name, form in _base64_inner(raw):
        exact.setdefault(form, name)
    return folded, exact


@dataclass(frozen=True)
class Found:
    what: str  # the secret's description, as given
    form: str  # "as is", "base64 (offset 1)", …


class SecretSearch:
    """Feed bytes in order with ``feed``; ``found`` is the first secret seen, or None."""

    def __init__(self, secrets: Iterable[tuple[str, str]]):
        """``secrets``: (description, value) pairs; empty values are left out."""
        self._folded: dict[bytes, tuple[str, str]] = {}
        self._exact: dict[bytes, tuple[str, str]] = {}
        for what, value in secrets:
            if not value:
                continue
            folded, exact = forms(value)
            for form, name in folded.items():
                self._folded.setdefault(form, (what, name))
            for form, name in exact.items():
                self._exact.setdefault(form, (what, name))
        longest = max((len(f) for f in (*self._folded, *self._exact)), default=0)
        self._keep = max(longest - 1, 0)
        self._tail = b""
        self.found: Found | None = None

    def feed(self, data: bytes) -> Found | None:
        if self.found is not None or not (self._folded or self._exact):
            return self.found
        window = self._tail + data
        lowered = window.lower()
        for form, (what, name) in self._folded.items():
            if form in lowered:
                self.found = Found(what, name)
                return self.found
        for form, (what, name) in self._exact.items():
            if form in window:
                self.found = Found(what, name)
                return self.found
        self._tail = window[-self._keep:] if self._keep else b""
        return None

"""A search for any form of a secret in bytes read in pieces: what ``ccs runs export`` looks for
before anything leaves the machine.

The forms are the one list the bridge's filter, the records' masking and ccs's own output filter
match (``policy.secret_forms``): as is, URL-encoded, JSON-escaped, in another case, base64 at any
offset. ``SecretSearch`` adds only what a search of pieces needs: a form cut between two pieces is
still found, and it says which secret it found and in which form.
"""

from __future__ import annotations

from collections.abc import Iterable

from ccswitch_tui.policy.secret_forms import SecretForms
from ccswitch_tui.valueclass import valueclass

MIN_SECRET = 8  # characters: a shorter secret would be found in ordinary text


@valueclass(frozen=True)
class Found:
    what: str  # the secret's description, as given
    form: str  # "as is", "base64", …


class SecretSearch:
    """Feed bytes in order with ``feed``; ``found`` is the first secret seen, or None."""

    def __init__(self, secrets: Iterable[tuple[str, str]]):
        """``secrets``: (description, value) pairs; empty and short values are left out."""
        self._what: dict[str, str] = {}
        for what, value in secrets:
            if len(value) >= MIN_SECRET:
                self._what.setdefault(value, what)
        self._forms = SecretForms([(v, None) for v in self._what], lambda s: "")
        self._keep = max(self._forms.longest - 1, 0) if self._forms else 0
        self._tail = b""
        self.found: Found | None = None

    def feed(self, data: bytes) -> Found | None:
        if self.found is not None or not self._forms:
            return self.found
        window = self._tail + data
        hit = self._forms.find(window)
        if hit is not None:
            self.found = Found(self._what[hit[0]], hit[1])
            return self.found
        self._tail = window[-self._keep:] if self._keep else b""
        return None

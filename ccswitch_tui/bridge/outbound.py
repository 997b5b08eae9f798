"""What the bridge hands back to the child never holds a secret it knows, in any form.

The child holds the launch token, not the key; a provider that echoes the key (a redirect built
from the query, an error quoting the credential, a reflected header) would hand it over. Every
byte the bridge returns passes through ``SecretFilter``: the key becomes the launch token (the
exact inverse of the swap on the way in, so an echoed URL still works through the bridge), every
other secret it knows (``[secrets]`` values, proxy credentials) becomes its mask. Each is matched in
every form the policy lists (``policy.secret_forms``: exact, URL-encoded, JSON-escaped, case-folded,
base64); a form that does not decode back to the key itself (another case, base64) becomes the
key's mask, not the token.

Streams are filtered as they pass, never buffered whole: ``stream().feed`` replaces every complete
form and holds back only the end of the data that could be the start of one (a run of the
characters forms are made of, at most the longest form; nothing after an SSE event's blank line).
A chunk with none of the anchors every form holds costs a few substring searches.

    f = SecretFilter([(key, token), (other, "oth…cret")])
    s = f.stream()
    out = s.feed(chunk1) + s.feed(chunk2) + s.flush()
    f.text(header_value)
"""

from __future__ import annotations

from collections.abc import Iterable

from ccswitch_tui.policy import mask
from ccswitch_tui.policy.secret_forms import SecretForms

# A secret shorter than this cannot be told apart from ordinary text: replacing every "abc" in an
# answer would corrupt it. The key is always filtered; see ``SecretFilter``.
MIN_SECRET = 8


class SecretFilter(SecretForms):
    """Replaces every form of each ``(secret, replacement)`` pair, longest secret first; a form that
    does not decode back to its secret becomes the secret's mask."""

    def __init__(self, pairs: Iterable[tuple[str, str | None]]):
        super().__init__(pairs, mask)

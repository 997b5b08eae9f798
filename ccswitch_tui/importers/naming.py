"""Names for what an import creates: profile-name-like slugs, the memorable label of a host, and a
numbered suffix that keeps a name within its length when it collides."""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import urlsplit


def host_of(url: str | None) -> str:
    """The URL's host name in lower case; empty when there is none."""
    if not url:
        return ""
    try:
        return (urlsplit(url.strip()).hostname or "").lower()
    except ValueError:
        return ""


def host_label(host: str) -> str:
    """The memorable part of a host name: ``api.deepseek.com`` → ``deepseek``."""
    host = host.lower().strip(".")
    labels = host.split(".")
    if len(labels) < 2 or all(p.isdigit() for p in labels):
        return host
    rest = labels[:-1]
    if len(rest) >= 2 and rest[-1] in ("com", "co", "net", "org", "gov", "edu", "ac"):
        rest = rest[:-1]
    return rest[-1]


def slugify(text: str, max_len: int = 64) -> str:
    """A profile-name-like slug: ASCII lower case, a-z 0-9 . _ -; empty when nothing is left."""
    t = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    t = re.sub(r"[^a-z0-9._-]+", "-", t)
    t = re.sub(r"-{2,}", "-", t).strip("-._")
    return t[:max_len].rstrip("-._")


def with_suffix(base: str, n: int, max_len: int) -> str:
    """``base-n``, with ``base`` cut so the whole stays within ``max_len``."""
    suffix = f"-{n}"
    return base[: max_len - len(suffix)].rstrip("-._") + suffix

"""What a key looks like: recognising secrets by their shape and randomness, not by a list of
prefixes. One place answers "is this string key-shaped?" for key ids, profile values, imports,
exports and the output filter.

A key is a run of token characters (letters, digits, ``-_.~+/=``) of 20 or more, holding at least
one random-looking stretch: 16+ characters of mixed letters and digits that change class often
(``k3J9x…``), or 20+ hex characters. Words, model ids (``claude-sonnet-4-5-20250929``), launch ids,
UUIDs, paths, fingerprints (``fp:…``), digests (``sha256:…``) and masks (``sk-…9f3a``) are not, and
neither are the ids of the forms ``ids`` knows (sessions, requests, responses, tool calls, commits).
Credentials inside URLs (``https://user:pass@host``, ``?api_key=…``) are found by position.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from ccswitch_tui.policy.ids import commit_after, without_ids

MIN_KEY_LEN = 20


class LazyPattern:
    """A regex compiled on first use: the launch path imports these modules but rarely needs most
    of their patterns, and compiling them all would cost a few milliseconds on every launch."""

    def __init__(self, pattern: str, flags: int = 0):
        self._args = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        return getattr(self._compiled, name)


TOKEN_RE = re.compile(r"[A-Za-z0-9+/_.~-]+=*")
_SPLIT_RE = re.compile(r"[-_.~]+")
_HEX_RE = LazyPattern(r"[0-9a-fA-F]+")
_LAUNCH_STAMP_RE = LazyPattern(r"\d{8}T\d{6}Z")
_LAUNCH_ID_RE = LazyPattern(r"\d{8}T\d{6}Z-[0-9a-f]{8}")  # ccs's own launch ids, as in runs/<id>.requests.jsonl
_UUID_RE = LazyPattern(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# labels in front of a hex string that say what it is: a digest or a fingerprint, not a key
DIGEST_LABELS = ("sha256:", "sha512:", "sha1:", "md5:", "fp:", "sha256-", "sha512-")

# names of query parameters and header-ish fields that carry credentials
SECRET_PARAM_RE = LazyPattern(
    r"(?i)(^|[_-])(key|api[_-]?key|apikey|token|access[_-]?token|auth|authorization|secret|password|passwd|"
    r"pass|pwd|sig|signature|credential|credentials|session|bearer|code)$"
)


def _classes(ch: str) -> int:
    if ch.isdigit():
        return 0
    if ch.islower():
        return 1
    if ch.isupper():
        return 2
    return 3


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character of ``text``'s own character frequencies."""
    n = len(text)
    counts: dict[str, int] = {}
    for ch in text:
        counts[ch] = counts.get(ch, 0) + 1
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _random_stretch(segment: str) -> bool:
    """A stretch (between separators) that looks generated rather than written.

    Counted over its letters and digits: class changes that words do not make — letter↔digit and
    lower→upper (a capital after a lower-case letter is a new word in CamelCase, so upper→lower is
    not counted) — in one of every five characters or more, with enough distinct characters.
    """
    core = "".join(ch for ch in segment if ch.isascii() and ch.isalnum())
    n = len(core)
    if n < 16 or _LAUNCH_STAMP_RE.fullmatch(core):
        return False
    has_digit = any(ch.isdigit() for ch in core)
    has_alpha = any(ch.isalpha() for ch in core)
    changes = 0
    for a, b in zip(core, core[1:], strict=False):
        ca, cb = _classes(a), _classes(b)
        if (ca == 0) != (cb == 0) or (ca == 1 and cb == 2):
            changes += 1
    rate = changes / (n - 1)
    if _HEX_RE.fullmatch(core) and n >= 20 and has_digit and has_alpha:
        return _entropy(core) >= 2.8 and (rate >= 0.2 or _entropy(core) >= 3.5)
    clusters = _max_consonant_run(core)
    if has_digit and has_alpha:
        random_enough = rate >= 0.2 or (rate >= 0.08 and clusters >= 5)
    elif has_alpha and n >= 20:  # letters only: constant case flips, or runs no word has
        mixed = core != core.lower() and core != core.upper()
        random_enough = (mixed and rate >= 0.3) or clusters >= 5
    else:
        return False
    return random_enough and _entropy(core) >= 3.0


def _max_consonant_run(text: str) -> int:
    """The longest run of consonants (letters other than a e i o u y): words rarely pass four."""
    best = run = 0
    for ch in text.lower():
        run = run + 1 if ch.isalpha() and ch not in "aeiouy" else 0
        best = max(best, run)
    return best


def looks_like_key(text: str) -> bool:
    """True for a string (one token, or a longer text holding one) that has the shape of a key."""
    return any(True for _ in key_spans(text))


# Issuers that mark their keys: a marked token with a body of 16+ is a key even when its body is a
# placeholder (``sk-ant-api03-xxxx…``). The shape rules above find unmarked keys; this list only adds.
_MARKED = LazyPattern(r"(?:(?:sk|rk|pk|ghp|gho|ghs|ghu|github_pat|glpat|xai|hf)[-_]|AIza|AKIA|ASIA)"
                     r"[A-Za-z0-9_-]*?[A-Za-z0-9]{16,}[A-Za-z0-9_-]*")


def _is_path_like(token: str) -> bool:
    """A path (or URL path): slashes lead it or come too often for a base64 key."""
    return token.startswith(("/", "~/", "./", "../")) or token.count("/") * 12 > len(token)


def _token_is_key(token: str) -> bool:
    if len(token) < MIN_KEY_LEN or _UUID_RE.fullmatch(token):
        return False
    if _MARKED.fullmatch(token):  # before ids: no id form can hide a marked key
        return True
    if "T" in token and _LAUNCH_ID_RE.search(token):  # ccs's own launch ids (runs/<id>.json): judge the rest
        return _token_is_key(_LAUNCH_ID_RE.sub("run", token))
    rest = without_ids(token)
    if rest != token:  # a session, request or response id, alone or in a file name: judge the rest
        return _token_is_key(rest)
    if _is_path_like(token):
        parts = [p for p in token.split("/") if p]  # a path: judge each component on its own
        return any(_token_is_key(p) for p in parts)
    segments = [s for s in _SPLIT_RE.split(token) if s]
    random_len = sum(len(s) for s in segments if _random_stretch(s))
    if random_len >= 16:
        return True
    # a base64url key cut into short pieces by its own '-' and '_': judge the whole body
    body = token.replace("-", "").replace("_", "")
    longest = max((len(s) for s in segments), default=0)
    return len(token) >= 32 and longest >= 12 and _random_stretch(body) and _entropy(body) >= 4.0


def key_spans(text: str) -> Iterator[tuple[int, int]]:
    """The (start, end) of every key-shaped token in ``text``, digests and fingerprints left out."""
    for m in TOKEN_RE.finditer(text):
        start, end = m.span()
        token = m.group()
        lead = text[max(0, start - 10):start].lower()
        if lead.endswith(DIGEST_LABELS):
            continue
        if start > 0 and text[start - 1] == "\\":  # a JSON/escape sequence: keep it whole
            skip = 5 if re.match(r"u[0-9a-fA-F]{4}", token) else 1
            start, token = start + skip, token[skip:]
        if commit_after(lead, token):
            continue
        if _is_path_like(token):  # mask only the components that are keys, keep the path readable
            pos, before = start, ""
            for part in token.split("/"):
                if part and not commit_after(f"{before}/", part) and _token_is_key(part):
                    yield pos, pos + len(part)
                pos, before = pos + len(part) + 1, part
        elif _token_is_key(token):
            yield start, end


# --- URLs ------------------------------------------------------------------------------------------

def url_secrets(url: str) -> list[str]:
    """What in a URL is a credential: ``userinfo`` (``user:pass@``), query parameters with a secret
    name or a key-shaped value, key-shaped path segments. Empty for a clean URL."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return []
    found: list[str] = []
    if "@" in parts.netloc:
        found.append("user name or password before the host")
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if SECRET_PARAM_RE.search(name) or looks_like_key(value):
            found.append(f"query parameter {name!r}")
    if any(_token_is_key(seg) for seg in parts.path.split("/") if seg):
        found.append("a key-shaped path segment")
    if parts.fragment and looks_like_key(parts.fragment):
        found.append("a key-shaped fragment")
    return found


# a credential header written out (``x-api-key: …``, ``Authorization: Bearer …``), as in *_CUSTOM_HEADERS.
# "token" is a header's name only alone or as its last word (``x-auth-token``, ``access_token``): a word
# that merely ends in it (the preset ``taotoken`` in ``taotoken: 4``) is not, and a small count is no value.
CREDENTIAL_HEADER_RE = LazyPattern(
    r"(?i)\b(?P<name>(?:proxy-)?authorization|x-api-key|api-key|(?:[a-z0-9]+[-_]){0,6}token|cookie)"
    r"(?P<sep>\s*:\s*)(?P<scheme>(?:bearer|basic|token)\s+)?(?P<value>(?![0-9]{1,9}\b)[^\s,;\"'\\]+)")


def holds_credential(value: str) -> bool:
    """A key-shaped token, a URL with a credential, or a credential header anywhere in ``value``."""
    if looks_like_key(value) or CREDENTIAL_HEADER_RE.search(value):
        return True
    return any(url_secrets(m.group()) for m in re.finditer(r"[A-Za-z][A-Za-z0-9+.-]{0,31}://\S+", value))


URL_CREDENTIALS_HINT = ("keys belong in the keyring (provider.key + `ccs key set ID`; for a second "
                        "credential a [secrets] entry), not in a URL")

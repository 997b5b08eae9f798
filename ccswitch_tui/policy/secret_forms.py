"""A secret in every form it can travel in: the one list of forms that the bridge's filter (what the
child gets back), the records' masking (what reaches disk) and ccs's own output filter (what ccs
prints) all match, so that none of them misses what another catches.

A provider does not only echo a key as it is. A key put in a URL comes back percent-encoded (a
redirect's ``Location``, an error quoting the request); a PHP gateway's JSON writes ``/`` as ``\\/``;
a Basic credential is base64; a log line may upper-case it. ``FORMS`` lists what is matched:

- exact;
- URL-encoded: ``%XX`` for each character outside ``A-Z a-z 0-9 - . _ ~``, either hex case, any
  mixture of encoded and plain characters (``quote``, ``encodeURIComponent``, a path escape that
  encodes ``/`` alone), ``+`` or ``%20`` for a space and a space for a ``+`` (a ``+`` that was read
  as one);
- JSON-escaped: ``\\/``, ``\\"``, ``\\\\``, ``\\uXXXX`` for any character (either hex case), mixed with
  plain characters;
- case-folded: the secret (in any of the forms above) in upper, lower or mixed case (ASCII);
- base64: standard or URL-safe alphabet, padded or not, alone or inside a longer base64 text at any
  offset (``Basic base64(user:key)``): the part of the text that only the secret determines.

What the matched text becomes: a form that decodes back to the secret itself (exact, URL-, JSON-
escaped) becomes the pair's replacement (the bridge gives the child its token for the key, so an
echoed URL still works through the bridge); every other form (another case, base64), and every form
of a secret without a replacement, becomes the secret's mask (``sk-…9f3a``).

Cheap when nothing matches, which is nearly always: a text is first looked at for anchors every form
of a secret must contain (its longest run of letters and digits in any case, a ``\\u00`` escape of
one of those characters, a piece of each base64 core), a few substring searches in C; only a text
holding one is searched with the full pattern.

    forms = SecretForms([(key, token), (other, None)], mask)
    forms.text("…%2F…")            # a str with every form replaced
    forms.data(b"…")               # the same for bytes
    s = forms.stream(); s.feed(chunk) + s.feed(chunk2) + s.flush()   # across chunk boundaries

A secret split over two SSE events, or two JSON strings, is not matched: no filter of bytes sees it
whole (the child joins the halves itself).
"""

from __future__ import annotations

import _thread  # a lock without threading's module (the launch path starts no thread)
import binascii
import re
from collections.abc import Callable, Iterable
from functools import cached_property
from typing import Any
from urllib.parse import unquote

FORMS: tuple[tuple[str, str], ...] = (
    ("exact", "as it is"),
    ("URL-encoded", "%XX for any character outside A-Z a-z 0-9 - . _ ~ (either hex case, any mixture with plain "
                    "characters); + or %20 for a space, a space for a +"),
    ("JSON-escaped", "\\/, \\\", \\\\ and \\uXXXX for any character (either hex case), any mixture"),
    ("case-folded", "upper, lower or mixed case, in any of the forms above"),
    ("base64", "standard or URL-safe, padded or not, alone or at any offset inside a longer base64 text"),
)

_ASCII_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"  # (string's module is not loaded)
_UNRESERVED = frozenset(_ASCII_ALNUM + "-._~")
_ALNUM = frozenset(_ASCII_ALNUM)
_JSON_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_MIN_ANCHOR = 4  # a run of letters and digits shorter than this is no anchor: such a secret is always searched
_MIN_B64_ANCHOR = 6
_SHORT = 2048  # characters: a text this long is looked at for anchors in one search
_REMEMBERED, _REMEMBER = 256, 2048  # ``text`` remembers texts this long at most, this many
_B64_STD_ONLY = "+/"
_B64_URL = str.maketrans("+/", "-_")


# JSON nested in JSON (an error quoting a request body) doubles each backslash: a run of them is one escape
_BACKSLASHES = r"\\{1,8}"
# a URL inside a URL's query (a redirect's ``next=``) encodes each ``%`` again as ``%25``
_PERCENT = "%(?:25){0,3}"


def _unicode_escape(c: str) -> str:
    code = ord(c)
    if code > 0xFFFF:
        code -= 0x10000
        return f"{_BACKSLASHES}u{0xD800 + (code >> 10):04X}{_BACKSLASHES}u{0xDC00 + (code & 0x3FF):04X}"
    return f"{_BACKSLASHES}u{code:04X}"


def _char(c: str) -> str:
    """Every way one character of a secret may be written (the pattern is case-insensitive)."""
    alts = [re.escape(c)]
    if c not in _UNRESERVED:
        alts.append("".join(f"{_PERCENT}{b:02X}" for b in c.encode("utf-8")))
    if c == " ":
        alts.append(r"\+")
    elif c == "+":
        alts.append(" ")
    if c == "/":
        alts.append(_BACKSLASHES + "/")
    if c in _JSON_SHORT:
        alts.append(_BACKSLASHES + re.escape(_JSON_SHORT[c][1]))
    alts.append(_unicode_escape(c))
    return "(?:" + "|".join(alts) + ")"


def _widest(c: str) -> int:
    """The most characters one character of a secret takes in any of its forms (8 backslashes and
    ``u`` and 4 digits; 9 per byte for a percent-encoding of an encoding of an encoding)."""
    return max(26 if ord(c) > 0xFFFF else 13, 9 * len(c.encode("utf-8")))


def _b64_cores(secret: str) -> list[str]:
    """The base64 text that only ``secret`` determines, at each of the three offsets it can start at
    inside a longer base64 text, in the standard and the URL-safe alphabet."""
    raw = secret.encode("utf-8")
    n = len(raw)
    cores = []
    for offset in (0, 1, 2):
        encoded = binascii.b2a_base64(b"\0" * offset + raw, newline=False).decode("ascii")  # base64.b64encode
        core = encoded[-(-8 * offset // 6):(8 * (offset + n)) // 6]
        if len(core) >= _MIN_B64_ANCHOR:
            cores += [core, core.translate(_B64_URL)]
    return list(dict.fromkeys(cores))


def _b64_anchors(cores: list[str]) -> list[str]:
    """A piece of each core that both alphabets share (no + / - _), as long as there is."""
    anchors: list[str] = []
    for core in cores:
        if any(c in core for c in "-_"):
            continue  # the URL-safe twin of a core already looked at
        pieces = re.split(r"[+/]", core)
        best = max(pieces, key=len)
        anchors += [best] if len(best) >= _MIN_B64_ANCHOR else [core, core.translate(_B64_URL)]
    return list(dict.fromkeys(anchors))


def _longest_run(secret: str) -> str:
    runs = re.findall(r"[A-Za-z0-9]+", secret)
    return max(runs, key=len) if runs else ""


_JSON_ESCAPE = re.compile(r"\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})|\\u([0-9a-fA-F]{4})|"
                          r"\\([\"\\/bfnrt])")
_SHORT_BACK = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _json_unescaped(m: re.Match[str]) -> str:
    if m.group(1):
        high, low = int(m.group(1), 16), int(m.group(2), 16)
        return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
    if m.group(3):
        return chr(int(m.group(3), 16))
    return _SHORT_BACK[m.group(4)]


def decoded(text: str) -> str:
    """``text`` with its JSON escapes and then its percent-encoding undone (``+`` stays a ``+``)."""
    if "\\" in text:
        text = _JSON_ESCAPE.sub(_json_unescaped, text)
    return unquote(text, errors="replace") if "%" in text else text


class SecretForms:
    """Every form of each ``(secret, replacement)`` pair: a form that decodes back to the secret
    becomes ``replacement`` (``mask(secret)`` when it is None), any other form ``mask(secret)``."""

    def __init__(self, pairs: Iterable[tuple[str, str | None]], mask: Callable[[str], str]):
        unique: dict[str, str | None] = {}
        for secret, replacement in pairs:
            if secret and secret not in unique:
                unique[secret] = replacement
        self._secrets = sorted(unique, key=len, reverse=True)
        self._masks = [mask(s) for s in self._secrets]
        self._seen: dict[str, str] = {}  # short texts already looked at, and what they became
        self._faithful: list[str] = []  # what a form that decodes back to each secret becomes
        for secret, masked in zip(self._secrets, self._masks, strict=True):
            replacement = unique[secret]
            self._faithful.append(masked if replacement is None else replacement)
        self._build()

    def _build(self) -> None:
        groups: list[str] = []
        runs: list[str] = []
        escapes: set[str] = set()
        b64: list[str] = []
        always = False
        charset: set[str] = set()
        longest = 0
        for i, secret in enumerate(self._secrets):
            groups.append(f"(?P<s{i}>{''.join(map(_char, secret))})")
            cores = _b64_cores(secret)
            if cores:
                groups.append(f"(?P<b{i}>(?-i:{'|'.join(map(re.escape, cores))}))")
            run = _longest_run(secret)
            if len(run) >= _MIN_ANCHOR:
                runs.append(run.lower())
                escapes.update(f"{ord(c):02x}" for c in run)
            else:
                always = True
            b64 += _b64_anchors(cores)
            charset.update(secret + secret.swapcase() + "".join(cores))
            charset.update("%\\/0123456789abcdefABCDEFuU")  # percent and JSON escapes
            charset.update(e[1] for c, e in _JSON_SHORT.items() if c in secret)
            if "+" in secret or " " in secret:
                charset.update("+ ")
            longest = max(longest, sum(map(_widest, secret)), *(len(c) for c in cores))
        self._pattern = "|".join(groups)
        self._always = always
        self._runs = tuple(dict.fromkeys(runs))
        self._b64 = tuple(b64)
        self._escape = "\\\\u00(?:" + "|".join(sorted(escapes)) + ")" if escapes else "(?!)"
        self._runs_bytes = tuple(r.encode() for r in self._runs)
        self._b64_bytes = tuple(a.encode() for a in self._b64)
        chars = "".join(sorted(charset))
        self.charset = frozenset(chars.encode("utf-8"))
        self.charset_bytes = bytes(sorted(self.charset))
        self.longest = longest

    def __bool__(self) -> bool:
        return bool(self._secrets)

    # The patterns are compiled when first needed (the full one takes 10-20 ms a secret, and most
    # texts are cleared by the anchors alone): building the forms costs a launch nothing.

    @cached_property
    def _re_text(self) -> re.Pattern[str] | None:
        return re.compile(self._pattern, re.IGNORECASE) if self._pattern else None

    @cached_property
    def _re_bytes(self) -> re.Pattern[bytes] | None:
        return re.compile(self._pattern.encode("utf-8"), re.IGNORECASE) if self._pattern else None

    # the anchors of a short text, each searched for on its own (``find``): an alternation of them is
    # searched a character at a time, three times as long on an SSE event

    @cached_property
    def _short_text(self) -> tuple[str, ...]:
        """Every anchor, for a lower-cased text (a base64 anchor lower-cased too: it finds more,
        never less)."""
        return (*(a.lower() for a in self._b64), *self._runs)

    @cached_property
    def _short_bytes(self) -> tuple[bytes, ...]:
        return tuple(a.encode() for a in self._short_text)

    @cached_property
    def _escape_text(self) -> re.Pattern[str]:
        return re.compile(self._escape)

    @cached_property
    def _escape_bytes(self) -> re.Pattern[bytes]:
        return re.compile(self._escape.encode())

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(self._secrets)

    # --- finding ------------------------------------------------------------------------------

    def might_hold(self, value: Any) -> bool:
        """False when ``value`` (str or bytes) surely holds no form of any secret: it lacks every
        anchor. True means: search it. A short text (an SSE event of a paced stream) is looked at
        in its lower-cased copy; a long one (a read of an unpaced stream) for the base64 anchors as
        it is (one lower-cased copy less to make)."""
        if not self._secrets:
            return False
        if self._always:
            return True
        text = isinstance(value, str)
        runs, b64, escape, slash = ((self._runs, self._b64, self._escape_text, "\\") if text else
                                    (self._runs_bytes, self._b64_bytes, self._escape_bytes, 92))
        if len(value) <= _SHORT:
            find = value.lower().find
            for anchor in self._short_text if text else self._short_bytes:
                if find(anchor) >= 0:
                    return True
            return slash in value and escape.search(value) is not None
        find = value.find
        for anchor in b64:
            if find(anchor) >= 0:
                return True
        find = value.lower().find
        for run in runs:
            if find(run) >= 0:
                return True
        return slash in value and escape.search(value) is not None  # a backslash is found at memchr's pace

    def _replacement(self, m: re.Match[Any]) -> Any:
        name = m.lastgroup or ""
        i = int(name[1:])
        secret = self._secrets[i]
        if name[0] == "s":
            found = m.group(0)
            text = found if isinstance(found, str) else found.decode("utf-8", "replace")
            out = self._faithful[i] if text == secret or decoded(text) == secret else self._masks[i]
        else:
            out = self._masks[i]
        return out if isinstance(m.group(0), str) else out.encode("utf-8")

    def text(self, value: str) -> str:
        """``value`` with every form of every secret replaced. Short texts come again and again (an
        answer's header names and values, a route's path): each is looked at once."""
        short = len(value) <= _REMEMBERED
        if short and (done := self._seen.get(value)) is not None:
            return done
        out = value if not self.might_hold(value) or self._re_text is None else \
            self._re_text.sub(self._replacement, value)
        if short:
            if len(self._seen) >= _REMEMBER:
                self._seen.clear()
            self._seen[value] = out
        return out

    def data(self, value: bytes) -> bytes:
        if not self.might_hold(value) or self._re_bytes is None:
            return value
        return self._re_bytes.sub(self._replacement, value)

    def find(self, value: bytes) -> tuple[str, str] | None:
        """The first secret ``value`` holds a form of, with that form's kind (``as is``, ``URL- or
        JSON-encoded``, ``in another case``, ``base64``); None when it holds none."""
        if not self.might_hold(value) or self._re_bytes is None:
            return None
        m = self._re_bytes.search(value)
        if m is None:
            return None
        name = m.lastgroup or ""
        secret = self._secrets[int(name[1:])]
        if name[0] == "b":
            return secret, "base64"
        text = m.group(0).decode("utf-8", "replace")
        return secret, "as is" if text == secret else "URL- or JSON-encoded" if decoded(text) == secret else \
            "in another case"

    def holds(self, value: str) -> bool:
        """Whether ``value`` holds a form of a secret."""
        return self.might_hold(value) and self._re_text is not None and self._re_text.search(value) is not None

    def stream(self) -> FormStream:
        return FormStream(self)

    def _split(self, data: bytes) -> tuple[bytes, bytes]:
        """``data`` with every complete form replaced, and the end held back that could be the
        start of a form (a run of characters forms are made of, after the last replacement)."""
        end = len(data)
        last = 0
        out: list[bytes] = []
        if self.might_hold(data) and self._re_bytes is not None:
            for m in self._re_bytes.finditer(data):
                out.append(data[last:m.start()])
                out.append(self._replacement(m))
                last = m.end()
        hold_from = end
        if end > last and data[end - 1] in self.charset:
            window = data[max(last, end - self.longest + 1):end]
            hold_from = end - (len(window) - len(window.rstrip(self.charset_bytes)))
        if not out:
            return (data, b"") if hold_from == end else (data[:hold_from], data[hold_from:])
        out.append(data[last:hold_from])
        return b"".join(out), data[hold_from:]


def _no_match(data: bytes) -> None:
    """The escape search of a stream with no secret to look for (it is never asked)."""
    return None


class FormStream:
    """One stream's filter: ``feed`` each chunk, ``flush`` at the end. Holds back only an end that
    could begin a form (never more than the longest form; nothing after an SSE event's blank line)."""

    __slots__ = ("_forms", "_held", "_charset", "_searches", "_escape", "_always")

    def __init__(self, forms: SecretForms):
        self._forms = forms
        self._held = b""
        self._charset = forms.charset
        self._searches = forms._short_bytes if forms else []  # noqa: SLF001 — its own stream
        self._escape = forms._escape_bytes.search if forms else _no_match  # noqa: SLF001
        self._always = forms._always or not forms  # noqa: SLF001

    def feed(self, chunk: bytes) -> bytes:
        data = self._held + chunk if self._held else chunk
        if not data or not self._forms:
            return data
        if len(data) <= _SHORT and not self._always and data[-1] not in self._charset:
            # the common case, inline: an SSE event that holds no anchor and ends with its blank line
            find = data.lower().find  # (bytes.find, not ``in``: ``in`` goes through the buffer protocol)
            for anchor in self._searches:
                if find(anchor) >= 0:
                    break
            else:
                if 92 not in data or self._escape(data) is None:  # a JSON escape only with a backslash (92)
                    self._held = b""
                    return data
        out, self._held = self._forms._split(data)  # noqa: SLF001 — its own stream
        return out

    def flush(self) -> bytes:
        """The bytes held back: the stream ended, so they cannot become a form any more (a complete
        form among them was replaced when they were held)."""
        held, self._held = self._held, b""
        return held


# --- the secrets a process knows, for its own output filter --------------------------------------


class KnownSecrets:
    """The secrets read in this process (keys, ``[secrets]`` values), each masked in every form
    (``policy.redact`` keeps the one its output filter uses)."""

    def __init__(self, mask: Callable[[str], str], shortest: int = 8):
        self._lock = _thread.allocate_lock()
        self._mask = mask
        self._shortest = shortest  # a shorter value cannot be told apart from ordinary text
        self.forms = SecretForms((), mask)

    def remember(self, *secrets: str | None) -> None:
        new = [s for s in secrets if s and len(s) >= self._shortest and s not in self.forms.secrets]
        if not new:
            return
        with self._lock:
            self.forms = SecretForms([(s, None) for s in (*self.forms.secrets, *new)], self._mask)

    def masked(self, text: str) -> str:
        return self.forms.text(text)

"""What an id looks like: the identifiers clients, providers and ccs itself print, which a person
has to be able to copy (a session to resume, a request id to quote to a provider, a response or
tool-call id, a commit), told apart from keys by the forms their issuers document.

The shape rules in ``shapes`` find keys by their randomness, and an id is random too: without this
module ``ses_db616f0f3ffeTITUQ006lk5UKa`` (a Kilo Code session) printed as ``ses…5UKa`` and the
resume command ccs gave for it could not be used. Every form here is an issuer's prefix or layout
that no issuer of keys uses; a marked key (``sk-…``, ``AIza…``) is recognised before ids are, so no
id form can hide one. Ids without a form of their own (a bare 32-hex request id) cannot be told
from a key and stay masked.
"""

from __future__ import annotations

import re
from functools import cache

_B62 = "[0-9A-Za-z]"
_HEX = "[0-9a-f]"
_UUID = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"

ID_FORMS = (
    # OpenCode and Kilo Code: sessions, messages, parts, permissions … (12 hex of time, 14 base62)
    rf"(?:ses|msg|prt|per|que|usr|pty|tool|wrk|evt)_{_HEX}{{12}}{_B62}{{14}}",
    # Anthropic: messages, requests, tool uses, batches, files (a version "01", then base58)
    rf"(?:msg|req|toolu|srvtoolu|msgbatch|file|compl)_01{_B62}{{18,30}}",
    # OpenAI Chat Completions (and the gateways that copy it, a UUID after the prefix included)
    rf"(?:chatcmpl|cmpl)-(?:{_UUID}|{_B62}{{8,64}})",
    # OpenAI Responses: responses and their items (48 hex), request ids (x-request-id: req_ + 32 hex)
    rf"(?:resp|msg|rs|fc|ctc|ig|ws|mcp|cu|lc|req)_{_HEX}{{32,64}}",
    # tool calls and assistants' objects of the OpenAI family
    rf"(?:call|asst|thread|run|step|batch|vs)_{_B62}{{16,40}}",
    rf"file-{_B62}{{16,40}}",
    # OpenRouter generations: gen-<unix seconds>-<20 base62>
    rf"gen-[0-9]{{10}}-{_B62}{{16,32}}",
    # Cloudflare's cf-ray header, kept in request records: 16 hex and the data centre
    rf"{_HEX}{{16}}-[A-Z]{{3}}",
    # a UUID (Claude Code, Codex, Gemini CLI and Qwen Code sessions; DeepSeek and DashScope request ids)
    _UUID,
)


@cache
def _id_re() -> re.Pattern[str]:
    """An id inside a longer token (a file name, ``rollout-…-<uuid>.jsonl``) where it stands alone;
    compiled on first use (the launch path rarely needs it)."""
    return re.compile("(?<![0-9A-Za-z])(?:" + "|".join(ID_FORMS) + ")(?![0-9A-Za-z])")


# words that say the hex string after them is a commit (``commit 1a2b…``, ``…/commit/1a2b…``)
COMMIT_LABELS = ("commit ", "commit:", "commit/", "commits/", "tree/", "blob/", "rev ", "revision ")
_COMMIT_LENGTHS = (40, 64)  # SHA-1 and SHA-256 object names


def is_id(token: str) -> bool:
    """``token`` is one id of a documented form, whole."""
    return bool(_id_re().fullmatch(token))


def without_ids(token: str) -> str:
    """``token`` with every id in it replaced by a word, so that the rest can be judged alone."""
    return _id_re().sub("id", token) if "_" in token or "-" in token else token


def commit_after(lead: str, token: str) -> bool:
    """A full commit hash that the text right before it labels as one."""
    return (lead.endswith(COMMIT_LABELS) and len(token) in _COMMIT_LENGTHS
            and all(c in "0123456789abcdef" for c in token))

"""The policy's shortcuts answer as the plain way does: a routing family's regex compiled only for
the names its literal heads admit (policy/families.py) against every regex tried on every name, and
the globs of ``[policy].inherit`` matched by set and prefix against ``fnmatch.fnmatchcase``."""

from __future__ import annotations

import fnmatch
import re

import pytest

from ccswitch_tui import tools
from ccswitch_tui.policy import BASE_ALLOWLIST, matches_any
from ccswitch_tui.policy.families import SHARED_FAMILIES, Families, _heads
from ccswitch_tui.tools.registry import _samples


def naive(families: Families, name: str) -> str | None:
    for family, rx in (*families.client, *SHARED_FAMILIES):
        if re.fullmatch(rx, name):
            return family
    return None


TRICKY = [
    ("optional", r"ABC?_KEY"),  # the character before a quantifier may be absent
    ("starred", r"XY*Z_URL"),
    ("grouped", r"FOO_(BAR|BAZ)_URL"),  # a | inside a group
    ("classed", r"[Qq]WEN_.*"),  # no literal head: always tried
    ("flagged", r"(?i)mixed_.*"),
    ("escaped", r"DOT\.NAME|PIPE_.*"),
]


def test_every_registered_family_answers_as_before():
    families = tools.load().families
    names = {n for _, rx in (*families.client, *SHARED_FAMILIES) for n in _samples(rx)}
    names |= {"PATH", "HOME", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "http_proxy", "AWS_REGION", "GEMINI_API_KEY",
              "OPENAI", "OPENAI_", "AZURE_OPENAI_KEY", "CODEX_HOME", "KILO_X", "QWEN_X", "AIDER_MODEL", "LANG"}
    assert len(names) > 40
    for name in sorted(names):
        assert families.routing_family(name) == naive(families, name), name


@pytest.mark.parametrize("name", ["AB_KEY", "ABC_KEY", "ABCC_KEY", "XZ_URL", "XYYZ_URL", "FOO_BAR_URL", "FOO_BAZ_URL",
                                  "BAZ_URL", "qWEN_1", "QWEN_2", "MIXED_1", "mixed_2", "DOT.NAME", "DOTXNAME",
                                  "PIPE_1", "OTHER"])
def test_patterns_a_literal_head_cannot_describe_are_still_matched(name):
    families = Families(TRICKY)
    assert families.routing_family(name) == naive(families, name)


def test_heads():
    assert _heads(r"OPENAI_.*|AZURE_OPENAI_.*") == ("OPENAI_", "AZURE_OPENAI_")
    assert _heads(r"ABC?_KEY") == ("AB",)
    assert _heads(r"[Qq]WEN_.*") is None and _heads(r"(?i)x") is None and _heads(r"A?B") is None


GLOBS = [BASE_ALLOWLIST, ("LC_*", "X?Y", "A[BC]*", "*_LOG", "PLAIN", "P*Q*"), (), ("*",), ("A[*",)]
NAMES = ["PATH", "LC_ALL", "LC_", "LC", "XZY", "XY", "AB1", "AD", "FOO_LOG", "PLAIN", "PLAINER", "PQ", "PxQy", "A[",
         "A[B", "", "path", "SSH_AUTH_SOCK", "DISPLAY2"]


@pytest.mark.parametrize("patterns", GLOBS)
def test_globs_match_as_fnmatchcase(patterns):
    for name in NAMES:
        assert matches_any(name, patterns) == any(fnmatch.fnmatchcase(name, p) for p in patterns), (name, patterns)


def test_the_environ_prefilter_shares_the_heads_rule():
    """`ps`'s first pass over a raw environ uses the same literal heads: a character a quantifier
    follows may be absent, an escaped one is itself."""
    families = Families(TRICKY)
    prefilter = families.routing_prefilter()
    for name in ("AB_KEY", "XZ_URL", "FOO_BAR_URL", "DOT.NAME", "PIPE_1"):
        assert prefilter.search(b"HOME=/h\0" + name.encode() + b"=v\0"), name
    assert _heads(r"DOT\.NAME") == ("DOT.NAME",) and _heads(r"A\dB") == ("A",)

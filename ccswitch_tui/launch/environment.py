"""Clean environments and environment diffs: pure functions, no I/O.

A child's environment is built from nothing: the base allowlist plus the profile's
``policy.inherit``, then the profile's variables, the tool's routing variables and the markers.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

BASE_ALLOWLIST = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TERMINFO", "COLORTERM", "LANG",
    "LANGUAGE", "LC_*", "TZ", "TMPDIR", "DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR",
    "SSH_AUTH_SOCK",
)
MARKERS = ("CCS_PROFILE", "CCS_TOOL", "CCS_LAUNCH_ID")
NOISE = frozenset({"PWD", "OLDPWD", "SHLVL", "_"})

# Names that steer where a client sends requests, or with which credentials.
PROXY_VARS = frozenset(
    {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy"}
)
# Families no single client owns; each client's spec adds its own (tools/<name>.py ``families``).
_SHARED_FAMILIES = (
    ("openai", re.compile(r"OPENAI_.*|AZURE_OPENAI_.*")),
    ("proxy", re.compile("|".join(re.escape(v) for v in sorted(PROXY_VARS)))),
    ("cloud", re.compile(r"AWS_PROFILE|AWS_REGION|AWS_ACCESS_KEY_ID|AWS_SECRET_ACCESS_KEY|AWS_SESSION_TOKEN|"
                         r"AWS_BEARER_TOKEN_BEDROCK|GOOGLE_APPLICATION_CREDENTIALS|CLOUD_ML_REGION|"
                         r"ANTHROPIC_VERTEX_PROJECT_ID|GOOGLE_CLOUD_PROJECT|GOOGLE_CLOUD_LOCATION")),
)
SHARED_EFFECTS = {
    "openai": "OpenAI SDK programs (Codex ignores OPENAI_BASE_URL but hands it to the commands it runs)",
    "proxy": "every tool (requests go through the proxy)",
    "cloud": "Claude Code when a CLAUDE_CODE_USE_* switch is on, and cloud SDKs",
}
_patterns: list[tuple[str, re.Pattern[str]]] = []
_SECRET_RE = re.compile(r".*(_API_KEY|_AUTH_TOKEN|_TOKEN|_SECRET|_SECRET_ACCESS_KEY|_PASSWORD)$")
_NON_SECRET_RE = re.compile(r".*(_BASE_URL|_URL|_MODEL|_PROXY|_REGION)$|^CCS_MODEL$|^NO_PROXY$", re.IGNORECASE)


def _routing_patterns() -> list[tuple[str, re.Pattern[str]]]:
    if not _patterns:
        from ccswitch_tui.tools import specs
        from ccswitch_tui.tools.spec import compile_families

        _patterns.extend([*compile_families(specs()), *_SHARED_FAMILIES])  # the clients' own names first
    return _patterns


def families() -> tuple[str, ...]:
    return tuple(dict.fromkeys(f for f, _ in _routing_patterns()))


def client_families() -> tuple[str, ...]:
    """The families whose variables name a client's endpoint or key (not proxies, not cloud switches)."""
    return tuple(f for f in families() if f not in ("proxy", "cloud"))


def family_effect(family: str | None) -> str:
    """Which tools read a family's variables, for messages."""
    from ccswitch_tui.tools import specs

    for s in specs():
        if family in s.family_effects:
            return s.family_effects[family]
    return SHARED_EFFECTS.get(family or "", "some tools")


def routing_family(name: str) -> str | None:
    """Which family a routing variable belongs to (claude, codex, openai, proxy, cloud, …), else None."""
    for family, pattern in _routing_patterns():
        if pattern.fullmatch(name):
            return family
    return None


def looks_secret(name: str) -> bool:
    return bool(_SECRET_RE.match(name.upper()))


def known_non_secret(name: str) -> bool:
    """Values safe to print unmasked: URLs, model ids, proxies' addresses."""
    return bool(_NON_SECRET_RE.match(name)) and not looks_secret(name)


def matches_any(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def inherited_env(parent_env: Mapping[str, str], inherit: Iterable[str] = ()) -> dict[str, str]:
    """Step 1: only the base allowlist and the profile's ``policy.inherit`` pass from the parent."""
    patterns = (*BASE_ALLOWLIST, *inherit)
    return {k: v for k, v in parent_env.items() if matches_any(k, patterns)}


def matters(name: str) -> bool:
    """Whether a change to this variable can change where requests go or with which key: routing
    variables (proxies included) and anything named like a secret. The rest is harmless in a diff."""
    return routing_family(name) is not None or looks_secret(name)


# Past this many harmless names, a summary gives their count only.
FOLD_AFTER = 5


@dataclass(frozen=True)
class EnvDiff:
    """What changes from ``before`` to ``after``: direnv-style, noise left out. Routing, key and
    proxy changes lead; the harmless rest (PIP_*, PYENV_ROOT …) is folded after them."""

    added: dict[str, str]
    removed: dict[str, str]
    changed: dict[str, tuple[str, str]]

    def marked(self, routing: bool) -> list[str]:
        """``-NAME``, ``~NAME``, ``+NAME`` for the routing/key/proxy changes (or for the rest)."""
        parts = [f"-{k}" for k in sorted(self.removed) if matters(k) == routing]
        parts += [f"~{k}" for k in sorted(self.changed) if matters(k) == routing]
        parts += [f"+{k}" for k in sorted(self.added) if matters(k) == routing]
        return parts

    def summary(self) -> str:
        counts = f"+{len(self.added)} -{len(self.removed)} ~{len(self.changed)}"
        if self.empty:
            return f"{counts}: no changes"
        routing, other = self.marked(True), self.marked(False)
        text = f"{counts}: " + (f"routing, keys, proxies {' '.join(routing)}" if routing else
                                "no routing, key or proxy change")
        if other:
            text += f"; {len(other)} other" + (f" {' '.join(other)}" if len(other) <= FOLD_AFTER else "")
        return text

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)


def diff_env(before: Mapping[str, str], after: Mapping[str, str]) -> EnvDiff:
    keys_b = {k for k in before if k not in NOISE}
    keys_a = {k for k in after if k not in NOISE}
    return EnvDiff(
        added={k: after[k] for k in sorted(keys_a - keys_b)},
        removed={k: before[k] for k in sorted(keys_b - keys_a)},
        changed={k: (before[k], after[k]) for k in sorted(keys_a & keys_b) if before[k] != after[k]},
    )

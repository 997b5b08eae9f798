"""``[policy] quiet``: a launch whose tool talks to the profile's endpoint and nothing else.

Measured: with a third-party endpoint Claude Code still calls api.anthropic.com (server URLs,
event logging) and a ``HEAD {base}/api/hello`` preflight, all stopped by
``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``; Codex calls its metrics host (stopped by
``analytics.enabled = false``) and, for its plugin catalogue, api.github.com and chatgpt.com
(stopped by ``features.plugins = false``). Quiet is on by default for every provider except the
official ones, whose own services those calls belong to.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from ccswitch_tui.model import Profile
from ccswitch_tui.tools import specs

OFFICIAL_HOSTS = frozenset({"api.anthropic.com", "api.openai.com"})
CLAUDE_QUIET_ENV = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
# What a client's bare `--version` runs with, when its package does not say its version: no cloud
# metadata lookup, no update check, no traffic besides the answer
VERSION_PROBE_ENV = {"AWS_EC2_METADATA_DISABLED": "true", "DISABLE_AUTOUPDATER": "1", **CLAUDE_QUIET_ENV}
# Measured (2.1.332): an interactive Claude Code also tries to install the official plugin marketplace
# (downloads.claude.ai, then github.com), which the variable above does not stop; this one does. It goes
# into ccs's settings file for Claude Code, not the process environment.
CLAUDE_QUIET_SETTINGS_ENV = {"CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1"}


def is_official(base_url: str) -> bool:
    """The API of a client's own vendor (each spec names its ``official_hosts``)."""

    host = (urlsplit(base_url).hostname or "").lower()
    return host in OFFICIAL_HOSTS or any(host in s.official_hosts for s in specs())


def quiet_for(profile: Profile, base_url: str) -> bool:
    """The profile's ``[policy] quiet``, or by default: on unless ``base_url`` is an official API."""
    return profile.quiet if profile.quiet is not None else not is_official(base_url)

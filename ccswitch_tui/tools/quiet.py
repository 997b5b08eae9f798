"""``[policy] quiet``: a launch whose tool talks to the profile's endpoint and nothing else.

One rule for every client: quiet is on by default unless the launch's base URL is one of the
client's ``official_hosts`` (its vendor's own API, whose own services the extra calls belong to);
the profile's ``[policy] quiet`` decides when it is set. What quiets a client (variables, settings,
options) is in its plan; docs/clients.md says what each contacts.

Measured: with a third-party endpoint Claude Code still calls api.anthropic.com (server URLs,
event logging) and a ``HEAD {base}/api/hello`` preflight, all stopped by
``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ccswitch_tui.model import Profile

if TYPE_CHECKING:
    from ccswitch_tui.tools.spec import AnySpec

CLAUDE_QUIET_ENV = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
# What a client's bare `--version` runs with, when its package does not say its version: no cloud
# metadata lookup, no update check, no traffic besides the answer
VERSION_PROBE_ENV = {"AWS_EC2_METADATA_DISABLED": "true", "DISABLE_AUTOUPDATER": "1", **CLAUDE_QUIET_ENV}
# Measured (2.1.332): an interactive Claude Code also tries to install the official plugin marketplace
# (downloads.claude.ai, then github.com), which the variable above does not stop; this one does. It goes
# into ccs's settings file for Claude Code, not the process environment.
CLAUDE_QUIET_SETTINGS_ENV = {"CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1"}


def is_official(spec: AnySpec, base_url: str) -> bool:
    """The API of the client's own vendor (the spec's ``official_hosts``; ".host" names its subdomains too)."""
    host = (urlsplit(base_url).hostname or "").lower()
    return any(host == h or (h.startswith(".") and host.endswith(h)) for h in spec.official_hosts)


def quiet_for(spec: AnySpec, profile: Profile, base_url: str) -> bool:
    """The profile's ``[policy] quiet``, or by default: on unless ``base_url`` is the client's vendor's API."""
    return profile.quiet if profile.quiet is not None else not is_official(spec, base_url)

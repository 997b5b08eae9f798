"""The environment of a launch plan, built in the order of the contract: what passes from the
parent (the base allowlist, ``policy.inherit``, the TLS trust variables), the profile's ``[env]``,
the client's own table, its routing variables and key, then ccs's markers. Each variable keeps the
source it came from, for ``ccs env``, the TUI and the door warnings."""

from __future__ import annotations

from collections.abc import Mapping

from ccswitch_tui.model import (
    SOURCE_INHERITED,
    SOURCE_KEY,
    SOURCE_MARKER,
    SOURCE_PROFILE,
    SOURCE_TRUST,
    Profile,
)
from ccswitch_tui.policy import MARKERS, inherited_env


class EnvBuilder:
    """Builds a plan's environment in the order of the contract, remembering each variable's source."""

    def __init__(self, profile: Profile, parent_env: Mapping[str, str]):
        self.env: dict[str, str] = {}
        self.sources: dict[str, str] = {}
        self.secret_names: set[str] = set()
        self._ccs_home = parent_env.get("CCS_HOME")
        # without CCS_HOME, ccs finds its home through the XDG dirs: a nested ccs needs the same ones
        self._xdg = {} if self._ccs_home else \
            {k: parent_env[k] for k in ("XDG_CONFIG_HOME", "XDG_STATE_HOME") if parent_env.get(k)}
        kept, trusted = inherited_env(parent_env, profile.inherit, profile.trust)
        self.add(kept, SOURCE_INHERITED)
        self.add(trusted, SOURCE_TRUST)
        self.add(profile.env, SOURCE_PROFILE)

    def add(self, values: Mapping[str, str], source: str) -> None:
        for k, v in values.items():
            self.env[k] = v
            self.sources[k] = source

    def add_secret(self, name: str, value: str) -> None:
        self.add({name: value}, SOURCE_KEY)
        self.secret_names.add(name)

    def add_markers(self, profile: Profile, tool: str, launch_id: str) -> None:
        self.add(dict(zip(MARKERS, (profile.name, tool, launch_id), strict=True)), SOURCE_MARKER)
        if self._ccs_home:  # so that ccs inside the child (inspect, a --nested run) finds the same profiles
            self.add({"CCS_HOME": self._ccs_home}, SOURCE_MARKER)
        self.add({k: v for k, v in self._xdg.items() if k not in self.env}, SOURCE_MARKER)

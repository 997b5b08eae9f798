"""The LaunchPlan: everything a launch will do, computed without side effects.

`ccs env`, `ccs launch`, `ccs run`, `ccs shell`, `ccs inspect` and the TUI all use the same plan,
so what is shown is what is launched.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ccswitch_tui.launch.environment import MARKERS, inherited_env
from ccswitch_tui.profiles.schema import Profile

# Where each variable of a plan's environment came from.
SOURCE_INHERITED = "inherited"
SOURCE_PROFILE = "profile"  # [env]
SOURCE_TOOL = "tool"  # [claude.env] / [codex.env]
SOURCE_ROUTING = "routing"  # base URLs, models, config dirs from the profile
SOURCE_KEY = "key"
SOURCE_MARKER = "marker"


def new_launch_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + os.urandom(4).hex()


@dataclass(frozen=True)
class FileToWrite:
    path: Path
    content: str
    mode: int = 0o600


@dataclass(frozen=True)
class Refusal:
    """A reason not to launch, with the flags that get past it."""

    code: str  # e.g. "settings-override", "nested"
    message: str
    ways_out: tuple[str, ...] = ()  # for people: the flags below and the other ways (edit a file …)
    flags: tuple[str, ...] = ()  # the launch options that get past it ("isolate", "force")


@dataclass(frozen=True)
class LaunchPlan:
    profile: str
    tool: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    sources: Mapping[str, str]
    secret_names: frozenset[str]
    cwd: Path
    launch_id: str
    dirs: tuple[Path, ...] = ()
    files: tuple[FileToWrite, ...] = ()
    base_urls: Mapping[str, str] = field(default_factory=dict)  # variable/config key → URL
    models: Mapping[str, str] = field(default_factory=dict)  # variable/config key → model id
    key_id: str | None = None
    warnings: tuple[str, ...] = ()
    refusals: tuple[Refusal, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)  # tool-specific manifest fields
    force: bool = False  # launch past the refusals that --force lifts (recorded in the manifest)
    nested: bool = False  # launched inside a ccs child on purpose (--nested)

    def is_secret(self, name: str, value: str | None = None) -> bool:
        """The one rule for what is never shown in clear, in `ccs env`, its diff, the TUI and findings:
        the key variables, anything named like a secret, and any value shaped like a credential (an
        inherited GITHUB_TOKEN, a key someone put in an [env] table under another name)."""
        value = self.env.get(name, "") if value is None else value
        if not value:
            return False
        if name in self.secret_names:
            return True
        from ccswitch_tui.launch.environment import looks_secret
        from ccswitch_tui.policy.shapes import holds_credential

        return looks_secret(name) or holds_credential(value)

    def shown(self, name: str, value: str | None = None) -> str:
        """``name``'s value (or ``value``, e.g. the parent's side of a diff) as ccs prints it: a key
        variable or a secret-named one masked whole; in any other value, the credential masked
        (``http://***@proxy:3128``) and the rest kept."""
        value = self.env.get(name, "") if value is None else value
        if not self.is_secret(name, value):
            return value
        from ccswitch_tui.launch.environment import looks_secret

        if name in self.secret_names or looks_secret(name):
            from ccswitch_tui.keys.keyring import mask

            return mask(value)
        from ccswitch_tui.policy.redact import redact_text

        return redact_text(value)

    def masked_env(self) -> dict[str, str]:
        return {k: self.shown(k) for k in self.env}

    def non_secret_env(self) -> dict[str, str]:
        return {k: v for k, v in self.env.items() if k not in self.secret_names}



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
        self.add(inherited_env(parent_env, profile.inherit), SOURCE_INHERITED)
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

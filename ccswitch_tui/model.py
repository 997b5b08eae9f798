"""The model: plain value classes every layer shares. No I/O, no registry, no policy.

- ``Provider`` and ``Profile``: a profile file once validated (``profiles/schema.py`` builds them);
  ``Profile.sides`` maps each client the profile serves to its side, the value class that client's
  spec (``tools/<name>``) builds from its table. Sides are looked up by name: ``profile.side("codex")``.
- ``LaunchPlan`` (with ``FileToWrite``, ``Refusal`` and ``ClientSetup``): everything a launch will do,
  computed by a client spec without side effects; ``ccs env``, ``launch``, ``run``, ``inspect`` and the
  TUI use it.
- ``Finding``: what ``inspect``, ``doctor`` and ``check`` report.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final, Literal

from ccswitch_tui.valueclass import field, valueclass

# --- profiles ------------------------------------------------------------------------------------


@valueclass(frozen=True)
class Provider:
    name: str
    base_url: str
    key: str  # a key id in the keyring, or "env:VAR"
    website: str | None = None

    @property
    def key_env_var(self) -> str | None:
        """The variable named by ``key = "env:VAR"``, or None for a keyring key."""
        return env_var_of(self.key)


def env_var_of(key_ref: str) -> str | None:
    """``env:VAR`` → ``VAR``; None for a keyring key id."""
    return key_ref[4:] if key_ref.startswith("env:") else None


class Sides(Mapping[str, Any]):
    """A profile's sides when some are built only when first used: ``names`` the clients it serves (in
    the registry's order), ``build(name)`` builds one (validating its table, which may raise). The
    launch path reads a profile so, with the launched client's side built at once and the rest (a
    table only another client reads) when something asks for it."""

    def __init__(self, names: tuple[str, ...], built: Mapping[str, Any], build: Callable[[str], Any]):
        self._names = names
        self._built = dict(built)
        self._build = build

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            if name not in self._names:
                raise KeyError(name)
            self._built[name] = self._build(name)
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __repr__(self) -> str:
        return f"Sides({self._names!r}, built={list(self._built)!r})"


@valueclass(frozen=True)
class Profile:
    """One profile. ``sides`` maps each client the profile serves (in the registry's order) to its
    side; ``run`` is always there once validated."""

    name: str
    provider: Provider
    description: str = ""
    sides: Mapping[str, Any] = field(default_factory=dict)  # client name → that client's side (a value class)
    env: Mapping[str, str] = field(default_factory=dict)
    inherit: tuple[str, ...] = ()
    record: bool = False  # [policy].record: launches go through the recording bridge by default
    secrets: Mapping[str, str] = field(default_factory=dict)  # [secrets]: VARIABLE → key id (keys/extra.py)
    quiet: bool | None = None  # [policy].quiet; None: on for every provider but the official ones
    share: tuple[str, ...] | None = None  # [policy].share; None: the default pieces (tools/share.py)
    trust: bool = True  # [policy].trust: carry the shell's TLS trust variables (SSL_CERT_FILE …)
    pricing: Mapping[str, Any] = field(default_factory=dict)  # [pricing]: model → profiles.pricing.Price

    def side(self, tool: str) -> Any | None:
        """The side of ``tool``, or None when the profile does not serve it."""
        return self.sides.get(tool)

    @property
    def tools(self) -> tuple[str, ...]:
        """The tools this profile serves, in the order its sides were built (the registry's)."""
        return tuple(self.sides)

    @property
    def key_id(self) -> str:
        return self.provider.key

    def base_urls(self) -> dict[str, str]:
        urls = {"provider": self.provider.base_url}
        for tool, side in self.sides.items():
            url = getattr(side, "base_url", None)
            if url:
                urls[tool] = url
        return urls


# --- launch plans --------------------------------------------------------------------------------

# Where each variable of a plan's environment came from.
SOURCE_INHERITED = "inherited"
SOURCE_TRUST = "trust"  # the shell's TLS trust variables, carried unless [policy] trust = false
SOURCE_PROFILE = "profile"  # [env]
SOURCE_TOOL = "tool"  # [claude.env] / [codex.env] …
SOURCE_ROUTING = "routing"  # base URLs, models, config dirs from the profile
SOURCE_KEY = "key"
SOURCE_MARKER = "marker"


def new_launch_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + os.urandom(4).hex()


@valueclass(frozen=True)
class FileToWrite:
    path: Path
    content: str
    mode: int = 0o600


@valueclass(frozen=True)
class Refusal:
    """A reason not to launch, with the flags that get past it."""

    code: str  # e.g. "settings-override", "nested"
    message: str
    ways_out: tuple[str, ...] = ()  # for people: the flags below and the other ways (edit a file …)
    flags: tuple[str, ...] = ()  # the launch options that get past it ("isolate", "force")


@valueclass(frozen=True)
class ClientSetup:
    """What a client's plan sets up beyond the environment: its own config folder, the policy switches
    it applied, the user's pieces it shares, a Chat Completions provider's translation. The manifest
    records each under the key earlier versions wrote (``manifest_fields``); None is not recorded."""

    home_key: str = ""  # the manifest key of the client's own folder ("config_dir", "codex_home" …)
    home: str | None = None  # that folder, written for this profile
    provider_id: str | None = None  # the provider entry the client's config names
    quiet: bool | None = None  # [policy] quiet as applied
    isolate: bool | None = None  # launched --isolate
    shared: tuple[Mapping[str, str], ...] | None = None  # the shared pieces (tools/share.py ``Shared.to_dict``)
    wire_api: str | None = None  # "chat": the provider speaks Chat Completions, ccs's bridge translates
    provider_name: str | None = None  # the provider's name, for the translated answers

    def manifest_fields(self) -> dict[str, object]:
        out: dict[str, object] = {}
        if self.home_key:
            out[self.home_key] = self.home
        for key, value in (("provider_id", self.provider_id), ("quiet", self.quiet), ("isolate", self.isolate)):
            if value is not None:
                out[key] = value
        if self.shared is not None:
            out["shared"] = [dict(s) for s in self.shared]
        for key, value in (("wire_api", self.wire_api), ("provider_name", self.provider_name)):
            if value is not None:
                out[key] = value
        return out


@valueclass(frozen=True)
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
    client: ClientSetup = field(default_factory=ClientSetup)  # what the client's spec set up (its manifest fields)
    force: bool = False  # launch past the refusals that --force lifts (recorded in the manifest)
    nested: bool = False  # launched inside a ccs child on purpose (--nested)
    # Variables the profile names itself for a routing family (``[run] export = [{ key = "TAOTOKEN_API_KEY",
    # base_url = "TAOTOKEN_BASE_URL" }]``): variable → family. The policy treats them as that family's.
    routing_names: Mapping[str, str] = field(default_factory=dict)
    # What the client's declared layers did (launch/layers.py): one line per layer met, and the keys of
    # project layers that reached the client. None: no layer was met (not recorded).
    layers: tuple[str, ...] | None = None
    project_layers: tuple[str, ...] | None = None

    def non_secret_env(self) -> dict[str, str]:
        return {k: v for k, v in self.env.items() if k not in self.secret_names}

    def manifest_fields(self) -> dict[str, object]:
        """The client's fields of the run manifest, under the keys earlier versions wrote."""
        out = self.client.manifest_fields()
        if self.layers is not None:
            out["layers"] = list(self.layers)
        if self.project_layers is not None:
            out["project_layers"] = list(self.project_layers)
        return out


# --- findings ------------------------------------------------------------------------------------

Severity = Literal["error", "warn", "info"]
ERROR: Final = "error"
WARN: Final = "warn"
INFO: Final = "info"
SEVERITIES: tuple[Severity, ...] = (ERROR, WARN, INFO)


@valueclass(frozen=True)
class Finding:
    """A code (``key-drift``, ``settings-override`` …), a severity, where it was seen (a pid, a
    file, a variable) and one line saying what is wrong and the way out, values already masked."""

    code: str
    severity: Severity
    message: str
    pid: int | None = None
    path: str | None = None
    variable: str | None = None
    family: str | None = None  # the routing family of ``variable`` (claude, codex, openai, proxy, cloud)

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity {self.severity!r} is not one of {SEVERITIES}")

    @property
    def where(self) -> str:
        parts = []
        if self.pid is not None:
            parts.append(f"pid {self.pid}")
        if self.path:
            parts.append(self.path)
        if self.variable:
            parts.append(self.variable)
        return ": ".join(parts) if parts else "-"

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "where": self.where,
            "pid": self.pid,
            "path": self.path,
            "variable": self.variable,
            "family": self.family,
            "message": self.message,
        }

    def line(self) -> str:
        return f"{self.severity:<5}  {self.code:<20} {self.where}: {self.message}"

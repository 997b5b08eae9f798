"""What a client module declares about its client: the ``ToolSpec`` every ``tools/<name>.py`` registers.

A spec owns everything ccs knows about one client: its profile table (fields, validation, defaults),
the variable families its routing uses, how its processes look, its label and install hint, which of
its fields are secret for export. That is the core every spec provides (``ToolSpec``); its doctor
checks, its probes for ``ccs check``, its resume hints, its launch hooks, its TUI key and footer word
and the like are optional capabilities (``tools/capabilities.py``) a spec claims. ccs's own
code (profile validation, env families, ``ps``/``inspect``, ``doctor``, ``check``, export, the CLI and
the TUI) iterates over the registry and asks the spec; it keeps no copy of a client's rules.

This module is light on purpose: every command imports it (through the registry), so it imports
nothing heavier than the profile's value classes.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeAlias, TypeVar

import ccswitch_tui.tools.fields as table
from ccswitch_tui.model import Finding, LaunchPlan, Profile, Provider
from ccswitch_tui.paths import Paths
from ccswitch_tui.policy.families import Families
from ccswitch_tui.tools.checker import Checker
from ccswitch_tui.tools.fields import Field
from ccswitch_tui.tools.layers import Layer, Package
from ccswitch_tui.valueclass import field, valueclass

S = TypeVar("S")  # the client's side: the value class that declares its table (tools/fields.py)
# A spec of any client: the registry holds specs whose sides are different value classes.
AnySpec: TypeAlias = "ToolSpec[Any]"


@valueclass(frozen=True)
class ProbeSpec:
    """One request ``ccs check`` sends for a side, derived from the launch plan (no httpx here)."""

    api: str  # what it speaks, for reports: anthropic | openai (Responses) | openai-chat | openai-models | …
    url: str  # the request's URL (a key is never part of it)
    model: str | None
    auth: str  # "bearer" (Authorization: Bearer KEY), or the name of the header that carries the key
    method: str = "POST"
    body: Mapping[str, Any] | None = None
    fallback: ProbeSpec | None = None  # tried when this one answers 404/405
    note: str | None = None  # how the model was chosen, when the client picks it (not the profile)


@valueclass(frozen=True)
class DoctorContext:
    """What a client's doctor checks may look at: the shell ccs runs in, the directory, the profiles."""

    environ: Mapping[str, str]
    cwd: Path
    paths: Paths
    profiles: Sequence[Profile]  # the loadable ones
    version: str | None  # the installed client's version, when found


@valueclass
class DoctorPart:
    """What one client's doctor checks found: a report section (JSON) and its findings."""

    section: str  # the report's key for ``info``, e.g. "claude_layers"
    info: Any = None
    findings: list[Finding] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # the section in the text report


class LaunchRecords(Protocol):
    """What a client's hooks may ask about ccs's own launches (the launch layer answers)."""

    def manifest(self, launch_id: str) -> Mapping[str, Any] | None:
        """The run manifest of a launch, or None when it is missing or unreadable."""

    def manifests(self, profile: str) -> list[Mapping[str, Any]]:
        """Every run manifest of a profile."""

    def running(self, manifest: Mapping[str, Any]) -> bool:
        """Whether that launch is still going (its ccs is alive and it has not ended)."""

    def state(self, manifest: Mapping[str, Any]) -> str:
        """running | lost | ended."""

    def fingerprint(self, value: str) -> str:
        """A key's fingerprint with this install's salt."""


@valueclass
class HookContext:
    """What a launch hook sees: the plan being launched (a hook that reroutes it replaces it), the
    files the launch wrote (path → digest), the key's fingerprint, ccs's launches, and the manifest
    fields hooks add. ``status`` is the child's exit status once it has ended."""

    plan: LaunchPlan
    paths: Paths
    key_fingerprint: str
    runs: LaunchRecords
    files: Mapping[str, str] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)
    status: int | None = None


class LaunchHook:
    """A step around a launch: ``prepare`` before the plan's files are written (it may replace the
    plan), ``before`` once they are written and before the child starts, ``child_started`` as soon
    as it runs, ``after`` when the child has ended (also when it could not start), ``close`` last,
    always. Each may add manifest fields."""

    def prepare(self, ctx: HookContext) -> None:
        return None

    def before(self, ctx: HookContext) -> None:
        return None

    def child_started(self, ctx: HookContext, pgid: int) -> None:
        """The child runs, in its own process group ``pgid``."""
        return None

    def after(self, ctx: HookContext) -> None:
        return None

    def close(self, ctx: HookContext) -> None:
        return None


class ToolSpec(ABC, Generic[S]):
    """The core every client spec extends. Attributes describe; methods compute. Defaults fit a
    client that needs nothing special; what only some clients do is an optional capability
    (``Probing``, ``Doctoring``, ``Resuming``, … in tools/capabilities.py) the spec claims among its bases.

    A spec names its side value class (``side``), whose attributes declare the client's table once
    (tools/fields.py); the field names, validation, ``show --json``, export's secret fields and the
    variable tables are derived from it when the spec is built (the TUI derives its editor's form
    from the same fields: ``fields.editor_form``). A spec that
    lacks ``plan``, a name, a label or a side fails when its module is imported."""

    name: str = ""  # the registry name, the profile table and `ccs launch PROFILE NAME`
    label: str = ""  # "Claude Code"
    program: str | None = None  # executable on PATH; None: the user gives the command (`ccs run`)
    install_hint: str = "check the command name and the profile's PATH"
    launchable: bool = True  # `ccs launch PROFILE NAME` (false for `run`, which is `ccs run`)
    side: type[S]  # the value class that declares the table (tools/fields.py) and holds a profile's values
    families: Mapping[str, str] = {}  # family → regex (fullmatch) of the variables it names
    family_effects: Mapping[str, str] = {}  # family → who reads it, for messages
    cloud_switches: tuple[str, ...] = ()  # regexes of variables that turn the client to a cloud platform
    loaders: frozenset[str] = frozenset()  # variables its own launcher reads to run other code (policy: loaders)
    multiline_vars: frozenset[str] = frozenset()  # variables it reads as several lines (a header list)
    reads: tuple[str, ...] | None = None  # the families the client itself reads; None: any (not judged)
    reads_tables: tuple[str, ...] = ()  # other clients' tables its plan reads (their sides are part of its launch)
    exe_names: tuple[str, ...] = ()  # executable names of its processes (lower case)
    scripts: tuple[str, ...] = ()  # path suffixes of the scripts an interpreter runs for it
    internal_vars: frozenset[str] = frozenset()  # variables its own launcher puts in its processes
    # its vendor's own API: a launch there is not quiet by default (tools/quiet.py); ".host" also names subdomains
    official_hosts: frozenset[str] = frozenset()
    # every layer that can steer it, highest precedence first (tools/layers.py); () needs ``layers_reason``
    layers: tuple[Layer, ...] | None = None
    layers_reason: str = ""  # why a spec declares no layer
    package: Package | None = None  # how the pinned client installs (scripts/install-clients.sh)
    default: bool = False  # the client ccs picks when none is named (a blank profile's table)
    importer: str | None = None  # module under tools/ whose IMPORTER reads the client's own configs (`ccs import`)
    proxy_note: str | None = None  # how it treats a proxy variable, when that surprises (doctor's shell findings)
    model_option: str | None = None  # help of `ccs new --NAME-model`; None: only `--model NAME=MODEL`
    model_example: str | None = None  # a model it serves, for examples in help texts
    probe_hints: Mapping[str, str] = {}  # "api:situation" → what `ccs check` suggests (the client's own words)

    # derived from ``side`` when the spec is built
    fields: tuple[Field, ...]  # the table's fields, in the side's order
    field_names: tuple[str, ...]  # what the table may hold (unknown fields get a did-you-mean)
    secret_fields: tuple[str, ...]  # fields of its table that an export must empty
    _required: ClassVar[tuple[str, ...]] = ("name", "label")

    def __init__(self) -> None:
        where = type(self).__name__
        for attr in self._required:
            if not getattr(self, attr, ""):
                raise TypeError(f"client spec {where} has no {attr}")
        side = getattr(self, "side", None)
        if side is None:
            raise TypeError(f"client spec {where} ({self.name}) has no side: name the value class that declares "
                            "its table (tools/fields.py)")
        try:
            self.fields = table.table_fields(side)
        except TypeError as exc:
            raise TypeError(f"client spec {where} ({self.name}): {exc}") from None
        self.field_names = tuple(f.name for f in self.fields)
        self.secret_fields = tuple(f.name for f in self.fields if f.secret)

    # --- the profile table ----------------------------------------------------------------------

    def parse(self, t: Mapping[str, Any], c: Checker, provider: Provider, profile_name: str) -> S:
        """Validate the client's table (``c.table`` has checked its field names) and build its side:
        each field as its declaration says, then the spec's cross-field rules (``refine``)."""
        values = table.parse_values(self.fields, t, c, self.name, provider, profile_name)
        self.refine(values, t, c, provider, profile_name)
        return self.side(**values)

    def refine(self, values: dict[str, Any], t: Mapping[str, Any], c: Checker, provider: Provider,
               profile_name: str) -> None:
        """Cross-field rules and derived values: check or change ``values`` (field name → value, a
        field left out with a static default is absent) before the side is built; raise ``c.fail``."""
        return None

    def side_dict(self, side: S) -> dict[str, Any]:
        """The side as ``ccs show --json`` prints it."""
        return table.side_dict(self.fields, side)

    def env_tables(self, side: S) -> dict[str, Mapping[str, str]]:
        """The side's variable tables, by their place in the file (``[claude.env]``)."""
        return table.env_tables(self.fields, self.name, side)

    def base_url(self, side: S) -> str | None:
        value = getattr(side, "base_url", None)
        return value if isinstance(value, str) else None

    def endpoint(self, side: S) -> str | None:
        """Where the client sends its requests with this side (shown by `ccs new`); None: not said."""
        return None

    def summary(self, side: S) -> list[str]:
        """Short lines about the side for `ccs show` and the TUI's overview (models first)."""
        return []

    def show(self, side: S) -> str:
        """The side on one line of `ccs show`."""
        return "  ".join(x for x in (self.base_url(side) or "", *self.summary(side)) if x)

    # --- launching ------------------------------------------------------------------------------

    @abstractmethod
    def plan(self, profile: Profile, key: str, parent_env: Mapping[str, str], cwd: Path, *,
             paths: Paths, families: Families, args: Sequence[str] = (), launch_id: str | None = None,
             isolate: bool = False) -> LaunchPlan:
        """The launch: argv, env, files to write, base URLs and models for the manifest."""


PROMPT = "ping"


def responses_probe(base: str, model: str | None) -> ProbeSpec:
    """The cheapest Responses request (16 output tokens, the API's minimum)."""
    body = {"model": model, "input": PROMPT, "max_output_tokens": 16, "store": False}
    return ProbeSpec("openai", base.rstrip("/") + "/responses", model, "bearer", body=body)


def chat_probe(base: str, model: str | None) -> ProbeSpec:
    """The cheapest Chat Completions request (one output token)."""
    body = {"model": model, "messages": [{"role": "user", "content": PROMPT}], "max_tokens": 1, "stream": False}
    return ProbeSpec("openai-chat", base.rstrip("/") + "/chat/completions", model, "bearer", body=body)


_SESSION_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def has_option(args: Sequence[str], *names: str) -> bool:
    """Whether ``args`` give one of the options ``names`` (``-p``, ``--prompt`` or ``--prompt=…``)."""
    return any(a in names or (a.startswith("--") and a.split("=", 1)[0] in names) for a in args)


def first_word(args: Sequence[str]) -> str | None:
    """The first argument that is not an option (a subcommand: ``codex exec``, ``opencode run``)."""
    return next((a for a in args if not a.startswith("-")), None)


def newest_session_id(files: Iterable[Path], since: float) -> str | None:
    """The session id (a UUID in the file name) of the newest of ``files`` written since ``since``."""
    best: tuple[float, Path] | None = None
    for f in files:
        try:
            m = f.stat().st_mtime
        except OSError:
            continue
        if m >= since and (best is None or m > best[0]):
            best = (m, f)
    if best is None:
        return None
    ids = _SESSION_UUID.findall(best[1].stem)
    return ids[-1] if ids else None

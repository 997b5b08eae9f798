"""One module per client; the registry maps a tool name to its spec.

Adding a client is one new module whose ``TOOL`` is a ``spec.ToolSpec``, and one line in
``_MODULES``: profile validation, routing families, ``ps``/``inspect``, ``doctor``, ``check``,
export, the CLI and the TUI all iterate over the registry. Client modules never import each other.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from functools import cache
from typing import Any

from ccswitch_tui import policy
from ccswitch_tui.errors import UsageError
from ccswitch_tui.model import Profile
from ccswitch_tui.tools.importing import ClientImporter
from ccswitch_tui.tools.registry import RegistrationError, check_specs
from ccswitch_tui.tools.spec import AnySpec

# name → module, in the order every listing shows them; `run` (any command) comes last
_MODULES = {
    "claude": "claude",
    "codex": "codex",
    "gemini": "gemini",
    "opencode": "opencode",
    "kilo": "kilo",
    "qwen": "qwen",
    "aider": "aider",
    "run": "run",
}

# name → full module name of clients registered from Python with ``register`` (tests, plugins).
# Nothing ccs reads (no variable, no file) adds to it: code that calls ``register`` already runs
# inside ccs's interpreter (the tests put a sitecustomize on PYTHONPATH).
_EXTRA: dict[str, str] = {}


def names() -> tuple[str, ...]:
    """Every registered name, `run` (the last of ``_MODULES``) still last."""
    *clients_, last = _MODULES
    return (*clients_, *_EXTRA, last)


def _module(name: str) -> str:
    return _EXTRA[name] if name in _EXTRA else f"{__name__}.{_MODULES[name]}"


def get(name: str) -> AnySpec:
    if name not in _MODULES and name not in _EXTRA:
        raise UsageError(f"unknown tool {name!r}; choose one of: {', '.join(names())}")
    spec: AnySpec = importlib.import_module(_module(name)).TOOL
    return spec


def register(name: str, module: str) -> AnySpec:
    """Add the client whose spec is ``module``'s ``TOOL`` (a full module name) after the built-in
    ones; it passes the same checks (tools/registry.py) or is not added."""
    if name in _MODULES or name in _EXTRA:
        raise RegistrationError(f"client {name!r} ({module}) is already registered")
    _EXTRA[name] = module
    specs.cache_clear()
    try:
        specs()
    except BaseException:
        del _EXTRA[name]
        specs.cache_clear()
        specs()
        raise
    return get(name)


def unregister(name: str) -> None:
    """Remove a client ``register`` added (a test's, at its end)."""
    if name not in _EXTRA:
        raise RegistrationError(f"client {name!r} was not added with register()")
    del _EXTRA[name]
    specs.cache_clear()
    specs()


@cache
def specs() -> tuple[AnySpec, ...]:
    """Every registered spec, in registry order, checked (tools/registry.py); the policy learns
    their routing families."""
    loaded = tuple(get(n) for n in names())
    check_specs(list(zip(names(), loaded, strict=True)))
    policy.register_client_families(
        [(fam, rx) for s in loaded for fam, rx in s.families.items()],
        {fam: text for s in loaded for fam, text in s.family_effects.items()},
        [rx for s in loaded for rx in s.cloud_switches],
        [v for s in loaded for v in s.loaders],
    )
    return loaded


def multiline_vars() -> frozenset[str]:
    """Variables a client reads as several lines (a header list): the only ones whose value may
    hold a line break."""
    return frozenset(v for s in specs() for v in s.multiline_vars)


def clients() -> tuple[AnySpec, ...]:
    """The specs `ccs launch PROFILE NAME` takes (every client but `run`)."""
    return tuple(s for s in specs() if s.launchable)


def label(name: str | None) -> str:
    """A tool's name for messages: "Claude Code"; an unknown one is "the process"."""
    return get(name).label if name in names() else "the process"


def recognise(exe: str, script: str | None) -> str | None:
    """The client whose executable name (lower case, no folder) or npm script path this is."""
    for s in specs():
        if exe in s.exe_names or (script is not None and script.endswith(s.scripts)):
            return s.name
    return None


def default_client() -> AnySpec:
    """The client ccs picks when none is named (a blank profile's table, a launch hint): the spec
    that says ``default = True``, else the first client."""
    return next((s for s in clients() if s.default), clients()[0])


def importable() -> tuple[AnySpec, ...]:
    """The clients whose own configs `ccs import` reads (their spec names an importer), in registry order."""
    return tuple(s for s in clients() if s.importer)


def importer(spec: AnySpec) -> ClientImporter[Any]:
    """The spec's importer (``IMPORTER`` of the module it names under tools/), loaded on first use:
    only `ccs import` and the TUI's import dialog need it."""
    if not spec.importer:
        raise UsageError(f"ccs cannot import {spec.label}'s own configuration")
    found: ClientImporter[Any] = importlib.import_module(f"{__name__}.{spec.importer}").IMPORTER
    return found


def by_cc_switch_app(app: str) -> AnySpec | None:
    """The client whose importer reads CC Switch's rows of this ``app_type``."""
    return next((s for s in importable() if importer(s).cc_switch_app == app), None)


def cloud_switch_owner(name: str) -> AnySpec | None:
    """The client a cloud-switch variable turns to a cloud platform."""
    return next((s for s in clients() if any(re.fullmatch(rx, name) for rx in s.cloud_switches)), None)


def probe_hint(situation: str, default: str = "") -> str:
    """What `ccs check` suggests in a situation ("anthropic:not-found"), in the words of the client
    that speaks that API; ``default`` when no spec has one."""
    return next((s.probe_hints[situation] for s in clients() if situation in s.probe_hints), default)


def switched_label(name: str) -> str:
    """The label of the client a cloud-switch variable turns to a cloud platform, for messages."""
    owner = cloud_switch_owner(name)
    return owner.label if owner else "the client"


def joined(words: Sequence[str], last: str = "and") -> str:
    """"A, B and C" (``last`` may be "or", "nor", "/")."""
    words = list(words)
    if len(words) <= 1:
        return "".join(words)
    sep = " / " if last == "/" else ", "
    tail = " / " if last == "/" else f" {last} "
    return sep.join(words[:-1]) + tail + words[-1]


def client_labels(last: str = "and", specs: Sequence[AnySpec] | None = None) -> str:
    """The clients' labels for a message: "Claude Code, Codex, Gemini CLI and OpenCode"."""
    return joined([s.label for s in (clients() if specs is None else specs)], last)


def require(profile: Profile, tool: str) -> AnySpec:
    """The spec for ``tool``, if ``profile`` serves it; otherwise one clear line (exit 2)."""
    spec = get(tool)
    if tool not in profile.tools:
        raise UsageError(
            f"profile {profile.name!r} has no [{tool}] table, so it cannot launch {tool}; "
            f"add one with `ccs edit {profile.name}` (tools served: {', '.join(profile.tools)})"
        )
    return spec


specs()  # the policy answers routing questions from the moment the registry is imported

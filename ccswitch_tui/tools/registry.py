"""The client registry as a value, and the checks every spec passes when it loads.

A ``Registry`` maps each registered name to its spec module (``tools/__init__.py`` holds the lines)
and loads a spec when it is first asked for. The faces build one and pass it down: the CLI, the TUI
and ``doctor``/``ps`` load every spec, checked against each other (``Registry.load``); the launch path
(`ccs launch P T`, `ccs run`, the shims) loads and checks only the spec it launches
(``Registry.for_launch``), and knows the other clients' routing families, labels and the like from
the index (``tools/index.py``), generated from the specs and kept equal to them by a test (and by
``for_launch`` itself, which loads every spec when the launched one disagrees with its entry). The
policy's routing families come from the registry (``families``), never from a cache of its own.

The checks: each refusal is one line naming the spec and how to fix it, raised when the registry
loads the spec, so a spec that would collide with another or with the TUI fails before anything
launches (all of them whenever every spec loads: every command but the launch path, the TUI, the
tests).

- its name is unique and is the name it is registered under;
- its TUI key is one lower-case letter or digit, unique, and not one of the TUI's own keys
  (``RESERVED_KEYS``: the TUI's test checks this tuple against the app's real bindings, so the
  command path needs no Textual to know them);
- its footer word is short (the TUI folds the launch keys into one "Launch…" entry when they would
  not fit 80 columns; a long word would not fit either way);
- every routing family has a name and a valid, non-empty regex whose alternatives each start with a
  literal part (``ps`` prefilters raw environments by those) and that does not reach the variables
  every program needs (PATH, HOME, …): a family's variables are dropped from a launch's environment;
- no family overlaps a shared family of the policy (``OPENAI_*``, proxies, cloud) or another client's
  (``routing_family`` would answer with the wrong one);
- no executable name or script path of its processes is another client's (``ps`` would misname them);
- it declares its layers (tools/layers.py), or says why it has none; layer names are unique;
- an optional capability (tools/capabilities.py) it claims among its bases, or of which it
  implements a method, it implements completely.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ccswitch_tui.errors import UsageError

if TYPE_CHECKING:
    from ccswitch_tui.model import Profile
    from ccswitch_tui.policy.families import Families
    from ccswitch_tui.tools.importing import ClientImporter
    from ccswitch_tui.tools.spec import AnySpec

# The keys the TUI binds for itself (tabs, actions, quit, the launch menu, Textual's own): a client's
# launch key may not be one of them. tests/test_tui.py compares this with the app's bindings.
RESERVED_KEYS = frozenset({
    "1", "2", "3", "4", "5", "a", "d", "delete", "e", "i", "k", "l", "n", "p", "q", "r", "s", "t", "u",
    "slash", "question_mark", "f1", "ctrl+r", "ctrl+q", "ctrl+c", "ctrl+p", "escape",
})
LAUNCH_MENU_KEY = "l"  # the folded footer's "Launch…" entry
MAX_SHORT = 10  # the footer's word for a client
# Variables no family may reach: a launch drops a family's variables from the child's environment.
ESSENTIAL_VARS = ("PATH", "HOME", "USER", "SHELL", "TERM", "LANG", "TMPDIR", "PWD", "DBUS_SESSION_BUS_ADDRESS")
_TUI_KEY = re.compile(r"[a-z0-9]")


class RegistrationError(Exception):
    """A client spec the registry refuses (a programming error in the spec, not a user's input)."""


def check_specs(specs: Sequence[tuple[str, AnySpec]], families_checked: bool = False) -> None:
    """``specs``: (the name each is registered under, the spec), in registry order. One spec alone is
    checked by itself and against the policy's shared families; ``families_checked``: its families
    are the index's, checked against every other when the index was made (tools/index.py; a test
    keeps the index equal to the specs), so their regexes are not compiled again on a launch."""
    from ccswitch_tui.policy.families import SHARED_FAMILIES  # lazy: see facts()

    seen: dict[str, str] = {}
    keys: dict[str, str] = {}
    families: list[tuple[str, str, str]] = [(f, rx, "the policy's shared") for f, rx in SHARED_FAMILIES]
    exes: dict[str, str] = {}
    for registered, spec in specs:
        who = f"client spec {type(spec).__name__} ({registered!r})"
        if spec.name != registered:
            raise RegistrationError(f"{who} says name = {spec.name!r}; register it under its own name")
        if spec.name in seen:
            raise RegistrationError(f"{who}: the name {spec.name!r} is taken by {seen[spec.name]}; pick another")
        seen[spec.name] = type(spec).__name__
        _check_capabilities(who, spec)
        _check_face(who, spec, keys)
        if spec.launchable and not spec.families:
            raise RegistrationError(f"{who} declares no routing family: name the variables that route it "
                                    "(families = {\"name\": r\"NAME_.*\"})")
        for family, rx in () if families_checked else spec.families.items():
            _check_family(who, family, rx)
            for other, other_rx, owner in families:
                if family == other or overlap(rx, other_rx):
                    raise RegistrationError(f"{who}: routing family {family!r} ({rx}) overlaps {owner} family "
                                            f"{other!r} ({other_rx}); name only the client's own variables "
                                            "(the shared ones are the policy's)")
            families.append((family, rx, f"{spec.name}'s"))
        for exe in (*spec.exe_names, *spec.scripts):
            if exe in exes or any(exe.endswith(x) or x.endswith(exe) for x in exes if "/" in x and "/" in exe):
                taken = exes.get(exe) or next(exes[x] for x in exes if exe.endswith(x) or x.endswith(exe))
                raise RegistrationError(f"{who}: executable or script {exe!r} is {taken}'s too; `ps` could not tell "
                                        "them apart: name the client's own")
            exes[exe] = spec.name
        _check_layers(who, spec)


def _check_face(who: str, spec: AnySpec, keys: dict[str, str]) -> None:
    """A spec's TUI face (capabilities.TuiFace), when it has one: a free key of its own, a short word.
    ``keys``: the launch keys of the specs checked before it, which this one's joins."""
    from ccswitch_tui.tools.capabilities import TuiFace  # lazy: see _check_capabilities()

    if not isinstance(spec, TuiFace):
        return  # no key: the TUI's launch menu lists it by its label
    if len(spec.short) > MAX_SHORT:
        raise RegistrationError(f"{who}: its footer word short = {spec.short!r} must be 1-{MAX_SHORT} characters")
    key = spec.tui_key
    if not _TUI_KEY.fullmatch(key):
        raise RegistrationError(f"{who}: tui_key {key!r} must be one lower-case letter or digit")
    if key in RESERVED_KEYS:
        raise RegistrationError(f"{who}: tui_key {key!r} is the TUI's own key; pick one of the free "
                                f"keys: {', '.join(free_keys(keys))}")
    if key in keys:
        raise RegistrationError(f"{who}: tui_key {key!r} is {keys[key]}'s launch key; pick one of the "
                                f"free keys: {', '.join(free_keys(keys))}")
    keys[key] = spec.name


def _check_family(who: str, family: str, rx: str) -> None:
    if not isinstance(family, str) or not re.fullmatch(r"[a-z][a-z0-9_-]*", family):
        raise RegistrationError(f"{who}: routing family name {family!r} must be lower-case letters, digits, '_', '-'")
    if not isinstance(rx, str) or not rx.strip():
        raise RegistrationError(f"{who}: routing family {family!r} has an empty regex")
    try:
        pattern = re.compile(rx)
    except re.error as exc:
        raise RegistrationError(f"{who}: routing family {family!r} regex {rx!r} is invalid ({exc})") from None
    if pattern.fullmatch(""):
        raise RegistrationError(f"{who}: routing family {family!r} regex {rx!r} matches the empty name")
    for alt in rx.split("|"):
        if not re.split(r"[][().*+?{}^$|]", alt.replace("\\", ""), maxsplit=1)[0]:
            raise RegistrationError(f"{who}: routing family {family!r} alternative {alt!r} does not start with a "
                                    "literal name part (NAME_.*): `ps` finds routing variables by those")
    reached = [v for v in ESSENTIAL_VARS if pattern.fullmatch(v)]
    if reached:
        raise RegistrationError(f"{who}: routing family {family!r} regex {rx!r} reaches {', '.join(reached)}, "
                                "which every launch needs; name the client's own variables only")


def _check_layers(who: str, spec: AnySpec) -> None:
    layers = getattr(spec, "layers", None)
    if layers is None:
        raise RegistrationError(f"{who} declares no layers: list every file, folder and variable that can steer it "
                                "(layers = (Layer(...), ...), tools/layers.py), or layers = () with layers_reason")
    if not layers and not spec.layers_reason:
        raise RegistrationError(f"{who} declares an empty list of layers without layers_reason: say why nothing can "
                                "steer it")
    names = [layer.name for layer in layers]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise RegistrationError(f"{who}: layer names repeat ({', '.join(twice)}); name each layer once")


def _check_capabilities(who: str, spec: AnySpec) -> None:
    # The capabilities (and the spec classes under them) load with the first spec checked: the index's
    # answers (``tools.known``, the TUI's first frame) need neither.
    from ccswitch_tui.tools.capabilities import incomplete  # lazy: with the first spec checked

    why = incomplete(spec)
    if why is not None:
        raise RegistrationError(f"{who} {why}")


def _samples(rx: str) -> list[str]:
    """Names an alternative of a family regex matches: its literal head alone and with a few tails."""
    out = []
    for alt in rx.split("|"):
        head = re.split(r"[][().*+?{}^$|\\]", alt, maxsplit=1)[0]
        for tail in ("", "X", "_X", "_API_KEY", "_BASE_URL", "KEY"):
            if re.fullmatch(alt, head + tail):
                out.append(head + tail)
    return out


def overlap(a: str, b: str) -> bool:
    """Whether two family regexes name a variable in common (each one's sample names tried on the other)."""
    return any(re.fullmatch(b, n) for n in _samples(a)) or any(re.fullmatch(a, n) for n in _samples(b))


def free_keys(taken: dict[str, str]) -> list[str]:
    return [k for k in "abcdefghijklmnopqrstuvwxyz0123456789" if k not in RESERVED_KEYS and k not in taken]


# --- the registry -------------------------------------------------------------------------------

def facts(spec: AnySpec) -> dict[str, Any]:
    """What the launch path knows of a client without loading its spec: its entry in the index
    (tools/index.py), computed from the spec. The model and the policy load with the first spec checked or
    the first families asked for: the index's other answers (``tools.known``, the TUI's first frame) need
    neither."""
    from ccswitch_tui.model import Provider  # lazy: see the docstring
    from ccswitch_tui.tools.capabilities import ServingUnasked, TuiFace  # lazy: see the docstring

    return {
        "label": spec.label,
        "launchable": spec.launchable,
        "families": dict(spec.families),
        "family_effects": dict(spec.family_effects),
        "cloud_switches": tuple(spec.cloud_switches),
        "loaders": tuple(sorted(spec.loaders)),
        "multiline_vars": tuple(sorted(spec.multiline_vars)),
        "default_side": isinstance(spec, ServingUnasked)
        and spec.default_side(Provider("index", "https://index.invalid", "index")) is not None,
        "short": spec.short if isinstance(spec, TuiFace) else "",
        "tui_key": spec.tui_key if isinstance(spec, TuiFace) else None,
        "importable": bool(spec.importer),
    }


def _families(entries: Iterable[Mapping[str, Any]]) -> Families:
    from ccswitch_tui.policy.families import Families  # lazy: see facts()

    entries = list(entries)
    return Families(
        [(fam, rx) for e in entries for fam, rx in e["families"].items()],
        {fam: text for e in entries for fam, text in e["family_effects"].items()},
        [rx for e in entries for rx in e["cloud_switches"]],
        [v for e in entries for v in e["loaders"]],
    )


class Registry:
    """The client specs by name, loaded when first asked for. ``modules``: name → full module name
    (whose ``TOOL`` is the spec), in the order every listing shows them. ``index``: the built-in
    clients' facts (``facts``), so that a registry that has loaded only some specs still knows every
    client's label, families and default side; without it, every answer about all clients loads them."""

    def __init__(self, modules: Mapping[str, str], index: Mapping[str, Mapping[str, Any]] | None = None):
        self._modules = dict(modules)
        self._index = index if index is not None and set(modules) <= set(index) else None
        self._loaded: dict[str, AnySpec] = {}
        self._all: tuple[AnySpec, ...] | None = None
        self._families: Families | None = None
        self._facts_of: dict[str, Mapping[str, Any]] = {}
        self._internal: frozenset[str] | None = None

    @classmethod
    def load(cls, modules: Mapping[str, str]) -> Registry:
        """Every spec loaded and checked against each other (``check_specs``)."""
        registry = cls(modules)
        registry.specs()
        return registry

    @classmethod
    def for_launch(cls, modules: Mapping[str, str], name: str, index: Mapping[str, Mapping[str, Any]]) -> Registry:
        """Only ``name``'s spec loaded and checked (by itself and against the shared families); the
        others known from ``index``. When the index lacks a client or disagrees with the loaded spec,
        every spec is loaded and checked instead (the index is an optimisation, never the truth)."""
        registry = cls(modules, index)
        if registry._index is None or name not in modules:
            registry.specs()
            return registry
        spec = registry.get(name)
        if facts(spec) != registry._index[name]:
            registry._index = None
            registry.specs()
        return registry

    def __repr__(self) -> str:
        return f"Registry({list(self._modules)!r}, loaded={list(self._loaded)!r})"

    # --- names and specs --------------------------------------------------------------------------

    def names(self) -> tuple[str, ...]:
        return tuple(self._modules)

    def loaded(self, name: str) -> bool:
        """Whether ``name``'s spec is loaded (a side of a loaded spec is read at once, the others when used)."""
        return name in self._loaded

    @property
    def complete(self) -> bool:
        """Every spec loaded and checked against each other."""
        return self._all is not None

    def get(self, name: str) -> AnySpec:
        spec = self._loaded.get(name)
        if spec is not None:
            return spec
        if name not in self._modules:
            raise UsageError(f"unknown tool {name!r}; choose one of: {', '.join(self.names())}")
        loaded: AnySpec = importlib.import_module(self._modules[name]).TOOL
        spec = loaded
        if self._all is None:  # the checks against the others run when every spec loads
            # a spec the index describes as it is had its families checked when the index was made
            known = self._index is not None and self._index.get(name) == facts(spec)
            check_specs([(name, spec)], families_checked=known)
        self._loaded[name] = spec
        return spec

    def specs(self) -> tuple[AnySpec, ...]:
        """Every registered spec, in registry order, checked against each other."""
        if self._all is None:
            loaded = tuple(self._loaded.get(n) or importlib.import_module(m).TOOL for n, m in self._modules.items())
            check_specs(list(zip(self._modules, loaded, strict=True)))
            self._loaded = dict(zip(self._modules, loaded, strict=True))
            self._all = loaded
        return self._all

    def _facts(self, name: str) -> Mapping[str, Any]:
        if self._index is None:
            self.specs()
        elif name not in self._loaded:
            return self._index[name]
        if name not in self._facts_of:
            self._facts_of[name] = facts(self.get(name))
        return self._facts_of[name]

    @property
    def families(self) -> Families:
        """The routing families of every registered client, with the cloud switches and the clients'
        own loader variables: what the policy answers routing questions from."""
        if self._families is None:
            self._families = _families(self._facts(n) for n in self._modules)
        return self._families

    def clients(self) -> tuple[AnySpec, ...]:
        """The specs `ccs launch PROFILE NAME` takes (every client but `run`)."""
        return tuple(s for s in self.specs() if s.launchable)

    def launchable(self) -> tuple[str, ...]:
        """The names `ccs launch PROFILE NAME` takes, without loading a spec the index knows."""
        return tuple(n for n in self._modules if self._facts(n)["launchable"])

    def serves_by_default(self, name: str) -> bool:
        """Whether a profile without ``name``'s table still serves it (``ToolSpec.default_side``)."""
        return bool(self._facts(name)["default_side"])

    def internal_vars(self) -> frozenset[str]:
        """Variables the clients' own launchers and sandboxes put into their processes (not contamination)."""
        if self._internal is None:
            self._internal = frozenset().union(*(s.internal_vars for s in self.specs()))
        return self._internal

    def multiline_vars(self) -> frozenset[str]:
        """Variables a client reads as several lines (a header list): the only ones whose value may
        hold a line break."""
        return frozenset(v for n in self._modules for v in self._facts(n)["multiline_vars"])

    def label(self, name: str | None) -> str:
        """A tool's name for messages: "Claude Code"; an unknown one is "the process"."""
        return str(self._facts(name)["label"]) if name in self._modules else "the process"

    def require(self, profile: Profile, tool: str) -> AnySpec:
        """The spec for ``tool``, if ``profile`` serves it; otherwise one clear line (exit 2)."""
        spec = self.get(tool)
        if tool not in profile.tools:
            raise UsageError(
                f"profile {profile.name!r} has no [{tool}] table, so it cannot launch {tool}; "
                f"add one with `ccs edit {profile.name}` (tools served: {', '.join(profile.tools)})"
            )
        return spec

    # --- questions about every client --------------------------------------------------------------

    def recognise(self, exe: str, script: str | None) -> str | None:
        """The client whose executable name (lower case, no folder) or npm script path this is."""
        for s in self.specs():
            if exe in s.exe_names or (script is not None and script.endswith(s.scripts)):
                return s.name
        return None

    def default_client(self) -> AnySpec:
        """The client ccs picks when none is named (a blank profile's table, a launch hint): the spec
        that says ``default = True``, else the first client."""
        return next((s for s in self.clients() if s.default), self.clients()[0])

    def importable(self) -> tuple[AnySpec, ...]:
        """The clients whose own configs `ccs import` reads (their spec names an importer), in registry order."""
        return tuple(s for s in self.clients() if s.importer)

    def importer(self, spec: AnySpec) -> ClientImporter[Any]:
        """The spec's importer (``IMPORTER`` of the module it names beside the spec's), loaded on first
        use: only `ccs import` and the TUI's import dialog need it."""
        if not spec.importer:
            raise UsageError(f"ccs cannot import {spec.label}'s own configuration")
        package = __name__.rsplit(".", 1)[0]
        found: ClientImporter[Any] = importlib.import_module(f"{package}.{spec.importer}").IMPORTER
        return found

    def by_cc_switch_app(self, app: str) -> AnySpec | None:
        """The client whose importer takes CC Switch's rows of this ``app_type``."""
        return next((s for s in self.importable() if self.importer(s).cc_switch_app == app), None)

    def cloud_switch_owner(self, name: str) -> AnySpec | None:
        """The client a cloud-switch variable turns to a cloud platform."""
        return next((s for s in self.clients() if any(re.fullmatch(rx, name) for rx in s.cloud_switches)), None)

    def switched_label(self, name: str) -> str:
        """The label of the client a cloud-switch variable turns to a cloud platform, for messages."""
        owner = self.cloud_switch_owner(name)
        return owner.label if owner else "the client"

    def probe_hint(self, situation: str, default: str = "") -> str:
        """What `ccs check` suggests in a situation ("anthropic:not-found"), in the words of the client
        that speaks that API; ``default`` when no spec has one."""
        return next((s.probe_hints[situation] for s in self.clients() if situation in s.probe_hints), default)

    def launch_keys(self) -> tuple[tuple[str, str, str, str], ...]:
        """(name, key, footer word, label) of each client the TUI launches with a key of its own, in
        registry order, without loading a spec the index knows (the TUI's first frame)."""
        out = []
        for name in self.launchable():
            f = self._facts(name)
            if f["tui_key"]:
                out.append((name, str(f["tui_key"]), str(f["short"]), str(f["label"])))
        return tuple(out)

    def importable_labels(self, last: str = "and") -> str:
        """The labels of ``importable()``'s clients, without loading a spec the index knows."""
        return joined([str(self._facts(n)["label"]) for n in self.launchable() if self._facts(n)["importable"]], last)

    def client_labels(self, last: str = "and", specs: Sequence[AnySpec] | None = None) -> str:
        """The clients' labels for a message: "Claude Code, Codex, Gemini CLI and OpenCode"."""
        return joined([s.label for s in (self.clients() if specs is None else specs)], last)


def joined(words: Sequence[str], last: str = "and") -> str:
    """"A, B and C" (``last`` may be "or", "nor", "/")."""
    words = list(words)
    if len(words) <= 1:
        return "".join(words)
    sep = " / " if last == "/" else ", "
    tail = " / " if last == "/" else f" {last} "
    return sep.join(words[:-1]) + tail + words[-1]

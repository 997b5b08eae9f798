"""The checks a client spec passes when the registry loads it: each refusal is one line naming the
spec and how to fix it, raised when the registry is imported (every command, the TUI, the tests), so
a spec that would collide with another or with the TUI fails before anything launches.

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
- it declares its layers (tools/layers.py), or says why it has none; layer names are unique.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ccswitch_tui.policy import shared_families
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


def check_specs(specs: Sequence[tuple[str, AnySpec]]) -> None:
    """``specs``: (the name each is registered under, the spec), in registry order."""
    seen: dict[str, str] = {}
    keys: dict[str, str] = {}
    families: list[tuple[str, str, str]] = [(f, rx, "the policy's shared") for f, rx in shared_families()]
    exes: dict[str, str] = {}
    for registered, spec in specs:
        who = f"client spec {type(spec).__name__} ({registered!r})"
        if spec.name != registered:
            raise RegistrationError(f"{who} says name = {spec.name!r}; register it under its own name")
        if spec.name in seen:
            raise RegistrationError(f"{who}: the name {spec.name!r} is taken by {seen[spec.name]}; pick another")
        seen[spec.name] = type(spec).__name__
        if not spec.short or len(spec.short) > MAX_SHORT:
            raise RegistrationError(f"{who}: its footer word short = {spec.short!r} must be 1-{MAX_SHORT} "
                                    "characters")
        if spec.tui_key is not None:
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
        if spec.launchable and not spec.families:
            raise RegistrationError(f"{who} declares no routing family: name the variables that route it "
                                    "(families = {\"name\": r\"NAME_.*\"})")
        for family, rx in spec.families.items():
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

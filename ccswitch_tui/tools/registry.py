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
  every program needs (PATH, HOME, …): a family's variables are dropped from a launch's environment.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ccswitch_tui.tools.spec import ToolSpec

# The keys the TUI binds for itself (tabs, actions, quit, the launch menu, Textual's own): a client's
# launch key may not be one of them. tests/test_tui.py compares this with the app's bindings.
RESERVED_KEYS = frozenset({
    "1", "2", "3", "4", "5", "a", "d", "delete", "e", "i", "k", "l", "n", "p", "q", "r", "s", "t", "u",
    "slash", "question_mark", "f1", "ctrl+r", "ctrl+q", "ctrl+c", "ctrl+p",
})
LAUNCH_MENU_KEY = "l"  # the folded footer's "Launch…" entry
MAX_SHORT = 10  # the footer's word for a client
# Variables no family may reach: a launch drops a family's variables from the child's environment.
ESSENTIAL_VARS = ("PATH", "HOME", "USER", "SHELL", "TERM", "LANG", "TMPDIR", "PWD", "DBUS_SESSION_BUS_ADDRESS")
_TUI_KEY = re.compile(r"[a-z0-9]")


class RegistrationError(Exception):
    """A client spec the registry refuses (a programming error in the spec, not a user's input)."""


def check_specs(specs: Sequence[tuple[str, ToolSpec]]) -> None:
    """``specs``: (the name each is registered under, the spec), in registry order."""
    seen: dict[str, str] = {}
    keys: dict[str, str] = {}
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


def free_keys(taken: dict[str, str]) -> list[str]:
    return [k for k in "abcdefghijklmnopqrstuvwxyz0123456789" if k not in RESERVED_KEYS and k not in taken]

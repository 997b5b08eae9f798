"""The one exception family of ccs. Each carries the exit code the CLI should use."""

from __future__ import annotations

from ccswitch_tui.valueclass import valueclass


class CcsError(Exception):
    """A failure the user can act on; ``str(err)`` is one line saying what, where and how to fix."""

    exit_code = 2


class UsageError(CcsError):
    """Bad input: an unknown profile, a bad flag value, a refused name."""


class ProfileError(CcsError):
    """A profile file that cannot be read or does not follow schema 1. ``field`` is the place the
    message names, as ``[table].field`` (``[codex].provider_id``, ``[claude.env].X``, ``schema``),
    and ``line``/``column`` the file's place for a syntax error, when known: the editor points there without
    reading the message."""

    def __init__(self, message: str, *, field: str | None = None, line: int | None = None,
                 column: int | None = None):
        super().__init__(message)
        self.field = field
        self.line, self.column = line, column


@valueclass(frozen=True)
class StoreKey:
    """A way out, as data: store a key under this keyring id (``again``: replace the one there). The
    CLI says it as the command; the TUI as its own key for it, from these fields."""

    key_id: str
    again: bool = False

    def command(self) -> str:
        return f"store it{' again' if self.again else ''} with `ccs key set {self.key_id}`"


class KeyError_(CcsError):
    """A key that is missing or cannot be read. When the way out is storing a key, ``remedy`` says
    which (a StoreKey) and ``problem`` is the message before it; ``str(err)`` joins the two with the
    CLI command, so each front end words the way out itself and none rewrites the other's text."""

    def __init__(self, problem: str, remedy: StoreKey | None = None):
        super().__init__(f"{problem}; {remedy.command()}" if remedy else problem)
        self.problem = problem
        self.remedy = remedy


class KeyringUnavailable(CcsError):
    """The OS keyring cannot be reached (no backend, locked, prompt dismissed)."""


class LaunchRefused(CcsError):
    """A launch that ccs will not do without an explicit flag (nested, settings override).
    ``flags`` are the options that get past it, as data (``("isolate", "force")``): the TUI offers
    them as buttons; ``ways_out`` are the same and the other ways, as lines for people."""

    def __init__(self, message: str, ways_out: tuple[str, ...] = (), flags: tuple[str, ...] = (),
                 reason: str | None = None):
        super().__init__(message)
        self.ways_out = ways_out
        self.flags = flags
        self.reason = reason or message  # what was refused, without the ways out (a dialog lists those)


class FindingsError(CcsError):
    """A check, doctor or inspect that found error-severity findings."""

    exit_code = 3


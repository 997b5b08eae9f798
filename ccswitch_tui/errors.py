"""The one exception family of ccs. Each carries the exit code the CLI should use."""

from __future__ import annotations


class CcsError(Exception):
    """A failure the user can act on; ``str(err)`` is one line saying what, where and how to fix."""

    exit_code = 2


class UsageError(CcsError):
    """Bad input: an unknown profile, a bad flag value, a refused name."""


class ProfileError(CcsError):
    """A profile file that cannot be read or does not follow schema 1."""


class KeyError_(CcsError):
    """A key that is missing or cannot be read."""


class KeyringUnavailable(CcsError):
    """The OS keyring cannot be reached (no backend, locked, prompt dismissed)."""


class Refusal(CcsError):
    """A launch that ccs will not do without an explicit flag (nested, settings override)."""

    def __init__(self, message: str, ways_out: tuple[str, ...] = ()):
        super().__init__(message)
        self.ways_out = ways_out


class FindingsError(CcsError):
    """A check, doctor or inspect that found error-severity findings."""

    exit_code = 3


class InternalError(CcsError):
    exit_code = 1

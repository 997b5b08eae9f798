"""Findings: what `ccs inspect`, `ccs doctor` and `ccs check` report, one shape for all of them.

A finding names a code (``key-drift``, ``settings-override`` …), a severity (error | warn | info),
where it was seen (a pid, a file, a variable) and one line saying what is wrong and the way out.
Values in findings are already masked: nothing here ever holds a key in clear.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ccswitch_tui.launch.environment import MARKERS, known_non_secret, looks_secret

ERROR, WARN, INFO = "error", "warn", "info"
SEVERITIES = (ERROR, WARN, INFO)

_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*):[^@/\s]*@")
_FLAG_VALUES = frozenset({"", "0", "1", "true", "false", "yes", "no", "on", "off"})
_PATH_NAMES = frozenset({"CLAUDE_CONFIG_DIR", "CODEX_HOME"})
# Terminal, session and locale variables every shell has: never a key, and useful to see in clear.
_HARMLESS = re.compile(r"TMUX|TMUX_PANE|TERM|TERM_PROGRAM(_VERSION)?|COLORTERM|VTE_VERSION|WINDOWID|SHLVL|COLUMNS|"
                       r"LINES|HOSTNAME|LANG|LANGUAGE|LC_\w+|TZ|XDG_\w+|DISPLAY|WAYLAND_DISPLAY|SSH_TTY|"
                       r"SSH_CONNECTION|SSH_CLIENT|DBUS_SESSION_BUS_ADDRESS|EDITOR|VISUAL|PAGER|LESS|LS_COLORS|"
                       r"USER|LOGNAME|SHELL|HOME|PWD|OLDPWD|MAIL|STY|WINDOW|KONSOLE_\w+|WT_SESSION")
# Absolute paths (or a PATH-like list of them) and small numbers: never a key.
_PLAIN = re.compile(r"/[^\s:]*(?::/[^\s:]*)*|\d{1,9}")


def shown(name: str, value: str) -> str:
    """A variable's value as ccs may print it: in clear only when the name is known not to hold a
    secret (URLs, model ids, proxies, ccs's markers and config dirs) or, for a name that does not
    look secret, the value is a plain flag, a small number or an absolute path; else masked."""
    from ccswitch_tui.keys.keyring import mask
    from ccswitch_tui.policy.shapes import holds_credential

    if value and holds_credential(value) and not known_non_secret(name):  # the same rule as LaunchPlan.shown
        return mask(value)
    if name in MARKERS or name in _PATH_NAMES or known_non_secret(name) or _HARMLESS.fullmatch(name):
        return redact_url(value)
    if not looks_secret(name) and (value.strip().lower() in _FLAG_VALUES or _PLAIN.fullmatch(value)):
        return value
    return mask(value)


def redact_url(value: str) -> str:
    """``http://user:****@proxy:3128``: a password inside a URL is never shown."""
    return _USERINFO.sub(r"\g<head>:****@", value)


@dataclass(frozen=True)
class Finding:
    code: str
    severity: str  # error | warn | info
    message: str  # what is wrong and the way out, one line, values already masked
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


def counts(findings: Iterable[Finding]) -> dict[str, int]:
    out = dict.fromkeys(SEVERITIES, 0)
    for f in findings:
        out[f.severity] += 1
    return out


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(f.severity == ERROR for f in findings)


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(findings, key=lambda f: (order[f.severity], f.code, f.pid or 0, f.path or "", f.variable or ""))


def counts_text(c: Mapping[str, int] | None) -> str:
    if c is None:
        return "-"
    parts = [f"{c[s]} {s}" for s in SEVERITIES if c.get(s)]
    return ", ".join(parts) if parts else "clean"

"""Findings: what `ccs inspect`, `ccs doctor` and `ccs check` report, one shape for all of them
(``model.Finding``), and the helpers that count, sort and summarise them. Values in findings are
masked by the policy's display rule (``policy.shown``) before a finding is made."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ccswitch_tui.model import ERROR, SEVERITIES, Finding


def counts(findings: Iterable[Finding]) -> dict[str, int]:
    out: dict[str, int] = dict.fromkeys(SEVERITIES, 0)
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

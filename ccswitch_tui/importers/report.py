"""The import report: one ``Item`` per source entry (what became of it), gathered in a ``Report``
that prints as text or as the ``--json`` object."""

from __future__ import annotations

from typing import Any

from ccswitch_tui.valueclass import field, valueclass

ACTIONS = ("created", "merged", "unchanged", "skipped", "error")
# what a dry run says instead (nothing was created): its lines and its summary; --json keeps the actions
DRY_LINE = {"created": "would create", "merged": "would merge"}
DRY_SUMMARY = {"created": "to create", "merged": "to merge"}


@valueclass
class Item:
    """One line of the report: what became of one source entry."""

    source: str
    action: str
    name: str | None = None          # the provider's name in the source
    profile: str | None = None
    reason: str | None = None
    key_id: str | None = None
    key: str | None = None           # stored | shared | present | missing | env
    fingerprint: str | None = None
    path: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "name": self.name,
            "action": self.action,
            "profile": self.profile,
            "path": self.path,
            "reason": self.reason,
            "key_id": self.key_id,
            "key": self.key,
            "fingerprint": self.fingerprint,
            "warnings": list(self.warnings),
        }


@valueclass
class Report:
    kind: str                        # cc-switch | claude | codex
    read: list[str]                  # the files actually read
    dry_run: bool
    items: list[Item] = field(default_factory=list)
    scrubbed: list[dict[str, Any]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(ACTIONS, 0)
        for it in self.items:
            out[it.action] = out.get(it.action, 0) + 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "import": self.kind,
            "dry_run": self.dry_run,
            "read": list(self.read),
            "items": [it.to_json() for it in self.items],
            "summary": self.counts(),
            "scrubbed": list(self.scrubbed),
        }

    def render(self) -> str:
        lines: list[str] = []
        width = max([len(it.profile or "-") for it in self.items] + [7])
        verbs = DRY_LINE if self.dry_run else {}
        column = max([len(verbs.get(it.action, it.action)) for it in self.items] + [9])
        for it in self.items:
            head = f"{verbs.get(it.action, it.action):<{column}} {(it.profile or '-'):<{width}}  {it.source}"
            if it.name:
                head += f" {it.name!r}"
            lines.append(head)
            if it.reason:
                lines.append(f"          {it.reason}")
            if it.key_id and it.action in ("created", "merged", "unchanged"):
                fp = f", {it.fingerprint}" if it.fingerprint else ""
                hint = f" — store it with `ccs key set {it.key_id}`" if it.key == "missing" else ""
                state = "would store" if self.dry_run and it.key == "stored" else it.key
                lines.append(f"          key {it.key_id} ({state}{fp}){hint}")
            for w in it.warnings:
                lines.append(f"          warning: {w}")
        for s in self.scrubbed:
            verb = "would remove" if self.dry_run else "removed"
            if s.get("removed"):
                lines.append(f"scrub     {s['path']}: {verb} {', '.join(s['removed'])}")
            if s.get("note"):
                lines.append(f"scrub     {s['path']}: {s['note']}")
        c = self.counts()
        summary = ", ".join(f"{c[a]} {(DRY_SUMMARY if self.dry_run else {}).get(a, a)}" for a in ACTIONS)
        prefix = "dry run, nothing written: " if self.dry_run else ""
        lines.append(f"{prefix}{summary}" + (f" (read {', '.join(self.read)})" if self.read else ""))
        return "\n".join(lines)

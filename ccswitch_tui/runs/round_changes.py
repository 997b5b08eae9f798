"""What changed from one round to the next: the routing (base URLs, key, models requested and served,
the client's version, concurrency) and the rerun command itself.

A round that changes one variable tells what that variable does to the gap; a round that changes two
cannot ("otherwise you cannot tell whether the narrowing came from the analyzer, the guidelines or a
more stable route"), so two or more changes give a warning.

The command is the argv the reruns were launched with (as recorded, without the options ccs adds), each
argument that differs between the reruns of one round (an output file per rerun, a rerun number)
shown as ``…``: what is left is the round's own command, compared option by option.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from ccswitch_tui.runs.manifests import user_argv

VARIES = "…"
# (field, the row's key, what a person calls it)
FIELDS = (("base_urls", "base_urls", "base URLs"), ("key", "key_fingerprints", "key"),
          ("models_requested", "models_requested", "models requested"),
          ("models_served", "models_served", "models served"), ("client", "clients", "client"),
          ("concurrency", "peak_concurrency", "concurrency"), ("command", "command", "command"))
NAMES = {f: name for f, _, name in FIELDS}


def round_command(manifests: Sequence[Mapping[str, Any]]) -> list[str] | None:
    """The round's command: the first rerun's argv, with each argument the reruns disagree on as ``…``."""
    argvs = [user_argv(m) for m in manifests]
    if not argvs or not argvs[0]:
        return None
    first = argvs[0]
    return [a if all(len(o) > i and o[i] == a for o in argvs[1:]) else VARIES for i, a in enumerate(first)]


def clients(manifests: Sequence[Mapping[str, Any]]) -> list[str]:
    """The clients and versions the reruns ran: ``run``, ``<client> <version>``."""
    return sorted({" ".join(str(x) for x in (m.get("tool"), m.get("tool_version")) if x) for m in manifests
                   if m.get("tool")})


def _shown(value: Any) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, list):
        return " ".join(str(v) for v in value) or "none"
    return str(value)


def _options(argv: Sequence[str]) -> set[str]:
    return {a for a in argv if a.startswith("-") and a != VARIES}


def change(field: str, before: Any, after: Any) -> dict[str, Any]:
    """One change, with a line a person reads."""
    out: dict[str, Any] = {"field": field, "from": before, "to": after}
    if field == "command":
        added = sorted(_options(after) - _options(before))
        removed = sorted(_options(before) - _options(after))
        out["added"], out["removed"] = added, removed
        if added or removed:
            what = " ".join([*(f"+{a}" for a in added), *(f"-{r}" for r in removed)])
        else:
            what = f"{shlex.join(before)} -> {shlex.join(after)}"
        out["text"] = f"command {what}"
    else:
        out["text"] = f"{NAMES[field]} {_shown(before)} -> {_shown(after)}"
    return out


def changes(previous: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What differs between two rounds' rows; a value either round cannot tell is not compared."""
    out = []
    for field, key, _ in FIELDS:
        before, after = previous.get(key), row.get(key)
        if before is None or after is None or before == after:
            continue
        if field == "key" and previous.get("key_salts") and row.get("key_salts") and \
                previous["key_salts"] != row["key_salts"]:  # fingerprints under other salts say nothing
            out.append({"field": field, "from": before, "to": after,
                        "text": "key: fingerprints from different salts (cannot be compared)"})
            continue
        out.append(change(field, before, after))
    return out


def warning(previous_label: str, found: Sequence[Mapping[str, Any]]) -> str | None:
    if len(found) < 2:
        return None
    names = ", ".join(NAMES[c["field"]] for c in found)
    return (f"{len(found)} variables changed since {previous_label} ({names}): the gap's move cannot be put on "
            "any one of them; change one variable per round")


def annotate(rows: Sequence[dict[str, Any]]) -> None:
    """Give each round's row what changed since the round before it (in the order given)."""
    previous: Mapping[str, Any] | None = None
    for row in rows:
        row["changed_since"], row["changed"], row["changed_warning"] = None, [], None
        if not row.get("k"):
            continue
        if previous is not None:
            row["changed_since"] = previous["round"]
            row["changed"] = changes(previous, row)
            row["changed_warning"] = warning(str(previous["round"]), row["changed"])
        previous = row

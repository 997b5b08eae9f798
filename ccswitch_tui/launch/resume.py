"""After an interactive session: how to resume it through ccs.

The clients print their own resume hint (``codex resume ID``, ``claude --resume ID``), which
outside ccs opens the user's default home and provider, not this profile's. ccs finds the session
the launch wrote and prints the command that resumes it with the same profile.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _newest(files: list[Path], since: float) -> Path | None:
    best: tuple[float, Path] | None = None
    for f in files:
        try:
            m = f.stat().st_mtime
        except OSError:
            continue
        if m >= since and (best is None or m > best[0]):
            best = (m, f)
    return best[1] if best else None


def session_id(plan: Any, since: float) -> str | None:
    """The id of the newest session the launch's tool wrote since ``since`` (epoch seconds)."""
    extra = plan.extra or {}
    if plan.tool == "codex" and extra.get("codex_home"):
        found = _newest(list((Path(extra["codex_home"]) / "sessions").rglob("rollout-*.jsonl")), since)
    elif plan.tool == "claude" and extra.get("config_dir"):
        found = _newest(list((Path(extra["config_dir"]) / "projects").glob("*/*.jsonl")), since)
    else:
        return None
    if found is None:
        return None
    ids = _UUID.findall(found.stem)
    return ids[-1] if ids else None


def command(plan: Any, sid: str) -> str:
    args = f"resume {sid}" if plan.tool == "codex" else f"--resume {sid}"
    return f"ccs launch {plan.profile} {plan.tool} -- {args}"


def hint(plan: Any, since: float) -> str | None:
    sid = session_id(plan, since)
    return None if sid is None else f"ccs: to resume this session with profile {plan.profile!r}: {command(plan, sid)}"

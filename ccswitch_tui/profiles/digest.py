"""A digest of what a profile sets for a launch, so that a rerun can tell the profile was edited.

Read from the validated profile, not from the file: comments, layout and key order do not count,
and neither do its name and the fields that shape no launch (``description``, ``[provider].website``,
``[pricing]``), nor the tables of clients the launch does not use (an edit of ``[gemini]`` does not
change a Codex launch; the launch path does not even read them). The key is counted by its reference
(``key = "id"`` or ``"env:VAR"``), never its value.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from ccswitch_tui.model import Profile
from ccswitch_tui.valueclass import fields, is_valueclass

LEFT_OUT = ("name", "description", "pricing")


def _plain(value: Any) -> Any:
    if is_valueclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_plain(v) for v in value]
        return sorted(items, key=json.dumps) if isinstance(value, (set, frozenset)) else items
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def profile_digest(profile: Profile, sides: Iterable[str]) -> str:
    """``sha256:`` + 16 hex over the profile's launch settings: its common tables and the ``sides`` a
    launch uses (the launched client's, and those its spec reads: ``ToolSpec.reads_tables``)."""
    used = [s for s in dict.fromkeys(sides) if s in profile.sides]
    data = {f.name: _plain(getattr(profile, f.name) if f.name != "sides" else {s: profile.sides[s] for s in used})
            for f in fields(profile) if f.name not in LEFT_OUT}
    data["provider"].pop("website", None)
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

"""What Gemini CLI and the clients forked from it (Qwen Code) share: JSON settings files with comments,
and a layer whose keys ccs owns merged into what the client or the user wrote there. Their layers are
declared in each spec (tools/layers.py) and read by the one engine.

Client modules never import each other; both specs import this helper instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ccswitch_tui.errors import UsageError
from ccswitch_tui.safe_read import loads_json, read_text, strip_jsonc

# How a layer's value is shown (``key``, raw value → what doctor and messages print): no secrets
Show = Callable[[str, Any], Any]


def dig(data: Any, dotted: str) -> Any:
    """``data["a"]["b"]`` for ``"a.b"``; None when a part is missing or not an object."""
    for part in dotted.split("."):
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def strip_comments(text: str) -> str:
    """JSON with ``//`` and ``/* */`` comments as plain JSON (strings kept), as the clients read it."""
    return strip_jsonc(text, trailing_commas=False)


def load_settings(path: Path) -> Any:
    """A settings file's JSON value; None when absent. Raises OSError, ValueError (not JSON) or
    UnicodeDecodeError."""
    try:
        return loads_json(strip_comments(read_text(path)))
    except (FileNotFoundError, NotADirectoryError):
        return None


def merge(current: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """``current`` with ``values`` set, objects merged key by key (lists and scalars replaced)."""
    out = dict(current)
    for k, v in values.items():
        out[k] = merge(out[k] if isinstance(out.get(k), dict) else {}, v) if isinstance(v, Mapping) else v
    return out


def _drop(data: dict[str, Any], dotted: str) -> None:
    head, _, rest = dotted.partition(".")
    if not rest:
        data.pop(head, None)
    elif isinstance(data.get(head), dict):
        data[head] = dict(data[head])
        _drop(data[head], rest)


def owned_settings(path: Path, owned: Mapping[str, Any], drop: Iterable[str] = (),
                   drop_env: Callable[[str], bool] | None = None, base: Path | None = None) -> str:
    """A layer ccs writes at ``path``: the settings there (or in ``base``) with ccs's keys (``owned``)
    set, the ``drop`` keys (dotted) and the variables of its ``env`` table that ``drop_env`` picks
    removed, whatever the client or the user wrote kept. A file ccs cannot read is one clear line."""
    path = base or path
    try:
        data = load_settings(path)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read ({exc}); remove it (ccs writes a new one)") from None
    if not isinstance(data, dict):
        data = {}
    for dotted in drop:
        _drop(data, dotted)
    if drop_env is not None and isinstance(data.get("env"), dict):
        data["env"] = {k: v for k, v in data["env"].items() if not drop_env(k)}
    for table, values in owned.items():
        if isinstance(values, Mapping):
            current = got if isinstance(got := data.get(table), dict) else {}
            data[table] = merge(current, values)
        else:
            data[table] = values
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"

"""The TUI's own settings, kept across restarts in ``state/tui.json`` (today: the theme)."""

from __future__ import annotations

import json
from pathlib import Path

from ..atomic import atomic_write
from ..paths import Paths, ensure_private_dir


def settings_path(paths: Paths) -> Path:
    return paths.state / "tui.json"


def load_settings(paths: Paths) -> dict[str, str]:
    """The saved settings; a missing or damaged file reads as none (the defaults)."""
    try:
        data = json.loads(settings_path(paths).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


def save_setting(paths: Paths, name: str, value: str) -> None:
    data = load_settings(paths) | {name: value}
    ensure_private_dir(paths.state)
    atomic_write(settings_path(paths), json.dumps(data, indent=2) + "\n", mode=0o600, durable=False)

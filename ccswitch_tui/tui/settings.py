"""The TUI's own settings, kept across restarts in ``state/tui.json`` (today: the theme)."""

from __future__ import annotations

import json
from pathlib import Path

from ccswitch_tui.atomic import atomic_write
from ccswitch_tui.paths import Paths, ensure_private_dir
from ccswitch_tui.safe_read import loads_json, read_text
from ccswitch_tui.tempfiles import sweep_temp_files


def settings_path(paths: Paths) -> Path:
    return paths.state / "tui.json"


def load_settings(paths: Paths) -> dict[str, str]:
    """The saved settings; a missing or damaged file reads as none (the defaults): a FIFO, a device,
    a file too large, not UTF-8, not JSON or nested too deeply never keeps the TUI from starting."""
    try:
        data = loads_json(read_text(settings_path(paths), limit=64 * 1024))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


def save_setting(paths: Paths, name: str, value: str) -> None:
    data = load_settings(paths) | {name: value}
    ensure_private_dir(paths.state)
    # written without a lock (two TUIs may run): only a temp file this old is surely a killed writer's
    from ccswitch_tui.runs.manifests import STALE_TEMP_SECONDS  # lazy: a theme saved, not the first frame

    sweep_temp_files(paths.state, settings_path(paths).name, older_than=STALE_TEMP_SECONDS)
    atomic_write(settings_path(paths), json.dumps(data, indent=2) + "\n", mode=0o600, durable=False)

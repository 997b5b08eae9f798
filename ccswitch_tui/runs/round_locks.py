"""Locked rounds: ``state/locked-rounds.json`` maps a label to the launch id of its round's first run.

`ccs run --label L --locked` locks round L from its first run on; every later run with that label is
then held to that first run (``runs.rerun_lock``). Telling whether a label is locked costs one small
read, so a labelled launch pays nothing more. The first run's manifest says ``"locked": true`` too:
that is how a lock travels with an exported round (``ccs runs import`` puts it back), and what the
file is rebuilt from when it is damaged.
"""

from __future__ import annotations

import json
from pathlib import Path

from ccswitch_tui.atomic import atomic_write, locked
from ccswitch_tui.paths import Paths, ensure_private_dir
from ccswitch_tui.runs.manifests import load_manifests
from ccswitch_tui.safe_read import loads_json, read_text
from ccswitch_tui.tempfiles import sweep_temp_files

LOCKS_FILE = "locked-rounds.json"


def _locks_path(paths: Paths) -> Path:
    return paths.state / LOCKS_FILE


def _read_locks(paths: Paths) -> dict[str, str]:
    try:
        data = loads_json(read_text(_locks_path(paths), limit=16 * 1024 * 1024))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return _locks_from_manifests(paths)  # damaged: the manifests of the first runs still say it
    rounds = data.get("rounds") if isinstance(data, dict) else None
    if not isinstance(rounds, dict):
        return _locks_from_manifests(paths)
    return {k: v for k, v in rounds.items() if isinstance(k, str) and isinstance(v, str)}


def _locks_from_manifests(paths: Paths) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in reversed(load_manifests(paths)):  # oldest first: the first locked run of a label holds it
        if m.get("locked") is True and isinstance(m.get("label"), str):
            out.setdefault(m["label"], str(m.get("launch_id")))
    return out


def locked_first(paths: Paths, label: str) -> str | None:
    """The launch id of the first run of a locked round; None when the round is not locked."""
    if not _locks_path(paths).exists():
        return None
    return _read_locks(paths).get(label)


def lock_round(paths: Paths, label: str, launch_id: str) -> str:
    """Lock ``label`` to ``launch_id`` unless it is locked already; the first run it is locked to."""
    ensure_private_dir(paths.state)
    with locked(paths.state / ".locked-rounds.lock"):
        locks = _read_locks(paths)
        if label in locks:
            return locks[label]
        locks[label] = launch_id
        sweep_temp_files(paths.state, LOCKS_FILE)
        atomic_write(_locks_path(paths), json.dumps({"rounds": locks}, indent=1, ensure_ascii=False) + "\n")
    return launch_id




def unlock_unstarted(paths: Paths, label: str, launch_id: str) -> None:
    """Take back the lock of a round whose first run never got as far as its manifest (it could not
    start): the round is not left locked to a run that does not exist."""
    if (paths.runs / f"{launch_id}.json").exists():
        return
    with locked(paths.state / ".locked-rounds.lock"):
        locks = _read_locks(paths)
        if locks.get(label) != launch_id:
            return
        del locks[label]
        atomic_write(_locks_path(paths), json.dumps({"rounds": locks}, indent=1, ensure_ascii=False) + "\n")

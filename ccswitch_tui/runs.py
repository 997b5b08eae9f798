"""Run manifests on disk (``state/runs/<launch-id>.json``) and drift between runs.

Two runs are comparable when their base URLs, key fingerprint, models, environment hash and tool
version agree; `ccs runs diff` names the fields that do not.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .atomic import atomic_write
from .errors import UsageError
from .paths import Paths, ensure_private_dir

DRIFT_FIELDS = ("base_urls", "key_fingerprint", "models", "env_hash", "tool_version")
VOLATILE_ENV = frozenset({"CCS_LAUNCH_ID"})


def env_hash(non_secret_env: Mapping[str, str]) -> str:
    """sha256 over the sorted non-secret variables, leaving out the per-launch marker."""
    items = sorted((k, v) for k, v in non_secret_env.items() if k not in VOLATILE_ENV)
    return "sha256:" + hashlib.sha256(json.dumps(items).encode()).hexdigest()


def manifest_path(paths: Paths, launch_id: str) -> Path:
    return paths.runs / f"{launch_id}.json"


def write_manifest(paths: Paths, manifest: Mapping[str, Any]) -> Path:
    ensure_private_dir(paths.runs)
    path = manifest_path(paths, manifest["launch_id"])
    atomic_write(path, json.dumps(manifest, indent=2, sort_keys=False) + "\n", mode=0o600, durable=False)
    return path


def load_manifests(paths: Paths, profile: str | None = None) -> list[dict[str, Any]]:
    """Every readable manifest, newest first; unreadable files are left out."""
    out = []
    if not paths.runs.is_dir():
        return out
    for p in paths.runs.glob("*.json"):
        try:
            data = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and (profile is None or data.get("profile") == profile):
            out.append(data)
    out.sort(key=lambda m: (m.get("started") or "", m.get("launch_id") or ""), reverse=True)
    return out


def find_manifest(paths: Paths, ref: str) -> dict[str, Any]:
    """A manifest by launch id or a unique prefix of one."""
    if "/" in ref or ref.startswith("."):
        raise UsageError(f"invalid launch id {ref!r}")
    exact = manifest_path(paths, ref)
    if exact.is_file():
        return _read_manifest(exact)
    matches = sorted(paths.runs.glob(f"{ref}*.json")) if paths.runs.is_dir() else []
    if len(matches) == 1:
        return _read_manifest(matches[0])
    if not matches:
        raise UsageError(f"no run with launch id {ref!r}; see `ccs runs`")
    raise UsageError(f"launch id prefix {ref!r} matches {len(matches)} runs; give more characters")


def _read_manifest(path: Path) -> dict[str, Any]:
    """One manifest asked for by id; a damaged one is bad input (one line), not an internal error."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable run manifest ({exc}); remove it or pick another run") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: not a run manifest (no JSON object); remove it or pick another run")
    data.setdefault("launch_id", path.stem)
    return data


def drift(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """The comparison fields that differ between two manifests."""
    return [f for f in DRIFT_FIELDS if a.get(f) != b.get(f)]


def user_argv(manifest: Mapping[str, Any]) -> list[str]:
    """The run's argv as the user gave it: without the options ccs adds to Claude Code's
    (``--settings <ccs-settings.json>``, ``--setting-sources user``)."""
    argv = [str(a) for a in manifest.get("argv") or []]
    if manifest.get("tool") != "claude" or not argv:
        return argv
    out, rest = argv[:1], argv[1:]
    while len(rest) >= 2 and (rest[:2] == ["--setting-sources", "user"]
                              or (rest[0] == "--settings" and rest[1].endswith("ccs-settings.json"))):
        rest = rest[2:]
    return out + rest


def diff_runs(manifests: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each run after the first against the first: which fields drifted, with both values."""
    base = manifests[0]
    out = []
    for m in manifests[1:]:
        fields = drift(base, m)
        out.append({
            "launch_id": m["launch_id"],
            "against": base["launch_id"],
            "drifted": fields,
            "values": {f: {"base": base.get(f), "run": m.get(f)} for f in fields},
        })
    return out

"""Run manifests on disk (``state/runs/<launch-id>.json``) and drift between runs.

Two runs are comparable when their base URLs, key fingerprint, models, environment and tool
version agree, and, when both were recorded, the models requested and served, the endpoints
reached and the request counts per path; `ccs runs diff` names the fields (and variables) that
do not. Terminal and login-session variables (TERM, COLORTERM, DISPLAY, ...) never count.
"""

from __future__ import annotations

import glob
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ccswitch_tui.atomic import atomic_write
from ccswitch_tui.errors import UsageError
from ccswitch_tui.paths import Paths, ensure_private_dir
from ccswitch_tui.safe_read import loads_json, read_text
from ccswitch_tui.tempfiles import sweep_temp_files

DRIFT_FIELDS = ("base_urls", "key_fingerprint", "models", "env", "tool_version")
OBSERVED_FIELDS = ("models_requested", "models_served", "endpoints", "request_counts")
VOLATILE_ENV = frozenset({"CCS_LAUNCH_ID"})
# Variables that describe the terminal or the login session, not where requests go.
SESSION_ENV = frozenset({"TERM", "TERMINFO", "COLORTERM", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "DISPLAY",
                         "WAYLAND_DISPLAY", "SSH_AUTH_SOCK", "XDG_RUNTIME_DIR", "CCS_LAUNCH_ID"})
DRIFT_EXIT = 3  # `ccs runs diff` when runs drifted


def env_hash(non_secret_env: Mapping[str, str]) -> str:
    """sha256 over the sorted non-secret variables, leaving out the per-launch marker."""
    items = sorted((k, v) for k, v in non_secret_env.items() if k not in VOLATILE_ENV)
    return "sha256:" + hashlib.sha256(json.dumps(items).encode()).hexdigest()


def env_digests(non_secret_env: Mapping[str, str]) -> dict[str, str]:
    """Per-variable digests (12 hex of sha256), so a diff can name what changed without the manifest
    keeping the values."""
    return {k: hashlib.sha256(v.encode()).hexdigest()[:12] for k, v in sorted(non_secret_env.items())
            if k not in VOLATILE_ENV}


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
    sweep_temp_files(paths.runs, older_than=STALE_TEMP_SECONDS, suffix=".json")
    for p in paths.runs.glob("*.json"):
        try:
            data = loads_json(read_text(p))
        except (OSError, ValueError):  # unreadable, not a regular file, not UTF-8, not JSON, too deep
            continue
        if isinstance(data, dict):
            data = well_typed(data, p)
            if profile is None or data.get("profile") == profile:
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
    matches = sorted(paths.runs.glob(f"{glob.escape(ref)}*.json")) if paths.runs.is_dir() else []
    if len(matches) == 1:
        return _read_manifest(matches[0])
    if not matches:
        raise UsageError(f"no run with launch id {ref!r}; see `ccs runs`")
    raise UsageError(f"launch id prefix {ref!r} matches {len(matches)} runs; give more characters")


def _read_manifest(path: Path) -> dict[str, Any]:
    """One manifest asked for by id; a damaged one is bad input (one line), not an internal error."""
    try:
        data = loads_json(read_text(path))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable run manifest ({exc}); remove it or pick another run") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: not a run manifest (no JSON object); remove it or pick another run")
    return well_typed(data, path)


TEXT_FIELDS = ("launch_id", "profile", "tool", "started", "ended", "key_id", "key_fingerprint", "cwd",
               "executable", "env_hash", "tool_version", "ccs_version")
STALE_TEMP_SECONDS = 3600  # manifests are written without a lock: only temp files this old are surely dead


def well_typed(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """A manifest whose fields have the types ccs reads them as. A hand-edited or damaged field is
    shown as its JSON text (a string), not trusted as what it claims to be."""
    out = dict(data)
    out.setdefault("launch_id", path.stem)
    for f in TEXT_FIELDS:
        if f in out and out[f] is not None and not isinstance(out[f], str):
            out[f] = json.dumps(out[f])
    if not isinstance(out.get("exit_status"), (int, type(None))) or isinstance(out.get("exit_status"), bool):
        out["exit_status"] = json.dumps(out["exit_status"])
    argv = out.get("argv")
    if argv is not None:
        out["argv"] = [a if isinstance(a, str) else json.dumps(a) for a in argv] if isinstance(argv, list) \
            else [json.dumps(argv)]
    return out


def observed(paths: Paths | None, m: Mapping[str, Any]) -> dict[str, Any] | None:
    """The request summary of a recorded run: the manifest's own, or (while it runs) one made from
    its records so far. None for a run that was not recorded."""
    if isinstance(m.get("requests"), dict):
        return m["requests"]
    rec_info = m.get("recording")
    if paths is None or not isinstance(rec_info, dict) or not isinstance(rec_info.get("records"), str):
        return None
    from ccswitch_tui.bridge.records import read_records, summarize

    name = Path(rec_info["records"]).name
    return summarize(read_records(paths.runs / name), (m.get("models") or {}).values())


def observed_values(summary: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "models_requested": sorted(summary.get("models_requested") or {}),
        "models_served": sorted(summary.get("models_served") or {}),
        "endpoints": sorted(summary.get("endpoints") or {}),
        "request_counts": dict(summary.get("by_path") or {}),
    }


def env_changes(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, list[str]] | None:
    """Names of the variables added, removed and changed from ``a`` to ``b`` (session variables left
    out); None when the manifests do not keep per-variable digests (older ones)."""
    da, db = a.get("env_digests"), b.get("env_digests")
    if not isinstance(da, dict) or not isinstance(db, dict):
        return None
    ka = {k for k in da if k not in SESSION_ENV}
    kb = {k for k in db if k not in SESSION_ENV}
    return {"added": sorted(kb - ka), "removed": sorted(ka - kb),
            "changed": sorted(k for k in ka & kb if da[k] != db[k])}


def field_values(m: Mapping[str, Any], obs: Mapping[str, Any] | None) -> dict[str, Any]:
    values = {f: m.get(f) for f in DRIFT_FIELDS if f != "env"}
    values["env"] = m.get("env_hash")
    if obs is not None:
        values.update(observed_values(obs))
    return values


def compare(a: Mapping[str, Any], b: Mapping[str, Any], paths: Paths | None = None) -> dict[str, Any]:
    """``b`` against ``a``: the drifted fields, both values of each, the variables that changed."""
    oa, ob = observed(paths, a), observed(paths, b)
    va, vb = field_values(a, oa), field_values(b, ob)
    changes = env_changes(a, b)
    fields = []
    for f in DRIFT_FIELDS:
        if f == "env":
            differs = any(changes.values()) if changes is not None else va["env"] != vb["env"]
        else:
            differs = va[f] != vb[f]
        if differs:
            fields.append(f)
    notes = []
    if oa is not None and ob is not None:
        fields += [f for f in OBSERVED_FIELDS if va[f] != vb[f]]
    elif (oa is None) != (ob is None):
        notes.append(f"only {(a if ob is None else b)['launch_id']} was recorded: what was sent is not compared")
    values = {f: {"base": va[f], "run": vb[f]} for f in fields if f != "env"}
    if "env" in fields:
        values["env"] = {"base": va["env"], "run": vb["env"]}
    return {"drifted": fields, "values": values, "env_changes": changes if "env" in fields else None,
            "notes": notes}


def drift(a: Mapping[str, Any], b: Mapping[str, Any], paths: Paths | None = None) -> list[str]:
    """The comparison fields that differ between two manifests."""
    return compare(a, b, paths)["drifted"]


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


def diff_runs(manifests: Sequence[Mapping[str, Any]], paths: Paths | None = None) -> list[dict[str, Any]]:
    """Each run after the first against the first: which fields drifted, with both values."""
    base = manifests[0]
    return [{"launch_id": m["launch_id"], "against": base["launch_id"], **compare(base, m, paths)}
            for m in manifests[1:]]

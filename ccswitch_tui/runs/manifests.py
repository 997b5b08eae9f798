"""Run manifests on disk (``state/runs/<launch-id>.json``), read as untrusted input.

Whether two runs are comparable is ``ccswitch_tui.runs.verdict``'s to say. Terminal and
login-session variables (TERM, COLORTERM, DISPLAY, ...) never count.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ccswitch_tui import tools
from ccswitch_tui.atomic import atomic_write
from ccswitch_tui.errors import UsageError
from ccswitch_tui.paths import Paths, ensure_private_dir
from ccswitch_tui.safe_read import loads_json, read_text
from ccswitch_tui.tempfiles import sweep_temp_files
from ccswitch_tui.tools.capabilities import TrimmingArgs

DRIFT_FIELDS = ("base_urls", "key_fingerprint", "models", "env", "tool_version")
OBSERVED_FIELDS = ("models_requested", "models_served", "endpoints", "request_counts")
VOLATILE_ENV = frozenset({"CCS_LAUNCH_ID"})
# Variables that describe the terminal or the login session, not where requests go.
SESSION_ENV = frozenset({"TERM", "TERMINFO", "COLORTERM", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "DISPLAY",
                         "WAYLAND_DISPLAY", "SSH_AUTH_SOCK", "XDG_RUNTIME_DIR", "CCS_LAUNCH_ID"})
DRIFT_EXIT = 3  # `ccs runs diff` when runs drifted
# Manifests of earlier versions could hold a benchmark's whole per-task results inline (some MiB per
# million tasks); later ones keep them beside the manifest. Both are read.
MAX_MANIFEST_BYTES = 64 * 1024 * 1024


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
    manifest = {k: v for k, v in manifest.items() if k != DAMAGED}
    atomic_write(path, json.dumps(manifest, indent=2, sort_keys=False) + "\n", mode=0o600, durable=False)
    return path


def load_manifests(paths: Paths, profile: str | None = None,
                   problems: list[str] | None = None) -> list[dict[str, Any]]:
    """Every readable manifest, newest first; unreadable files are left out (and named in ``problems``)."""
    out: list[dict[str, Any]] = []
    if not paths.runs.is_dir():
        return out
    sweep_temp_files(paths.runs, older_than=STALE_TEMP_SECONDS, suffix=".json")
    for p in paths.runs.glob("*.json"):
        try:
            data = loads_json(read_text(p, MAX_MANIFEST_BYTES))
        except (OSError, ValueError) as exc:  # unreadable, not a regular file, not UTF-8, not JSON, too deep
            if problems is not None:
                problems.append(f"{p}: not a readable run manifest ({exc}); left out")
            continue
        if not isinstance(data, dict) and problems is not None:
            problems.append(f"{p}: not a run manifest (no JSON object); left out")
        if isinstance(data, dict):
            data = well_typed(data, p)
            if profile is None or data.get("profile") == profile:
                out.append(data)
    out.sort(key=lambda m: (m.get("started") or "", m.get("launch_id") or ""), reverse=True)
    return out


class AmbiguousLaunchId(UsageError):
    """A launch id prefix that more than one run starts with."""


def find_manifest(paths: Paths, ref: str) -> dict[str, Any]:
    """A manifest by launch id or a unique prefix of one."""
    if "/" in ref or ref.startswith("."):
        raise UsageError(f"invalid launch id {ref!r}")
    exact = manifest_path(paths, ref)
    if exact.is_file():
        return read_manifest(exact)
    import glob  # lazy: only a run looked up by id pays for it

    matches = sorted(paths.runs.glob(f"{glob.escape(ref)}*.json")) if paths.runs.is_dir() else []
    if len(matches) == 1:
        return read_manifest(matches[0])
    if not matches:
        raise UsageError(f"no run with launch id {ref!r}; see `ccs runs`")
    raise AmbiguousLaunchId(f"launch id prefix {ref!r} matches {len(matches)} runs; give more characters")


def read_manifest(path: Path) -> dict[str, Any]:
    """One manifest asked for by id; a damaged one is bad input (one line), not an internal error."""
    try:
        data = loads_json(read_text(path, MAX_MANIFEST_BYTES))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable run manifest ({exc}); remove it or pick another run") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: not a run manifest (no JSON object); remove it or pick another run")
    return well_typed(data, path)


TEXT_FIELDS = ("launch_id", "profile", "tool", "started", "ended", "key_id", "key_fingerprint", "cwd",
               "executable", "env_hash", "tool_version", "ccs_version", "label")
TEXT_MAPS = ("base_urls", "models")  # {name: text}
SUMMARY_COUNTS = ("by_path", "by_status", "by_outcome", "endpoints", "models_requested", "models_served", "tokens",
                  "error_classes")
SUMMARY_INTS = ("requests", "errors", "max_concurrency", "retries", "records_lost")
DAMAGED = "_damaged"  # the fields of a manifest that were not what ccs writes (never written back)
STALE_TEMP_SECONDS = 3600  # manifests are written without a lock: only temp files this old are surely dead


def well_typed(data: dict[str, Any], path: Path) -> dict[str, Any]:  # noqa: C901
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
    damaged: list[str] = []
    for f in TEXT_MAPS:
        v = out.get(f)
        if v is None:
            continue
        if not isinstance(v, dict):
            out[f] = {"(damaged)": json.dumps(v)}
            damaged.append(f)
        elif any(not isinstance(x, str) for x in v.values()):
            out[f] = {k: x if isinstance(x, str) else json.dumps(x) for k, x in v.items()}
            damaged.append(f)
    if "env_digests" in out and counts_or_texts(out["env_digests"], str) is None:
        out.pop("env_digests")
        damaged.append("env_digests")
    if "overridden" in out and (not isinstance(out["overridden"], list)
                                or any(not isinstance(x, str) for x in out["overridden"])):
        out["overridden"] = [x if isinstance(x, str) else json.dumps(x) for x in
                             (out["overridden"] if isinstance(out["overridden"], list) else [out["overridden"]])]
        damaged.append("overridden")
    if "forced" in out and not isinstance(out["forced"], bool):
        out["forced"] = bool(out["forced"])
        damaged.append("forced")
    rec = out.get("recording")
    if rec is not None and not (isinstance(rec, dict) and isinstance(rec.get("records"), str)):
        out.pop("recording")
        damaged.append("recording")
    req = out.get("requests")
    if req is not None:
        if not isinstance(req, dict):
            out.pop("requests")
            damaged.append("requests")
        else:
            req = dict(req)
            for f in SUMMARY_COUNTS:
                if f in req and counts_or_texts(req[f], int) is None:
                    req[f] = {}
                    damaged.append(f"requests.{f}")
            for f in SUMMARY_INTS:
                if f in req and (not isinstance(req[f], int) or isinstance(req[f], bool)):
                    req[f] = None
                    damaged.append(f"requests.{f}")
            out["requests"] = req
    if damaged:
        out[DAMAGED] = damaged
    return out


def counts_or_texts(value: Any, kind: type) -> dict[str, Any] | None:
    """``value`` when it is a ``{text: kind}`` mapping, else None."""
    if isinstance(value, dict) and all(isinstance(v, kind) and not isinstance(v, bool) for v in value.values()):
        return value
    return None


def records_lost(m: Mapping[str, Any]) -> int:
    """How many of a run's request records could not be written (a full disk): its counts and
    totals are that much short."""
    req = m.get("requests")
    lost = req.get("records_lost") if isinstance(req, dict) else None
    return lost if isinstance(lost, int) and not isinstance(lost, bool) and lost > 0 else 0


def lost_note(m: Mapping[str, Any]) -> str | None:
    """One line naming a run some of whose request records were lost, or None."""
    lost = records_lost(m)
    if not lost:
        return None
    return (f"run {m.get('launch_id')}: {lost} request record(s) could not be written (the disk was full?); "
            "its request counts and token totals are short by them")


def damage_note(m: Mapping[str, Any]) -> str | None:
    """One line naming a manifest whose fields were damaged, or None."""
    if not m.get(DAMAGED):
        return None
    return (f"run {m.get('launch_id')}: damaged field(s) in its manifest ({', '.join(m[DAMAGED])}): shown as their "
            "JSON text or left out; remove the file or fix the fields")


def records_file(paths: Paths, m: Mapping[str, Any]) -> Path | None:
    """The request records file a manifest names, in the runs folder (whatever folder the manifest
    says: a moved or imported run's records are beside it); None for a run that was not recorded."""
    rec_info = m.get("recording")
    if not isinstance(rec_info, dict) or not isinstance(rec_info.get("records"), str):
        return None
    return paths.runs / Path(rec_info["records"]).name


def recording_bridge(paths: Paths, launch_id: str) -> str | None:
    """The bridge address a recorded launch's manifest names; None when the launch id names no
    readable manifest of a recorded launch."""
    if not launch_id or "/" in launch_id or launch_id.startswith("."):
        return None
    try:
        m = read_manifest(manifest_path(paths, launch_id))
    except UsageError:
        return None
    rec_info = m.get("recording")
    bridge = rec_info.get("bridge") if isinstance(rec_info, dict) else None
    return bridge if isinstance(bridge, str) else None


def observed(paths: Paths | None, m: Mapping[str, Any], problems: list[str] | None = None) -> dict[str, Any] | None:
    """The request summary of a recorded run: the manifest's own, or (while it runs) one made from
    its records so far, streamed. None for a run that was not recorded. Damaged records are left
    out, and said so in ``problems``."""
    if isinstance(requests := m.get("requests"), dict):
        return requests
    records = records_file(paths, m) if paths is not None else None
    if records is None:
        return None
    # lazy: keeps ccswitch_tui.runs.record_reader off `ccs run`'s imports
    from ccswitch_tui.runs.record_reader import read_summary

    reading = read_summary(records, (m.get("models") or {}).values())
    if problems is not None:
        problems += reading.problems
    return reading.summary


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


def user_argv(manifest: Mapping[str, Any]) -> list[str]:
    """The run's argv as the user gave it: the program and the arguments typed after `--`
    (``user_args``); in a manifest written before ccs kept them, the argv without the options ccs
    adds to the client's (its spec knows which)."""
    argv = [str(a) for a in manifest.get("argv") or []]
    tool = manifest.get("tool")
    typed = manifest.get("user_args")
    if isinstance(typed, list) and argv:
        typed = [str(a) for a in typed]
        spec = tools.load().get(str(tool)) if tool in tools.names() else None
        return [argv[0], *typed] if spec is not None and spec.program else typed or argv
    if tool not in tools.names() or not argv:
        return argv
    spec = tools.load().get(str(tool))
    return spec.user_argv(argv) if isinstance(spec, TrimmingArgs) else argv

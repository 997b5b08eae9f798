"""The rerun lock: a run that would not be the same as its round's first run does not start.

`ccs run --same-as ROUND_OR_RUN` (and `ccs launch`) compares what the new run would use — its
manifest before the child starts — with the first run of the round (or the run) named, through the
one verdict (``runs.verdict``): whatever `ccs runs diff` would call drift between the two, other
than what only the run itself can tell (requests, outcome), refuses the start in one line naming
each difference (exit 3, as `ccs runs diff` on drift).

A round is locked from its first run on with `--label L --locked`: every later run with `--label L`
is then compared with that first run, `--same-as` or not (``runs.round_locks`` keeps the locks).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ccswitch_tui.errors import CcsError, UsageError
from ccswitch_tui.paths import Paths
from ccswitch_tui.runs.manifests import AmbiguousLaunchId, find_manifest, load_manifests, manifest_path, read_manifest
from ccswitch_tui.runs.round_locks import locked_first
from ccswitch_tui.runs.verdict import OUTCOME, Difference, RunView, compare_views
from ccswitch_tui.valueclass import valueclass

# What a manifest records before its child starts and the lock compares (fields of ``runs.verdict``).
BEFORE_START = ("base_urls", "key_fingerprint", "models", "profile_digest", "env_digests", "env_names",
                "tool", "tool_version", "ccs_version")


class RerunRefused(CcsError):
    """A rerun that would not be the same as its round's first run. Exit 3: the check found drift, as
    `ccs runs diff` says with 3; a round or run that cannot be found is bad input (2)."""

    exit_code = 3


@valueclass(frozen=True)
class Baseline:
    """The run a new one must be the same as, and how it was named (for messages)."""

    manifest: Mapping[str, Any]
    what: str

    @property
    def launch_id(self) -> str:
        return str(self.manifest.get("launch_id"))

    @property
    def label(self) -> str | None:
        label = self.manifest.get("label")
        return label if isinstance(label, str) else None


# --- which run a new one must be the same as -------------------------------------------------------------

def round_first(paths: Paths, label: str) -> Mapping[str, Any] | None:
    """The first (oldest) run with ``label``, among this machine's runs and imported ones."""
    found = [m for m in load_manifests(paths) if m.get("label") == label]
    return found[-1] if found else None


def _locked_baseline(paths: Paths, label: str, first: str) -> Baseline:
    try:
        m = read_manifest(manifest_path(paths, first))
    except UsageError:
        raise UsageError(f"round {label!r} is locked to its first run {first}, which is not in {paths.runs}; "
                         f"bring it back (`ccs runs import`) or start another round with a new --label") from None
    return Baseline(m, f"the first run of locked round {label!r} ({first})")


def resolve(paths: Paths, ref: str) -> Baseline:
    """``--same-as REF``: a locked round, a launch id, a round's label, or a launch id's prefix."""
    if not ref.strip():
        raise UsageError("--same-as needs a round's label or a launch id (see `ccs runs`)")
    first = locked_first(paths, ref)
    if first is not None:
        return _locked_baseline(paths, ref, first)
    if "/" not in ref and not ref.startswith(".") and manifest_path(paths, ref).is_file():
        return Baseline(find_manifest(paths, ref), f"run {ref}")
    m = round_first(paths, ref)
    if m is not None:
        return Baseline(m, f"the first run of round {ref!r} ({m.get('launch_id')})")
    try:
        m = find_manifest(paths, ref)
    except AmbiguousLaunchId as exc:  # runs started in the same second share a long prefix
        raise UsageError(f"--same-as {ref!r}: no round has this label, and the {exc}") from None
    except UsageError:
        raise UsageError(f"--same-as {ref!r}: no round has this label and no run this launch id; "
                         "see `ccs runs`") from None
    return Baseline(m, f"run {m.get('launch_id')}")


def baseline_for(paths: Paths, same_as: str | None, label: str | None, lock: bool) -> Baseline | None:
    """The run a new run (with these options) must be the same as, or None when nothing binds it."""
    if lock and not label:
        raise UsageError("--locked locks a round: name it with --label LABEL")
    if same_as is not None:
        return resolve(paths, same_as)
    if label is None:
        return None
    first = locked_first(paths, label)
    if first is not None:
        return _locked_baseline(paths, label, first)
    if lock:  # locking a round that already has runs: from its first run on
        m = round_first(paths, label)
        return Baseline(m, f"the first run of round {label!r} ({m.get('launch_id')})") if m else None
    return None


# --- the comparison ------------------------------------------------------------------------------------

def differences(baseline: Baseline, would_be: Mapping[str, Any], paths: Paths) -> list[Difference]:
    """What the verdict finds between the baseline and the run about to start, but for what only a
    run can tell (requests, its outcome)."""
    verdict = compare_views(RunView(baseline.manifest, None, [], paths), RunView(would_be, None, [], paths))
    return [d for d in verdict.differences if d.kind != OUTCOME]


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text if len(text) <= 120 else text[:119] + "…"


def describe(d: Difference) -> str:
    if d.field == "fingerprint_salt":
        return f"fingerprint_salt {d.base} -> {d.run} ({d.cause})"
    if d.field in ("env", "proxy") and d.cause:
        return f"{d.field}: {d.cause if d.field == 'env' else ' '.join(d.run or [])}"
    text = f"{d.field} {_shown(d.base)} -> {_shown(d.run)}"
    return text + (f" ({d.cause})" if d.cause else "")


def check(baseline: Baseline, would_be: Mapping[str, Any], paths: Paths) -> list[str]:
    """Refuse (RerunRefused) unless nothing differs; the warnings to print when it may start (what the
    baseline's manifest does not record cannot be compared)."""
    diffs = differences(baseline, would_be, paths)
    if diffs:
        raise RerunRefused(f"refusing to start: this run would not be the same as {baseline.what}: "
                           + "; ".join(describe(d) for d in diffs)
                           + "; undo the change, or start another round with a new --label")
    missing = [f for f in BEFORE_START if f not in baseline.manifest and f in would_be]
    if missing:
        return [f"{baseline.what} was launched by an earlier ccs that did not record {', '.join(missing)}: "
                "those are not compared"]
    return []

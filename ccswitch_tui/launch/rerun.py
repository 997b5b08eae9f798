"""A launch held to its round (`--same-as`, `--label L --locked`): before the fork, the manifest the run
would write is compared with its baseline (``runs.rerun_lock``); once it runs, a recorded run's served
models and endpoints are followed (``runs.live_drift``)."""

from __future__ import annotations

from typing import Any

from ccswitch_tui.launch.launcher import Prepared, manifest_for
from ccswitch_tui.paths import Paths
from ccswitch_tui.runs import rerun_lock
from ccswitch_tui.runs.live_drift import DriftWatch
from ccswitch_tui.runs.round_locks import lock_round
from ccswitch_tui.runs.verdict import live_expectations, view
from ccswitch_tui.tools.spec import LaunchHook
from ccswitch_tui.valueclass import field, valueclass


@valueclass(frozen=True)
class HeldLaunch:
    """What a held launch adds: its label, manifest fields (``same_as``, ``locked``), hooks, warnings."""

    label: str | None
    fields: dict[str, Any] = field(default_factory=dict)
    hooks: tuple[LaunchHook, ...] = ()
    warnings: tuple[str, ...] = ()


def hold(prep: Prepared, paths: Paths, *, same_as: str | None, label: str | None, lock: bool) -> HeldLaunch:
    """Refuse (``rerun_lock.RerunRefused``, exit 3) a launch that would not be the same as its baseline;
    lock the round when asked. No baseline and no lock: the launch goes as it is."""
    baseline = rerun_lock.baseline_for(paths, same_as, label, lock)
    label = label or (baseline.label if baseline is not None else None)
    launch_id = prep.plan.launch_id
    warnings: list[str] = []
    if baseline is not None:
        warnings += _check(prep, paths, baseline, label)
    fields: dict[str, Any] = {}
    if lock and label is not None:
        wanted = baseline.launch_id if baseline is not None and baseline.label == label else launch_id
        first = lock_round(paths, label, wanted)
        if first == launch_id:
            fields["locked"] = True
        elif first != wanted:  # another launch locked the round meanwhile: held to its first run instead
            baseline = rerun_lock.resolve(paths, label)
            warnings += _check(prep, paths, baseline, label)
    hooks: list[LaunchHook] = []
    if baseline is not None:
        fields["same_as"] = baseline.launch_id
        expected = live_expectations(view(baseline.manifest, paths))
        if expected is not None:
            hooks.append(DriftWatch(expected, baseline.what))
    return HeldLaunch(label, fields, tuple(hooks), tuple(warnings))


def _check(prep: Prepared, paths: Paths, baseline: rerun_lock.Baseline, label: str | None) -> list[str]:
    would_be = manifest_for(prep, {}) | ({"label": label} if label else {})
    return rerun_lock.check(baseline, would_be, paths)

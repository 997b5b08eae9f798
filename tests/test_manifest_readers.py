"""Only ``runs/`` reads what the runs folder holds: a manifest, or the records file a manifest names,
is found and read through runs/ functions (``read_manifest``, ``find_manifest``, ``load_manifests``,
``records_file``, ``recording_bridge``), which read it as untrusted input (size-bounded, regular
files only, fields type-checked). Outside runs/, nothing builds a path inside the runs folder, but
the bridge, which writes its own records file there."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ccswitch_tui.paths import resolve_paths
from ccswitch_tui.runs.manifests import recording_bridge, records_file

PACKAGE = Path(__file__).resolve().parents[1] / "ccswitch_tui"
INTO_RUNS = re.compile(r"(?:\.runs|runs_dir)\s*/")
WRITERS = {"bridge/records.py"}  # records_path: where the bridge writes a launch's request records


def test_nothing_outside_runs_builds_a_path_into_the_runs_folder():
    found = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
             if not p.relative_to(PACKAGE).as_posix().startswith("runs/") and INTO_RUNS.search(p.read_text("utf-8"))}
    assert found == WRITERS


def test_a_recorded_launchs_bridge_and_records_are_read_through_runs(tmp_path):
    """(``ccs inspect`` of a recorded child, end to end: tests/test_recording.py.)"""
    paths = resolve_paths({"CCS_HOME": str(tmp_path / "home")})
    paths.runs.mkdir(parents=True)
    lid = "20990101T000000Z-aaaaaaaa"
    recording = {"bridge": "http://127.0.0.1:5/b", "records": f"/elsewhere/{lid}.requests.jsonl"}
    (paths.runs / f"{lid}.json").write_text(json.dumps({"launch_id": lid, "recording": recording}))
    assert recording_bridge(paths, lid) == "http://127.0.0.1:5/b"
    assert records_file(paths, json.loads((paths.runs / f"{lid}.json").read_text())) == \
        paths.runs / f"{lid}.requests.jsonl"  # beside the manifest, whatever folder it names
    os.mkfifo(paths.runs / "20990101T000001Z-bbbbbbbb.json")  # read, it would block
    for bad in ("", "../x", ".hidden", "20990101T000001Z-bbbbbbbb", "nope"):  # a FIFO, a missing one
        assert recording_bridge(paths, bad) is None
    (paths.runs / "20990101T000002Z-cccccccc.json").write_text("[" * 100_000)  # nested past any depth
    assert recording_bridge(paths, "20990101T000002Z-cccccccc") is None

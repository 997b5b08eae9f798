"""Run manifests asked for by id: damaged files are one line of bad input, not an internal error."""

from __future__ import annotations

from pathlib import Path

import pytest

from ccswitch_tui.errors import UsageError
from ccswitch_tui.paths import Paths
from ccswitch_tui.runs.manifests import find_manifest, write_manifest
from ccswitch_tui.runs.verdict import diff_runs


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    return Paths(profiles=tmp_path / "profiles", state=tmp_path / "state")


@pytest.mark.parametrize("content", ["{broken", "[1, 2]", "\xff"])
def test_damaged_manifest_is_bad_input(paths: Paths, content: str):
    write_manifest(paths, {"launch_id": "20990101T000000Z-aaaaaaaa", "profile": "p"})
    damaged = paths.runs / "20990101T000001Z-bbbbbbbb.json"
    damaged.write_bytes(content.encode("latin-1"))
    for ref in ("20990101T000001Z-bbbbbbbb", "20990101T000001Z"):
        with pytest.raises(UsageError, match="not a (readable )?run manifest") as info:
            find_manifest(paths, ref)
        assert str(damaged) in str(info.value) and "\n" not in str(info.value)


def test_manifest_without_launch_id_is_named_by_its_file(paths: Paths):
    write_manifest(paths, {"launch_id": "20990101T000000Z-aaaaaaaa", "key_fingerprint": "fp:1"})
    (paths.runs / "20990101T000001Z-bbbbbbbb.json").write_text('{"key_fingerprint": "fp:2"}')
    base, other = (find_manifest(paths, i) for i in ("20990101T000000Z-aaaaaaaa", "20990101T000001Z-bbbbbbbb"))
    (result,) = diff_runs([base, other])
    assert result["launch_id"] == "20990101T000001Z-bbbbbbbb" and result["drifted"] == ["key_fingerprint"]


def test_a_launch_id_from_a_process_environment_is_never_a_path(tmp_path):
    """A daemon's CCS_LAUNCH_ID is anyone's text: `../x` must not read a file outside runs/."""
    from ccswitch_tui.launch.launches import Launches
    from ccswitch_tui.paths import Paths

    paths = Paths(profiles=tmp_path / "p", state=tmp_path / "s")
    paths.runs.mkdir(parents=True)
    (tmp_path / "s" / "outside.json").write_text('{"launch_id": "outside", "exit_status": null}')
    (paths.runs / "20260101T000000Z-abcd1234.json").write_text('{"launch_id": "20260101T000000Z-abcd1234"}')
    runs = Launches(paths)
    assert runs.manifest("../outside") is None and runs.manifest(".x") is None and runs.manifest("") is None
    assert runs.manifest("20260101T000000Z-abcd1234")["launch_id"] == "20260101T000000Z-abcd1234"
    assert runs.manifest("20260101T000000Z-ffff0000") is None

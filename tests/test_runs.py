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

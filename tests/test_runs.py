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


def test_runs_lists_the_argv_as_typed_and_the_round(ccs, base_env, tmp_path):
    """A Codex launch showed `codex -c 'model="gpt-4.1"' -c 'model_provider=…` (the options ccs adds)
    cut off instead of `codex exec hi`; and a run's round (its --label) was not in the list."""
    import json

    bindir = tmp_path / "bin"
    bindir.mkdir()
    for program in ("codex", "claude"):
        (bindir / program).write_text("#!/bin/sh\nexit 0\n")
        (bindir / program).chmod(0o755)
    env = {**base_env, "PATH": f"{bindir}:{base_env['PATH']}", "X_KEY": "sk-runs-test-0123456789abcdef"}
    r = ccs("new", "p", "--base-url", "https://gw.invalid/v1", "--key", "env:X_KEY", "--codex-model", "gpt-4.1",
            "--claude-model", "m", env=env)
    assert r.returncode == 0, r.stderr
    project = tmp_path / "repo"
    (project / ".codex").mkdir(parents=True)
    (project / ".codex" / "config.toml").write_text('model = "another"\n')  # ccs beats it with -c options
    r = ccs("launch", "--label", "round-1", "p", "codex", "--", "exec", "hi", env=env, cwd=project)
    assert r.returncode == 0, r.stderr
    assert ccs("launch", "p", "claude", "--", "-p", "hello there", env=env).returncode == 0
    assert ccs("run", "--label", "round-2", "p", "--", "true", "a b", env=env).returncode == 0
    out = ccs("runs", env=env).stdout
    header, *rows = out.splitlines()
    assert header.split()[-3:] == ["LABEL", "KEY", "ARGV"], header
    label = header.index("LABEL")
    assert rows[0][label:].split()[0] == "round-2" and rows[0].endswith("true 'a b'"), rows[0]
    assert rows[1][label:].split()[0] == "-" and rows[1].endswith("claude -p 'hello there'"), rows[1]
    assert rows[2][label:].split()[0] == "round-1" and rows[2].endswith("codex exec hi"), rows[2]
    runs = json.loads(ccs("runs", "--json", env=env).stdout)["runs"]
    assert "-c" in runs[2]["argv"] and runs[2]["user_args"] == ["exec", "hi"]  # the manifest keeps all of it

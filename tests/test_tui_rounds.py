"""The Runs tab's Rounds view (u): the gap per round drawn as bars, oldest round first, with the verdicts
beside them and what changed between rounds, the same rows as `ccs runs report --rounds`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_tui_support import build_app, parent_env, plain, select, settle

from ccswitch_tui.paths import Paths
from ccswitch_tui.runs.manifests import write_manifest

KEY = "sk-tui-rounds-0123456789abcdef"


def _runs(paths: Paths) -> None:
    """Three rounds of two reruns: a 50-point gap, then 0 with the analyzer on, then 50 again on a rotated
    key (rotated again within the round) with the analyzer off: two things changed."""
    def m(n: int, label: str, results: dict, fp: str, argv: list[str]) -> dict:
        return {"launch_id": f"20260101T00000{n}Z-0000000{n}", "profile": "gamma", "tool": "run",
                "argv": argv, "started": f"2026-01-01T00:00:0{n}Z", "ended": f"2026-01-01T00:00:0{n}Z",
                "exit_status": 0, "base_urls": {"OPENAI_BASE_URL": "https://gw.example/v1"}, "models": {},
                "key_id": "k", "key_fingerprint": fp, "env_hash": "sha256:1", "label": label,
                "outcomes": {"results": results}}

    plain_argv, analyzer = ["python", "agent.py"], ["python", "agent.py", "--enable-consistency-analyzer"]
    write_manifest(paths, m(1, "baseline", {"a": 1, "b": 1}, "fp:1", plain_argv))
    write_manifest(paths, m(2, "baseline", {"a": 1, "b": 0}, "fp:1", plain_argv))
    write_manifest(paths, m(3, "analyzer", {"a": 1, "b": 1}, "fp:1", analyzer))
    write_manifest(paths, m(4, "analyzer", {"a": 1, "b": 1}, "fp:1", analyzer))
    write_manifest(paths, m(5, "key-drift", {"a": 1, "b": 0}, "fp:2", plain_argv))
    write_manifest(paths, m(6, "key-drift", {"a": 1, "b": 1}, "fp:3", plain_argv))  # rotated within it


@pytest.mark.parametrize("size", [(80, 40), (130, 44)])
async def test_rounds_view_draws_the_gap_per_round(ccs_home: Paths, size):
    env = {**parent_env(), "CCS_HOME": os.environ["CCS_HOME"], "GAMMA_KEY": KEY}
    r = subprocess.run([sys.executable, "-m", "ccswitch_tui", "new", "gamma", "--base-url", "https://gw.example/v1",
                        "--key", "env:GAMMA_KEY"], env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    _runs(ccs_home)
    app = build_app(ccs_home, env, Path.cwd())
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await select(pilot, "gamma")
        app.detail_pane.show_tab("runs")
        await settle(pilot)
        assert app.query_one("#runs-table").display and not app.query_one("#rounds-scroll").display
        await pilot.press("u")
        await settle(pilot)
        assert not app.query_one("#runs-table").display and app.query_one("#rounds-scroll").display
        assert not app.query_one("#requests-table").display
        text = plain(app, "#rounds-body")
        lines = text.splitlines()
        base, analyzer, drift = (next(x for x in lines if x.startswith(n)) for n in ("baseline ", "analyzer ",
                                                                                     "key-drift "))
        # The bars: the two 25-point gaps as long as each other, the 0-point one empty.
        assert base.count("█") == drift.count("█") >= 8 and "█" not in analyzer
        assert "25.0" in base and "0.0" in analyzer and base.rstrip().endswith("clean")
        assert drift.rstrip().endswith("not comparable")
        assert lines.index(base) < lines.index(analyzer) < lines.index(drift)  # oldest round first
        assert "changed since analyzer: key fp:1 -> fp:2 fp:3; command -" in text
        assert "2 variables changed since analyzer (key, command)" in text
        assert "changed since baseline: command +--enable-consistency-analyzer" in text
        width = size[0]
        region = app.query_one("#rounds-body").region
        assert region.right <= width
        await pilot.press("u")
        await settle(pilot)
        assert app.query_one("#runs-table").display and not app.query_one("#rounds-scroll").display

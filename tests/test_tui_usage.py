"""The TUI's Overview shows the profile's usage of the last 7 days (the same totals as `ccs usage`),
and its header says which profile a tool started by name here would get, and why."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from test_tui_support import build_app, parent_env, plain, select, settle

from ccswitch_tui.launch import shim_setup, shims
from ccswitch_tui.paths import Paths
from ccswitch_tui.runs.manifests import write_manifest

SIZE = (110, 60)


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def test_overview_shows_the_last_7_days(home: Paths):
    now = datetime.now(timezone.utc)
    profile = home.profiles / "alpha.toml"
    profile.write_text(profile.read_text() + '\n[pricing."gpt-4.1"]\ninput = 1000000\noutput = 2000000\n')
    record = {"outcome": "ok", "model_served": "gpt-4.1", "input_tokens": 3, "output_tokens": 2,
              "cached_tokens": 1, "reasoning_tokens": 0}
    for launch_id, started, outcome in (("recent", now - timedelta(days=1), "ok"), ("today", now, "upstream-error"),
                                        ("old", now - timedelta(days=30), "ok")):
        write_manifest(home, {"launch_id": launch_id, "profile": "alpha", "tool": "codex", "started": iso(started),
                              "ended": iso(started), "exit_status": 0,
                              "recording": {"records": f"{launch_id}.requests.jsonl"}})
        (home.runs / f"{launch_id}.requests.jsonl").write_text(
            json.dumps({**record, "started": iso(started), "outcome": outcome}) + "\n")
    write_manifest(home, {"launch_id": "plain", "profile": "alpha", "tool": "claude", "started": iso(now),
                          "ended": iso(now), "exit_status": 0})
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        text = plain(app, "#overview-body")
        assert "Usage, last 7 days" in text
        assert "requests  2  2 recorded run(s)" in text  # the 30-day-old run is left out
        assert "input 6  output 4  cached 2  reasoning 0" in text
        assert "errors  1" in text and "cost  14.0000" in text
        assert "not recorded, so not counted: 1 run(s) (alpha: 1)" in text
        await select(pilot, "beta")
        assert "Usage, last 7 days" not in plain(app, "#overview-body")  # no runs: no section


async def test_header_says_which_profile_a_shim_would_use_here(home: Paths, tmp_path: Path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".ccs-profile").write_text("codex=beta\n")
    shim_setup.write_selection(home.state, {"claude": "alpha", "codex": "alpha"})
    programs = {"claude": "claude", "codex": "codex"}
    shim_setup.install(shims.shim_dir(home.state, {}), programs, home.profiles, home.state)
    app = build_app(home, parent_env(), cwd=project)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "claude→alpha (ccs use)" in app.sub_title
        assert "codex→beta (.ccs-profile)" in app.sub_title and "not on PATH" in app.sub_title

"""The Runs tab and a recorded run: its request summary and its requests, one row each, updated
while the run goes on. A real `ccs run --record` child talks to a real loopback provider."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from provider_stub import ProviderStub
from test_tui_support import build_app, parent_env, plain, select, settle, wait_until

from ccswitch_tui.paths import Paths

SIZE = (130, 44)
KEY = "sk-tui-record-0123456789abcdef"

PROGRAM = textwrap.dedent('''
    import os, sys, time
    import openai
    flags = sys.argv[1]
    client = openai.OpenAI(max_retries=0)
    client.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "one"}])
    while not os.path.exists(flags + ".go"):
        time.sleep(0.05)
    client.responses.create(model="gpt-4o", input="two")
    while not os.path.exists(flags + ".end"):
        time.sleep(0.05)
''')


def flat(app, selector: str) -> str:
    """A widget's text with runs of spaces folded: labels are padded to a column."""
    return " ".join(plain(app, selector).split())


def rows(app) -> list[list[str]]:
    table = app.query_one("#requests-table")
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


@pytest.fixture
def provider():
    s = ProviderStub()
    yield s
    s.close()


async def test_runs_tab_follows_a_recorded_run_live(ccs_home: Paths, provider, tmp_path: Path):
    env = {**parent_env(), "CCS_HOME": os.environ["CCS_HOME"], "GAMMA_KEY": KEY}
    r = subprocess.run([sys.executable, "-m", "ccswitch_tui", "new", "gamma", "--base-url", provider.url + "/v1",
                        "--key", "env:GAMMA_KEY"], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    program, flags = tmp_path / "prog.py", tmp_path / "flag"
    program.write_text(PROGRAM)
    child = subprocess.Popen([sys.executable, "-m", "ccswitch_tui", "run", "--record", "gamma", "--", sys.executable,
                              str(program), str(flags)], env=env, stdin=subprocess.DEVNULL)
    try:
        app = build_app(ccs_home, env, runs_interval=0.2)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await select(pilot, "gamma")
            app.detail_pane.show_tab("runs")
            await wait_until(pilot, lambda: len(rows(app)) == 1, what="the first request")
            (first,) = rows(app)
            assert first[0] == "1" and first[2] == "POST /chat/completions" and first[3] == "gpt-4.1"
            assert first[4:6] == ["200", "ok"] and first[8:] == ["11", "6"]
            assert "Requests (live)" in plain(app, "#run-detail") and "running" in plain(app, "#run-detail")

            flags.with_name("flag.go").touch()
            await wait_until(pilot, lambda: len(rows(app)) == 2, what="the second request, without a keypress")
            assert rows(app)[1][2] == "POST /responses" and rows(app)[1][3] == "gpt-4o"
            await wait_until(pilot, lambda: "requests 2, at most 1 at once" in flat(app, "#run-detail"),
                             what="the summary to follow")

            flags.with_name("flag.end").touch()
            assert child.wait(30) == 0
            await wait_until(pilot, lambda: "(live)" not in plain(app, "#run-detail"), what="the end of the run")
            await settle(pilot)
            detail = flat(app, "#run-detail")
            assert "status 0" in detail and "served gpt-4.1 ×1, gpt-4o ×1" in detail
            assert "tokens input 23 output 13" in detail and "errors 0" in detail
            screen = app.export_screenshot()
            assert "/chat/completions" in screen and "/responses" in screen
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


async def test_a_run_without_recording_shows_no_requests_table(ccs_home: Paths, tmp_path: Path):
    env = {**parent_env(), "CCS_HOME": os.environ["CCS_HOME"], "GAMMA_KEY": KEY}
    for args in (["new", "gamma", "--base-url", "http://127.0.0.1:9/v1", "--key", "env:GAMMA_KEY"],
                 ["run", "gamma", "--", "true"]):
        r = subprocess.run([sys.executable, "-m", "ccswitch_tui", *args], env=env, capture_output=True, text=True,
                           stdin=subprocess.DEVNULL)
        assert r.returncode == 0, r.stderr
    app = build_app(ccs_home, env)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "gamma")
        app.detail_pane.show_tab("runs")
        await settle(pilot)
        assert app.query_one("#requests-table").display is False
        assert "Requests" not in plain(app, "#run-detail")

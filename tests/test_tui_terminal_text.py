"""The TUI shows text from elsewhere without obeying it: escape sequences, a C1 control and bidi
overrides in a hostile repository's settings, the shell ccs started from, a provider's served model
and error body (recorded, and answered to the endpoint check) and a real process's directory and
environment reach the panes, the tables and the notifications escaped, never raw on the screen."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from provider_stub import ProviderStub
from test_terminal_text import PAYLOADS, SCHEMA, marker, raw_controls
from test_tui_support import build_app, notifications, parent_env, plain, select, settle, wait_until

from ccswitch_tui.paths import Paths
from ccswitch_tui.profiles.presets import new_profile_text
from ccswitch_tui.profiles.store import Store
from ccswitch_tui.terminal_text import visible
from ccswitch_tui.tui.widgets.running import RunningView

SIZE = (140, 46)

PROGRAM = textwrap.dedent("""
    import json, os, urllib.request, urllib.error
    base = os.environ["OPENAI_BASE_URL"].rstrip("/")
    for path, body in (("/responses", {"model": "gpt-4.1", "input": "hi"}),
                       ("/chat/completions", {"model": "gpt-4.1", "messages": []})):
        req = urllib.request.Request(base + path, json.dumps(body).encode(), method="POST", headers={
            "content-type": "application/json", "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
        try:
            urllib.request.urlopen(req, timeout=30).read()
        except urllib.error.HTTPError as exc:
            exc.read()
""")


@pytest.fixture
def provider():
    s = ProviderStub()
    yield s
    s.close()


def table_text(app, selector: str) -> str:
    table = app.query_one(selector)
    return "\n".join(" ".join(str(c) for c in table.get_row_at(i)) for i in range(table.row_count))


def assert_screen_clean(app, *selectors: str) -> str:
    """The rendered screen and the named widgets' text hold no raw control character; returns the text."""
    screen = app.export_screenshot()
    assert not raw_controls(screen), raw_controls(screen)
    texts = [plain(app, s) if not s.endswith("-table") and s != "#procs" else table_text(app, s) for s in selectors]
    for s, t in zip(selectors, texts, strict=True):
        assert not raw_controls(t), (s, t)
    for n in notifications(app):
        assert not raw_controls(n), n
    return "\n".join(texts)


@pytest.mark.parametrize("kind", PAYLOADS)
async def test_the_tui_shows_foreign_text_escaped(home: Paths, key_id: str, provider, tmp_path: Path, kind):
    p = PAYLOADS[kind]
    mark = marker(p)
    repo = tmp_path / "repo"
    (repo / ".claude").mkdir(parents=True)
    (repo / ".claude" / "settings.json").write_text(json.dumps({"env": {
        "ANTHROPIC_BASE_URL": f"http://evil.example/{p}", "ANTHROPIC_MODEL": p}, "model": p}))
    (repo / ".gemini").mkdir()
    (repo / ".gemini" / "settings.json").write_text(json.dumps({"model": {"name": p}}))

    # a recorded run whose provider serves a model named with the text, and answers errors with it
    provider.served = f"served {p}"
    body = {"error": {"message": f"upstream says {p} [b]MARKUP[/b] [/]", "type": p}}  # markup stays literal too
    provider.fault = {"/chat/completions": ("status", 400, body), "/v1/messages": ("status", 400, body),
                      "/responses": ("status", 400, body)}
    Store(home).save_text("rec", new_profile_text("rec", "taotoken", base_url=provider.url + "/v1", key=key_id),
                          create=True)
    # a profile naming its provider with the text: refused at load (listed broken, the error shown),
    # or, for bidi characters, which a profile may hold, loaded and shown escaped
    hostile = new_profile_text("hostile", "taotoken", key=key_id).replace(
        'name = "TaoToken"', f"name = {json.dumps('Relay ' + p)}").replace(
        "description = ", f"description = {json.dumps(p)}\n# ", 1)
    assert json.dumps("Relay " + p) in hostile
    (home.profiles / "hostile.toml").write_text(hostile)
    user_home = tmp_path / "user-home"
    (user_home / ".cc-switch").mkdir(parents=True)
    con = sqlite3.connect(user_home / ".cc-switch" / "cc-switch.db")
    con.execute(SCHEMA)
    con.execute("INSERT INTO providers (id, app_type, name, settings_config, notes, meta) VALUES (?,?,?,?,?,?)",
                ("r1", "claude", f"Relay {p}", json.dumps({"env": {"ANTHROPIC_BASE_URL": f"https://relay.example/{p}",
                                                                  "ANTHROPIC_AUTH_TOKEN": "sk-relay-" + "a1" * 16}}),
                 f"notes {p}", "{}"))
    con.commit()
    con.close()
    env = {**parent_env(), "CCS_HOME": str(home.profiles.parent), "ANTHROPIC_BASE_URL": f"http://evil.example/{p}",
           "HOSTILE_NAME": p, "HOME": str(user_home)}
    program = tmp_path / "prog.py"
    program.write_text(PROGRAM)
    provider.fault.pop("/responses")
    r = subprocess.run([sys.executable, "-m", "ccswitch_tui", "run", "--record", "rec", "--", sys.executable,
                        str(program)], env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert not raw_controls(r.stdout + r.stderr)
    provider.fault["/responses"] = ("status", 400, body)  # the endpoint check gets the error body

    # a real process in a directory named with the text, the text in its environment
    where = tmp_path / f"dir{p.replace('/', '_')}"
    where.mkdir()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], cwd=where, env={
        "PATH": "/usr/bin:/bin", "ANTHROPIC_BASE_URL": f"http://evil.example/{p}", "ANTHROPIC_MODEL": p,
        "CCS_TOOL": p},  # the process list's tool column comes from it
        stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not os.path.exists(f"/proc/{child.pid}/cwd"):
            time.sleep(0.01)
        app = build_app(home, env, cwd=repo, running_interval=0.3, runs_interval=0.2)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            # the profile list, and the hostile profile's overview (its error, or its values)
            await select(pilot, "hostile")
            assert_screen_clean(app, "#overview-body")
            overview = plain(app, "#overview-body")
            assert (mark in overview) if kind == "bidi" else ("control character" in overview)

            # the shell ccs started from and the repository's settings, in every tab of a profile
            await select(pilot, "alpha")
            for tool in ("claude", "codex", "run"):
                app.action_set_tool(tool)
                await settle(pilot)
                for tab in ("overview", "environment", "diff"):
                    app.detail_pane.show_tab(tab)
                    await settle(pilot)
                    assert_screen_clean(app, "#overview-body", "#env-head", "#env-body", "#env-detail", "#diff-body")
            app.action_set_tool("claude")
            await settle(pilot)
            assert mark in plain(app, "#diff-body")  # shown, escaped

            # the recorded run: its summary and its requests
            await select(pilot, "rec")
            app.detail_pane.show_tab("runs")
            await wait_until(pilot, lambda: app.query_one("#requests-table").row_count == 2, what="the requests")
            await settle(pilot)
            text = assert_screen_clean(app, "#run-detail", "#requests-table")
            assert mark in text and "served" in text

            # the endpoint check: the error body in the overview and in the notification
            app.detail_pane.show_tab("overview")
            await pilot.press("p")
            await wait_until(pilot, lambda: "Endpoint check" in plain(app, "#overview-body"), what="the check")
            await settle(pilot)
            text = assert_screen_clean(app, "#overview-body")
            assert mark in text and "[b]MARKUP[/b] [/]" in text
            # a notification quoting such text (an error naming a path): literal, markup too
            app.notify(f"cannot read {p} [b]MARKUP[/b] [/]", title=f"Error {p}", severity="error")
            await settle(pilot)
            assert_screen_clean(app)
            assert any(f"Error {visible(p)}: cannot read {visible(p)} [b]MARKUP[/b] [/]" == n
                       for n in notifications(app)), notifications(app)

            # a CC Switch row's name and notes, in the import preview
            from ccswitch_tui.importers.sources import default_sources
            from ccswitch_tui.tui.screens.importing import ImportChoice, ReportScreen

            app.importer._import(default_sources(app.service.environ), ImportChoice("cc-switch", True))
            await wait_until(pilot, lambda: isinstance(app.screen, ReportScreen), what="the import report")
            await settle(pilot)
            report = str(app.screen.query_one("#report-text").content)
            assert mark in report and not raw_controls(report)
            assert_screen_clean(app)
            app.screen.dismiss(False)
            await settle(pilot)

            # the process: listed with its directory, inspected with its environment
            app.show_all_processes = True
            app.detail_pane.show_tab("running")
            view = app.query_one(RunningView)
            await wait_until(pilot, lambda: child.pid in [x.pid for x in view.processes], what="the process")
            table = app.query_one("#procs")
            table.move_cursor(row=[x.pid for x in view.processes].index(child.pid))
            await wait_until(pilot, lambda: f"{child.pid}" in plain(app, "#inspect-body"), what="the inspection")
            await settle(pilot)
            text = assert_screen_clean(app, "#procs", "#inspect-body", "#findings", "#finding-detail", "#inspect-diff")
            assert mark in text
    finally:
        child.kill()
        child.wait()

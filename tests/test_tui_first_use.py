"""The TUI as a new user meets it, driven by a pilot against a temporary CCS_HOME and the real Secret
Service: what the screen says (at 80x24 where size matters) and what is left in files."""

from __future__ import annotations

import fcntl
import os
import pty
import select as select_mod
import signal
import struct
import sys
import termios
import time
from pathlib import Path

import pytest
from test_tui_support import (
    build_app,
    notifications,
    parent_env,
    plain,
    select,
    settle,
    wait_until,
)
from waiting import blocked_on_a_lock, until

from ccswitch_tui import tools
from ccswitch_tui.launch.environment import diff_env
from ccswitch_tui.paths import Paths

SIZE = (110, 34)
SMALL = (80, 24)


def screen_text(app) -> str:  # noqa: ANN001
    """What the terminal shows, as text (the SVG screenshot with its spaces and entities decoded)."""
    import html
    import re

    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


async def test_diff_tab_leads_with_routing_like_env_diff(home: Paths):
    env = parent_env(ANTHROPIC_BASE_URL="https://stale-gateway.example/api", PYENV_ROOT="/root/.pyenv",
                     **{f"PIP_OPTION_{i}": str(i) for i in range(40)})
    app = build_app(home, env)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        app.action_set_tool("claude")
        await settle(pilot)
        text = plain(app, "#diff-body")
        first = text.splitlines()[0]
        assert first == diff_env(env, app.detail_pane.view.plan.env,  # the core's, as `ccs env --diff`
                                 tools.load().families).summary()
        assert "~ANTHROPIC_BASE_URL" in first and "PIP_OPTION" not in first
        kept_out, rest = text.split("kept out (2)", 1)[1].split("replaced (1)", 1)
        assert "-  ANTHROPIC_API_KEY  " in kept_out and "~  ANTHROPIC_BASE_URL  " in rest.split("added (", 1)[0]
        harmless = text.split("harmless", 1)[1]  # the harmless rest: last, a row each
        assert "-  PIP_OPTION_3  3  not passed" in harmless
        assert "PIP_OPTION" not in text.split("harmless", 1)[0][len(first):]
        banner = next(line for line in text.splitlines() if line.startswith("✗"))
        assert banner.startswith("✗ 3 routing/key variable(s)")  # two kept out, one replaced


# --- r: the command's output stays until a key is pressed (a real terminal) ----------------------

def test_run_command_output_stays_until_a_key_is_pressed(home: Paths, tmp_path: Path):
    from test_tui_launch import APP_SCRIPT, Terminal, _drain_until_exit

    env = dict(os.environ, CCS_HOME=str(home.profiles.parent), TERM="xterm-256color")
    env.pop("CCS_LAUNCH_ID", None)
    pid, fd = pty.fork()
    if pid == 0:  # the child: the real app on a real terminal
        os.execvpe(sys.executable, [sys.executable, "-c", APP_SCRIPT, str(tmp_path)], env)
    try:
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        term = Terminal(fd)
        term.expect(r"key ✓")
        term.send(b"r")
        term.expect(r"Run a command with alpha")
        term.send(b"sh -c 'echo RESULT-$((40+2)); exit 4'\r")
        term.expect(r"RESULT-42")
        term.expect(r"sh exited with status 4 — press any key to return to ccs")
        deadline = time.monotonic() + 1.5  # the app must not take the screen back on its own
        while time.monotonic() < deadline:
            if select_mod.select([fd], [], [], 0.05)[0]:
                term.raw += os.read(fd, 65536)
        assert "Quit" not in term.text[term.pos:] and "alpha" not in term.text[term.pos:]
        term.send(b"x")
        term.expect(r"exited with status 4")  # back in the app, which says so
        term.send(b"q")
        status = _drain_until_exit(fd, pid)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(fd)


# --- Running tab: its keys work from any focus -----------------------------------------------------

async def test_running_tab_key_works_from_the_profile_list(home: Paths):
    app = build_app(home, running_interval=60)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("a")  # on the Overview tab it is not the Running tab's key
        await settle(pilot)
        assert app.show_all_processes is False
        await pilot.press("4")
        await settle(pilot)
        app.query_one("#profiles").focus()
        await pilot.pause()
        assert "All processes" in screen_text(app)  # the footer offers it on this tab
        await pilot.press("a")
        await settle(pilot)
        assert app.show_all_processes is True
        assert "any process with routing variables" in plain(app, "#running-status")
        assert app.focused is app.query_one("#profiles")


async def test_running_tab_shows_its_toggle_key_at_80x24(home: Paths):
    app = build_app(home, running_interval=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await wait_until(pilot, lambda: "running" in plain(app, "#running-status"), what="the first scan")
        import re

        line = next(row for row in screen_text(app).splitlines() if re.search(r"\d+ running", row))
        assert "a: toggle all" in line, line  # on screen, not cut off by the pane's width


# --- the editor: Esc asks before discarding; a broken file opens at its error ----------------------

async def test_editor_escape_asks_before_discarding_an_edit(home: Paths):
    from textual.widgets import Input

    from ccswitch_tui.tui.screens.editor import EditorScreen
    from ccswitch_tui.tui.screens.modals import ConfirmScreen

    path = home.profiles / "alpha.toml"
    before = path.read_text()
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        await pilot.press("e")
        editor = await wait_until(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen)
        editor.query_one("#f-codex-model", Input).value = "gpt-edited"
        await pilot.pause()
        await pilot.press("escape")
        confirm = await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen)
        assert "Discard changes?" in screen_text(app)
        await pilot.press("escape")  # no: back to the editor, the edit still there
        await wait_until(pilot, lambda: app.screen is editor)
        assert editor.query_one("#f-codex-model", Input).value == "gpt-edited"
        await pilot.press("escape")
        confirm = await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen)
        await pilot.click("#yes")
        await wait_until(pilot, lambda: not app.screen.is_modal)
        await settle(pilot)
        assert path.read_text() == before
        # nothing changed: Esc leaves at once
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, EditorScreen))
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.screen.is_modal)
        assert confirm is not None and path.read_text() == before


async def test_broken_file_editor_opens_at_the_error_line(home: Paths):
    from textual.widgets import TextArea

    from ccswitch_tui.tui.screens.editor import RawEditorScreen
    from ccswitch_tui.tui.screens.modals import ConfirmScreen

    path = home.profiles / "broken.toml"
    path.write_text('schema = 1\ndescription = "a long file"\n' + "# a comment\n" * 40 + '[provider\nname = "x"\n')
    app = build_app(home)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await select(pilot, "broken")
        await pilot.press("e")
        editor = await wait_until(pilot, lambda: isinstance(app.screen, RawEditorScreen) and app.screen)
        await pilot.pause()
        assert "broken.toml:43:" in plain(editor, "#raw-error")
        area = editor.query_one("#raw-text", TextArea)
        assert area.cursor_location[0] == 42  # line 43, counted from 0
        assert "[provider" in screen_text(app)  # scrolled there: the broken line is on screen
        # an edit in the raw editor is not thrown away by Esc without asking
        before = path.read_text()
        area.focus()
        await pilot.press("end", "]")
        await pilot.pause()
        edited = area.text
        assert edited != before and "[provider]" in edited
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
        assert "Discard changes?" in screen_text(app)
        await pilot.press("escape")  # no: back to the editor, the edit still there
        await wait_until(pilot, lambda: app.screen is editor)
        assert editor.query_one("#raw-text", TextArea).text == edited
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.click("#yes")
        await wait_until(pilot, lambda: not app.screen.is_modal)
        await settle(pilot)
        assert path.read_text() == before  # discarded: the file as it was


# --- profiles changed outside the TUI ---------------------------------------------------------------

async def test_profiles_changed_on_disk_show_without_reload_and_drop_a_stale_check(home: Paths):
    from ccswitch_tui.diagnose.check import ProbeResult

    app = build_app(home, watch_interval=0.2)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        # a check result on screen (as `p` leaves it)
        result = ProbeResult("alpha", "codex", "openai", "POST", "https://taotoken.net/api/responses", "gpt-4.1",
                             "model-unknown", 404)
        app.detail_pane.set_check("alpha", [result.finding()])
        await pilot.pause()
        assert "Endpoint check" in plain(app, "#overview-body")
        # another program adds a profile and rewrites alpha
        (home.profiles / "late.toml").write_text((home.profiles / "alpha.toml").read_text())
        path = home.profiles / "alpha.toml"
        path.write_text(path.read_text().replace('model = "gpt-4.1"', 'model = "gpt-edited"', 1))
        await wait_until(pilot, lambda: "late" in [e.name for e in app.profile_entries()], what="late listed")
        await wait_until(pilot, lambda: "gpt-edited" in plain(app, "#overview-body"), what="alpha re-read")
        assert "Endpoint check" not in plain(app, "#overview-body")  # the old result is gone
        assert "alpha" not in app.detail_pane.checks
        (home.profiles / "late.toml").unlink()
        await wait_until(pilot, lambda: "late" not in [e.name for e in app.profile_entries()], what="late gone")
        await settle(pilot)


# --- the theme is kept ----------------------------------------------------------------------------

async def test_theme_choice_is_kept_across_restarts(home: Paths):
    import json

    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.theme != "nord"
        app.theme = "nord"  # what the palette's "Change theme" does
        await settle(pilot)
    assert json.loads((home.state / "tui.json").read_text())["theme"] == "nord"
    again = build_app(home)
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert again.theme == "nord"
    (home.state / "tui.json").write_text("{not json")  # a damaged file: the default theme, no crash
    third = build_app(home)
    async with third.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert third.theme == "textual-dark" and third.is_running


# --- 80x24 -----------------------------------------------------------------------------------------

async def test_small_terminal_shows_key_status_and_compact_notifications(home: Paths):
    from textual.widgets._toast import Toast

    app = build_app(home)
    async with app.run_test(size=SMALL, notifications=True) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "key ✓" in text and "key missing" in text  # not cut off by the list's width
        app.notify("checking alpha's endpoints… " + "a long explanation of what happened " * 6, title="Check")
        app.notify("second message", title="Another")
        await pilot.pause(0.3)
        toasts = list(app.screen.query(Toast))
        assert toasts
        right = app.detail_pane.region
        covered = sum(t.region.width * t.region.height for t in toasts)
        assert covered <= right.width * right.height * 0.25, (covered, right)
        assert all(t.region.width <= 34 for t in toasts)


# --- labels ---------------------------------------------------------------------------------------

async def test_palette_shows_brackets_as_text(home: Paths):
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        for ch in "run a command":
            await pilot.press(ch if ch != " " else "space")
        await pilot.pause(0.5)
        text = screen_text(app)
        assert "this profile's [run] exports" in text, text
        assert "profile's  exports" not in text


async def test_labels_keep_a_gap_and_say_unknown(home: Paths):
    from ccswitch_tui.runs.manifests import write_manifest

    write_manifest(home, {"launch_id": "r1", "profile": "alpha", "tool": "codex", "argv": ["codex"], "cwd": "/w",
                          "started": "2026-01-01T00:00:00Z", "exit_status": 0, "base_urls": {},
                          "models": {}, "key_fingerprint": "fp:0123456789ab", "env_hash": "sha256:1",
                          "tool_version": None})
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        overview = plain(app, "#overview-body")
        assert "provider  https://taotoken.net/api" in overview and "providerhttps" not in overview
        app.detail_pane.show_tab("runs")
        await settle(pilot)
        run = plain(app, "#run-detail")
        assert "key fingerprint  fp:0123456789ab" in run and "tool version  unknown" in run, run
        assert "None" not in run


async def test_preset_dropdown_stays_inside_its_dialog_at_80x24(home: Paths):
    from textual.widgets import Select
    from textual.widgets._select import SelectOverlay

    from ccswitch_tui.tui.screens.modals import NewProfileScreen

    app = build_app(home)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("n")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, NewProfileScreen) and app.screen)
        await pilot.pause()
        select_widget = screen.query_one("#preset", Select)
        select_widget.focus()
        await pilot.press("enter")
        await pilot.pause(0.3)
        overlay = screen.query_one(SelectOverlay)
        assert overlay.display
        dialog = screen.query_one(".dialog").content_region  # inside the border
        inside = dialog.intersection(overlay.region)
        assert inside == overlay.region, (overlay.region, dialog)
        await pilot.press("escape")


# --- the empty state and import ------------------------------------------------------------------

async def test_empty_home_explains_itself_at_80x24_and_keys_say_why(ccs_home: Paths, secret_service: str):
    app = build_app(ccs_home)
    async with app.run_test(size=SMALL, notifications=True) as pilot:
        await settle(pilot)
        body = plain(app, "#overview-body")
        assert "Press n to create one from a preset" in body and "or i to import the providers" in body
        shown = app.query_one("#overview-body")
        assert shown.size.height >= 4 and shown.region.right <= SMALL[0]  # wrapped inside the pane, not cut
        text = screen_text(app)
        assert "none yet: n new, i import" in text and "i Import" in text
        for key in ("c", "x", "k", "e", "p", "r", "s", "d"):
            app.clear_notifications()
            await pilot.press(key)
            await pilot.pause()
            assert any("press n to create one, or i to import" in n for n in notifications(app)), key
        assert not app.screen.is_modal


async def test_a_key_for_a_tool_the_profile_lacks_says_so(home: Paths):
    from ccswitch_tui.profiles.presets import new_profile_text
    from ccswitch_tui.profiles.store import Store

    Store(home).save_text("gamma", new_profile_text("gamma", "kimi-coding", key="gamma-key"), create=True)
    app = build_app(home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await select(pilot, "gamma")  # Kimi For Coding: Claude Code and run, no Codex
        await pilot.press("x")
        await pilot.pause()
        assert any("gamma has no [codex] table" in n for n in notifications(app)), notifications(app)
        await select(pilot, "broken")
        await pilot.press("c")
        await pilot.pause()
        assert any("broken cannot be loaded: press e to fix it" in n for n in notifications(app))


def import_source(kind: str, home: Path) -> str:
    """Write one provider in ``kind``'s default place under ``home`` (as a user's machine holds it);
    return its key."""
    import json
    import uuid

    key = f"sk-tui-import-{kind}-" + uuid.uuid4().hex
    if kind == "claude":
        (home / ".claude").mkdir(parents=True)
        (home / ".claude" / "settings.json").write_text(json.dumps({"env": {
            "ANTHROPIC_BASE_URL": "https://api.deepseek.com/anthropic", "ANTHROPIC_AUTH_TOKEN": key,
            "ANTHROPIC_MODEL": "deepseek-v4-pro"}}))
    elif kind == "cc-switch":
        from test_import_cc_switch import claude_row, codex_row, make_db

        codex_config = ('model_provider = "kimi"\nmodel = "kimi-k2"\n[model_providers.kimi]\nname = "Kimi"\n'
                        'base_url = "https://api.moonshot.cn/v1"\nwire_api = "chat"\n')
        make_db(home / ".cc-switch" / "cc-switch.db", [
            claude_row("kimi", "Kimi", key, "https://api.moonshot.cn/anthropic", ANTHROPIC_MODEL="kimi-k2"),
            codex_row("kimi-codex", "Kimi", key, codex_config)])
    else:
        from test_import_live import CODEX_CONFIG

        (home / ".codex").mkdir(parents=True)
        (home / ".codex" / "config.toml").write_text(CODEX_CONFIG.format(pid="deepseek", name="DeepSeek"))
        (home / ".codex" / "auth.json").write_text(json.dumps({"OPENAI_API_KEY": key, "tokens": None}))
    return key


def cli_env(home: Path) -> dict[str, str]:
    env = {**os.environ, "HOME": str(home)}
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        env.pop(name, None)
    return env


@pytest.mark.parametrize("kind", ["claude", "cc-switch", "codex"])
async def test_import_in_the_tui_shows_the_clis_report(ccs, ccs_home: Paths, secret_service: str, tmp_path: Path,
                                                       kind: str):
    import keyring
    from conftest import forget_indexed_keys
    from textual.widgets import Select

    from ccswitch_tui.keys.keyring import SERVICE
    from ccswitch_tui.tui.screens.importing import ImportScreen, ReportScreen

    home = tmp_path / "home"
    key = import_source(kind, home)
    env = parent_env(HOME=str(home))
    expected = ccs("import", kind, "--dry-run", env=cli_env(home)).stdout.rstrip("\n")
    assert "would create" in expected
    app = build_app(ccs_home, env)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("i")
            screen = await wait_until(pilot, lambda: isinstance(app.screen, ImportScreen) and app.screen)
            screen.query_one("#source", Select).value = kind
            await pilot.pause()
            await pilot.click("#preview")
            report = await wait_until(pilot, lambda: isinstance(app.screen, ReportScreen) and app.screen)
            assert plain(report, "#report-text") == expected  # the importers' report, as the CLI prints it
            assert not any(ccs_home.profiles.glob("*.toml"))  # a preview writes nothing
            await pilot.click("#import")
            done = await wait_until(pilot, lambda: isinstance(app.screen, ReportScreen) and app.screen is not report
                                    and app.screen)
            text = plain(done, "#report-text")
            assert text.startswith("created") and "dry run" not in text
            await pilot.click("#close")
            await settle(pilot)
            names = [e.name for e in app.profile_entries()]
            assert names and all((ccs_home.profiles / f"{n}.toml").exists() for n in names)
            for name in names:
                assert keyring.get_password(SERVICE, app.service.store.load(name).key_id) == key
            if kind == "cc-switch":  # its Claude Code and Codex rows of one provider: one profile, both tools
                (name,) = names
                assert app.service.store.load(name).tools[:2] == ("claude", "codex")
            if kind == "codex":
                assert app.service.store.load(names[0]).side("codex").wire_api == "chat"
            again = ccs("import", kind, "--dry-run", env=cli_env(home)).stdout
            assert " 0 to create, 0 to merge" in again and all(line.startswith(("unchanged", " ", "dry run"))
                                                            for line in again.splitlines() if line), again
    finally:
        forget_indexed_keys(ccs_home)


HOLD_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()  # until the test closes our stdin
"""


def hold_import_lock(paths: Paths):  # noqa: ANN201
    """Another process (a `ccs import` in another terminal, say) holding the import lock."""
    import subprocess

    from ccswitch_tui.importers.sources import IMPORT_LOCK

    paths.profiles.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(paths.profiles / IMPORT_LOCK)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def release(holder) -> None:  # noqa: ANN001
    holder.stdin.close()
    holder.wait(10)


async def test_an_import_in_the_tui_waits_for_another_import_and_says_so(ccs_home: Paths, secret_service: str,
                                                                       tmp_path: Path):
    from conftest import forget_indexed_keys
    from textual.widgets import Select

    from ccswitch_tui.tui.screens.importing import ImportScreen, ReportScreen

    home = tmp_path / "home"
    import_source("claude", home)
    app = build_app(ccs_home, parent_env(HOME=str(home)))
    holder = hold_import_lock(ccs_home)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("i")
            screen = await wait_until(pilot, lambda: isinstance(app.screen, ImportScreen) and app.screen)
            screen.query_one("#source", Select).value = "claude"
            await pilot.pause()
            await pilot.click("#import")
            await wait_until(pilot, lambda: any("waiting for another import to finish" in n
                                                for n in notifications(app)), what="the waiting line")
            line = next(n for n in notifications(app) if "waiting for another import" in n)
            assert str(ccs_home.profiles / ".import.lock") in line and "\n" not in line
            await pilot.pause(0.5)
            assert not isinstance(app.screen, ReportScreen)  # it waits: nothing planned, nothing written
            assert not any(ccs_home.profiles.glob("*.toml"))
            release(holder)
            done = await wait_until(pilot, lambda: isinstance(app.screen, ReportScreen) and app.screen)
            await pilot.pause()
            assert plain(done, "#report-text").startswith("created")  # then it runs, as if started now
            await pilot.click("#close")
            await settle(pilot)
            assert len(list(ccs_home.profiles.glob("*.toml"))) == 1
    finally:
        if holder.poll() is None:
            release(holder)
        forget_indexed_keys(ccs_home)


def test_a_cli_import_waits_for_another_import_and_says_so(ccs_home: Paths, secret_service: str, tmp_path: Path):
    import subprocess

    from conftest import forget_indexed_keys

    home = tmp_path / "home"
    import_source("claude", home)
    holder = hold_import_lock(ccs_home)
    try:
        cli = subprocess.Popen([sys.executable, "-m", "ccswitch_tui", "import", "claude"], env=cli_env(home),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert cli.stderr is not None
        said = b""
        deadline = time.monotonic() + 15
        while not said.endswith(b"\n") and time.monotonic() < deadline:
            if select_mod.select([cli.stderr], [], [], 0.1)[0]:
                chunk = os.read(cli.stderr.fileno(), 4096)
                if not chunk:
                    break
                said += chunk
        assert said.decode() == (f"ccs: waiting for another import to finish (it holds "
                                 f"{ccs_home.profiles}/.import.lock)\n"), said
        until(lambda: blocked_on_a_lock(cli.pid), 15, "the import to wait on the lock")
        assert cli.poll() is None and not any(ccs_home.profiles.glob("*.toml"))  # it waits, writing nothing
        release(holder)
        out, err = cli.communicate(timeout=30)
        assert cli.returncode == 0, err
        assert out.decode().startswith("created") and err == b""
    finally:
        if holder.poll() is None:
            release(holder)
        forget_indexed_keys(ccs_home)


async def test_a_missing_key_in_the_tui_says_press_k(home: Paths, key_id: str):
    app = build_app(home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await select(pilot, "beta")  # its key is not stored
        await pilot.press("c")
        await wait_until(pilot, lambda: any("Cannot launch" in n for n in notifications(app)), what="the failure")
        failure = next(n for n in notifications(app) if "Cannot launch" in n)
        assert f"no key stored for id '{key_id}-missing'" in failure
        assert "press k to store it" in failure and "ccs key set" not in failure
        await pilot.press("p")
        await wait_until(pilot, lambda: "Endpoint check" in plain(app, "#overview-body"), what="the check")
        check = plain(app, "#overview-body").split("Endpoint check", 1)[1]
        assert "key-missing" in check and "press k to store it" in check and "ccs key set" not in check

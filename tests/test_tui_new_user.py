"""What a new user met in the TUI: the raw editor scrolled sideways on a broken file, a deleted
profile's tool state left behind, keys that did not leave a pane, a filter that matched nothing
still showing a profile, the resume hint after a client exits. Pilot tests asserting on what the
screen shows and what is on disk."""

from __future__ import annotations

from test_tui_support import build_app, plain, select, settle, wait_until
from textual.widgets import TextArea

from ccswitch_tui.paths import Paths
from ccswitch_tui.tui.screens.editor import RawEditorScreen

SMALL = (80, 24)


def screen_lines(app) -> list[str]:  # noqa: ANN001
    """What the terminal shows, line by line, as plain text."""
    import io

    from rich.console import Console

    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True, force_terminal=True,
                      color_system=None, legacy_windows=False)
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text().splitlines()


async def test_the_raw_editor_opens_a_broken_file_at_its_error_without_scrolling_sideways(home: Paths):
    """The cursor goes to the error; the lines stay shown from their first column while that column
    fits the editor (it showed every line from column 19, and Home was needed to read them)."""
    path = home.profiles / "broken.toml"
    path.write_text('schema = 1\ndescription = "d"\n\n[provider]\nname = "Kimi (Moonshot)"\n'
                    'base_url = "https://api.moonshot.cn/v1" website = "https://platform.kimi.com"\nkey = "k"\n')
    app = build_app(home)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await select(pilot, "broken")
        await pilot.press("e")
        editor = await wait_until(pilot, lambda: isinstance(app.screen, RawEditorScreen) and app.screen)
        await pilot.pause()
        await pilot.pause()
        area = editor.query_one("#raw-text", TextArea)
        assert "broken.toml:6:41: unexpected 'w' after the value of base_url" in plain(editor, "#raw-error")
        assert area.cursor_location == (5, 40)
        assert area.scroll_offset.x == 0, area.scroll_offset
        assert 'schema = 1' in area.render_line(0).text or area.scroll_offset.y > 0


async def test_deleting_a_profile_removes_its_tool_state_as_ccs_rm_does(home: Paths):
    """The TUI's delete left state/tools/<profile>/ behind (`ccs gc --dry-run` then listed it)."""
    from ccswitch_tui.launch.toolstate import orphans
    from ccswitch_tui.tui.screens.modals import ConfirmScreen

    state = home.state / "tools" / "beta"
    (state / "claude" / "projects").mkdir(parents=True)
    (state / "claude" / "projects" / "session.jsonl").write_text("x" * 5000)
    app = build_app(home)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await select(pilot, "beta")
        await pilot.press("delete")
        confirm = await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen)
        body = plain(confirm, ".dialog-body")
        assert str(state) in body and "sessions, history; " in body and "stays in the keyring" in body, body
        await pilot.click("#yes")
        await settle(pilot)
        assert not (home.profiles / "beta.toml").exists()
        assert not state.exists()
        assert orphans(home, {"alpha", "broken"}) == []


async def test_a_fresh_profile_from_the_google_preset_is_not_flagged(home: Paths, key_id: str):
    """It was marked `!` for `[run].export is empty`: a `ccs run` side the profile never set up, and
    the Overview listed that side's URL and models."""
    from test_tui_support import parent_env

    from ccswitch_tui.keys.keyring import KeyStore
    from ccswitch_tui.profiles.presets import new_profile_text
    from ccswitch_tui.profiles.store import Store

    Store(home).save_text("gem", new_profile_text("gem", "google", key=f"{key_id}-g"), create=True)
    KeyStore(home, parent_env()).set(f"{key_id}-g", "AIzaSyB3x9kQ2mV7nL4pR8tW1zY6cD0fH5jK2aE")
    try:
        app = build_app(home)
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot)
            await select(pilot, "gem")
            await settle(pilot)
            assert app.profile_list.presence.problems["gem"] == ()
            assert app.detail_pane.detail.problems == ()
            prompt = {o.id: str(o.prompt) for o in app.profile_list.options.options}["gem"]
            assert not prompt.startswith(("!", "✗")), prompt
            # nor listed in the Overview, where its row pushed the gemini URL's variable to `GOOGLE_GEM…`
            body = screen_lines(app)
            assert any(line.split("▕")[-1].split() == ["tools", "gemini"] for line in body), "\n".join(body)
            assert any("GOOGLE_GEMINI_BASE_URL" in line for line in body), "\n".join(body)
            assert not any(line.split("▕")[-1].split()[:1] == ["run"] for line in body), "\n".join(body)
    finally:
        KeyStore(home, parent_env()).delete(f"{key_id}-g")


async def test_ctrl_c_says_how_to_quit_in_plain_words(home: Paths):
    from test_tui_support import notifications

    app = build_app(home)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+c")
        await pilot.pause()
        said = [n for n in notifications(app) if "quit" in n]
        assert said and "[b]" not in said[-1] and "Press ctrl+q or q to quit" in said[-1], said


async def test_the_launch_menu_lines_its_keys_up(home: Paths):
    from ccswitch_tui.tui.screens.modals import LaunchMenuScreen

    app = build_app(home)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        app.launcher.menu()
        menu = await wait_until(pilot, lambda: isinstance(app.screen, LaunchMenuScreen) and app.screen)
        await pilot.pause()
        lines = screen_lines(app)
        starts = set()
        for key, label, _ in menu.clients:
            line = next(ln for ln in lines if f"{key}  {label}" in ln)
            starts.add(line.index(f"{key}  {label}"))
        assert len(menu.clients) >= 3 and len(starts) == 1, starts


def test_help_names_each_key_once():
    """Help listed `?, ?` for help (question_mark and f1 both shown as `?`) and nothing for Esc."""
    from ccswitch_tui.tui.screens.help import keys_table

    table = keys_table()
    assert "`?, f1`" in table and "`?, ?`" not in table
    assert "| `esc` |" in table


async def test_the_requests_of_a_run_are_listed_in_the_order_they_started():
    """The records file holds requests in the order they ended: the table read 1 3 5 7 2 4 6 8."""
    from textual.app import App, ComposeResult

    from ccswitch_tui.tui.widgets.requests import RequestsTable

    class Host(App):
        def compose(self) -> ComposeResult:
            yield RequestsTable(id="t")

    def rec(n: int) -> dict:
        return {"id": n, "started": f"2026-12-06T10:00:0{n}.000Z", "method": "POST", "path": "/v1/x", "status": 200,
                "outcome": "ok"}

    styles = {"ok": "green", "warn": "yellow"}
    app = Host()
    async with app.run_test() as pilot:
        table = app.query_one(RequestsTable)
        table.display = True
        table.show("L", [rec(n) for n in (1, 3, 5, 7)], styles)
        await pilot.pause()
        ids = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        assert ids == ["1", "3", "5", "7"]
        table.show("L", [rec(n) for n in (1, 3, 5, 7, 2, 4, 6, 8)], styles)  # the run goes on
        await pilot.pause()
        ids = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        assert ids == ["1", "2", "3", "4", "5", "6", "7", "8"]
        assert table.cursor_row == 7  # it was following the last row: still does


async def test_esc_and_the_tab_keys_leave_a_pane(home: Paths):
    """In the Runs table at 80x24 neither Esc nor 1 did anything: a pane could only be left with tab."""
    from ccswitch_tui.runs.manifests import write_manifest

    write_manifest(home, {"launch_id": "20261206T100000Z-aaaaaaaa", "profile": "alpha", "tool": "run",
                          "argv": ["true"], "started": "2026-12-06T10:00:00Z", "ended": "2026-12-06T10:00:01Z",
                          "exit_status": 0})
    app = build_app(home)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        for tab, key, target in (("runs", "5", "runs-table"), ("environment", "2", "env-body"),
                                 ("overview", "1", None)):
            await pilot.press(key)
            await settle(pilot)
            assert app.detail_pane.active_tab == tab
            await pilot.press("enter")
            await settle(pilot)
            focused = app.focused
            assert focused is not None and focused is not app.profile_list.options, (tab, focused)
            if target:
                assert focused.id == target, (tab, focused)
            await pilot.press("1" if tab != "overview" else "2")
            await settle(pilot)
            assert app.detail_pane.active_tab == ("overview" if tab != "overview" else "environment"), tab
            await pilot.press(key)
            await settle(pilot)
            await pilot.press("escape")
            await settle(pilot)
            assert app.focused is app.profile_list.options, (tab, app.focused)


async def test_a_filter_matching_nothing_shows_no_profile(home: Paths):
    """With `zzz` in the filter the list was empty but the detail still showed the profile it hid;
    the Runs tab then said there were no runs yet."""
    from test_tui_support import type_text

    app = build_app(home)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        await pilot.press("slash")
        await type_text(pilot, "zzz")
        await settle(pilot)
        assert app.selected is None
        title, body = plain(app, "#detail-title"), plain(app, "#overview-body")
        assert "alpha" not in title and "No profile matches the filter 'zzz'" in body, (title, body)
        assert app.detail_pane.detail is None
        app.detail_pane.show_tab("runs")  # it said "No runs yet. Launch with c (Claude Code), …"
        await settle(pilot)
        runs = plain(app, "#run-detail")
        assert "No runs yet" not in runs and "No profile matches the filter" in runs, runs
        await pilot.press("escape")
        await settle(pilot)
        assert app.selected == "alpha" and "alpha" in plain(app, "#detail-title")


async def test_keys_typed_right_after_slash_go_to_the_filter(home: Paths):
    """`/` then `beta` in one burst (a fast typist, a paste, tmux send-keys): the letters went to the
    list as commands (`l` opened the launch menu, Enter launched) because the filter took focus
    only after the queued keys had been handled."""
    from textual import events

    app = build_app(home)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        for key, char in [("slash", "/"), ("b", "b"), ("e", "e"), ("t", "t"), ("a", "a")]:
            app.post_message(events.Key(key, char))
        await settle(pilot)
        assert app.profile_list.query_one("#filter").value == "beta"
        assert type(app.screen).__name__ == "Screen" and app.selected == "beta"


async def test_diff_tells_two_keys_with_alike_masks_apart(home: Paths):
    """A shell key replaced by the profile's showed `sk-…cdef → sk-…cdef`: nothing said they differ."""
    from test_tui_support import KEY_VALUE, parent_env

    stale = "sk-" + "Q" * 20 + KEY_VALUE[-4:]
    app = build_app(home, parent_env(ANTHROPIC_AUTH_TOKEN=stale))
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        app.detail_pane.set_tool("claude")
        await pilot.press("3")
        await settle(pilot)
        row = next(ln for ln in str(app.detail_pane.query_one("#diff-body").content).splitlines()
                   if "ANTHROPIC_AUTH_TOKEN" in ln and "→" in ln)
        fps = [w for w in row.split() if w.startswith("fp:")]
        assert len(fps) == 2 and fps[0] != fps[1], row
        assert stale not in row and KEY_VALUE not in row


def _contrast(a, b) -> float:  # noqa: ANN001 — WCAG contrast of two Rich colours
    def lum(c) -> float:  # noqa: ANN001
        def ch(v: int) -> float:
            v = v / 255
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
        r, g, bl = c.triplet
        return 0.2126 * ch(r) + 0.7152 * ch(g) + 0.0722 * ch(bl)
    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


async def test_the_editors_off_switch_can_be_seen(home: Paths):
    """The switch of a client the profile does not serve was dark on dark (contrast about 1.4)."""
    from textual.widgets import Switch

    from ccswitch_tui.tui.screens.editor import EditorScreen

    app = build_app(home)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await select(pilot, "beta")  # kimi: serves some clients, not every one
        for theme in ("textual-dark", "textual-light"):
            app.theme = theme
            await pilot.press("e")
            screen = await wait_until(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen)
            await pilot.pause()
            switches = list(screen.query(Switch))
            assert any(not s.value for s in switches) and any(s.value for s in switches)
            for s in switches:
                style = s.get_component_rich_style("switch--slider")
                assert _contrast(style.color, style.bgcolor) >= 3, (theme, s.id, s.value, style)
            await pilot.press("escape")
            await wait_until(pilot, lambda: not app.screen.is_modal)


async def test_the_import_dialog_reads_a_dotenv_file(ccs, ccs_home: Paths, secret_service: str, tmp_path):
    """`ccs import env FILE` had no place in the TUI's import dialog."""
    import keyring
    from conftest import forget_indexed_keys
    from textual.widgets import Select

    from ccswitch_tui.keys.keyring import SERVICE
    from ccswitch_tui.tui.screens.importing import ImportScreen, ReportScreen

    work = tmp_path / "work"
    work.mkdir()
    key = "sk-tui-dotenv-0123456789abcdefXYZ"
    (work / ".env").write_text(f"OPENAI_API_KEY={key}\nOPENAI_BASE_URL=https://api.deepseek.com/v1\n")
    expected = ccs("import", "env", str(work / ".env"), "--dry-run").stdout.rstrip("\n")
    assert expected.startswith("would create")
    app = build_app(ccs_home, cwd=work)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot)
            await pilot.press("i")
            screen = await wait_until(pilot, lambda: isinstance(app.screen, ImportScreen) and app.screen)
            screen.query_one("#source", Select).value = "env-file"
            await pilot.pause()
            assert str(work / ".env") in plain(screen, "#source-path")
            await pilot.click("#preview")
            report = await wait_until(pilot, lambda: isinstance(app.screen, ReportScreen) and app.screen)
            assert plain(report, "#report-text") == expected
            await pilot.click("#import")
            done = await wait_until(pilot, lambda: isinstance(app.screen, ReportScreen) and app.screen is not report
                                    and app.screen)
            assert plain(done, "#report-text").startswith("created")
            await pilot.click("#close")
            await settle(pilot)
            (name,) = [e.name for e in app.profile_entries()]
            assert keyring.get_password(SERVICE, app.service.store.load(name).key_id) == key
    finally:
        forget_indexed_keys(ccs_home)

"""The TUI's rough edges a new user trips over: the editor's description, the selection after a
duplicate, a filter matching nothing, the Import dialog with no source, the refused launch's ways
out. Pilot tests asserting on what the screen shows."""

from __future__ import annotations

import json
import os
from pathlib import Path

from test_tui_support import build_app, notifications, parent_env, plain, select, settle, type_text, wait_until
from textual.widgets import Button, Input, Select

from ccswitch_tui.paths import Paths
from ccswitch_tui.tui import messages as m
from ccswitch_tui.tui.screens.editor import EditorScreen
from ccswitch_tui.tui.screens.modals import ConfirmScreen, NameScreen, RefusalScreen

SIZE = (110, 34)


async def test_typing_in_the_editor_adds_to_the_description(home: Paths):
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        await pilot.press("e")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen)
        await pilot.pause()
        field = screen.query_one("#f-description", Input)
        before = app.service.store.load("alpha").description
        assert app.focused is field and before and field.value == before
        assert field.selected_text == ""  # nothing pre-selected
        await type_text(pilot, " (edited)")
        assert field.value == f"{before} (edited)"


async def test_a_duplicate_is_selected_and_stays_selected(home: Paths):
    app = build_app(home, watch_interval=3600)  # the folder watcher's message is sent by the test, below

    def hook(message: object) -> None:
        # the folder watcher notices the new file just as the copy is reported done: its reload
        # starts while the list still has the original selected
        if isinstance(message, m.Done) and message.select:
            app.post_message(m.ProfilesChanged({message.select}))

    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        await pilot.press("d")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, NameScreen) and app.screen)
        screen.query_one("#name", Input).value = "alpha-2"
        await pilot.press("enter")
        await wait_until(pilot, lambda: (home.profiles / "alpha-2.toml").exists())
        await settle(pilot)
        assert app.selected == "alpha-2"
        assert app.detail_pane.detail.entry.name == "alpha-2"
        app.post_message(m.ProfilesChanged({"alpha-2"}))  # later reloads keep it too
        await settle(pilot)
        assert app.selected == "alpha-2"
        await pilot.press("delete")  # acts on the copy, not on the original
        confirm = await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen)
        assert confirm.title_text == "Delete alpha-2"
        assert str(home.profiles / "alpha-2.toml") in plain(confirm, ".dialog-body")


async def test_a_filter_matching_nothing_says_so_and_how_to_clear_it(home: Paths):
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        await type_text(pilot, "zzz")
        await settle(pilot)
        assert app.selected is None
        status = plain(app, "#list-status")
        assert "no match for 'zzz'" in status and "Esc clears" in status
        app.profile_list.options.focus()
        await pilot.press("c")  # a profile's key with nothing to act on
        await pilot.pause()
        said = notifications(app)[-1]
        assert "No profile matches the filter 'zzz'" in said and "Esc" in said, said
        assert "create one" not in said  # not the empty-folder message: 3 profiles exist
        await pilot.press("escape")
        await settle(pilot)
        assert len(app.profile_list.options.options) == 3


async def test_import_with_no_source_says_where_it_looked_and_takes_a_path(ccs_home: Paths, secret_service: str,
                                                                           tmp_path: Path):
    from conftest import forget_indexed_keys
    from test_tui_first_use import import_source

    from ccswitch_tui.tui.screens.importing import ImportScreen, ReportScreen

    home = tmp_path / "home"  # nothing to import at any default place
    home.mkdir()
    elsewhere = tmp_path / "backup"
    import_source("claude", elsewhere)
    app = build_app(ccs_home, parent_env(HOME=str(home)))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("i")
            screen = await wait_until(pilot, lambda: isinstance(app.screen, ImportScreen) and app.screen)
            await pilot.pause()
            said = plain(screen, "#none-found")
            assert said.startswith("No source found")
            for where in (home / ".cc-switch" / "cc-switch.db", home / ".claude" / "settings.json", home / ".codex"):
                assert str(where) in said
            assert "type the path" in said
            assert screen.query_one("#import", Button).disabled and screen.query_one("#preview", Button).disabled
            screen.query_one("#source", Select).value = "claude"
            await pilot.pause()
            screen.query_one("#path", Input).value = str(elsewhere / ".claude" / "settings.json")
            await pilot.pause()
            assert not screen.query_one("#import", Button).disabled
            await pilot.click("#preview")
            report = await wait_until(pilot, lambda: isinstance(app.screen, ReportScreen) and app.screen)
            text = plain(report, "#report-text")
            assert "would create" in text and "dry run" in text
            assert not any(ccs_home.profiles.glob("*.toml"))
    finally:
        forget_indexed_keys(ccs_home)


async def test_refused_launch_lists_each_way_once_and_focuses_the_safest(home: Paths, tmp_path: Path):
    work = tmp_path / "work"
    (work / ".claude").mkdir(parents=True)
    (work / ".claude" / "settings.json").write_text(json.dumps({"env": {"ANTHROPIC_MODEL": "some-other-model"}}))
    env = parent_env(PATH=os.environ["PATH"], CCS_CLAUDE_MANAGED_SETTINGS=str(tmp_path / "none.json"))
    app = build_app(home, env, cwd=work)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        await pilot.press("c")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, RefusalScreen) and app.screen)
        await pilot.pause()
        shown = " ".join(str(s.content) for s in screen.query(".note"))
        buttons = [str(b.label) for b in screen.query(Button)]
        assert buttons == ["Launch isolated", "Launch anyway (force)", "Cancel"]
        # the two ways that are buttons are not listed again; the one outside ccs is
        assert "--isolate" not in shown and "--force" not in shown
        assert "remove env.ANTHROPIC_MODEL from" in shown
        body = plain(screen, ".dialog-body")  # the message says what was refused, not the ways again
        assert "ways out" not in body and "remove env." not in body and "--force" not in body, body
        assert "refusing to launch" in body and "ANTHROPIC_MODEL" in body
        # the safest way that launches has the focus: Enter launches isolated
        assert app.focused is screen.query_one("#way-isolate", Button)


async def test_a_timer_that_fires_while_the_tabs_are_gone_does_not_crash_the_app(home: Paths):
    # Seen in a run: the Runs tab's timer fired while the app tore its screen down, the detail
    # pane was still there but its tabs were not, and the query for them ended the app.
    from textual.widgets import TabbedContent

    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        pane = app.detail_pane
        await pane.query_one("#tabs", TabbedContent).remove()  # as when the screen is torn down
        assert pane.active_tab is None
        app._tick_runs()  # the timer's work, and Enter on a profile: both leave it be
        app.focus_detail()
        await pilot.pause()
    assert app.return_code is None  # ended by the test: an exception would have set 1, an exit() 0

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
    """It was marked `!` for `[run].export is empty`: a `ccs run` side the profile never set up."""
    from test_tui_support import parent_env

    from ccswitch_tui.keys.keyring import KeyStore
    from ccswitch_tui.profiles.presets import new_profile_text
    from ccswitch_tui.profiles.store import Store

    Store(home).save_text("gem", new_profile_text("gem", "google", key=f"{key_id}-g"), create=True)
    KeyStore(home, parent_env()).set(f"{key_id}-g", "AIzaSyB3x9kQ2mV7nL4pR8tW1zY6cD0fH5jK2aE")
    try:
        app = build_app(home)
        async with app.run_test(size=SMALL) as pilot:
            await settle(pilot)
            await select(pilot, "gem")
            await settle(pilot)
            assert app.profile_list.presence.problems["gem"] == ()
            assert app.detail_pane.detail.problems == ()
            prompt = {o.id: str(o.prompt) for o in app.profile_list.options.options}["gem"]
            assert not prompt.startswith(("!", "✗")), prompt
    finally:
        KeyStore(home, parent_env()).delete(f"{key_id}-g")

"""The TUI, driven by a pilot: every action against a temporary CCS_HOME and the real Secret
Service, asserting on what it leaves behind (files, keyring, messages), not only on the screen."""

from __future__ import annotations

from pathlib import Path

import keyring
from test_tui_support import (
    KEY_VALUE,
    STALE_OPENAI_URL,
    build_app,
    make_profiles,
    notifications,
    parent_env,
    plain,
    select,
    settle,
    wait_until,
)
from textual.widgets import Button, Input, Select, TextArea

from ccswitch_tui import policy, tools
from ccswitch_tui.keys.keyring import SERVICE, KeyStore
from ccswitch_tui.launch.environment import diff_env
from ccswitch_tui.launch.plan import plan_for
from ccswitch_tui.paths import Paths
from ccswitch_tui.policy import mask
from ccswitch_tui.runs.manifests import write_manifest
from ccswitch_tui.tui.actions import ACTIONS
from ccswitch_tui.tui.app import CcsApp
from ccswitch_tui.tui.screens.editor import EditorScreen, RawEditorScreen
from ccswitch_tui.tui.screens.help import HelpScreen
from ccswitch_tui.tui.screens.modals import ConfirmScreen, KeyScreen, NameScreen, NewProfileScreen
from ccswitch_tui.tui.service import PREVIEW_LAUNCH_ID

SIZE = (110, 34)


def test_every_binding_has_an_id_and_a_tooltip():
    for b in CcsApp.BINDINGS:
        assert b.id and b.tooltip, b  # type: ignore[union-attr]
    ids = [b.id for b in CcsApp.BINDINGS]  # type: ignore[union-attr]
    assert len(ids) == len(set(ids))
    for a in ACTIONS:
        assert hasattr(CcsApp, f"action_{a.call[0]}"), a.name


async def test_list_shows_key_state_and_problem_marks(home: Paths, key_id: str):
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        pl = app.profile_list
        assert [e.name for e in pl.entries] == ["alpha", "beta", "broken"]
        assert pl.presence.keys[key_id] is True
        assert pl.presence.keys[f"{key_id}-missing"] is False
        assert [p.severity for p in pl.presence.problems["broken"]] == ["error"]
        assert any("missing" in p.text for p in pl.presence.problems["beta"])
        prompts = {o.id: str(o.prompt) for o in pl.options.options}
        assert "key ✓" in prompts["alpha"] and "TaoToken" in prompts["alpha"] and "claude codex" in prompts["alpha"]
        assert prompts["beta"].startswith("✗ beta") and "key missing" in prompts["beta"]
        assert prompts["broken"].startswith("✗ broken")
        assert "3 profiles, 1 broken" in plain(app, "#list-status")


async def test_filter_narrows_the_list_and_escape_clears_it(home: Paths):
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        assert app.focused is app.query_one("#filter")
        await pilot.press("k", "i", "m")
        await settle(pilot)
        assert [o.id for o in app.profile_list.options.options] == ["beta"]  # beta is a Kimi profile
        assert app.selected == "beta"
        assert app.detail_pane.detail.entry.name == "beta"
        await pilot.press("escape")
        await settle(pilot)
        assert len(app.profile_list.options.options) == 3
        assert app.focused is app.profile_list.options


async def test_overview_shows_key_mask_and_fingerprint_never_the_key(home: Paths, key_id: str):
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        text = plain(app, "#overview-body")
        fp = KeyStore(home).fingerprint(KEY_VALUE)
        assert f"{key_id}  {mask(KEY_VALUE)}  {fp}" in text
        assert "https://taotoken.net/api" in text and "gpt-4.1" in text
        assert "OPENAI_BASE_URL" in text and "ANTHROPIC_AUTH_TOKEN" in text  # injected variables
        for tab in ("overview", "environment", "diff"):
            app.detail_pane.show_tab(tab)
            await settle(pilot)
            assert KEY_VALUE not in app.export_screenshot()


async def test_environment_is_the_plan_of_ccs_env_with_sources(home: Paths):
    env = parent_env()
    app = build_app(home, env)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        for tool in ("claude", "codex", "run"):
            app.action_set_tool(tool)
            await settle(pilot)
            profile = app.service.store.load("alpha")
            plan = plan_for(profile, tool, KEY_VALUE, env, app.service.cwd, paths=home,
                                  launch_id=PREVIEW_LAUNCH_ID)
            text = plain(app, "#env-body")
            for name, value in policy.masked_env(plan).items():
                line = next(x for x in text.splitlines() if x.startswith(name + " ") or x.startswith(name + "  "))
                assert plan.sources[name] in line and value in line, line
            assert KEY_VALUE not in text
            assert "OPENAI_BASE_URL" not in text or plan.env.get("OPENAI_BASE_URL") != STALE_OPENAI_URL


async def test_tool_key_cycles_the_previewed_tool_and_the_tool_bar_takes_clicks(home: Paths):
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        assert app.detail_pane.tool == "claude"
        await pilot.press("t")
        assert app.detail_pane.tool == "codex"
        assert "CODEX_HOME" in plain(app, "#env-body")
        served = app.current_entry().profile.tools  # claude, codex, … run: t cycles through them all
        await pilot.press(*["t"] * (len(served) - 1))
        assert app.detail_pane.tool == "claude"
        title = plain(app, "#detail-title")
        await pilot.click("#detail-title", offset=(title.index(" run ") + 3, 0))
        assert app.detail_pane.tool == "run"
        assert "OPENAI_BASE_URL" in plain(app, "#env-body")


async def test_number_keys_switch_tabs_and_enter_goes_into_the_tab(home: Paths):
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        for key, tab in zip("23451", ("environment", "diff", "running", "runs", "overview"), strict=True):
            await pilot.press(key)
            assert app.detail_pane.active_tab == tab
        await pilot.press("3", "enter")
        assert app.focused is app.query_one("#diff .body")
        await pilot.press("5")
        app.profile_list.options.focus()
        await pilot.press("enter")
        assert app.focused is app.query_one("#runs-table")


async def test_theme_change_keeps_every_tab_rendering(home: Paths):
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        for theme in ("textual-light",):
            app.theme = theme
            for tab in ("overview", "environment", "diff", "running", "runs"):
                app.detail_pane.show_tab(tab)
                await settle(pilot)
                assert app.export_screenshot()
        assert app.is_running


async def test_diff_against_a_contaminated_shell_summary_first(home: Paths):
    env = parent_env()
    app = build_app(home, env)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        app.action_set_tool("run")
        await settle(pilot)
        text = plain(app, "#diff-body")
        view = app.detail_pane.view
        d = diff_env(env, view.plan.env, tools.load().families, view.plan.routing_names)
        assert text.splitlines()[0] == d.summary()
        # one row each: mark, name, old → new, reason, in the group they belong to
        assert f"~  OPENAI_BASE_URL  {STALE_OPENAI_URL} → https://taotoken.net/api  by the profile" in text
        assert "-  ANTHROPIC_API_KEY  sk-…0000  claude key" in text.split("kept out (", 1)[1]
        assert "+  OPENAI_API_KEY  " + mask(KEY_VALUE) + "  key" in text
        assert "-  EDITOR_HINT  x  not passed" in text.split("harmless", 1)[1]  # harmless: the last group


async def test_key_set_replace_remove_through_the_modal(home: Paths, key_id: str):
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "beta")
        missing = f"{key_id}-missing"
        await pilot.press("k")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, KeyScreen) and app.screen, what="key modal")
        field = screen.query_one("#key-value", Input)
        assert field.password and app.focused is field
        assert screen.query_one("#remove", Button).disabled
        field.value = "  sk-beta-new-value-123456789  "
        await pilot.press("enter")
        await settle(pilot)
        assert keyring.get_password(SERVICE, missing) == "sk-beta-new-value-123456789"
        assert any(f"stored {missing}  sk-…6789" in n for n in notifications(app))
        assert app.profile_list.presence.keys[missing] is True
        assert not any("missing" in p.text for p in app.detail_pane.detail.problems)
        # replace: the modal shows the mask, never the key
        await pilot.press("k")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, KeyScreen) and app.screen)
        assert "sk-…6789" in plain(screen, "#key-state")
        assert "sk-beta-new-value" not in app.export_screenshot()
        screen.query_one("#key-value", Input).value = "sk-beta-replaced-987654321"
        await pilot.click("#store")
        await settle(pilot)
        assert keyring.get_password(SERVICE, missing) == "sk-beta-replaced-987654321"
        # remove, confirmed
        await pilot.press("k")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, KeyScreen) and app.screen)
        await pilot.click("#remove")
        confirm = await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen)
        await pilot.click("#yes")
        await settle(pilot)
        assert keyring.get_password(SERVICE, missing) is None
        assert any(f"removed {missing}" in n for n in notifications(app))
        assert app.profile_list.presence.keys[missing] is False
        assert confirm not in app.screen_stack


async def test_key_modal_cancel_and_empty_value_change_nothing(home: Paths, key_id: str):
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        await pilot.press("k")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, KeyScreen) and app.screen)
        await pilot.press("enter")
        assert "type or paste the key" in plain(screen, "#key-error")
        await pilot.press("escape")
        await settle(pilot)
        assert not app.screen.is_modal
        assert keyring.get_password(SERVICE, key_id) == KEY_VALUE


async def test_env_key_profiles_are_not_stored(ccs_home: Paths):
    store = make_profiles(ccs_home, "unused")
    store.save_text("envkey", new_env_profile(), create=True)
    app = build_app(ccs_home, parent_env(ENVKEY_VALUE="sk-from-the-environment-1234"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "envkey")
        assert "sk-…1234" in plain(app, "#overview-body")
        await pilot.press("k")
        await settle(pilot)
        assert not app.screen.is_modal
        assert any("$ENVKEY_VALUE" in n for n in notifications(app))


def new_env_profile() -> str:
    return ('schema = 1\n[provider]\nname = "Env"\nbase_url = "https://env.example/api"\nkey = "env:ENVKEY_VALUE"\n'
            '[run]\nexport = ["openai"]\n')


async def test_new_profile_from_a_preset(home: Paths):
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("n")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, NewProfileScreen) and app.screen)
        screen.query_one("#preset", Select).value = "openrouter"
        await pilot.pause()
        name = screen.query_one("#name", Input)
        assert name.value == "openrouter"
        name.value = "alpha"
        await pilot.pause()
        assert "exists" in plain(screen, "#new-error")
        name.value = "router2"
        screen.query_one("#key-id", Input).value = "router-key"
        await pilot.click("#ok")
        await settle(pilot)
        text = (home.profiles / "router2.toml").read_text()
        assert text.startswith("# OpenRouter")  # the preset's comments came along
        assert 'key = "router-key"' in text
        assert app.selected == "router2"
        assert any("press k to store key router-key" in n for n in notifications(app))


async def test_new_blank_profile_needs_a_base_url(home: Paths):
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("n")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, NewProfileScreen) and app.screen)
        screen.query_one("#preset", Select).value = ""
        screen.query_one("#name", Input).value = "plain"
        await pilot.click("#ok")
        assert "needs a base URL" in plain(screen, "#new-error")
        screen.query_one("#base-url", Input).value = "https://plain.example/v1"
        await pilot.pause(0.3)  # a button ignores a second click while it still shows the first
        await pilot.click("#ok")
        await settle(pilot)
        assert app.service.store.load("plain").provider.base_url == "https://plain.example/v1"


async def test_edit_form_saves_through_the_store_keeping_comments(home: Paths):
    path = home.profiles / "alpha.toml"
    before = path.read_text()
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        await pilot.press("e")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen)
        assert screen.query_one("#f-codex-model", Input).value == "gpt-4.1"
        screen.query_one("#f-claude-model", Input).value = "claude-sonnet-4-5"
        screen.query_one("#f-env", TextArea).text = "API_TIMEOUT_MS=600000\n"
        await pilot.pause()
        assert screen.error is None
        await pilot.press("ctrl+s")
        await settle(pilot)
    after = path.read_text()
    assert after != before
    comments = [line for line in before.splitlines() if line.startswith("#")]
    assert comments and all(c in after for c in comments)
    profile = app.service.store.load("alpha")
    assert profile.side("claude").model == "claude-sonnet-4-5"
    assert dict(profile.env) == {"API_TIMEOUT_MS": "600000"}
    assert profile.side("codex").model == "gpt-4.1"


async def test_edit_validates_inline_and_keeps_the_file(home: Paths):
    path = home.profiles / "alpha.toml"
    before = path.read_text()
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        await pilot.press("e")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen)
        screen.query_one("#f-codex-model", Input).value = ""
        await pilot.pause()
        err = screen.query_one("#err-f-codex-model")
        assert err.display and "[codex].model is required" in str(err.content)
        assert screen.query_one("#save", Button).disabled
        screen.query_one("#f-codex-model", Input).value = "gpt-4.1"
        screen.query_one("#f-env", TextArea).text = "OPENAI_API_KEY=sk-x\n"
        await pilot.pause()
        assert "looks like a secret" in str(screen.query_one("#err-f-env").content)
        screen.query_one("#f-env", TextArea).text = "not a pair\n"
        await pilot.pause()
        assert "NAME=value" in str(screen.query_one("#err-f-env").content)
        screen.query_one("#f-env", TextArea).text = ""
        screen.query_one("#f-provider-base_url", Input).value = "ftp://nope"
        await pilot.pause()
        assert "is not an http(s) URL" in str(screen.query_one("#err-f-provider-base_url").content)
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, EditorScreen)
        await pilot.press("escape")
        await settle(pilot)
    assert path.read_text() == before


async def test_edit_switching_a_tool_off_removes_its_table(home: Paths):
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        await pilot.press("e")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen)
        screen.query_one("#f-codex").value = False
        await pilot.pause()
        assert not screen.query_one("#fields-codex").display
        await pilot.click("#save")
        await settle(pilot)
        assert app.service.store.load("alpha").side("codex") is None
        assert app.check_action("launch", ("codex",)) is False  # not served: out of the footer (its key says why)


async def test_every_client_section_shows_how_to_switch_it_on_and_serves_it_without_toml(home: Paths):
    """A client the profile does not serve keeps its section in the form, saying it is off and how to
    turn it on (and what it then needs, from the spec's required fields); switching it on and filling
    those fields in serves the client, with no hand-edited TOML."""
    from ccswitch_tui import tools

    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        served = set(app.current_entry().profile.tools)
        await pilot.press("e")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen)
        off = [s for s in tools.load().clients() if s.name not in served]
        assert off, "the test needs a client alpha does not serve"
        for spec in tools.load().clients():
            hint = screen.query_one(f"#off-{spec.name}")
            assert hint.display == (spec in off) and screen.query_one(f"#fields-{spec.name}").display != hint.display
        spec = off[0]
        text = str(screen.query_one(f"#off-{spec.name}").content)
        assert f"no [{spec.name}] table" in text and "Turn the switch on" in text and spec.label in text
        required = [f for f in spec.fields if f.required]
        assert all((f.label or f.name) in text for f in required)
        screen.query_one(f"#f-{spec.name}").value = True
        await pilot.pause()
        assert screen.query_one(f"#fields-{spec.name}").display and not screen.query_one(f"#off-{spec.name}").display
        if required:
            assert f"[{spec.name}].{required[0].name} is required" in (screen.error or "")
        for f in required:
            screen.query_one(f"#f-{spec.name}-{f.name}", Input).value = f"m-{spec.name}"
        await pilot.pause()
        assert screen.error is None
        await pilot.click("#save")
        await settle(pilot)
    side = app.service.store.load("alpha").side(spec.name)
    assert side is not None and all(getattr(side, f.name) == f"m-{spec.name}" for f in required)


async def test_broken_file_opens_the_toml_editor_and_saves_when_valid(home: Paths):
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "broken")
        assert "cannot be loaded" in plain(app, "#overview-body")
        assert app.check_action("launch", ("claude",)) is False
        await pilot.press("e")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, RawEditorScreen) and app.screen)
        assert "broken.toml:2:" in plain(screen, "#raw-error")
        assert screen.query_one("#save", Button).disabled
        screen.query_one("#raw-text", TextArea).text = (
            'schema = 1\n# fixed by hand\n[provider]\nname = "x"\nbase_url = "https://x.example"\nkey = "x"\n')
        await pilot.pause()
        assert plain(screen, "#raw-error") == "valid"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "# fixed by hand" in (home.profiles / "broken.toml").read_text()
        assert app.current_entry().profile is not None


async def test_edit_refuses_to_overwrite_a_file_changed_meanwhile(home: Paths):
    path = home.profiles / "alpha.toml"
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        await pilot.press("e")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen)
        path.write_text(path.read_text() + "\n# changed elsewhere\n")
        screen.query_one("#f-claude-model", Input).value = "claude-kept-aside"
        await pilot.press("ctrl+s")
        await settle(pilot)
        refusal = next(n for n in notifications(app) if "changed on disk" in n)
    assert path.read_text().endswith("# changed elsewhere\n") and "claude-kept-aside" not in path.read_text()
    import re

    found = re.search(r"kept in (\S+\.toml)", refusal)
    assert found, refusal  # the edit is not lost: the notification names where it is
    kept = Path(found.group(1))
    try:
        assert 'model = "claude-kept-aside"' in kept.read_text()
        assert kept.stat().st_mode & 0o077 == 0
    finally:
        kept.unlink()


async def test_duplicate_copies_the_file_under_a_new_name(home: Paths):
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        await pilot.press("d")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, NameScreen) and app.screen)
        name = screen.query_one("#name", Input)
        assert name.value == "alpha-copy"
        name.value = "Bad Name"
        await pilot.pause()
        assert "invalid profile name" in plain(screen, "#name-error")
        name.value = "alpha-2"
        await pilot.press("enter")
        await settle(pilot)
        assert app.selected == "alpha-2"
    assert (home.profiles / "alpha-2.toml").read_text() == (home.profiles / "alpha.toml").read_text()


async def test_delete_asks_first(home: Paths, key_id: str):
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "beta")
        await pilot.press("delete")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen)
        assert app.focused is screen.query_one("#no")  # the safe answer has the focus
        await pilot.press("enter")
        await settle(pilot)
        assert (home.profiles / "beta.toml").exists()
        await pilot.press("delete")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.click("#yes")
        await settle(pilot)
        assert not (home.profiles / "beta.toml").exists()
        assert [e.name for e in app.profile_entries()] == ["alpha", "broken"]
        assert keyring.get_password(SERVICE, key_id) == KEY_VALUE  # keys are not touched


async def test_help_and_palette_list_the_actions(home: Paths):
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.press("c")  # app bindings do not fire under a modal
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert not app.screen.is_modal
        # the palette: discover lists every enabled action; choosing one runs it
        await pilot.press("ctrl+p")
        await pilot.pause()
        for ch in "duplicate":
            await pilot.press(ch)
        await pilot.pause(0.5)
        await pilot.press("enter")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, NameScreen) and app.screen)
        assert screen.query_one("#name", Input).value == "alpha-copy"


async def test_palette_jumps_to_a_profile(home: Paths):
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        for ch in "profile: beta":
            await pilot.press(ch if ch != " " else "space")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await settle(pilot)
        assert app.selected == "beta"


async def test_runs_tab_lists_manifests_newest_first_with_drift(home: Paths):
    base = {"profile": "alpha", "tool": "codex", "argv": ["codex"], "cwd": "/w", "exit_status": 0,
            "base_urls": {"u": "https://a"}, "models": {"model": "gpt-4.1"}, "key_fingerprint": "fp:aaaaaaaaaaaa",
            "env_hash": "sha256:1", "tool_version": "codex@1"}
    write_manifest(home, {**base, "launch_id": "r1", "started": "2025-01-01T00:00:00Z"})
    write_manifest(home, {**base, "launch_id": "r2", "started": "2025-01-02T00:00:00Z"})
    write_manifest(home, {**base, "launch_id": "r3", "started": "2025-01-03T00:00:00Z",
                          "base_urls": {"u": "https://b"}, "exit_status": 1})
    write_manifest(home, {**base, "launch_id": "other", "profile": "beta", "started": "2025-01-04T00:00:00Z"})
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        app.detail_pane.show_tab("runs")
        await settle(pilot)
        rows = [r.manifest["launch_id"] for r in app.detail_pane.runs]
        assert rows == ["r3", "r2", "r1"]
        # r3 went elsewhere and failed: both count (the outcome is part of the verdict)
        assert [r.drifted for r in app.detail_pane.runs] == [("base_urls", "exit_status"), (), ()]
        table = app.query_one("#runs-table")
        assert [str(c) for c in table.get_row_at(0)[:2]] == ["1", "base_urls, exit_status"]  # status, drift first
        assert str(table.get_row_at(1)[1]) == "comparable"
        assert str(table.get_row_at(2)[1]) == "first run"
        assert str(table.get_row_at(0)[2]) == "2025-01-03 00:00:00"  # to the second
        assert "drifted from r2: base_urls, exit_status" in plain(app, "#run-detail")


async def test_bad_files_and_an_unreachable_keyring_do_not_end_the_app(ccs_home: Paths, tmp_path: Path):
    from keyring.backends import fail

    make_profiles(ccs_home, "some-key")
    (ccs_home.profiles / "binary.toml").write_bytes(b"\xff\xfe\x00garbage")
    (ccs_home.profiles / "Not A Name.toml").write_text("x")  # not a profile name: listed as broken
    env = parent_env()
    app = build_app(ccs_home, env, keys=KeyStore(ccs_home, env, backend=fail.Keyring()))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert [e.name for e in app.profile_entries()] == ["Not A Name.toml", "alpha", "beta", "binary", "broken"]
        assert any("keyring" in n.lower() for n in notifications(app))
        await select(pilot, "alpha")
        assert "unknown:" in plain(app, "#overview-body")
        await pilot.press("k")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, KeyScreen) and app.screen)
        screen.query_one("#key-value", Input).value = "sk-will-not-be-stored-123456"
        await pilot.press("enter")
        await settle(pilot)
        assert any("keyring" in n.lower() and "store key" in n for n in notifications(app))
        await select(pilot, "binary")
        assert "cannot be loaded" in plain(app, "#overview-body")
        await select(pilot, "Not A Name.toml")
        assert "rename it" in plain(app, "#overview-body")
        for tab in ("environment", "diff", "runs"):
            app.detail_pane.show_tab(tab)
            await settle(pilot)
        assert app.is_running


async def test_works_at_80x24(home: Paths):
    app = build_app(home)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        for tab in ("overview", "environment", "diff", "running", "runs"):
            app.detail_pane.show_tab(tab)
            await settle(pilot)
            assert app.detail_pane.active_tab == tab
        footer = app.export_screenshot()
        for label in ("Launch…", "Key", "Edit", "Help", "Quit"):
            assert label in footer
        keys = sorted((k.region.x, k.region.right) for k in app.screen.query("FooterKey"))
        assert keys[-1][1] <= 80 and all(a[1] <= b[0] for a, b in zip(keys, keys[1:], strict=False)), keys


async def test_the_launch_menu_of_a_profile_serving_no_client_says_why(home: Paths):
    (home.profiles / "bare.toml").write_text('schema = 1\n[provider]\nname = "B"\nbase_url = "https://b.example"\n'
                                             'key = "b"\n')
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "bare")
        await pilot.press("l")
        await settle(pilot)
        assert any("bare serves no client: press e and switch one on" in n for n in notifications(app))
        assert app.is_running and not app.screen.is_modal


def test_the_registrys_reserved_keys_are_the_apps_own():
    """tools/registry.py keeps the TUI's keys as a plain tuple (the command path imports no Textual):
    it must name every key the app binds besides the clients' launch keys, and nothing else."""
    from textual.app import App
    from textual.binding import Binding

    from ccswitch_tui.tools.registry import LAUNCH_MENU_KEY, RESERVED_KEYS
    from ccswitch_tui.tui.actions import BY_NAME, LAUNCHES
    from ccswitch_tui.tui.app import CcsApp

    bound = {k.strip() for b in (*CcsApp.BINDINGS, *App.BINDINGS)
             for k in (b.key if isinstance(b, Binding) else b[0]).split(",")}
    assert bound - {a.key for a in LAUNCHES} == set(RESERVED_KEYS) - {"ctrl+p"}
    assert BY_NAME["launch_menu"].key == LAUNCH_MENU_KEY


async def test_profiles_added_on_disk_show_after_reload(home: Paths):
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        (home.profiles / "late.toml").write_text((home.profiles / "alpha.toml").read_text())
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert "late" in [e.name for e in app.profile_entries()]


async def test_empty_home_invites_to_create(ccs_home: Paths, secret_service: str):
    app = build_app(ccs_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "none yet: n new, i import" in plain(app, "#list-status")
        assert app.check_action("launch", ("claude",)) is False
        assert app.check_action("new", ()) is True


"""`ccs new` (and the TUI's new-profile dialog) says the URL each client will use, and fixes or refuses
one the client would misuse: Claude Code appends /v1/messages, so an inherited base URL ending in /v1
is fixed in [claude], and `--base-url claude=…/v1` is refused. The real `claude -p` proves it."""

from __future__ import annotations

import json

import pytest

from ccswitch_tui.paths import Paths
from ccswitch_tui.profiles.store import Store

KEY = "sk-creation-0123456789abcdefXYZ"


@pytest.mark.usefixtures("secret_service")
def test_preset_with_a_v1_gateway_reaches_v1_messages(ccs, base_env, stubs, client_bin, key_id, ccs_home: Paths):
    clients_bin = client_bin("claude", "codex")
    stub = stubs("gateway")
    env = {**base_env, "PATH": f"{clients_bin}:{base_env['PATH']}"}
    r = ccs("new", "kimi", "--preset", "kimi", "--base-url", f"{stub.url}/v1", "--key", key_id, env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    claude = next(i for i, line in enumerate(lines) if line.strip().startswith("claude "))
    assert lines[claude].split()[1] == stub.url and f"{stub.url}/v1/messages" in lines[claude]
    assert "Claude Code appends /v1/messages" in lines[claude + 1] and "--base-url claude=URL" in lines[claude + 1]
    assert any(line.split()[:2] == ["codex", f"{stub.url}/v1"] for line in lines)  # Codex keeps the /v1
    p = Store(ccs_home).load("kimi")
    assert p.side("claude").base_url == stub.url and p.side("codex").base_url == f"{stub.url}/v1"

    assert ccs("key", "set", key_id, input=KEY, env=env).returncode == 0
    r = ccs("launch", "kimi", "claude", "--", "-p", "hi", "--output-format", "json", env=env, timeout=90)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["result"] == "stub reply"
    assert "/v1/v1" not in r.stderr
    (post,) = stub.posts()
    assert post.path.split("?")[0] == "/v1/messages"


def test_one_tools_url_is_set_and_a_misused_one_refused(ccs, ccs_home: Paths):
    r = ccs("new", "k", "--preset", "kimi", "--base-url", "claude=http://127.0.0.1:9/v1")
    assert r.returncode == 2 and r.stdout == ""
    (line,) = r.stderr.strip().splitlines()
    assert "Claude Code appends /v1/messages" in line and "--base-url claude=http://127.0.0.1:9" in line
    assert not (ccs_home.profiles / "k.toml").exists()

    r = ccs("new", "k", "--preset", "kimi", "--base-url", "claude=http://127.0.0.1:9/anthropic",
            "--base-url", "codex=http://127.0.0.1:8/v1")
    assert r.returncode == 0, r.stderr
    p = Store(ccs_home).load("k")
    assert p.provider.base_url == "https://api.moonshot.cn/v1"  # the preset's, untouched
    assert p.side("claude").base_url == "http://127.0.0.1:9/anthropic"
    assert p.side("codex").base_url == "http://127.0.0.1:8/v1"
    assert "http://127.0.0.1:9/anthropic/v1/messages" in r.stdout

    r = ccs("new", "k2", "--preset", "kimi", "--base-url", "nosuch=http://127.0.0.1:9")
    assert r.returncode == 2 and "unknown tool 'nosuch'" in r.stderr
    r = ccs("new", "k2", "--preset", "kimi", "--base-url", "http://a.example", "--base-url", "http://b.example")
    assert r.returncode == 2 and "--base-url given twice" in r.stderr


async def test_tui_new_dialog_fixes_and_says_the_urls(home: Paths):
    from test_tui_support import build_app, notifications, settle, wait_until
    from textual.widgets import Input, Select

    from ccswitch_tui.tui.screens.modals import NewProfileScreen

    app = build_app(home)
    async with app.run_test(size=(110, 34)) as pilot:
        await settle(pilot)
        await pilot.press("n")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, NewProfileScreen) and app.screen)
        screen.query_one("#preset", Select).value = "kimi"
        await pilot.pause()
        screen.query_one("#name", Input).value = "gw"
        screen.query_one("#base-url", Input).value = "http://127.0.0.1:18103/v1"
        await pilot.click("#ok")
        await settle(pilot)
        assert app.service.store.load("gw").side("claude").base_url == "http://127.0.0.1:18103"
        said = "\n".join(notifications(app))
        assert "http://127.0.0.1:18103/v1/messages" in said and "Claude Code appends /v1/messages" in said

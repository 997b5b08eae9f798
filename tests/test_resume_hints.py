"""Resume hints for every client that can resume a session: Gemini CLI and OpenCode too (their own
hints would open the default home and provider), shown by the TUI once the client exits, and not
printed after a one-prompt run a shim started (`claude -p` in a script). The real pinned clients
against a loopback stub; each hint is run as printed and resumes the session."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import pytest
from pty_session import PtySession
from test_new_clients import KEY, make_profile

from ccswitch_tui import tools
from ccswitch_tui.launch.plan import plan_for
from ccswitch_tui.paths import resolve_paths
from ccswitch_tui.profiles.store import Store


def plan(env: dict[str, str], cwd: Path, tool: str):  # noqa: ANN201
    paths = resolve_paths({"CCS_HOME": os.environ["CCS_HOME"]})
    return plan_for(Store(paths).load("p"), tool, KEY, env, cwd, paths=paths)


@pytest.mark.usefixtures("secret_service")
@pytest.mark.parametrize("tool,first,again,pattern", [
    ("gemini", ["-p", "say hi"], ["-p", "and again"], r"--resume [0-9a-f-]{36}"),
    ("opencode", ["run", "say hi"], ["run", "and again"], r"--session ses_[0-9a-f]{12}[0-9A-Za-z]{14}"),
])
def test_the_hint_names_the_session_the_launch_wrote_and_resumes_it(
        ccs, base_env, stubs, client_bin, key_id, tmp_path, tool, first, again, pattern):
    """`ccs launch` gave no resume hint for Gemini CLI or OpenCode."""
    clients_bin = client_bin(tool)
    good = stubs("good")
    env = {**base_env, "PATH": f"{clients_bin}:{base_env['PATH']}"}
    make_profile(ccs, env, good.url, key_id)
    proj = tmp_path / "work"
    proj.mkdir()
    since = time.time() - 1
    r = ccs("launch", "p", tool, "--", *first, env=env, cwd=proj, timeout=180)
    assert r.returncode == 0, r.stderr
    spec = tools.load().get(tool)
    hint = spec.resume_command(plan(env, proj, tool), since)
    assert hint is not None and re.fullmatch(pattern, hint), hint
    assert spec.resume_command(plan(env, proj, tool), time.time() + 60) is None  # nothing written since
    assert spec.resume_command(plan(env, tmp_path, tool), since) is None  # another folder's session
    asked = len(good.posts())
    r = ccs("launch", "p", tool, "--", *hint.split(), *again, env=env, cwd=proj, timeout=180)
    assert r.returncode == 0, r.stderr
    said = json.dumps([p.body for p in good.posts()[asked:]])
    assert "say hi" in said and "and again" in said  # the first turn came back with the second


def _shim_setup(ccs, env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    r = ccs("use", "p", env=env)
    assert r.returncode == 0, r.stderr
    shims = Path(os.environ["CCS_HOME"]) / "state" / "shims"
    return {**env, "PATH": f"{shims}:{env['PATH']}"}


@pytest.mark.usefixtures("secret_service")
@pytest.mark.parametrize("tool,args,pattern", [
    ("claude", ["-p", "say hi"], r"ccs launch p claude -- --resume [0-9a-f-]{36}"),
    ("gemini", ["-p", "say hi"], r"ccs launch p gemini -- --resume [0-9a-f-]{36}"),
])
def test_a_one_prompt_run_from_a_shim_prints_no_resume_hint(ccs, base_env, stubs, client_bin, key_id, tmp_path,
                                                            tool, args, pattern):
    """On a terminal, a shimmed `claude -p` printed ccs's resume hint: noise in a script's output.
    The same launch typed as `ccs launch` still gets one."""
    clients_bin = client_bin(tool)
    good = stubs("good")
    env = {**base_env, "PATH": f"{clients_bin}:{base_env['PATH']}", "TERM": "xterm"}
    make_profile(ccs, env, good.url, key_id)
    profile = Path(os.environ["CCS_HOME"]) / "profiles" / "p.toml"
    profile.write_text(profile.read_text() + f'\n[claude]\nbase_url = "{good.url}"\nmodel = "p-claude"\n')
    shimmed = _shim_setup(ccs, env, tmp_path)
    proj = tmp_path / "work"
    proj.mkdir()
    rc, text = on_a_terminal([tool, *args], shimmed, proj)
    assert rc == 0 and "stub reply" in text, text
    assert "to resume this session" not in text, text
    rc, text = on_a_terminal([sys.executable, "-m", "ccswitch_tui", "launch", "p", tool, "--", *args], env, proj)
    assert rc == 0 and re.search(pattern, text), text


def on_a_terminal(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    s = PtySession(argv, env=env, cwd=cwd)
    try:
        return s.wait(180), s.text
    finally:
        s.close()


@pytest.mark.usefixtures("secret_service")
async def test_the_tui_shows_the_resume_hint_once_the_client_exits(ccs, base_env, stubs, client_bin, key_id,
                                                                   tmp_path):
    """After a client exited, the TUI said its exit status and nothing of how to resume the session
    (the client's own hint was on the screen the TUI took back)."""
    clients_bin = client_bin("opencode")
    from test_tui_support import build_app, notifications, parent_env, settle, wait_until

    from ccswitch_tui.tui import messages as m

    good = stubs("good")
    env = {**base_env, "PATH": f"{clients_bin}:{base_env['PATH']}"}
    make_profile(ccs, env, good.url, key_id)
    proj = tmp_path / "work"
    proj.mkdir()
    paths = resolve_paths({"CCS_HOME": os.environ["CCS_HOME"]})
    app = build_app(paths, parent_env(PATH=env["PATH"]), cwd=proj)
    done: list[m.Launched] = []
    async with app.run_test(size=(120, 36), message_hook=lambda msg: isinstance(msg, m.Launched) and done.append(
            msg)) as pilot:
        await settle(pilot)
        app.launcher.start(m.LaunchRequest("p", "opencode", "OpenCode", args=("run", "say hi"), key_id=key_id))
        await wait_until(pilot, lambda: done, timeout=180, what="the launch")
        await pilot.pause()
        assert done[0].status == 0, done[0]
        said = "\n".join(notifications(app))
        assert re.search(r"To resume this session with profile 'p': ccs launch p opencode -- --session ses_\w+",
                         said), said

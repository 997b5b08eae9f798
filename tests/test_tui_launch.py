"""Launching from the TUI: real child processes through the same supervised launch as the CLI,
manifests written, exit status shown, refusals shown with their ways out (and taken from there)."""

from __future__ import annotations

import json
import os
import pty
import re
import select as select_mod
import signal
import sys
import time
from pathlib import Path

import pytest
from test_tui_support import (
    KEY_VALUE,
    STALE_OPENAI_URL,
    build_app,
    notifications,
    parent_env,
    settle,
    wait_until,
)
from test_tui_support import select as select_profile
from textual.widgets import Input

from ccswitch_tui.keys.keyring import KeyStore
from ccswitch_tui.paths import Paths
from ccswitch_tui.runs.manifests import load_manifests
from ccswitch_tui.tools.capabilities import TuiFace
from ccswitch_tui.tui import messages as m
from ccswitch_tui.tui.screens.modals import CommandScreen, RefusalScreen

SIZE = (110, 34)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    d = tmp_path / "work"
    d.mkdir()
    return d


def read_env(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def fake_tool(folder: Path, name: str, status: int = 0) -> Path:
    """A stand-in for an npm client: records its argv and environment in its working directory."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {name}-args.txt\nenv > {name}-env.txt\nexit {status}\n')
    path.chmod(0o755)
    return path


async def run_command(pilot, command: str) -> None:
    app = pilot.app
    await pilot.press("r")
    screen = await wait_until(pilot, lambda: isinstance(app.screen, CommandScreen) and app.screen)
    screen.query_one("#command", Input).value = command
    await pilot.press("enter")


async def test_run_a_command_real_child_status_and_manifest(home: Paths, work: Path, key_id: str):
    launched: list[m.Launched] = []
    app = build_app(home, cwd=work)
    async with app.run_test(size=SIZE, message_hook=lambda msg: isinstance(msg, m.Launched) and launched.append(msg)
                            ) as pilot:
        await settle(pilot)
        await select_profile(pilot, "alpha")
        await run_command(pilot, "sh -c 'env > child-env.txt; exit 3'")
        await wait_until(pilot, lambda: launched, what="the launch to return")
        await settle(pilot)
        assert launched[0].status == 3 and launched[0].error is None
        assert app.is_running and not app.screen.is_modal  # the app is back
        assert any("exited with status 3" in n for n in notifications(app))
        assert "exited with status 3" in app.sub_title
        # the child got the profile's clean environment, not the shell's
        env = read_env(work / "child-env.txt")
        assert env["OPENAI_BASE_URL"] == "https://taotoken.net/api" != STALE_OPENAI_URL
        assert env["OPENAI_API_KEY"] == KEY_VALUE
        assert env["CCS_PROFILE"] == "alpha" and env["CCS_TOOL"] == "run"
        assert "ANTHROPIC_API_KEY" not in env and "EDITOR_HINT" not in env
        # the manifest is the CLI's, completed with the status
        [manifest] = load_manifests(home, "alpha")
        assert manifest["exit_status"] == 3 and manifest["ended"]
        assert manifest["argv"] == ["sh", "-c", "env > child-env.txt; exit 3"]
        assert manifest["launch_id"] == env["CCS_LAUNCH_ID"]
        assert manifest["key_fingerprint"] == KeyStore(home).fingerprint(KEY_VALUE)
        assert KEY_VALUE not in json.dumps(manifest)
        # and the Runs tab shows it
        assert [r.manifest["launch_id"] for r in app.detail_pane.runs] == [manifest["launch_id"]]


async def test_nested_launch_is_refused_with_its_way_out(home: Paths, work: Path):
    launched: list[m.Launched] = []
    env = parent_env(CCS_LAUNCH_ID="outer-launch", CCS_PROFILE="beta")
    app = build_app(home, env, cwd=work)
    async with app.run_test(size=SIZE, message_hook=lambda msg: isinstance(msg, m.Launched) and launched.append(msg)
                            ) as pilot:
        await settle(pilot)
        await select_profile(pilot, "alpha")
        await run_command(pilot, "true")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, RefusalScreen) and app.screen)
        assert "nested launch" in screen.message and "outer-launch" in screen.message
        assert screen.ways_out == ["--nested"]
        assert load_manifests(home) == []  # nothing ran
        await pilot.click("#way-nested")
        await wait_until(pilot, lambda: launched, what="the nested launch")
        assert launched[0].status == 0
        [manifest] = load_manifests(home, "alpha")
        assert manifest["nested"] is True


async def test_refusal_cancelled_launches_nothing(home: Paths, work: Path):
    launched: list[m.Launched] = []
    app = build_app(home, parent_env(CCS_LAUNCH_ID="outer"), cwd=work)
    async with app.run_test(size=SIZE, message_hook=lambda msg: isinstance(msg, m.Launched) and launched.append(msg)
                            ) as pilot:
        await settle(pilot)
        await select_profile(pilot, "alpha")
        await run_command(pilot, "true")
        await wait_until(pilot, lambda: isinstance(app.screen, RefusalScreen))
        await pilot.press("escape")
        await wait_until(pilot, lambda: launched)
        assert launched[0].status is None and "nested" in launched[0].error
        assert load_manifests(home) == []


async def test_settings_override_refused_then_launched_isolated(home: Paths, work: Path, tmp_path: Path):
    bin_dir = tmp_path / "bin"
    fake_tool(bin_dir, "claude")
    (work / ".claude").mkdir()
    (work / ".claude" / "settings.json").write_text(json.dumps({"env": {"ANTHROPIC_MODEL": "some-other-model"}}))
    env = parent_env(PATH=f"{bin_dir}:{os.environ['PATH']}", CCS_CLAUDE_MANAGED_SETTINGS=str(tmp_path / "none.json"))
    launched: list[m.Launched] = []
    app = build_app(home, env, cwd=work)
    async with app.run_test(size=SIZE, message_hook=lambda msg: isinstance(msg, m.Launched) and launched.append(msg)
                            ) as pilot:
        await settle(pilot)
        await select_profile(pilot, "alpha")
        assert any("would override the profile" in p.text for p in app.detail_pane.detail.problems)
        await pilot.press("c")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, RefusalScreen) and app.screen)
        assert "settings.json" in screen.message and "ANTHROPIC_MODEL" in screen.message
        assert [w.split()[0] for w in screen.ways_out[:2]] == ["--isolate", "--force"]
        assert screen.query("#way-isolate") and screen.query("#way-force")
        await pilot.click("#way-isolate")
        await wait_until(pilot, lambda: launched, what="the isolated launch")
        assert launched[0].status == 0
        args = (work / "claude-args.txt").read_text().split()
        assert args[0] == "--settings" and args[2:4] == ["--setting-sources", "user"]
        child = read_env(work / "claude-env.txt")
        assert child["ANTHROPIC_AUTH_TOKEN"] == KEY_VALUE and child["ANTHROPIC_BASE_URL"] == "https://taotoken.net/api"
        [manifest] = load_manifests(home, "alpha")
        assert manifest["isolate"] is True and manifest["tool"] == "claude"


async def test_launch_codex_writes_its_config_and_manifest(home: Paths, work: Path, tmp_path: Path):
    bin_dir = tmp_path / "bin"
    fake_tool(bin_dir, "codex", status=0)
    launched: list[m.Launched] = []
    app = build_app(home, parent_env(PATH=f"{bin_dir}:{os.environ['PATH']}"), cwd=work)
    async with app.run_test(size=SIZE, message_hook=lambda msg: isinstance(msg, m.Launched) and launched.append(msg)
                            ) as pilot:
        await settle(pilot)
        await select_profile(pilot, "alpha")
        await pilot.press("x")
        await wait_until(pilot, lambda: launched, what="codex to return")
        await settle(pilot)
        assert launched[0].status == 0
        assert any("Codex (alpha) exited with status 0" in n for n in notifications(app))
    child = read_env(work / "codex-env.txt")
    assert child["CCS_CODEX_API_KEY"] == KEY_VALUE and child["CCS_TOOL"] == "codex"
    assert "OPENAI_BASE_URL" not in child and "OPENAI_API_KEY" not in child  # the stale shell stays out
    config = (Path(child["CODEX_HOME"]) / "config.toml").read_text()
    assert 'wire_api = "responses"' in config and "taotoken" in config and KEY_VALUE not in config
    [manifest] = load_manifests(home, "alpha")
    assert manifest["tool"] == "codex" and manifest["exit_status"] == 0


async def test_missing_client_is_an_error_notification_not_a_crash(home: Paths, work: Path, tmp_path: Path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    launched: list[m.Launched] = []
    app = build_app(home, parent_env(PATH=str(empty)), cwd=work)
    async with app.run_test(size=SIZE, message_hook=lambda msg: isinstance(msg, m.Launched) and launched.append(msg)
                            ) as pilot:
        await settle(pilot)
        await select_profile(pilot, "alpha")
        await pilot.press("x")
        await wait_until(pilot, lambda: launched)
        await settle(pilot)
        assert launched[0].status is None
        assert any("'codex' not found on PATH" in n and "npm install -g @openai/codex" in n for n in notifications(app))
        assert app.is_running
        # a profile without a key says how to store it
        await select_profile(pilot, "beta")
        await pilot.press("c")
        await wait_until(pilot, lambda: len(launched) == 2)
        assert "ccs key set" in launched[1].error


async def test_shell_opens_the_tools_clean_environment(home: Paths, work: Path, tmp_path: Path):
    shell = fake_tool(tmp_path / "bin", "fake-shell", status=7)
    launched: list[m.Launched] = []
    app = build_app(home, parent_env(SHELL=str(shell)), cwd=work)
    async with app.run_test(size=SIZE, message_hook=lambda msg: isinstance(msg, m.Launched) and launched.append(msg)
                            ) as pilot:
        await settle(pilot)
        await select_profile(pilot, "alpha")
        await pilot.press("t")  # the shell gets the environment of the tool shown: codex
        await pilot.press("s")
        await wait_until(pilot, lambda: launched)
        assert launched[0].status == 7
        env = read_env(work / "fake-shell-env.txt")
        assert env["CCS_TOOL"] == "codex" and env["CCS_CODEX_API_KEY"] == KEY_VALUE
        assert "OPENAI_BASE_URL" not in env
        assert load_manifests(home, "alpha")[0]["argv"] == [str(shell)]


# --- a real terminal: the app suspends, the tool owns the terminal, the app comes back --------------

APP_SCRIPT = """
import os, sys
from pathlib import Path
from ccswitch_tui.paths import resolve_paths
from ccswitch_tui.tui.app import CcsApp
CcsApp(resolve_paths(), cwd=Path(sys.argv[1])).run()
"""


class Terminal:
    """The parent side of a pty: everything the app wrote, searched in order."""

    def __init__(self, fd: int):
        self.fd, self.raw, self.pos = fd, b"", 0

    @property
    def text(self) -> str:
        return re.sub(r"\x1b\[[0-9;?]*[ -/]*[@-~]", "", self.raw.decode("utf-8", "replace"))

    def expect(self, pattern: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            found = re.compile(pattern).search(self.text, self.pos)
            if found:
                self.pos = found.end()
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} not seen; got {self.text[-1500:]!r}")
            ready, _, _ = select_mod.select([self.fd], [], [], 0.1)
            if ready:
                try:
                    self.raw += os.read(self.fd, 65536)
                except OSError:
                    pass

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)


def _drain_until_exit(fd: int, pid: int, timeout: float = 20.0) -> int:
    """Keep reading the terminal (a full terminal buffer would block the app) until the app exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        ready, _, _ = select_mod.select([fd], [], [], 0.1)
        if ready:
            try:
                os.read(fd, 65536)
            except OSError:
                pass
    raise AssertionError("the app did not exit")


def test_launch_in_a_real_terminal_suspends_and_resumes(home: Paths, work: Path):
    env = dict(os.environ, CCS_HOME=str(home.profiles.parent), TERM="xterm-256color", COLUMNS="100", LINES="30")
    env.pop("CCS_LAUNCH_ID", None)
    pid, fd = pty.fork()
    if pid == 0:  # the child: the real app on a real terminal
        os.execvpe(sys.executable, [sys.executable, "-c", APP_SCRIPT, str(work)], env)
    try:
        import fcntl
        import struct
        import termios

        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        term = Terminal(fd)
        term.expect(r"alpha")
        term.expect(r"key ✓")  # keys looked up: the list is complete
        term.send(b"r")
        term.expect(r"Run a command with alpha")
        # The expected words are computed by the shell, so the app's echo of the typed command cannot match.
        term.send(b"sh -c 'echo OWNS-$((40+2)); test -t 0 && echo TTY-$((6*7)); "
                  b"read line; echo got-$line-$((1+1)); exit 5'\r")
        term.expect(r"OWNS-42")
        term.expect(r"TTY-42")
        term.send(b"hello\r")  # typed input reaches the tool, not the app
        term.expect(r"got-hello-2")
        term.expect(r"exited with status 5 — press any key to return to ccs")
        term.send(b" ")
        term.expect(r"exited with status 5")  # the app is back and says so
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
    [manifest] = load_manifests(home, "alpha")
    assert manifest["exit_status"] == 5
    assert manifest["argv"][0] == "sh"



async def test_the_folded_launch_menu_lists_the_profiles_clients_and_launches_by_key(
        home: Paths, work: Path, tmp_path: Path):
    """With the launch keys folded behind "Launch…" (they would not fit 80 columns), `l` lists the
    clients the profile serves with their keys; a client's key there launches it, as it does outside."""
    from ccswitch_tui import tools
    from ccswitch_tui.tui.actions import FOLDED
    from ccswitch_tui.tui.screens.modals import LaunchMenuScreen

    empty = tmp_path / "empty-bin"
    empty.mkdir()
    launched: list[m.Launched] = []
    app = build_app(home, parent_env(PATH=str(empty)), cwd=work)
    async with app.run_test(size=(80, 24), message_hook=lambda msg: isinstance(msg, m.Launched)
                            and launched.append(msg)) as pilot:
        await settle(pilot)
        await select_profile(pilot, "alpha")
        await pilot.press("l")
        menu = await wait_until(pilot, lambda: isinstance(app.screen, LaunchMenuScreen) and app.screen)
        served = [s for s in tools.load().clients() if s.name in app.current_entry().profile.tools]
        assert [c[2] for c in menu.clients] == [s.name for s in served] and len(served) >= 2
        assert [str(b.label) for b in menu.query(".launch-choice")] == [
            f"{s.tui_key}  {s.label}" if isinstance(s, TuiFace) else s.label for s in served]
        await pilot.press("x")
        await wait_until(pilot, lambda: launched)
        await settle(pilot)
        assert launched[0].request.tool == "codex"
        assert any("'codex' not found on PATH" in n for n in notifications(app))
        await pilot.press("l")  # Escape closes it and launches nothing
        await wait_until(pilot, lambda: isinstance(app.screen, LaunchMenuScreen))
        await pilot.press("escape")
        await settle(pilot)
        assert len(launched) == 1 and not isinstance(app.screen, LaunchMenuScreen)
    assert FOLDED  # four clients with the rest of the footer need more than 80 columns

"""Snapshots of the main screens at fixed sizes: fixed profiles in a fixed CCS_HOME, a fixed shell
environment, a fixed salt, cursor blink off, workers awaited. Update with --snapshot-update after
looking at the report."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import keyring
import pytest
from test_tui_support import settle

from ccswitch_tui.diagnose.findings import counts
from ccswitch_tui.diagnose.inspect import Inspection, Inspector, ProcessInfo
from ccswitch_tui.keys.keyring import SERVICE, KeyStore
from ccswitch_tui.paths import Paths
from ccswitch_tui.profiles.presets import new_profile_text
from ccswitch_tui.profiles.store import Store
from ccswitch_tui.runs.manifests import write_manifest
from ccswitch_tui.tui.app import CcsApp
from ccswitch_tui.tui.service import Service

ROOT = Path("/tmp/ccs-tui-snapshots")
KEY_ID = "ccs-snapshot-taotoken"
MISSING_ID = "ccs-snapshot-kimi"
KEY_VALUE = "sk-snapshot-0123456789abcdef"
SIZE = (100, 30)

# The shell ccs is "started from": a stale OpenAI setup, an old Anthropic gateway and a proxy.
SHELL = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/home/user",
    "USER": "user",
    "TERM": "xterm-256color",
    "LANG": "C.UTF-8",
    "SHELL": "/bin/bash",
    "EDITOR": "vim",
    "OPENAI_BASE_URL": "https://stale-gateway.example/v1",
    "OPENAI_API_KEY": "sk-stale-openai-key-00001234",
    "ANTHROPIC_BASE_URL": "https://old-gateway.example",
    "HTTPS_PROXY": "http://proxy.example:3128",
    "CCS_CLAUDE_MANAGED_SETTINGS": str(ROOT / "no-managed-settings.json"),
}


class FixedProcesses(Service):
    """The real judgement (Inspector.judge) of two fixed process environments, instead of a /proc scan
    whose pids and timings would change the picture on every run."""

    PROCS: dict[int, tuple[str, str | None, str | None, dict[str, str]]] = {
        4242: ("claude", "claude", "taotoken", {
            "PATH": "/usr/bin:/bin", "HOME": "/home/user", "CCS_PROFILE": "taotoken", "CCS_TOOL": "claude",
            "CCS_LAUNCH_ID": "20250101T000000Z-0badc0de", "ANTHROPIC_BASE_URL": "https://taotoken.net/api",
            "ANTHROPIC_AUTH_TOKEN": KEY_VALUE, "CLAUDE_CONFIG_DIR": str(ROOT / "home/state/tools/taotoken/claude"),
            "OPENAI_BASE_URL": "https://stale-gateway.example/v1"}),
        5151: ("codex", "codex", None, {
            "PATH": "/usr/bin:/bin", "HOME": "/home/user", "OPENAI_API_KEY": "sk-stale-openai-key-00001234",
            "HTTPS_PROXY": "http://proxy.example:3128", "ANTHROPIC_BASE_URL": "https://old-gateway.example"}),
    }

    def _judge(self, pid: int) -> Inspection:
        name, tool, profile, env = self.PROCS[pid]
        expected, diff, found, extras = Inspector(self.store, self.keys).judge(
            pid, env, tool, "/home/user/project", profile, "marker" if profile else None)
        return Inspection(pid=pid, name=name, tool=tool, profile=extras.get("profile"),
                          profile_source="marker" if profile else None, launch_id=env.get("CCS_LAUNCH_ID"),
                          cwd="/home/user/project", started=None, user="user", expected=expected, actual=env,
                          diff=diff, findings=tuple(found), key_fingerprint=extras.get("key_fingerprint"),
                          fingerprints=extras.get("fingerprints", {}),
                          secret_names=frozenset(extras.get("secret_names", ())))

    def processes(self, all_: bool = False) -> list[Any]:
        out = []
        for pid, (name, tool, profile, env) in self.PROCS.items():
            insp = self._judge(pid)
            out.append(ProcessInfo(pid=pid, name=name, tool=tool, profile=profile,
                                   launch_id=env.get("CCS_LAUNCH_ID"), cwd="/home/user/project", started=None,
                                   user="user", status="ok", reasons=("tool", "marker") if profile else ("tool",),
                                   counts=counts(insp.findings)))
        return out

    def inspect(self, pid: int) -> tuple[Any, str | None]:
        return self._judge(pid), None


@pytest.fixture(scope="module", autouse=True)
def one_run_at_a_time() -> Iterator[None]:
    """The snapshots show ROOT's path, so it is fixed: a second test run on the machine waits for this
    one instead of deleting the folder under it."""
    with open(ROOT.with_name(ROOT.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture
def snap_home(secret_service: str) -> Iterator[Paths]:
    shutil.rmtree(ROOT, ignore_errors=True)
    paths = Paths(profiles=ROOT / "home" / "profiles", state=ROOT / "home" / "state")
    store = Store(paths)
    store.save_text("taotoken", new_profile_text("taotoken", "taotoken", key=KEY_ID), create=True)
    store.save_text("kimi", new_profile_text("kimi", "kimi", key=MISSING_ID), create=True)
    store.save_text("openrouter", new_profile_text("openrouter", "openrouter", key=KEY_ID), create=True)
    (paths.profiles / "zz-broken.toml").write_text('schema = 1\n[provider\nname = "x"\n')
    paths.state.mkdir(parents=True, exist_ok=True)
    paths.salt.write_text("00" * 32 + "\n")
    (ROOT / "work").mkdir()
    keys = KeyStore(paths, os.environ)
    keys.set(KEY_ID, KEY_VALUE)
    keys.delete(MISSING_ID)
    base = {"profile": "taotoken", "tool": "codex", "argv": ["codex"], "cwd": "/home/user/project",
            "base_urls": {"model_providers.taotoken.base_url": "https://taotoken.net/api"},
            "models": {"model": "gpt-4.1"}, "key_id": KEY_ID, "key_fingerprint": "fp:5d1e8b0c2a47",
            "env_hash": "sha256:6c1f", "tool_version": "@openai/codex@0.171.0", "exit_status": 0}
    write_manifest(paths, {**base, "launch_id": "20250101T090000Z-aaaa0001", "started": "2025-01-01T09:00:00Z"})
    write_manifest(paths, {**base, "launch_id": "20250102T090000Z-aaaa0002", "started": "2025-01-02T09:00:00Z"})
    write_manifest(paths, {**base, "launch_id": "20250103T090000Z-aaaa0003", "started": "2025-01-03T09:00:00Z",
                           "models": {"model": "gpt-4.1-mini"}, "exit_status": 130})
    yield paths
    for kid in (KEY_ID, MISSING_ID):
        try:
            keyring.delete_password(SERVICE, kid)
        except Exception:  # noqa: BLE001 — already gone
            pass
    shutil.rmtree(ROOT, ignore_errors=True)


def snap_app(paths: Paths, environ: dict[str, str] | None = None, service: type[Service] = Service) -> CcsApp:
    env = dict(SHELL if environ is None else environ)
    store = Store(paths)
    keys = KeyStore(paths, os.environ)  # the keyring is reached through the test's own session bus
    svc = service(paths, store, keys, env, ROOT / "work")
    return CcsApp(paths, environ=env, cursor_blink=False, service=svc)


def ready(profile: str = "taotoken", tab: str | None = None, tool: str | None = None, keys: tuple[str, ...] = ()):
    async def run_before(pilot: Any) -> None:
        app = pilot.app
        await settle(pilot)
        app.select_profile(profile)
        await settle(pilot)
        if tool:
            app.action_set_tool(tool)
        if tab:
            app.detail_pane.show_tab(tab)
        await settle(pilot)
        if keys:
            await pilot.press(*keys)
            await settle(pilot)
    return run_before


def test_main_screen(snap_compare, snap_home):
    assert snap_compare(snap_app(snap_home), terminal_size=SIZE, run_before=ready())


def test_main_screen_80x24(snap_compare, snap_home):
    assert snap_compare(snap_app(snap_home), terminal_size=(80, 24), run_before=ready())


def test_environment_tab(snap_compare, snap_home):
    assert snap_compare(snap_app(snap_home), terminal_size=SIZE, run_before=ready(tab="environment"))


def test_diff_tab_with_a_contaminated_shell(snap_compare, snap_home):
    assert snap_compare(snap_app(snap_home), terminal_size=SIZE, run_before=ready(tab="diff", tool="run"))


def test_running_tab(snap_compare, snap_home):
    app = snap_app(snap_home, service=FixedProcesses)
    assert snap_compare(app, terminal_size=SIZE, run_before=ready(tab="running"))


def test_runs_tab_with_drift(snap_compare, snap_home):
    assert snap_compare(snap_app(snap_home), terminal_size=SIZE, run_before=ready(tab="runs"))


def test_editor(snap_compare, snap_home):
    assert snap_compare(snap_app(snap_home), terminal_size=SIZE, run_before=ready(keys=("e",)))


def test_refusal_with_ways_out(snap_compare, snap_home):
    env = {**SHELL, "CCS_LAUNCH_ID": "20250101T000000Z-0badc0de", "CCS_PROFILE": "kimi"}
    assert snap_compare(snap_app(snap_home, env), terminal_size=SIZE, run_before=ready(keys=("x",)))


def test_empty_home_80x24(snap_compare, snap_home):
    empty = Paths(profiles=ROOT / "empty" / "profiles", state=ROOT / "empty" / "state")
    assert snap_compare(snap_app(empty), terminal_size=(80, 24), run_before=ready())


def test_import_dialog(snap_compare, snap_home):
    assert snap_compare(snap_app(snap_home), terminal_size=SIZE, run_before=ready(keys=("i",)))


def test_snapshot_fixture_is_what_it_says(snap_home):
    # the snapshots above rely on these: a stored key, a missing one, a broken file, three runs
    assert json.loads((snap_home.runs / "20250103T090000Z-aaaa0003.json").read_text())["exit_status"] == 130
    assert keyring.get_password(SERVICE, KEY_ID) == KEY_VALUE
    assert keyring.get_password(SERVICE, MISSING_ID) is None

"""The Running tab against real processes (found, judged, inspected, vanishing), and the endpoint
check against a real HTTP server on loopback."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from test_tui_support import KEY_VALUE, build_app, notifications, parent_env, plain, settle, wait_until
from test_tui_support import select as select_profile

from ccswitch_tui.keys.keyring import KeyStore
from ccswitch_tui.paths import Paths
from ccswitch_tui.profiles.presets import new_profile_text
from ccswitch_tui.profiles.store import Store
from ccswitch_tui.tui.widgets.running import RunningView

SIZE = (120, 36)


@pytest.fixture
def contaminated_child(home: Paths, tmp_path: Path) -> Iterator[subprocess.Popen]:
    """A process that looks like a ccs-launched `run` of alpha, with a stale OpenAI base URL."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CCS_LAUNCH_ID": "20250101T000000Z-feedbeef",
           "CCS_PROFILE": "alpha", "CCS_TOOL": "run", "OPENAI_BASE_URL": "https://stale.example/v1",
           "OPENAI_API_KEY": KEY_VALUE, "CCS_MODEL": "gpt-4.1"}
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env, cwd=tmp_path)
    yield proc
    proc.kill()
    proc.wait()


async def test_running_tab_lists_judges_and_inspects_a_real_process(home: Paths, contaminated_child):
    app = build_app(home, running_interval=0.3)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_profile(pilot, "alpha")
        app.detail_pane.show_tab("running")
        view = app.query_one(RunningView)
        pid = contaminated_child.pid
        await wait_until(pilot, lambda: pid in [p.pid for p in view.processes], what="the child to be listed")
        info = next(p for p in view.processes if p.pid == pid)
        assert info.profile == "alpha" and info.tool == "run"
        assert info.counts and info.counts["error"] >= 1
        table = app.query_one("#procs")
        table.move_cursor(row=[p.pid for p in view.processes].index(pid))
        await wait_until(pilot, lambda: f"process  {pid}" in plain(app, "#inspect-body"), what="the inspection")
        text = "\n".join(plain(app, s) for s in ("#inspect-body", "#findings", "#finding-detail", "#inspect-diff"))
        assert "base-url-drift" in plain(app, "#findings") and "https://stale.example/v1" in text
        assert "profile alpha" in text  # judged against the profile's plan
        assert KEY_VALUE not in text and KEY_VALUE not in app.export_screenshot()
        # the process goes away: the next refresh drops it, the app carries on
        contaminated_child.kill()
        contaminated_child.wait()
        await wait_until(pilot, lambda: pid not in [p.pid for p in view.processes], what="the child to go")
        assert app.is_running


async def test_running_refresh_stops_when_the_tab_is_left(home: Paths):
    app = build_app(home, running_interval=0.1)
    scans: list[int] = []
    original = app.service.processes
    app.service.processes = lambda all_=False: scans.append(1) or original(all_)  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.detail_pane.show_tab("running")
        await wait_until(pilot, lambda: len(scans) >= 3, what="periodic refresh")
        app.detail_pane.show_tab("overview")
        await settle(pilot)
        count = len(scans)
        await pilot.pause(0.5)
        assert len(scans) == count


async def test_inspecting_a_vanished_pid_is_a_message_not_a_crash(home: Paths):
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.detail_pane.show_tab("running")
        await settle(pilot)
        view = app.query_one(RunningView)
        # a pid above the kernel's pid_max: never a process (the pid of one that just ended can be reused)
        gone = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
        view.selected_pid = gone
        app.inspect_process(gone)
        await settle(pilot)
        assert "no such process" in plain(app, "#inspect-body") or "exited" in plain(app, "#inspect-body")
        assert app.is_running


class _Endpoint(BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def _reply(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        cred = self.headers.get("authorization") or self.headers.get("x-api-key") or ""
        self.server.seen.append(self.path)  # type: ignore[attr-defined]
        if KEY_VALUE not in cred:
            self._reply(401, {"error": {"message": "invalid api key"}})
        elif self.path.endswith("/models"):
            self._reply(200, {"data": [{"id": "gpt-4.1"}]})
        else:
            self._reply(200, {"id": "x", "output": []})

    do_GET = do_POST = _handle  # noqa: N815


@pytest.fixture
def endpoint() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


async def test_check_endpoints_notifies_and_fills_overview(home: Paths, key_id: str, endpoint):
    url = f"http://127.0.0.1:{endpoint.server_address[1]}/api"
    store = Store(home)
    store.save_text("local", new_profile_text("local", "taotoken", base_url=url, key=key_id), create=True)
    store.save_text("wrongkey", new_profile_text("wrongkey", "taotoken", base_url=url, key=f"{key_id}-other"),
                    create=True)
    KeyStore(home, parent_env()).set(f"{key_id}-other", "sk-not-the-right-key-00000000")
    app = build_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_profile(pilot, "local")
        await pilot.press("p")
        await wait_until(pilot, lambda: any("probe(s) ok" in n for n in notifications(app)), what="the check")
        assert endpoint.seen  # real requests reached the server
        overview = plain(app, "#overview-body")
        assert "Endpoint check" in overview and "✓  ok" in overview  # mark, code: their own columns
        assert KEY_VALUE not in overview
        await select_profile(pilot, "wrongkey")
        await pilot.press("p")
        await wait_until(pilot, lambda: any("failed" in n and "auth-failed" in n for n in notifications(app)))
        assert "auth-failed" in plain(app, "#overview-body")
        # results stay with their profile
        await select_profile(pilot, "local")
        assert "✓  ok" in plain(app, "#overview-body")


async def test_an_edit_saved_in_the_tui_drops_the_old_check_at_once(home: Paths, key_id: str, endpoint):
    from textual.widgets import Input

    from ccswitch_tui.tui.screens.editor import EditorScreen

    url = f"http://127.0.0.1:{endpoint.server_address[1]}/api"
    Store(home).save_text("local", new_profile_text("local", "taotoken", base_url=url, key=key_id), create=True)
    app = build_app(home, watch_interval=3600)  # the folder watcher does not tick during the test
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_profile(pilot, "local")
        await pilot.press("p")
        await wait_until(pilot, lambda: any("probe(s) ok" in n for n in notifications(app)), what="the check")
        assert "Endpoint check" in plain(app, "#overview-body")
        await pilot.press("e")
        editor = await wait_until(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen)
        editor.query_one("#f-codex-model", Input).value = "gpt-edited"
        await pilot.pause()
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: any("saved" in n for n in notifications(app)), what="the save")
        await settle(pilot)
        overview = plain(app, "#overview-body")
        assert "gpt-edited" in overview  # the new file is shown…
        assert "Endpoint check" not in overview and "local" not in app.detail_pane.checks  # …without the old check

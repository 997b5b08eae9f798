"""The TUI paints first and checks later: the first frame does not wait for the profile files, the rows
on screen get their keys and marks before the other profiles, and the screens used now and then
(help, import, the dialogs) load when opened."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from test_tui_support import KEY_VALUE, build_app, parent_env, settle, wait_until

from ccswitch_tui.keys.keyring import KeyStore
from ccswitch_tui.paths import Paths
from ccswitch_tui.profiles.presets import new_profile_text
from ccswitch_tui.profiles.store import Store
from ccswitch_tui.tui import messages as m
from ccswitch_tui.tui.service import Service


def many_profiles(paths: Paths, key_id: str, count: int = 30) -> list[str]:
    store = Store(paths)
    names = [f"p{i:02d}" for i in range(count)]
    for i, name in enumerate(names):
        store.save_text(name, new_profile_text(name, "taotoken", key=key_id if i % 2 else f"{key_id}-{i}"),
                        create=True)
    KeyStore(paths, parent_env()).set(key_id, KEY_VALUE)
    return names


@pytest.mark.usefixtures("secret_service")
def test_the_rows_on_screen_get_their_marks_first(ccs_home: Paths, key_id: str):
    names = many_profiles(ccs_home, key_id)
    env = parent_env()
    service = Service(ccs_home, Store(ccs_home), KeyStore(ccs_home, env), env, ccs_home.state.parent)
    entries = service.entries()
    first, whole = list(service.presence_in_steps(entries, 5))
    assert not first.complete and whole.complete
    assert list(first.problems) == names[:5] and list(whole.problems) == names
    assert set(first.keys) == {e.profile.key_id for e in entries[:5]}  # the keyring asked for those only
    assert whole.keys[key_id] is True and whole.keys[f"{key_id}-0"] is False
    assert {n: whole.problems[n] for n in names[:5]} == first.problems  # the same marks, only sooner
    assert service.presence(entries) == whole


@pytest.mark.usefixtures("secret_service")
async def test_the_list_comes_with_the_marks_of_its_rows_on_screen(ccs_home: Paths, key_id: str):
    """The list is shown with the keys and marks of the rows on screen (one paint), the other profiles'
    follow; the marks the app ends with are the service's for every profile, as when read in one go."""
    names = many_profiles(ccs_home, key_id, 30)
    (ccs_home.profiles / "p03.toml").write_text("not = [toml")  # a broken one among the rows on screen
    loaded: list[m.ProfilesLoaded] = []
    later: list[m.PresenceReady] = []

    def hook(msg: object) -> None:
        if isinstance(msg, m.ProfilesLoaded):
            loaded.append(msg)
        elif isinstance(msg, m.PresenceReady):
            later.append(msg)

    app = build_app(ccs_home)
    async with app.run_test(size=(100, 24), message_hook=hook) as pilot:
        await wait_until(pilot, lambda: later and later[-1].presence.complete, what="every profile's marks")
        await settle(pilot)
        rows = app.profile_list.rows_shown()
        first = loaded[0].presence
        assert first is not None and not first.complete
        assert list(first.problems) == names[:rows]  # the rows on screen, and only those
        assert [p.severity for p in first.problems["p03"]] == ["error"]
        env = parent_env()
        service = Service(ccs_home, Store(ccs_home), KeyStore(ccs_home, env), env, ccs_home.state.parent)
        assert app.profile_list.presence == service.presence(service.entries())
        assert "✗" in str(app.profile_list.options.get_option("p03").prompt)


@pytest.mark.usefixtures("secret_service")
async def test_the_first_frame_does_not_wait_for_the_profiles(ccs_home: Paths, key_id: str):
    many_profiles(ccs_home, key_id, 6)
    painted = threading.Event()
    read_after_paint: list[bool] = []

    class Watched(Service):
        def entries(self):  # the worker reading the files notes whether the first frame was there before it
            read_after_paint.append(painted.is_set())
            return super().entries()

    env = parent_env()
    service = Watched(ccs_home, Store(ccs_home), KeyStore(ccs_home, env), env, ccs_home.state.parent)
    app = build_app(ccs_home, service=service)
    app.call_after_refresh(painted.set)  # queued before mounting: the first refresh is the first frame
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.profile_list.loaded, what="the profile list")
        await settle(pilot)
        assert read_after_paint and read_after_paint[0] is True
        assert app.profile_list.options.option_count == 6


FIRST_FRAME = """
import asyncio, json, sys
from pathlib import Path
from ccswitch_tui.paths import resolve_paths
from ccswitch_tui.tui.app import CcsApp
from ccswitch_tui.tui import messages as m

seen = {}
order = []

class Watched(CcsApp):
    def on_mount(self):
        super().on_mount()
        self.call_after_refresh(self.first_frame)

    def first_frame(self):
        seen["widgets"] = sorted({type(w).__name__ for w in self.screen.walk_children()})
        seen["modules"] = sorted(m for m in sys.modules if m.startswith(("ccswitch_tui", "textual.widgets")))
        seen["rows"] = self.profile_list.options.option_count
        seen["keys"] = len(self.query("FooterKey"))

async def main():
    app = Watched(resolve_paths({"CCS_HOME": sys.argv[1]}), cwd=Path(sys.argv[1]))
    def hook(msg):
        if isinstance(msg, m.ProfilesLoaded):
            order.append("ProfilesLoaded" + ("+marks" if msg.presence is not None else ""))
        elif isinstance(msg, (m.PresenceReady, m.DetailReady)):
            order.append(type(msg).__name__)
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        for _ in range(400):
            await pilot.pause(0.05)
            if "DetailReady" in order and not any(w.is_running for w in app.workers):
                break
        await pilot.pause()
        seen["after"] = sorted({type(w).__name__ for w in app.screen.walk_children()})
        seen["placeholder"] = len(app.query("#detail-loading"))
        seen["keys_after"] = sorted(str(k.description) for k in app.query("FooterKey"))
        seen["detail"] = app.detail_pane.detail.entry.name
        seen["selected"] = app.selected
    seen["order"] = order
    print(json.dumps(seen))

asyncio.run(main())
"""


@pytest.mark.usefixtures("secret_service")
def test_the_first_frame_is_the_list_and_the_detail_comes_after_the_marks(ccs_home: Paths, key_id: str):
    """The first frame holds the header, the list and the footer: no detail pane (its tabs and grids), no
    client spec, no plan machinery loaded. The list comes with the marks of its rows on screen, the
    footer's keys with the list, the detail pane after them, and the first profile's detail after that."""
    many_profiles(ccs_home, key_id, 6)
    r = subprocess.run([sys.executable, "-c", FIRST_FRAME, str(ccs_home.profiles.parent)], capture_output=True,
                       text=True, timeout=120, cwd=Path(__file__).parent,
                       env={**os.environ, "CCS_HOME": str(ccs_home.profiles.parent)})
    assert r.returncode == 0, r.stderr
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    assert "ProfileList" in seen["widgets"] and "CcsFooter" in seen["widgets"]
    assert not {"DetailPane", "TabbedContent", "DataTable"} & set(seen["widgets"])
    loaded = set(seen["modules"])
    assert not loaded & {"ccswitch_tui.tools.spec", "ccswitch_tui.tools.claude", "ccswitch_tui.launch.plan",
                         "ccswitch_tui.launch.launcher", "ccswitch_tui.tui.widgets.detail",
                         "ccswitch_tui.tui.launching", "textual.widgets._tabbed_content",
                         "textual.widgets._text_area", "textual.widgets._data_table"}
    assert {"DetailPane", "TabbedContent"} <= set(seen["after"]) and seen["placeholder"] == 0
    assert seen["detail"] == seen["selected"] == "p00"
    assert seen["order"][0] == "ProfilesLoaded+marks" and "DetailReady" in seen["order"]
    # the footer's keys are built once the list is shown (every profile key is dimmed before it)
    assert seen["keys"] == 0 and {"Quit", "Help", "New", "Edit"} <= set(seen["keys_after"])


def test_rarely_used_screens_load_when_opened():
    """Building the app and its first screen loads neither the help text (and markdown_it), nor the
    import and dialog screens, nor the process inspector and the verdict."""
    code = ("import sys\n"
            "import ccswitch_tui.tui.app\n"
            "late = ['markdown_it', 'ccswitch_tui.tui.screens.help', 'ccswitch_tui.tui.screens.importing',\n"
            "        'ccswitch_tui.tui.screens.modals', 'ccswitch_tui.tui.screens.editor',\n"
            "        'ccswitch_tui.diagnose.inspect', 'ccswitch_tui.runs.verdict', 'ccswitch_tui.importers.sources']\n"
            "print(sorted(m for m in late if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=Path(__file__).parent, env={**os.environ})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


@pytest.mark.usefixtures("secret_service")
async def test_the_help_screen_still_opens(ccs_home: Paths, key_id: str):
    many_profiles(ccs_home, key_id, 2)
    app = build_app(ccs_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.profile_list.loaded, what="the profile list")
        await pilot.press("question_mark")
        await settle(pilot)
        assert type(app.screen).__name__ == "HelpScreen"
        assert "markdown_it" in sys.modules


@pytest.mark.usefixtures("secret_service")
async def test_quitting_right_after_the_first_frame_is_clean(ccs_home: Paths, key_id: str):
    """A user quitting as soon as the screen shows: the views that mount after the first frame find
    the app closing and say nothing (no traceback from a message arriving with no screen left)."""
    many_profiles(ccs_home, key_id, 6)
    painted = threading.Event()
    app = build_app(ccs_home)
    app.call_after_refresh(painted.set)
    async with app.run_test(size=(120, 40)):
        while not painted.is_set():
            await asyncio.sleep(0.005)
    assert app.return_code is None  # ended by the test: an exception would have set 1, an exit() 0

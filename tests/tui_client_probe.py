"""Run by tests/conformance_flows.py in a child (so that the TUI's tables are built from the registry the
child loads, a test-only client too): what the TUI offers for one client of profile PROFILE, and what
its launch key does. Prints one JSON object.

usage: tui_client_probe.py CCS_HOME PROFILE CLIENT WORK_FOLDER"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/: the TUI test helpers

from test_tui_support import build_app, notifications, select, settle, wait_until  # noqa: E402

from ccswitch_tui import tools  # noqa: E402
from ccswitch_tui.paths import resolve_paths  # noqa: E402
from ccswitch_tui.tools.capabilities import TuiFace  # noqa: E402
from ccswitch_tui.tui import messages as m  # noqa: E402
from ccswitch_tui.tui.actions import BY_NAME  # noqa: E402
from ccswitch_tui.tui.screens.editor import FIELDS, TABLE_SWITCHES, EditorScreen  # noqa: E402
from ccswitch_tui.tui.screens.modals import LaunchMenuScreen  # noqa: E402


async def main(home: str, profile: str, name: str, work: str) -> dict[str, object]:
    spec = tools.load().get(name)
    paths = resolve_paths({"CCS_HOME": home})
    app = build_app(paths, cwd=Path(work))
    launched: list[m.Launched] = []
    out: dict[str, object] = {}
    hook = lambda msg: isinstance(msg, m.Launched) and launched.append(msg)  # noqa: E731
    async with app.run_test(size=(110, 34), message_hook=hook) as pilot:
        await settle(pilot)
        await select(pilot, profile)
        out["launch_enabled"] = app.check_action("launch", (name,)) is True
        # the launch menu lists it with its key; then the key (or the menu's button) launches it
        await pilot.press("l")
        menu = await wait_until(pilot, lambda: isinstance(app.screen, LaunchMenuScreen) and app.screen)
        out["launch_menu"] = [list(c) for c in menu.clients]
        if isinstance(spec, TuiFace):
            await pilot.press("escape")
            await settle(pilot)
            await pilot.press(spec.tui_key)
        else:
            await pilot.click(f"#launch-{name}")
        await wait_until(pilot, lambda: launched, timeout=60, what="the launch to return")
        await settle(pilot)
        out["launched"] = {"status": launched[0].status, "error": launched[0].error,
                           "tool": launched[0].request.tool if hasattr(launched[0].request, "tool") else None}
        out["notifications"] = notifications(app)
        # the editor: its switch on, its section shown, saved as it was
        await pilot.press("e")
        editor = await wait_until(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen)
        await wait_until(pilot, lambda: editor.query(f"#fields-{name}"), what="the editor's section")
        out["switch_on"] = bool(editor.query_one(f"#f-{name}").value)
        out["section_shown"] = bool(editor.query_one(f"#fields-{name}").display)
        await pilot.press("ctrl+s")
        await settle(pilot)
        out["editor_error"] = editor.error
    out["saved"] = (paths.profiles / f"{profile}.toml").read_text()
    action = BY_NAME.get(f"launch_{name}")
    out["launch_key"] = action.key if action else None
    out["switches"] = list(TABLE_SWITCHES)
    out["fields"] = sorted(f for f in FIELDS if f.startswith(f"f-{name}-"))
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(*sys.argv[1:5]))))

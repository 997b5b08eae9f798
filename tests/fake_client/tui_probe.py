"""Run by tests/test_conformance.py in a child with this folder's sitecustomize: what the TUI shows
of the test-only client (its launch key, its editor section and switch, the overview, the footer at
80x24). Prints one JSON object."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the TUI test helpers

from test_tui_support import build_app, plain, select, settle, wait_until  # noqa: E402

from ccswitch_tui.paths import resolve_paths  # noqa: E402
from ccswitch_tui.tui.actions import BY_NAME  # noqa: E402
from ccswitch_tui.tui.screens.editor import FIELDS, TABLE_SWITCHES, EditorScreen  # noqa: E402


async def main(home: str, profile: str) -> dict[str, object]:
    paths = resolve_paths({"CCS_HOME": home})
    app = build_app(paths)
    out: dict[str, object] = {}
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await select(pilot, profile)
        out["overview"] = plain(app, "#overview-body")
        screen = app.export_screenshot()
        out["footer_words"] = [w for w in ("Fake", "Launch…", "Quit", "Help") if w in screen]
        await pilot.press("l")
        await settle(pilot)
        out["launch_menu"] = [list(c) for c in getattr(app.screen, "clients", [])]
        await pilot.press("escape")
        await settle(pilot)
        out["launch_enabled"] = app.check_action("launch", ("fakecli",)) is True
        await pilot.press("e")
        editor = await wait_until(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen)
        out["switch_on"] = bool(editor.query_one("#f-fakecli").value)
        out["section_shown"] = bool(editor.query_one("#fields-fakecli").display)
        # the kinds beyond text: a number and an on/off written as TOML integers and booleans
        editor.query_one("#f-fakecli-retries").value = "x3"
        await pilot.pause()
        out["bad_number"] = editor.error
        editor.query_one("#f-fakecli-retries").value = "3"
        editor.query_one("#f-fakecli-verbose").value = "true"
        await pilot.pause()
        out["error"] = editor.error
        await pilot.press("ctrl+s")
        await settle(pilot)
    out["saved"] = (paths.profiles / f"{profile}.toml").read_text()
    action = BY_NAME.get("launch_fakecli")
    out["launch_key"] = action.key if action else None
    out["switches"] = list(TABLE_SWITCHES)
    out["fields"] = sorted(f for f in FIELDS if f.startswith("f-fakecli-"))
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))))

"""Shared helpers for the TUI tests: profiles in a temporary CCS_HOME, the app built from small
real objects, and ways to wait for the workers."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ccswitch_tui.keys.keyring import KeyStore
from ccswitch_tui.paths import Paths
from ccswitch_tui.profiles.presets import new_profile_text
from ccswitch_tui.profiles.store import Store
from ccswitch_tui.tui.app import CcsApp

KEY_VALUE = "sk-tui-test-0123456789abcdef"
STALE_OPENAI_URL = "https://stale.example/v1"
BROKEN_TEXT = 'schema = 1\n[provider\nname = "x"\n'


def parent_env(**extra: str) -> dict[str, str]:
    """A fixed shell environment with contamination in it (what ccs was 'started from')."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "SHELL": "/bin/sh",
        "OPENAI_BASE_URL": STALE_OPENAI_URL,
        "ANTHROPIC_API_KEY": "sk-ant-stale-key-0000000000000",
        "EDITOR_HINT": "x",
    }
    for name in ("DBUS_SESSION_BUS_ADDRESS", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    env.update(extra)
    return env


def make_profiles(paths: Paths, key_id: str) -> Store:
    """alpha (Claude Code + Codex + run, key stored by the caller), beta (Claude Code only, key
    missing) and broken (not valid TOML)."""
    store = Store(paths)
    store.save_text("alpha", new_profile_text("alpha", "taotoken", key=key_id), create=True)
    store.save_text("beta", new_profile_text("beta", "kimi", key=f"{key_id}-missing"), create=True)
    paths.profiles.mkdir(parents=True, exist_ok=True)
    (paths.profiles / "broken.toml").write_text(BROKEN_TEXT)
    return store


def build_app(paths: Paths, environ: Mapping[str, str] | None = None, cwd: Path | None = None,
              keys: KeyStore | None = None, **kwargs: Any) -> CcsApp:
    env = dict(parent_env() if environ is None else environ)
    return CcsApp(paths, environ=env, cwd=cwd or paths.state.parent, cursor_blink=False,
                  keys=keys or KeyStore(paths, env), **kwargs)


async def settle(pilot: Any, rounds: int = 60) -> None:
    """Wait until no worker runs and the messages they posted are handled."""
    app = pilot.app
    for _ in range(rounds):
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        if not any(w.is_running for w in app.workers) and not app._detail_running:
            await pilot.pause()
            return
    raise AssertionError("the app did not settle")


async def wait_until(pilot: Any, predicate: Callable[[], Any], timeout: float = 15.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        await pilot.pause(0.05)
    raise AssertionError(f"timed out waiting for {what or predicate}")


async def select(pilot: Any, name: str) -> None:
    pilot.app.select_profile(name)
    await settle(pilot)
    assert pilot.app.selected == name
    assert pilot.app.detail_pane.detail is not None and pilot.app.detail_pane.detail.entry.name == name


def plain(app: Any, selector: str) -> str:
    """The text a Static shows."""
    return str(app.query_one(selector).content)


def notifications(app: Any) -> list[str]:
    return [f"{n.title}: {n.message}" for n in app._notifications]


async def type_text(pilot: Any, text: str) -> None:
    for ch in text:
        await pilot.press(ch if ch != " " else "space")


def run_sync(coro: Any) -> Any:
    return asyncio.run(coro)

"""Render the screenshots (SVG) of the TUI (README.md, docs/tui.md) into screenshots/.

A temporary CCS_HOME with three profiles, a demo key in the keyring, a shell full of stale routing
variables, and two real processes for the Running tab (a ccs-launched "claude" that picked up a stale
OPENAI_BASE_URL and an unmanaged "codex"). Run it with a Secret Service, e.g.:

    bash scripts/with-keyring.sh .venv/bin/python scripts/screenshots.py
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ccswitch_tui.keys.keyring import KeyStore  # noqa: E402
from ccswitch_tui.paths import Paths  # noqa: E402
from ccswitch_tui.profiles.presets import new_profile_text  # noqa: E402
from ccswitch_tui.profiles.store import Store  # noqa: E402
from ccswitch_tui.runs.manifests import write_manifest  # noqa: E402
from ccswitch_tui.tui.app import CcsApp  # noqa: E402
from ccswitch_tui.tui.service import Service  # noqa: E402

OUT = ROOT / "screenshots"
SIZE = (110, 32)
KEY_ID = "ccs-demo-taotoken"
KEY_VALUE = "sk-demo-0123456789abcdef9f3a"
SHELL = {
    "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/you", "USER": "you", "TERM": "xterm-256color",
    "LANG": "C.UTF-8", "SHELL": "/bin/bash", "EDITOR": "vim",
    "OPENAI_BASE_URL": "https://stale-gateway.example/v1", "OPENAI_API_KEY": "sk-stale-openai-key-00001234",
    "ANTHROPIC_BASE_URL": "https://old-gateway.example", "HTTPS_PROXY": "http://proxy.example:3128",
}


def make_home(root: Path) -> Paths:
    paths = Paths(profiles=root / "profiles", state=root / "state")
    store = Store(paths)
    store.save_text("taotoken", new_profile_text("taotoken", "taotoken", key=KEY_ID), create=True)
    store.save_text("kimi", new_profile_text("kimi", "kimi", key="ccs-demo-kimi"), create=True)
    store.save_text("openrouter", new_profile_text("openrouter", "openrouter", key=KEY_ID), create=True)
    store.save_text("deepseek", new_profile_text("deepseek", "deepseek", key="ccs-demo-deepseek"), create=True)
    base = {"profile": "taotoken", "tool": "codex", "argv": ["codex"], "cwd": "/home/you/appworld",
            "base_urls": {"model_providers.taotoken.base_url": "https://taotoken.net/api"},
            "models": {"model": "gpt-4.1"}, "key_id": KEY_ID, "key_fingerprint": "fp:5d1e8b0c2a47",
            "env_hash": "sha256:6c1f", "tool_version": "@openai/codex@0.171.0", "exit_status": 0}
    for day, extra in ((1, {}), (2, {}), (3, {"models": {"model": "gpt-4.1-mini"}})):
        write_manifest(paths, {**base, **extra, "launch_id": f"2025010{day}T090000Z-demo000{day}",
                               "started": f"2025-01-0{day}T09:00:00Z"})
    rounds(paths)
    return paths


def rounds(paths: Paths) -> None:
    """Three rounds of three reruns of a 10-task agent through openrouter, for the Rounds view: the gap
    narrows with the analyzer on, then widens on a rotated key with a second option added."""
    solved = {"baseline": (5, [(3, 2)]), "analyzer": (7, [(1, 2)]), "key-drift": (6, [(3, 1)])}
    args = {"baseline": [], "analyzer": ["--enable-consistency-analyzer"],
            "key-drift": ["--enable-consistency-analyzer", "--guidelines", "g.md"]}
    n = 0
    for label, (every, partial) in solved.items():
        for rerun in range(3):
            n += 1
            results, t = {}, 0
            for count, times in [(every, 3), *partial]:
                for _ in range(count):
                    results[f"task-{t + 1}"] = float((t + rerun) % 3 < times)
                    t += 1
            results.update({f"task-{i + 1}": 0.0 for i in range(t, 10)})
            fp = "fp:8c2e41d09b7a" if label == "key-drift" and rerun == 2 else "fp:5d1e8b0c2a47"
            write_manifest(paths, {
                "launch_id": f"20250105T1{n:02d}000Z-demo01{n:02d}", "profile": "openrouter", "tool": "run",
                "argv": ["python", "agent.py", *args[label], f"out-{rerun}.jsonl"], "cwd": "/home/you/appworld",
                "started": f"2025-01-05T1{n // 6}:{n % 6}0:00Z", "ended": f"2025-01-05T1{n // 6}:{n % 6}5:00Z",
                "exit_status": 0, "base_urls": {"OPENAI_BASE_URL": "https://openrouter.ai/api/v1"},
                "models": {"CCS_MODEL": "openai/gpt-4.1"}, "key_id": KEY_ID, "key_fingerprint": fp,
                "env_hash": "sha256:6c1f", "label": label, "outcomes": {"results": results}})


def start_processes(paths: Paths, work: Path) -> list[subprocess.Popen]:
    sleep = shutil.which("sleep") or "/bin/sleep"
    managed = {"PATH": "/usr/bin:/bin", "HOME": "/home/you", "CCS_PROFILE": "taotoken", "CCS_TOOL": "claude",
               "CCS_LAUNCH_ID": "20250104T101500Z-demo0004", "ANTHROPIC_BASE_URL": "https://taotoken.net/api",
               "ANTHROPIC_AUTH_TOKEN": KEY_VALUE,
               "CLAUDE_CONFIG_DIR": str(paths.tool_dir("taotoken", "claude")),
               "OPENAI_BASE_URL": "https://stale-gateway.example/v1"}
    unmanaged = {"PATH": "/usr/bin:/bin", "HOME": "/home/you", **{k: v for k, v in SHELL.items() if "_" in k}}
    return [subprocess.Popen(["bash", "-c", f"exec -a {name} {sleep} 120"], env=env, cwd=work,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for name, env in (("claude", managed), ("codex", unmanaged))]


async def settle(pilot: Any) -> None:
    app = pilot.app
    for _ in range(60):
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        if not any(w.is_running for w in app.workers) and not app._detail_running:
            return


class DemoService(Service):
    """The Running tab lists the two processes started here, not whatever else runs on the machine."""

    pids: set[int] = set()

    def processes(self, all_: bool = False) -> list[Any]:
        return [p for p in super().processes(all_) if p.pid in self.pids]


async def shoot(paths: Paths, work: Path, name: str, steps: Callable[[Any], Awaitable[None]],
                profile: str = "taotoken") -> None:
    keys = KeyStore(paths, os.environ)
    service = DemoService(paths, Store(paths), keys, dict(SHELL), work)
    app = CcsApp(paths, environ=dict(SHELL), cwd=work, cursor_blink=False, keys=keys, service=service)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.select_profile(profile)
        await settle(pilot)
        await steps(pilot)
        await settle(pilot)
        (OUT / f"{name}.svg").write_text(preserve_spaces(app.export_screenshot()))
        print(f"wrote screenshots/{name}.svg")


def preserve_spaces(svg: str) -> str:
    """Textual writes each styled span as its own <text> whose spaces are no-break spaces; renderers
    that follow XML's whitespace rules (librsvg, and so GitHub's image proxy and most converters)
    drop a span's leading ones, and the spans run together ("taotokenGPT-4.1"). Keep them."""
    return svg.replace("<svg ", '<svg xml:space="preserve" ', 1)


async def main() -> None:
    OUT.mkdir(exist_ok=True)
    tmp = Path(tempfile.gettempdir()) / "ccs-screenshots"  # a fixed path: it shows in the pictures
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        paths = make_home(tmp / "home")
        work = tmp / "appworld"
        work.mkdir()
        keys = KeyStore(paths, os.environ)
        try:
            keys.set(KEY_ID, KEY_VALUE)
        except Exception as exc:  # noqa: BLE001
            print(f"warning: no keyring ({exc}); keys will show as unknown", file=sys.stderr)
        procs = start_processes(paths, work)
        DemoService.pids = {p.pid for p in procs}
        try:
            async def overview(pilot: Any) -> None:
                pass

            async def diff(pilot: Any) -> None:
                pilot.app.action_set_tool("run")
                pilot.app.detail_pane.show_tab("diff")

            async def running(pilot: Any) -> None:
                pilot.app.detail_pane.show_tab("running")
                await settle(pilot)
                await asyncio.sleep(0.3)

            async def editor(pilot: Any) -> None:
                await pilot.press("e")

            async def rounds_view(pilot: Any) -> None:
                pilot.app.detail_pane.show_tab("runs")
                await settle(pilot)
                await pilot.press("u")

            for name, steps in (("main", overview), ("diff", diff), ("running", running), ("editor", editor)):
                await shoot(paths, work, name, steps)
            await shoot(paths, work, "rounds", rounds_view, profile="openrouter")
        finally:
            for p in procs:
                p.kill()
                p.wait()
            try:
                keys.delete(KEY_ID)
            except Exception:  # noqa: BLE001
                pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())

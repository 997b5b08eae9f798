"""Codex's background servers: ccs owns the ones its launches start.

An interactive Codex starts ``codex app-server`` daemons in their own session (ppid 1) that outlive
the TUI for many minutes, with the launch's environment — the key variable included. The next
Codex with the same ``CODEX_HOME`` reuses them, so without this a rotated key or a changed config
would not reach the provider while the manifest records the new one.

A daemon belongs to a profile through its ``CODEX_HOME``: only processes of this user whose
environment names exactly that folder, and whose command line is ``codex app-server``, are ever
signalled, and each is checked again (same start) right before the signal.

- Before a Codex launch, a daemon is ended when it holds another key, another non-secret
  environment or another config.toml than the launch is about to use, or when the launch that
  started it is over (ended or lost).
- When a launch ends and no other live launch uses the same ``CODEX_HOME``, its daemons are ended.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ccswitch_tui.model import SOURCE_INHERITED, WARN, Finding, LaunchPlan
from ccswitch_tui.policy import MARKERS
from ccswitch_tui.procfs import parse_environ, process_start, read_file
from ccswitch_tui.tools.codex.config import KEY_VAR
from ccswitch_tui.tools.spec import HookContext, LaunchHook, LaunchRecords
from ccswitch_tui.valueclass import valueclass


@valueclass(frozen=True)
class Daemon:
    pid: int
    start: str | None
    argv: tuple[str, ...]
    env: Mapping[str, str]

    @property
    def launch_id(self) -> str | None:
        return self.env.get("CCS_LAUNCH_ID")


def is_app_server(argv: Iterable[str]) -> bool:
    args = list(argv)
    return len(args) >= 2 and os.path.basename(args[0]) in ("codex", "codex.exe") and args[1] == "app-server"


def find(codex_home: Path | str) -> list[Daemon]:
    """The ``codex app-server`` processes whose CODEX_HOME is ``codex_home`` (Linux, via /proc)."""
    if not os.path.isdir("/proc/self"):
        return []
    want = f"CODEX_HOME={os.path.abspath(codex_home)}".encode()
    me = os.getpid()
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            argv = [a.decode("utf-8", "replace") for a in read_file(f"/proc/{entry}/cmdline").split(b"\0")[:3]]
            if not is_app_server(argv):
                continue
            raw = read_file(f"/proc/{entry}/environ")
        except OSError:
            continue
        if want not in raw.split(b"\0"):
            continue
        out.append(Daemon(int(entry), process_start(int(entry)), tuple(argv), parse_environ(raw)))
    return out


def end(daemons: Iterable[Daemon], codex_home: Path | str, grace: float = 3.0) -> list[int]:
    """SIGTERM each daemon (still the same process, still that CODEX_HOME), SIGKILL what remains
    after ``grace`` seconds; the pids ended."""
    home = os.path.abspath(codex_home)
    targets = []
    for d in daemons:
        if d.env.get("CODEX_HOME") != home or d.start is None:
            continue
        if process_start(d.pid) != d.start:
            continue
        try:
            os.kill(d.pid, signal.SIGTERM)
            targets.append(d)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + grace
    while targets and time.monotonic() < deadline:
        targets_left = [d for d in targets if process_start(d.pid) == d.start]
        if not targets_left:
            break
        time.sleep(0.05)
    for d in targets:
        if process_start(d.pid) == d.start:
            try:
                os.kill(d.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    return [d.pid for d in targets]


def _runs_by_id(runs: LaunchRecords, profile: str) -> dict[str | None, Mapping[str, Any]]:
    return {m.get("launch_id"): m for m in runs.manifests(profile) if m.get("tool") == "codex"}


def stale(d: Daemon, plan: LaunchPlan, key_fp: str, runs: LaunchRecords, config_digest: str | None,
          by_id: Mapping[str | None, Mapping[str, Any]]) -> str | None:
    """Why daemon ``d`` must not serve the launch of ``plan``, or None when it may."""
    value = d.env.get(KEY_VAR)
    if not value or runs.fingerprint(value) != key_fp:
        return "holds another key"
    for k, v in plan.non_secret_env().items():
        if k not in MARKERS and plan.sources.get(k) != SOURCE_INHERITED and d.env.get(k) != v:
            return f"has another {k}"
    run = by_id.get(d.launch_id or "")
    if run is None or not runs.running(run):
        return "its launch is over"
    config = str(Path(plan.client.home or "") / "config.toml")
    if config_digest and (run.get("files") or {}).get(config) != config_digest:
        return "read another config.toml"
    return None


class DaemonHook(LaunchHook):
    """Before a Codex launch, end the daemons of its CODEX_HOME that must not serve it (recorded in
    the manifest as ``daemons_ended``); after it, end them unless another live launch uses it."""

    def before(self, ctx: HookContext) -> None:
        plan = ctx.plan
        home = plan.client.home
        if not home:
            return
        found = find(home)
        if not found:
            return
        by_id = _runs_by_id(ctx.runs, plan.profile)
        digest = ctx.files.get(str(Path(home) / "config.toml"))
        reasons = {d.pid: r for d in found if (r := stale(d, plan, ctx.key_fingerprint, ctx.runs, digest, by_id))}
        ended = set(end([d for d in found if d.pid in reasons], home))
        if ended:
            ctx.manifest["daemons_ended"] = [{"pid": pid, "reason": reasons[pid]} for pid in sorted(ended)]

    def after(self, ctx: HookContext) -> None:
        plan = ctx.plan
        home = plan.client.home
        if not home:
            return
        found = find(home)
        if not found:
            return
        others = [m for lid, m in _runs_by_id(ctx.runs, plan.profile).items()
                  if lid != plan.launch_id and m.get("codex_home") == home and ctx.runs.running(m)]
        if not others:
            end(found, home)


def orphan_findings(pid: int, argv: Iterable[str], env: Mapping[str, str] | None, runs: LaunchRecords
                    ) -> list[Finding]:
    """For `ccs ps`/`inspect`: a Codex daemon whose launch is over still holds that launch's
    environment and key, and would serve the next Codex of its CODEX_HOME."""
    if not env or not is_app_server(argv) or not env.get("CCS_LAUNCH_ID"):
        return []
    launch_id = env["CCS_LAUNCH_ID"]
    run = runs.manifest(launch_id)
    state = runs.state(run) if run is not None else "unknown"
    if state == "running":
        return []
    profile = env.get("CCS_PROFILE", "PROFILE")
    return [Finding(
        "daemon-orphaned", WARN,
        f"Codex app-server daemon of launch {launch_id}, which is {state if state != 'unknown' else 'not on record'}: "
        f"it keeps that launch's environment and key for the next Codex of {env.get('CODEX_HOME')}; the next "
        f"`ccs launch {profile} codex` ends it when it does not match, or end it with `kill {pid}`",
        pid=pid, variable="CCS_LAUNCH_ID")]

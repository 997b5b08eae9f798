"""`ccs resident on|off|status`: the resident launcher, which makes each launch skip Python's start and
ccs's imports (``resident/``)."""

from __future__ import annotations

import os
import time

import click

from ccswitch_tui.commands.common import Context, emit_json, json_option, pass_ctx
from ccswitch_tui.errors import UsageError
from ccswitch_tui.paths import ensure_private_dir
from ccswitch_tui.resident.client import IDLE, control, start_resident, state_dir


def resident_folder(ctx: Context) -> str:
    return str(ctx.paths.state / "resident")


def _running(folder: str, wait: float = 0.0) -> int | None:
    """The running resident's pid, waiting up to ``wait`` seconds for one that is starting."""
    deadline = time.monotonic() + wait
    while True:
        answer = control(folder, "status")
        if answer is not None and isinstance(answer.get("pid"), int):
            return answer["pid"]
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.05)


def stop_resident(folder: str) -> int | None:
    """Turn the resident off and stop it; the pid it had, if one ran."""
    try:
        os.unlink(os.path.join(folder, "on"))
    except FileNotFoundError:
        pass
    answer = control(folder, "stop")
    return answer.get("pid") if answer else None


@click.group("resident")
def resident_group() -> None:
    """A resident launcher for `ccs launch`, `ccs run` and the shims: a process of yours that has ccs
    loaded, so each launch skips Python's start and ccs's imports (about 40 ms, a third of
    `codex --version`). The launch still runs in the command you typed, on your terminal; anything
    the resident cannot do as that command would (a recorded launch), that command does itself."""


@resident_group.command("on")
@pass_ctx
def on_cmd(ctx: Context) -> None:
    """Turn it on: it starts now and again with a launch after it stopped (it stops after 20 idle
    minutes, or when a new ccs is installed)."""
    if state_dir(ctx.environ) is None:
        raise UsageError("the resident launcher needs Linux (it checks its callers through /proc and SO_PEERCRED); "
                         "here each launch starts its own Python")
    folder = resident_folder(ctx)
    try:
        ensure_private_dir(ctx.paths.state / "resident")
        fd = os.open(os.path.join(folder, "on"), os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        os.close(fd)
    except OSError as exc:
        raise UsageError(f"cannot turn the resident launcher on in {folder} ({exc.strerror or exc}); make ccs's "
                         "state folder writable (CCS_HOME, or ~/.local/state/ccs)") from None
    pid = _running(folder)
    if pid is None:
        start_resident(folder)
        pid = _running(folder, wait=5.0)
    where = f"running (pid {pid})" if pid else "it starts with the next launch"
    click.echo(f"resident launcher on: {where}")


@resident_group.command("off")
@pass_ctx
def off_cmd(ctx: Context) -> None:
    """Turn it off and stop it: every launch starts its own Python again."""
    pid = stop_resident(resident_folder(ctx))
    click.echo("resident launcher off" + (f": stopped pid {pid}" if pid else ""))


@resident_group.command("status")
@json_option
@pass_ctx
def status_cmd(ctx: Context, as_json: bool) -> None:
    """Whether it is on, and whether it runs."""
    folder = resident_folder(ctx)
    on = os.path.exists(os.path.join(folder, "on"))
    pid = _running(folder)
    if as_json:
        emit_json({"on": on, "pid": pid, "folder": folder, "idle_minutes": IDLE / 60})
        return
    state = "on" if on else "off"
    running = f"running (pid {pid})" if pid else "not running" + (": it starts with the next launch" if on else "")
    click.echo(f"resident launcher {state}, {running}")

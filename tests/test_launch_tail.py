"""A tool launched from the TUI that ends with an error: the TUI shows the last lines it wrote. The
tool runs on a pseudo-terminal of its own, relayed to ccs's terminal; it still sees a terminal,
keys reach it, and ccs's terminal is as it was afterwards."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

from pty_session import PtySession
from test_tui_support import build_app, notifications, parent_env, select, settle, wait_until

from ccswitch_tui.launch.ptytail import Tail
from ccswitch_tui.paths import Paths
from ccswitch_tui.tui import messages as m

SIZE = (110, 34)
ROOT = Path(__file__).resolve().parent.parent

FAILING_CLAUDE = r"""#!/bin/sh
if [ -t 0 ] && [ -t 1 ]; then echo "on a terminal: yes"; else echo "on a terminal: no"; fi
printf '\033[2J\033[1;1H\033[31mWelcome\033[0m\n'
i=0; while [ $i -lt 40 ]; do echo "filler line $i"; i=$((i+1)); done
printf 'Unable to connect to Anthropic services\r\n'
printf 'Failed to connect to api.anthropic.com: ENOTFOUND \033]0;title\007\033[1mbold\033[0m \001\n' >&2
exit 1
"""


async def test_a_failing_launch_shows_its_last_lines(home: Paths, tmp_path: Path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text(FAILING_CLAUDE)
    (bin_dir / "claude").chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    env = parent_env(PATH=f"{bin_dir}:{os.environ['PATH']}", CCS_CLAUDE_MANAGED_SETTINGS=str(tmp_path / "none.json"))
    launched: list[m.Launched] = []
    app = build_app(home, env, cwd=work)
    async with app.run_test(size=SIZE, message_hook=lambda msg: isinstance(msg, m.Launched) and launched.append(msg)
                            ) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        await pilot.press("c")
        await wait_until(pilot, lambda: launched, what="the launch to return")
        await settle(pilot)
        assert launched[0].status == 1
        said = next(n for n in notifications(app) if "exited with status 1" in n)
        assert "Unable to connect to Anthropic services" in said
        assert "Failed to connect to api.anthropic.com: ENOTFOUND bold \\x01" in said  # escapes dropped or shown
        assert "on a terminal: yes" not in said and "filler line 39" in said  # the last lines only
        assert "\x1b" not in said and "\x07" not in said


async def test_a_launch_that_ends_well_shows_no_output(home: Paths, tmp_path: Path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text("#!/bin/sh\necho all good\nexit 0\n")
    (bin_dir / "claude").chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    env = parent_env(PATH=f"{bin_dir}:{os.environ['PATH']}", CCS_CLAUDE_MANAGED_SETTINGS=str(tmp_path / "none.json"))
    launched: list[m.Launched] = []
    app = build_app(home, env, cwd=work)
    async with app.run_test(size=SIZE, message_hook=lambda msg: isinstance(msg, m.Launched) and launched.append(msg)
                            ) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        await pilot.press("c")
        await wait_until(pilot, lambda: launched, what="the launch to return")
        await settle(pilot)
        said = next(n for n in notifications(app) if "exited with status 0" in n)
        assert "all good" not in said


RELAY = r"""
import json, os, sys, termios
from pathlib import Path
from ccswitch_tui.launch.ptytail import Tail, supervise_on_pty
from ccswitch_tui.launch.launcher import FORWARDED
before = termios.tcgetattr(0)
tail = Tail()
script = 'if [ -t 0 ]; then echo child-tty; fi; stty size; read x; echo "got:$x"; exit 3'
status = supervise_on_pty(["sh", "-c", script], "/bin/sh", dict(os.environ), Path("."), tail, FORWARDED)
after = termios.tcgetattr(0)
print(json.dumps({"status": status, "lines": tail.lines(), "same_mode": before == after}), flush=True)
"""


def test_the_relay_keeps_the_terminal(tmp_path: Path):
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "TERM": "xterm-256color", "LANG": "C.UTF-8"}
    s = PtySession([sys.executable, "-c", RELAY], env, cwd=tmp_path, rows=30, cols=100)
    try:
        s.expect("30 100")  # the child's terminal has ccs's size
        s.type_line("hello")  # keys reach the child
        assert s.wait(30) == 0
    finally:
        s.close()
    result = json.loads(s.text.strip().splitlines()[-1])
    assert result["status"] == 3
    assert result["lines"][-4:] == ["child-tty", "30 100", "hello", "got:hello"]  # its terminal echoes keys
    assert result["same_mode"]  # ccs's terminal is back in the mode it was in


def test_tail_keeps_a_bounded_end():
    t = Tail(limit=100)
    for i in range(1000):
        t.add(f"line {i}\n".encode())
    assert len(t.data) == 100 and t.lines(2) == ["line 998", "line 999"]


STOPS = r"""
import json, os
from pathlib import Path
from ccswitch_tui.launch.ptytail import Tail, supervise_on_pty
from ccswitch_tui.launch.launcher import FORWARDED
tail = Tail()
script = 'kill -STOP $$; echo continued; kill -TERM $$'
status = supervise_on_pty(["sh", "-c", script], "/bin/sh", dict(os.environ), Path("."), tail, FORWARDED)
print(json.dumps({"status": status, "lines": tail.lines()}), flush=True)
"""


def test_a_child_that_stops_itself_is_continued_and_its_signal_status_kept(tmp_path: Path):
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "TERM": "xterm-256color", "LANG": "C.UTF-8"}
    s = PtySession([sys.executable, "-c", STOPS], env, cwd=tmp_path)
    try:
        assert s.wait(30) == 0
    finally:
        s.close()
    result = json.loads(s.text.strip().splitlines()[-1])
    assert result["status"] == 128 + 15 and result["lines"] == ["continued"]


LATE = r"""
import json, os, sys, time
from pathlib import Path
from ccswitch_tui.launch.ptytail import Tail, supervise_on_pty
from ccswitch_tui.launch.launcher import FORWARDED
tail = Tail()
started = time.monotonic()
status = supervise_on_pty(["sh", "-c", sys.argv[1]], "/bin/sh", dict(os.environ), Path("."), tail, FORWARDED)
print(json.dumps({"status": status, "lines": tail.lines(), "took": time.monotonic() - started}), flush=True)
"""


def _relayed(tmp_path: Path, script: str) -> dict:
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "TERM": "xterm-256color", "LANG": "C.UTF-8"}
    s = PtySession([sys.executable, "-c", LATE, script], env, cwd=tmp_path)
    try:
        assert s.wait(30) == 0
    finally:
        s.close()
    return json.loads(s.text.strip().splitlines()[-1])


def test_what_reaches_the_terminal_after_the_child_ended_is_kept(tmp_path: Path):
    # The kernel passes a child's last output on after a delay of its own, so the child can have
    # ended before the relay could read it (seen under load: the tail lost the child's last line).
    # A process the child left behind, writing a moment later, stands in for that delay here.
    result = _relayed(tmp_path, "trap '' HUP; (sleep 0.12; echo late) & echo first; exit 4")
    assert result["status"] == 4
    assert result["lines"] == ["first", "late"]


def test_a_process_left_holding_the_terminal_does_not_keep_the_relay(tmp_path: Path):
    holder = tmp_path / "holder.pid"
    try:
        result = _relayed(tmp_path, f"trap '' HUP; sleep 60 & echo $! > {holder}; echo first; exit 4")
        assert result["status"] == 4 and result["lines"] == ["first"]
        assert result["took"] < 10  # not the 60 s the process holds the terminal
    finally:
        if holder.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(holder.read_text()), 9)


def test_a_process_left_writing_to_the_terminal_does_not_keep_the_relay(tmp_path: Path):
    writer = tmp_path / "writer.pid"
    script = f"trap '' HUP; (while :; do echo tick; sleep 0.1; done) & echo $! > {writer}; echo first; exit 4"
    try:
        result = _relayed(tmp_path, script)
        assert result["status"] == 4 and result["lines"][-1] == "tick"
        assert result["took"] < 10  # the relay reads on for a moment, not for as long as the process writes
    finally:
        if writer.exists():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(os.getpgid(int(writer.read_text())), 9)

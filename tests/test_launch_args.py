"""`ccs launch` and `ccs run` read their command lines without click (commands/launching.py) when click
would read them the same way: the two readers' options are the same, and on every command line below
(and on generated ones) the quick reader either gives exactly what click gives, or leaves the line to
click (help, usage errors, what it does not know), so click's messages stay the only ones."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccswitch_tui.commands import launch as commands
from ccswitch_tui.commands.launching import DIR, FILE, FLAG, LAUNCH_OPTIONS, RUN_OPTIONS, VALUE, read_args

COMMANDS = {"launch": (commands.launch_cmd, LAUNCH_OPTIONS, 2), "run": (commands.run_cmd, RUN_OPTIONS, 2)}


def click_read(name: str, args: list[str]) -> dict | None:
    """What click makes of the command line: the command's parameters, or None for help and usage errors."""
    cmd = COMMANDS[name][0]
    try:
        ctx = cmd.make_context(name, list(args), help_option_names=["-h", "--help"])
    except (click.UsageError, click.exceptions.Exit):
        return None
    return dict(ctx.params)


def quick_read(name: str, args: list[str]) -> dict | None:
    _, options, positional = COMMANDS[name]
    read = read_args(args, options, positional)
    if read is None:
        return None
    values, plain = read
    if name == "launch":
        return {"profile": plain[0], "tool": plain[1], "tool_args": tuple(plain[2:]), **values}
    return {"profile": plain[0], "command": tuple(plain[1:]), **values}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_quick_reader_knows_exactly_the_click_commands_options(name):
    cmd, options, _ = COMMANDS[name]
    declared: dict[str, tuple[str, str, object]] = {}
    for p in cmd.params:
        if not isinstance(p, click.Option) or p.name == "help":
            continue
        for opt in p.opts:
            value = True if p.secondary_opts or p.is_bool_flag else p.flag_value
            kind = FLAG if p.is_flag else DIR if isinstance(p.type, click.Path) and not p.type.file_okay \
                else FILE if isinstance(p.type, click.Path) else VALUE
            declared[opt] = (p.name, kind, value if p.is_flag else None)
        for opt in p.secondary_opts:
            declared[opt] = (p.name, FLAG, False)
    assert declared == options


SAMPLES = [
    ["p", "codex"],
    ["p", "codex", "--", "--version"],
    ["p", "codex", "--version"],  # the client's own option: click keeps unknown options as arguments
    ["p", "codex", "-v", "exec", "hi"],
    ["--isolate", "p", "codex", "--", "-c", "x"],
    ["p", "--force", "codex", "a", "--nested", "b"],  # options anywhere before --
    ["p", "codex", "--", "--force"],  # after -- everything is the client's
    ["--label", "round-1", "p", "codex"],
    ["--label=round-1", "--record", "p", "codex"],
    ["--label", "--record", "p", "codex"],  # a value option takes the next argument whatever it looks like
    ["--label", "--", "p", "codex"],
    ["--record", "--no-record", "p", "codex"],
    ["--no-record", "--record-bodies", "p", "codex"],
    ["--same-as", "R", "--locked", "--label", "R", "p", "codex"],
    ["--outcomes", "out.jsonl", "--task-column", "id", "--success-column", "ok", "p", "codex"],
    ["--cwd", "/tmp", "p", "codex"],
    ["--cwd=/nonexistent/x", "p", "codex"],
    ["p", "codex", "-"],
    ["p", "codex", ""],
    ["--debug", "p", "codex"],  # not an option of the command: an argument
    ["-xyz", "p", "codex"],
    ["--unknown=1", "p", "codex"],
    ["-nested", "p", "codex"],
    # left to click: help, missing arguments, a flag given a value, a value missing
    ["--help"], ["-h", "p", "codex"], ["p", "codex", "-vh"], ["p", "--help", "codex"],
    ["p"], [], ["--isolate=yes", "p", "codex"], ["p", "codex", "--label"],
]


@pytest.mark.parametrize("name", sorted(COMMANDS))
@pytest.mark.parametrize("args", SAMPLES, ids=[" ".join(a) or "(none)" for a in SAMPLES])
def test_the_quick_reader_reads_as_click_or_leaves_it_to_click(name, args):
    args = [a for a in args if not (name == "run" and a in ("--isolate", "--force") or a.startswith("--cwd"))]
    ours, theirs = quick_read(name, args), click_read(name, args)
    if ours is not None:
        assert ours == theirs, args
    if theirs is None:
        assert ours is None, args


def test_the_common_command_lines_are_read_without_click():
    """The reader is worth having only if it takes what people type."""
    for args in (["p", "codex"], ["p", "codex", "--", "--version"], ["--record", "--label", "r", "p", "claude"],
                 ["p", "codex", "exec", "--full-auto", "fix it"]):
        assert quick_read("launch", args) is not None, args
    assert quick_read("run", ["p", "--", "python", "run.py", "--seed", "3"]) is not None


def test_a_path_click_would_refuse_is_left_to_click(tmp_path):
    a_file, a_dir = tmp_path / "f", tmp_path / "d"
    a_file.write_text("x")
    a_dir.mkdir()
    for args in (["--cwd", str(a_file), "p", "codex"], ["--outcomes", str(a_dir), "p", "codex"]):
        assert click_read("launch", args) is None and quick_read("launch", args) is None
    for args in (["--cwd", str(a_dir), "p", "codex"], ["--outcomes", str(a_file), "p", "codex"],
                 ["--outcomes", str(tmp_path / "later.jsonl"), "p", "codex"]):
        assert quick_read("launch", args) == click_read("launch", args) is not None


TOKENS = st.sampled_from(["p", "codex", "run.py", "--", "-", "", "-h", "--help", "-v", "-vh", "--version",
                          "--isolate", "--isolate=1", "--force", "--nested", "--record", "--no-record",
                          "--record-bodies", "--strict-model", "--label", "--label=x", "--same-as", "--locked",
                          "--task-column", "--success-column", "--no-env-note", "--cwd", "--cwd=/", "--debug",
                          "--unknown", "-x=h", "--outcomes"])


@settings(max_examples=400, deadline=None)
@given(name=st.sampled_from(sorted(COMMANDS)), args=st.lists(TOKENS, max_size=8))
def test_generated_command_lines(name, args):
    ours, theirs = quick_read(name, args), click_read(name, args)
    if ours is not None:
        assert ours == theirs, args
    if theirs is None:
        assert ours is None, args


def test_click_is_not_loaded_by_a_launch(tmp_path):
    """`ccs run` read without click does not load it (nor the click commands' modules)."""
    code = ("import sys\n"
            "from ccswitch_tui.cli import run\n"
            "rc = run(['run', 'nope', '--', 'true'])\n"
            "print(rc, sorted(m for m in sys.modules\n"
            "                 if m.split('.')[0] == 'click' or m.startswith('ccswitch_tui.commands.')))")
    env = {**os.environ, "CCS_HOME": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60,
                       cwd=Path(__file__).parent)
    assert r.stdout.strip() == "2 ['ccswitch_tui.commands.context', 'ccswitch_tui.commands.launching']", r.stderr
    assert "no profile 'nope'" in r.stderr or "'nope'" in r.stderr

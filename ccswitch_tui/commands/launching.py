"""`ccs launch` and `ccs run` without click: what the two commands do once their arguments are read,
and a reader of their arguments that the CLI (and a shim, through it) tries before click.

The reader takes a command line only when click would read it the same way and accept it: the
options of the two commands (``LAUNCH_OPTIONS``, ``RUN_OPTIONS``; tests/test_launch_args.py holds
them equal to the click commands' and compares both readers on many command lines), unknown options
kept as the client's arguments (click's ``ignore_unknown_options``), options anywhere before ``--``.
Anything else (``--help``, a missing argument, a flag given a value, a path option click would refuse)
goes to click, whose messages stay the only ones. Measured: click and what it pulls in are about a
quarter of `ccs run`'s start (benchmarks/bench_overhead.py).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccswitch_tui.commands.context import Context
from ccswitch_tui.errors import CcsError, UsageError
from ccswitch_tui.launch import launcher as launch
from ccswitch_tui.launch.environment import shell_routing_note
from ccswitch_tui.launch.launcher import PROFILE_RECORDING, Recording
from ccswitch_tui.terminal_text import visible

if TYPE_CHECKING:
    from ccswitch_tui.launch.rerun import HeldLaunch
    from ccswitch_tui.model import LaunchPlan

ENV_NOTE_VAR = "CCS_ENV_NOTE"  # "0": no line about the shell's routing variables

# --- what the commands do ------------------------------------------------------------------------


def say(line: str) -> None:
    """One line on stderr (as click.echo(..., err=True) writes it)."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def cwd_of(cwd: str | None) -> Path:
    path = Path(cwd or os.getcwd()).resolve()
    if not path.is_dir():
        raise UsageError(f"--cwd {cwd!r} is not a directory")
    return path


def recording(record: bool | None, bodies: bool, strict: bool) -> Recording:
    """Off (--no-record), as the profile says, or on with the options for the bridge."""
    if record is False:
        if bodies or strict:
            raise UsageError("--record-bodies and --strict-model need recording; drop --no-record")
        return Recording("off")
    if record or bodies or strict:
        return Recording("on", bodies=bodies, strict_model=strict)
    return PROFILE_RECORDING


def warn(plan: LaunchPlan) -> None:
    for w in plan.warnings:
        say(visible(f"ccs: warning: {w}"))


def env_note(ctx: Context, plan: LaunchPlan, silent: bool) -> None:
    """One stderr line naming the shell's routing variables the launch keeps out (names only)."""
    if silent or ctx.environ.get(ENV_NOTE_VAR, "").strip().lower() in ("0", "false", "no", "off"):
        return
    if note := shell_routing_note(ctx.environ, plan.env, ctx.registry.families, plan.routing_names):
        say(visible(f"ccs: {note} (--no-env-note or {ENV_NOTE_VAR}=0 silences this)"))


def with_outcomes(ctx: Context, status: int, launch_id: str, path: str | None, task_col: str | None,
                  success_col: str | None) -> int:
    """After the child exits: attach its outcomes file to the run. A bad file is one line; the run (and
    the child's status) is kept either way."""
    if path is None:
        return status
    # lazy: keeps ccswitch_tui.runs.outcomes off `ccs run`'s imports
    from ccswitch_tui.runs.outcomes import attach, read_outcomes

    try:
        outcomes = read_outcomes(Path(path), task_col, success_col)
        attach(ctx.paths, launch_id, outcomes)
    except CcsError as exc:
        say(f"ccs: warning: outcomes not attached to run {launch_id}: {exc} "
            f"(attach them later with `ccs runs attach {launch_id} FILE`)")
        return status
    say(f"ccs: outcomes of run {launch_id}: {outcomes['passed']}/{outcomes['tasks']} tasks solved")
    return status


def held_launch(ctx: Context, prep: launch.Prepared, same_as: str | None, label: str | None,
                lock: bool) -> HeldLaunch | None:
    """The launch held to its round when a round or run binds it (``launch.rerun``), else None. A label
    alone costs one small read (is its round locked?)."""
    if same_as is None and not lock:
        if label is None:
            return None
        from ccswitch_tui.runs.round_locks import locked_first  # lazy: only a labelled run asks

        if locked_first(ctx.paths, label) is None:
            return None
    # lazy: the rerun lock (and the verdict) only for a launch held to a round
    from ccswitch_tui.launch.rerun import hold

    held = hold(prep, ctx.paths, same_as=same_as, label=label, lock=lock)
    for line in dict.fromkeys(held.warnings):
        say(visible(f"ccs: warning: {line}"))
    return held


def execute_held(ctx: Context, prep: launch.Prepared, held: HeldLaunch | None, label: str | None,
                 recording: Recording) -> int:
    """The launch, with what holding it adds; a round locked on this run is unlocked again when the run
    did not get as far as its manifest."""
    if held is None:
        return launch.execute(prep, ctx.paths, recording=recording, label=label, from_shim=ctx.from_shim)
    from ccswitch_tui.runs.round_locks import unlock_unstarted  # lazy: only a held launch

    try:
        return launch.execute(prep, ctx.paths, recording=recording, label=held.label, fields=held.fields,
                              hooks=held.hooks, from_shim=ctx.from_shim)
    finally:
        if held.fields.get("locked") and held.label is not None:
            unlock_unstarted(ctx.paths, held.label, prep.plan.launch_id)


def launch_command(ctx: Context, *, profile: str, tool: str, cwd: str | None, isolate: bool, force: bool,
                   nested: bool, no_env_note: bool, record: bool | None, record_bodies: bool, strict_model: bool,
                   label: str | None, outcomes: str | None, task_column: str | None, success_column: str | None,
                   same_as: str | None, locked: bool, tool_args: tuple[str, ...]) -> int:
    """`ccs launch PROFILE TOOL -- ARGS`."""
    launch.refuse_nested(ctx.environ, nested)
    launchable = ctx.registry.launchable()
    if tool not in launchable:
        raise UsageError(f"unknown tool {tool!r} for launch; choose one of: {', '.join(launchable)} "
                         "(or `ccs run` for any command)")
    prep = launch.build(profile, tool, store=ctx.store, keys=ctx.keys, paths=ctx.paths, environ=ctx.environ,
                        cwd=cwd_of(cwd), args=tool_args, isolate=isolate, force=force, nested=nested)
    warn(prep.plan)
    held = held_launch(ctx, prep, same_as, label, locked)
    env_note(ctx, prep.plan, no_env_note)
    status = execute_held(ctx, prep, held, label, recording(record, record_bodies, strict_model))
    return with_outcomes(ctx, status, prep.plan.launch_id, outcomes, task_column, success_column)


def run_command(ctx: Context, *, profile: str, nested: bool, no_env_note: bool, record: bool | None,
                record_bodies: bool, strict_model: bool, label: str | None, outcomes: str | None,
                task_column: str | None, success_column: str | None, same_as: str | None, locked: bool,
                command: tuple[str, ...]) -> int:
    """`ccs run PROFILE -- CMD ARGS`."""
    launch.refuse_nested(ctx.environ, nested)
    prep = launch.build(profile, "run", store=ctx.store, keys=ctx.keys, paths=ctx.paths, environ=ctx.environ,
                        cwd=cwd_of(None), args=command, nested=nested)
    warn(prep.plan)
    held = held_launch(ctx, prep, same_as, label, locked)
    env_note(ctx, prep.plan, no_env_note)
    status = execute_held(ctx, prep, held, label, recording(record, record_bodies, strict_model))
    return with_outcomes(ctx, status, prep.plan.launch_id, outcomes, task_column, success_column)


# --- reading their arguments ---------------------------------------------------------------------

FLAG, VALUE, DIR, FILE = "flag", "value", "dir", "file"  # DIR, FILE: a path click checks when it exists
# option → (parameter, kind, the value a flag gives)
RECORD_OPTIONS: dict[str, tuple[str, str, Any]] = {
    "--nested": ("nested", FLAG, True),
    "--no-env-note": ("no_env_note", FLAG, True),
    "--record": ("record", FLAG, True),
    "--no-record": ("record", FLAG, False),
    "--record-bodies": ("record_bodies", FLAG, True),
    "--strict-model": ("strict_model", FLAG, True),
    "--label": ("label", VALUE, None),
    "--outcomes": ("outcomes", FILE, None),
    "--task-column": ("task_column", VALUE, None),
    "--success-column": ("success_column", VALUE, None),
    "--same-as": ("same_as", VALUE, None),
    "--locked": ("locked", FLAG, True),
}
LAUNCH_OPTIONS = {
    "--cwd": ("cwd", DIR, None),
    "--isolate": ("isolate", FLAG, True),
    "--force": ("force", FLAG, True),
    **RECORD_OPTIONS,
}
RUN_OPTIONS = dict(RECORD_OPTIONS)
_DEFAULTS = {"record": None, **{p: (False if kind == FLAG else None) for p, kind, _ in LAUNCH_OPTIONS.values()
                                if p != "record"}}


def _click_refuses_path(value: str, kind: str) -> bool:
    """Whether click's Path type would refuse ``value`` (it checks a path only when it exists)."""
    try:
        st = os.stat(value)
    except OSError:
        return False
    if (kind == DIR and stat.S_ISREG(st.st_mode)) or (kind == FILE and stat.S_ISDIR(st.st_mode)):
        return True
    return not os.access(value, os.R_OK)


def read_args(args: Sequence[str], options: Mapping[str, tuple[str, str, Any]],  # noqa: C901
              positional: int) -> tuple[dict[str, Any], list[str]] | None:
    """The options and the positional arguments of a command line, as click reads it for these two
    commands; None when click must read it (help, a usage error, anything this reader does not know)."""
    values: dict[str, Any] = {p: _DEFAULTS[p] for p, _, _ in options.values()}
    plain: list[str] = []
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            plain += rest
            break
        if arg[:1] != "-" or len(arg) == 1:
            plain.append(arg)
            continue
        name, _, given = arg.partition("=")
        if name in ("--help", "-h"):
            return None
        found = options.get(name)
        if found is None:
            if not arg.startswith("--") and "h" in arg[1:]:  # a cluster of short options holding -h
                return None
            plain.append(arg)  # an option of the client's: ignore_unknown_options keeps it as an argument
            continue
        param, kind, flag_value = found
        if kind == FLAG:
            if "=" in arg:
                return None  # click: "does not take a value"
            values[param] = flag_value
            continue
        if "=" in arg:
            value = given
        elif rest:
            value = rest.pop(0)  # click takes the next argument as the value, whatever it looks like
        else:
            return None  # click: "requires an argument"
        if kind in (DIR, FILE) and _click_refuses_path(value, kind):
            return None
        values[param] = value
    if len(plain) < positional:
        return None  # click: "Missing argument"
    return values, plain


def quick_command(args: Sequence[str]) -> tuple[str, Callable[[Context], int]] | None:
    """`ccs launch …` or `ccs run …` read without click: the tool it launches, and a call that runs it;
    None when click must read the command line."""
    if not args or args[0] not in ("launch", "run"):
        return None
    if args[0] == "launch":
        read = read_args(args[1:], LAUNCH_OPTIONS, 2)
        if read is None:
            return None
        values, plain = read
        return plain[1], lambda ctx: launch_command(ctx, profile=plain[0], tool=plain[1], tool_args=tuple(plain[2:]),
                                                    **values)
    read = read_args(args[1:], RUN_OPTIONS, 2)  # PROFILE and at least one word of the command
    if read is None:
        return None
    values, plain = read
    return "run", lambda ctx: run_command(ctx, profile=plain[0], command=tuple(plain[1:]), **values)

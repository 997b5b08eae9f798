"""The shim's entry point: what a launcher installed by `ccs use` runs (``python -I -c "import
ccswitch_tui.shims as s; s.main()"``). It picks the profile (``launch/shims.py``), then passes
straight through to the real binary, runs it inside its own launch, or calls `ccs launch`."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

from ccswitch_tui.launch.shims import PROJECT_FILE, SelectionError, choose, find_real, relative_note


def _say(message: str) -> None:
    """One line on stderr, through the output filter every line of ccs passes (``policy.redact``); a path
    or name from elsewhere shows its control characters escaped."""
    from ccswitch_tui.policy.redact import redact_text  # lazy: keeps the policy off a pass-through's imports
    from ccswitch_tui.safe_read import no_surrogates  # lazy: keeps ccswitch_tui.errors off a pass-through's imports

    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in no_surrogates(message))
    sys.stderr.write(redact_text(f"ccs: {text}") + "\n")


def _exec_real(real: str, program: str, args: Sequence[str], notes: Sequence[str] = ()) -> int:
    for note in notes:
        _say(f"warning: {note}")
    try:
        os.execv(real, [program, *args])
    except OSError as exc:
        _say(f"error: cannot run {real} ({exc.strerror or exc})")
        return 126


def run_shim(argv: Sequence[str], environ: Mapping[str, str]) -> int:
    """``argv``: profiles folder, state folder, tool, program, then the user's arguments."""
    profiles, state, tool, program, *args = argv
    found = find_real(program, environ.get("PATH"))
    path_note = relative_note(program, found)
    if found.path is None:
        loop = len(found.shims) > 1
        where = f" beyond the ccs shims ({', '.join(found.shims)})" if found.shims else ""
        _say(f"error: no real {program!r} on PATH{where}; install it"
             + (" (two ccs installs put their shims on PATH: keep one folder)" if loop else "")
             + (f"; {path_note}" if path_note else ""))
        return 127
    try:
        choice = choose(tool, os.getcwd(), state, profiles=profiles)
    except SelectionError as exc:
        _say(f"error: {exc}")
        return 2
    except OSError as exc:  # the working directory is gone
        _say(f"error: cannot look for {PROJECT_FILE} here ({exc.strerror or exc})")
        return 2
    for ignored in choice.ignored:
        _say(f"warning: {ignored.line()}")
    notes = [path_note] if path_note else []  # a launch says it itself
    if choice.profile is None:
        return _exec_real(found.path, program, args, notes)
    inside = environ.get("CCS_LAUNCH_ID")
    if inside and environ.get("CCS_PROFILE") == choice.profile and environ.get("CCS_TOOL") == tool:
        return _exec_real(found.path, program, args, notes)  # the launch's own child starting itself again
    if inside and environ.get("CCS_PROFILE") != choice.profile:  # the nested-launch rule, said for a shim
        _say(f"error: refusing a nested launch: {program} started inside launch {inside} of profile "
             f"{environ.get('CCS_PROFILE', '?')}, and here it would use profile {choice.profile} ({choice.why()}); "
             f"run `ccs launch --nested {choice.profile} {tool} -- ARGS` to launch it anyway")
        return 2
    nested = inside and environ.get("CCS_PROFILE") == choice.profile
    request = [profiles, state, tool, choice.profile, "--nested" if nested else "", *args]
    from ccswitch_tui.resident.client import ask  # lazy: keeps it off a shim's pass-through's imports

    code = ask("shim", request, environ, state)  # a resident launcher does it, when the user turned one on
    return launch(request, environ) if code is None else code


def launch(request: Sequence[str], environ: Mapping[str, str]) -> int:
    """``ccs launch`` of the chosen profile, as the shim's folders say (``request``: profiles folder,
    state folder, tool, profile, "--nested" or "", then the user's arguments)."""
    profiles, state, tool, profile, nested, *args = request
    from pathlib import Path  # lazy: keeps pathlib off a shim's pass-through's imports

    from ccswitch_tui.cli import run  # lazy: keeps ccswitch_tui.atomic off a shim's pass-through's imports

    # the click-free context (commands.common would load click, which the launch reads its command line without)
    # lazy: keeps it off a shim's pass-through's imports
    from ccswitch_tui.commands.context import Context
    from ccswitch_tui.paths import Paths  # lazy: keeps ccswitch_tui.paths off a shim's pass-through's imports
    from ccswitch_tui.policy.redact import install  # lazy: keeps ccswitch_tui.model off a shim's pass-through's imports

    install()  # what the launch prints passes the key filter, as with `ccs`

    ctx = Context(environ=dict(environ), _paths=Paths(profiles=Path(profiles), state=Path(state)), from_shim=True)
    return run(["launch", *([nested] if nested else []), profile, tool, "--", *args], obj=ctx)


def main() -> None:
    sys.exit(run_shim(sys.argv[1:], os.environ))

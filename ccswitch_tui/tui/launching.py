"""Launching from the TUI: prepare in a worker (profile, key, plan, refusals), then suspend the app
and hand the terminal to the tool through the same supervised launch as `ccs launch` (manifest
included); back in the app, show the exit status. A refusal is shown with its ways out."""

from __future__ import annotations

import os
import shlex
import sys
import termios
import tty
from collections.abc import Sequence
from typing import Any

from textual.app import SuspendNotSupported

from ccswitch_tui import tools
from ccswitch_tui.errors import CcsError, LaunchRefused
from ccswitch_tui.launch.launcher import Prepared
from ccswitch_tui.launch.ptytail import Tail
from ccswitch_tui.terminal_text import visible
from ccswitch_tui.tools.capabilities import TuiFace
from ccswitch_tui.tui import messages as m
from ccswitch_tui.tui.host import Controller
from ccswitch_tui.tui.service import in_tui


def wait_for_key(what: str) -> None:
    """While the app is suspended: say how the command ended and wait for one key on the terminal,
    so its output stays readable until then."""

    prompt = f"{what} — press any key to return to ccs"
    try:
        fd = os.open("/dev/tty", os.O_RDONLY)
    except OSError:
        print(prompt, file=sys.stderr, flush=True)
        return  # no terminal to wait on
    try:
        old = termios.tcgetattr(fd)
        try:
            # cbreak before the prompt shows: a key pressed as soon as it is seen is one key, not the
            # start of a line the terminal would hold until Enter
            tty.setcbreak(fd)
            print(prompt, file=sys.stderr, flush=True)
            prompt = ""
            os.read(fd, 64)  # one key (an escape sequence arrives whole)
        finally:
            termios.tcsetattr(fd, termios.TCSADRAIN, old)
    except (OSError, termios.error):
        if prompt:  # the terminal cannot be put in cbreak mode: still say how the command ended
            print(prompt, file=sys.stderr, flush=True)
    finally:
        os.close(fd)



def dialogs() -> Any:
    """The dialogs' module, loaded when the first dialog opens (not at start-up)."""
    from ccswitch_tui.tui.screens import modals  # lazy: the dialogs load when the first one opens

    return modals

class Launcher(Controller):
    """Launch, shell and run: prepare in a worker, hand the terminal over on ``ready`` (the app passes
    its LaunchReady and LaunchRefused messages here)."""

    def launch(self, tool: str) -> None:
        """The client ``tool`` (a name of the registry) with the selected profile."""
        entry = self.host.current_entry()
        if entry is None or entry.profile is None:
            return
        self.start(m.LaunchRequest(entry.name, tool, tools.load().get(tool).label, key_id=entry.profile.key_id))

    def menu(self) -> None:
        """The folded footer's "Launch…": every client the selected profile serves, by its key (none for a
        client without a TUI face: it is chosen by its label)."""
        entry = self.host.current_entry()
        if entry is None or entry.profile is None:
            return
        served = [(s.tui_key if isinstance(s, TuiFace) else "", s.label, s.name) for s in tools.load().clients()
                  if s.name in entry.profile.tools]

        def chosen(tool: str | None) -> None:
            if tool:
                self.launch(tool)

        self.host.open_screen(dialogs().LaunchMenuScreen(entry.name, served), chosen)

    def shell(self) -> None:
        entry = self.host.current_entry()
        if entry is None or entry.profile is None:
            return
        tool = self.host.shown_tool() or "run"
        shell = self.service.environ.get("SHELL") or "/bin/sh"
        # As `ccs shell`: the tool's clean environment around $SHELL, settings layers not in the way.
        self.start(m.LaunchRequest(entry.name, tool, f"a shell ({tool} environment)",
                                   argv_override=(shell,), force=True, key_id=entry.profile.key_id))

    def run_command(self) -> None:
        entry = self.host.current_entry()
        if entry is None or entry.profile is None:
            return
        p = entry.profile

        run = p.side("run")
        exported = ", ".join(run.shown_exports()) if run else ""
        exports = f"exports: {exported or 'nothing'}" + (f"; CCS_MODEL={run.model}" if run and run.model else "")

        def chosen(command: str | None) -> None:
            if command:

                args = tuple(shlex.split(command))
                self.start(m.LaunchRequest(p.name, "run", args[0], args=args, hold=True, key_id=p.key_id))

        self.host.open_screen(dialogs().CommandScreen(p.name, exports), chosen)

    def start(self, request: m.LaunchRequest) -> None:
        self.host.run_worker(lambda: self._prepare(request), thread=True, exclusive=True, group="launch",
                             exit_on_error=False)

    def _prepare(self, request: m.LaunchRequest) -> None:
        try:
            prep = self.service.prepare(request.profile, request.tool, args=request.args,
                                        argv_override=request.argv_override, isolate=request.isolate,
                                        force=request.force, nested=request.nested)
        except LaunchRefused as exc:
            self.host.post_message(m.LaunchRefused(request, exc.reason, exc.ways_out, exc.flags))
            return
        except CcsError as exc:

            self.host.post_message(m.Failed(f"Cannot launch {request.label}", in_tui(exc, request.key_id)))
            self.host.post_message(m.Launched(request, None, str(exc)))
            return
        self.host.post_message(m.LaunchReady(request, prep))

    def refused(self, event: m.LaunchRefused) -> None:
        request = event.request

        def chosen(way: str | None) -> None:
            if way is None:
                self.host.post_message(m.Launched(request, None, event.message))
                return
            self.start(request.allowing(way))

        self.host.open_screen(dialogs().RefusalScreen(event.message, event.ways_out, event.flags), chosen)

    def ready(self, event: m.LaunchReady) -> None:
        request, prep = event.request, event.prepared
        status: int | None = None
        error: str | None = None

        tail = Tail()  # what the tool wrote last, shown if it ends with an error
        resume: list[str] = []
        try:
            with self.host.suspend():
                status, error = self._execute(request, prep, tail, announce=True, resume=resume)
                if request.hold:
                    wait_for_key(f"ccs: {request.label} exited with status {status}" if error is None
                                 else f"ccs: {error}")
        except SuspendNotSupported:
            if not self.host.is_headless:
                error = "this terminal cannot be handed over to a tool; use `ccs launch` from a shell"
            else:  # tests: there is no terminal to hand over, the child runs all the same
                status, error = self._execute(request, prep, tail, announce=False, resume=resume)
        self._finished(request, prep, status, error, tail.lines() if status else [], resume)

    def _execute(self, request: m.LaunchRequest, prep: Prepared, tail: Tail,
                 announce: bool, resume: list[str]) -> tuple[int | None, str | None]:
        """Run the child; nothing may escape from here (the app must come back)."""
        if announce:
            for w in prep.plan.warnings:
                print(visible(f"ccs: warning: {w}"), file=sys.stderr)
            print(f"ccs: {request.label} for {request.profile} — leave it to come back to ccs", file=sys.stderr)
        try:
            return self.service.execute(prep, tail, resume.append), None
        except CcsError as exc:
            return None, str(exc)
        except Exception as exc:  # noqa: BLE001 — reported, never fatal to the app
            return None, f"{type(exc).__name__}: {exc}"

    def _finished(self, request: m.LaunchRequest, prep: Prepared, status: int | None, error: str | None,
                  last: Sequence[str] = (), resume: Sequence[str] = ()) -> None:
        if error is not None:
            self.host.notify(error, title=f"Cannot launch {request.label}", severity="error", timeout=12)
        else:
            text = f"{request.label} ({request.profile}) exited with status {status}"
            self.host.set_status(text)
            said = f"launch {prep.plan.launch_id}"
            for line in resume:  # the screen that showed the client's own hint is gone too
                said += f"\n{line[:1].upper()}{line[1:]}"
            if last:  # the screen that showed why is gone: its last lines, as plain text
                said += "\nits last lines of output:\n" + "\n".join(f"  {line}" for line in last)
            self.host.notify(said, title=text, severity="information" if status == 0 else "warning",
                             timeout=30 if last or resume else 12)
        self.host.post_message(m.Launched(request, status, error))
        self.host.refresh_detail()

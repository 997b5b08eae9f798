"""The `ccs` command: parse, call the core, print. Heavy parts are imported inside commands."""

from __future__ import annotations

import os
import sys

from ccswitch_tui import __version__

TYPE_CHECKING = False  # typing stays off the path a resident launch's client takes (resident/client.py)
if TYPE_CHECKING:
    from typing import Any

    import click

    from ccswitch_tui.commands.context import Context

VERSION = f"ccs, version {__version__}\n"  # `ccs --version` answers before anything else loads

# Command name → "module:attribute" under ccswitch_tui.commands. Modules are imported only when
# their command runs (or for --help), so `ccs launch` never pays for `ccs check`'s imports.
COMMANDS = {
    "list": "profiles:list_cmd",
    "show": "profiles:show_cmd",
    "new": "profiles:new_cmd",
    "cp": "profiles:cp_cmd",
    "edit": "profiles:edit_cmd",
    "rm": "profiles:rm_cmd",
    "gc": "profiles:gc_cmd",
    "presets": "profiles:presets_cmd",
    "key": "keys:key_group",
    "import": "imports:import_group",
    "export": "imports:export_cmd",
    "launch": "launch:launch_cmd",
    "run": "launch:run_cmd",
    "shell": "launch:shell_cmd",
    "env": "launch:env_cmd",
    "runs": "launch:runs_group",
    "ps": "diagnose:ps_cmd",
    "inspect": "diagnose:inspect_cmd",
    "doctor": "diagnose:doctor_cmd",
    "check": "diagnose:check_cmd",
    "use": "use:use_cmd",
    "status": "use:status_cmd",
    "uninstall": "use:uninstall_cmd",
    "usage": "usage:usage_cmd",
    "resident": "resident:resident_group",
}
_GROUP: list[click.Group] = []


def _group() -> click.Group:
    """The click group of every command, built on first use: `ccs launch`, `ccs run` and `ccs --version`
    read their command lines without click when they can (commands/launching.py)."""
    if _GROUP:
        return _GROUP[0]
    import click  # lazy: the launch path reads its command lines without click

    from ccswitch_tui.commands.context import Context  # lazy: see VERSION

    class LazyGroup(click.Group):
        def list_commands(self, ctx: click.Context) -> list[str]:
            return list(COMMANDS)

        def resolve_command(self, ctx: click.Context,
                            args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
            # the commands load lazily, so click's own did-you-mean (over loaded commands) has none to offer
            if args and not args[0].startswith("-") and args[0] not in COMMANDS and not ctx.resilient_parsing:
                raise click.exceptions.NoSuchCommand(args[0], possibilities=list(COMMANDS), ctx=ctx)
            return super().resolve_command(ctx, args)

        def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
            target = COMMANDS.get(cmd_name)
            if target is None:
                return None

            import importlib  # lazy: only click's path loads commands by name

            module, attr = target.split(":")
            return getattr(importlib.import_module(f"{__package__}.commands.{module}"), attr)

    @click.group(cls=LazyGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
    @click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
    @click.version_option(__version__, prog_name="ccs")
    @click.pass_context
    def cli(click_ctx: click.Context, debug: bool) -> None:
        """ccs: launch Claude Code, Codex and SDK programs against exactly one provider.

        Run without a command to open the TUI.
        """
        click_ctx.ensure_object(Context)
        if click_ctx.invoked_subcommand is None:
            from ccswitch_tui.tui.app import run_app  # lazy: Textual loads only when the TUI opens

            run_app()

    _GROUP.append(cli)
    return cli


def __getattr__(name: str) -> Any:
    if name == "cli":  # the click group, for tests and tools that drive it (built on first use)
        return _group()
    raise AttributeError(name)


def _fail(message: str, code: int) -> int:
    from ccswitch_tui.terminal_text import visible  # lazy: see VERSION

    # messages quote paths, names and values from elsewhere
    sys.stderr.write(f"ccs: {visible(message)}\n")
    sys.stderr.flush()
    return code


def _click_main(args: list[str], obj: Context | None) -> int:
    import click  # lazy: the launch path reads its command lines without click

    try:
        rv = _group().main(args=args, prog_name="ccs", standalone_mode=False, obj=obj)
        return rv if isinstance(rv, int) else 0
    except click.exceptions.Abort:
        return _fail("aborted", 130)
    except click.ClickException as exc:
        ctx = getattr(exc, "ctx", None)
        where = ctx.command_path if ctx else "ccs"
        return _fail(f"error: {exc.format_message()} (see `{where} --help`)", 2)
    except click.exceptions.Exit as exc:
        return exc.exit_code


def run(argv: list[str] | None = None, obj: Context | None = None) -> int:  # noqa: C901
    """Run the CLI and return the exit code; errors become one line on stderr. ``obj``: the context
    to use instead of one built from the environment (a shim passes the folders it was written for)."""
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args or bool(os.environ.get("CCS_DEBUG"))
    if args == ["--version"]:
        sys.stdout.write(VERSION)
        return 0
    from ccswitch_tui.errors import CcsError  # lazy: see VERSION

    try:
        # lazy: the launch modules load only for `ccs launch` and `ccs run`
        from ccswitch_tui.commands.launching import quick_command

        quick = quick_command(args)
        if quick is not None:
            from ccswitch_tui import tools  # lazy: see VERSION
            from ccswitch_tui.commands.context import Context  # lazy: see VERSION

            tool, call = quick
            ctx = obj or Context()
            if ctx._registry is None:  # the launch path: the launched client's spec alone
                ctx._registry = tools.for_launch(tool)
            return call(ctx)
        return _click_main(args, obj)
    except CcsError as exc:
        if debug:
            raise
        return _fail(f"error: {exc}", exc.exit_code)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a folder that is a file, a full disk, no permission: the setup, not ccs
        if debug:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(f"error: {where}{exc.strerror or exc}; check that ccs's profile and state folders "
                     "(CCS_HOME, or ~/.config/ccs and ~/.local/state/ccs) are writable folders", 2)
    except Exception as exc:  # noqa: BLE001 — the last line of defence: one line, exit 1
        if debug:
            raise
        return _fail(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for details)", 1)


def main() -> None:
    if sys.argv[1:] == ["--version"]:  # the one answer that quotes nothing from elsewhere: no filter needed
        sys.stdout.write(VERSION)
        sys.exit(0)
    if sys.argv[1:2] in (["launch"], ["run"]):  # a resident launcher does it, when the user turned one on
        from ccswitch_tui.resident.client import ask, state_dir  # lazy: only `ccs launch` and `ccs run` ask

        code = ask("cli", sys.argv[1:], os.environ, state_dir(os.environ))
        if code is not None:
            sys.exit(code)
    from ccswitch_tui.policy.redact import install  # lazy: see VERSION

    install()  # every line ccs prints, errors and tracebacks included, passes the key filter
    try:
        code = run()
    except Exception:  # --debug: the traceback, whose messages quote text from elsewhere, shown visible
        import traceback  # lazy: keeps traceback off `ccs run`'s imports

        from ccswitch_tui.terminal_text import visible  # lazy: see VERSION

        sys.stderr.write(visible(traceback.format_exc()))
        code = 1
    sys.exit(code)


if __name__ == "__main__":
    main()

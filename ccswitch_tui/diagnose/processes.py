"""Finding the processes that matter: Claude Code and Codex (by executable and command line),
ccs children (by their markers), and with ``all_`` any process whose environment holds routing
variables. Reads only what it needs: on Linux two small reads per process from ``/proc``.

A process's environment is the one handed to ``execve``; later in-process changes are invisible.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from ccswitch_tui import tools
from ccswitch_tui.procfs import parse_environ, read_file
from ccswitch_tui.valueclass import valueclass

if TYPE_CHECKING:
    from ccswitch_tui.tools.registry import Registry


def tool_internal(registry: Registry | None = None) -> frozenset[str]:
    """Variables the clients' own launchers and sandboxes put into their processes: not contamination.
    ``registry``: the client specs (default: every spec)."""
    return (registry or tools.load()).internal_vars()

STATUS_OK, STATUS_DENIED, STATUS_GONE = "ok", "access-denied", "gone"


# --- which processes are the clients (each spec names its binaries) ---------------------------

_INTERPRETER = re.compile(r"(node|nodejs|bun|deno|sh|bash|dash|zsh|ksh|python[0-9.]*)(\.exe)?")


def base_name(arg: str) -> str:
    return re.split(r"[\\/]", arg)[-1].lower()


def recognise(argv: Sequence[str], registry: Registry | None = None) -> str | None:
    """The client a command line starts (each spec names its binaries and npm launchers), directly
    or through an interpreter. None otherwise."""
    if not argv or not argv[0]:
        return None
    registry = registry or tools.load()
    tool = registry.recognise(base_name(argv[0]), None)
    if tool:
        return tool
    if not _INTERPRETER.fullmatch(base_name(argv[0])):
        return None
    script = next((a for a in argv[1:4] if a and not a.startswith("-")), None)
    if script is None:
        return None
    return registry.recognise(base_name(script), script.replace("\\", "/"))


def is_ccs(argv: Sequence[str]) -> bool:
    """ccs itself: its `ccs`/`ccswitch` command, `python -m ccswitch_tui`, a shim's `python -I -c …`.
    It builds every child's environment from nothing, so the routing variables it holds (those of the
    shell it was started from) reach nothing: its supervisor is not listed beside its child."""
    if not argv or not base_name(argv[0]).startswith("python"):  # npm's `@kaitranntt/ccs` is another ccs
        return False
    for i, arg in enumerate(argv[1:5], 1):
        if arg in ("-m", "-c") and i + 1 < len(argv):
            return "ccswitch_tui" in argv[i + 1]
        if not arg.startswith("-"):
            return base_name(arg) in _CCS_COMMANDS
    return False


_CCS_COMMANDS = ("ccs", "ccswitch")


# --- reading processes ---------------------------------------------------------------------------

def has_routing(env: Mapping[str, str], registry: Registry, internal: frozenset[str]) -> bool:
    families = registry.families
    return any(families.routing_family(k) for k in env if k not in internal)


@valueclass
class Seen:
    pid: int
    argv: list[str]
    tool: str | None
    env: dict[str, str] | None
    status: str
    reasons: list[str]


def _scan_proc(all_: bool, me: int, registry: Registry) -> Iterator[Seen]:  # noqa: C901
    """Linux: two small reads per process (cmdline, environ), no psutil objects for the rest."""
    # a cheap first pass over a raw environ, built by the policy from every family (no client missed)
    hint = registry.families.routing_prefilter()
    internal = tool_internal(registry)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        if pid == me:
            continue
        try:
            cmd = read_file(f"/proc/{entry}/cmdline")
        except OSError:
            continue
        argv = [a.decode("utf-8", "replace") for a in cmd.split(b"\0")[:8]]
        if argv and argv[-1] == "":
            argv.pop()
        tool = recognise(argv, registry)
        status = STATUS_OK
        raw: bytes | None
        try:
            raw = read_file(f"/proc/{entry}/environ")
        except PermissionError:
            raw, status = None, STATUS_DENIED
        except OSError:
            raw, status = None, STATUS_GONE
        reasons = ["tool"] if tool else []
        env = None
        if raw is not None:
            if b"CCS_LAUNCH_ID=" in raw:
                env = parse_environ(raw)
                if "CCS_LAUNCH_ID" in env:
                    reasons.append("marker")
            if all_ and hint.search(raw) and not is_ccs(argv):
                env = env if env is not None else parse_environ(raw)
                if has_routing(env, registry, internal):
                    reasons.append("routing")
            if reasons and env is None:
                env = parse_environ(raw)
        if reasons:
            yield Seen(pid, argv, tool, env, status, reasons)


def _scan_psutil(all_: bool, me: int, registry: Registry) -> Iterator[Seen]:
    import psutil  # lazy: psutil loads only for process listings

    internal = tool_internal(registry)
    for p in psutil.process_iter(["cmdline"]):
        if p.pid == me:
            continue
        argv = list(p.info.get("cmdline") or [])
        tool = recognise(argv, registry)
        status, env = STATUS_OK, None
        try:
            env = dict(p.environ())
        except psutil.AccessDenied:
            status = STATUS_DENIED
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            status = STATUS_GONE
        except OSError:
            status = STATUS_DENIED
        reasons = ["tool"] if tool else []
        if env is not None:
            if "CCS_LAUNCH_ID" in env:
                reasons.append("marker")
            if all_ and not is_ccs(argv) and has_routing(env, registry, internal):
                reasons.append("routing")
        if reasons:
            yield Seen(p.pid, argv, tool, env, status, reasons)


def scan(all_: bool = False, registry: Registry | None = None) -> Iterator[Seen]:
    """The processes that matter; ``registry``: the client specs (default: every spec)."""
    me = os.getpid()
    registry = registry or tools.load()
    if sys.platform.startswith("linux") and os.path.isdir("/proc/self"):
        return _scan_proc(all_, me, registry)
    return _scan_psutil(all_, me, registry)


@valueclass(frozen=True)
class Details:
    name: str
    cwd: str | None
    started: float | None
    user: str | None
    gone: bool = False


def details(pid: int, argv: Sequence[str]) -> Details:
    import psutil  # lazy: psutil loads only for process listings

    fallback = base_name(argv[0]) if argv else str(pid)
    try:
        p = psutil.Process(pid)
        with p.oneshot():
            name = p.name() or fallback
            started = p.create_time()
            try:
                user: str | None = p.username()
            except (psutil.AccessDenied, KeyError):
                user = None
            try:
                cwd: str | None = p.cwd()
            except (psutil.AccessDenied, OSError):
                cwd = None
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return Details(fallback, None, None, None, gone=True)
    except psutil.AccessDenied:
        return Details(fallback, None, None, None)
    return Details(name, cwd, started, user)

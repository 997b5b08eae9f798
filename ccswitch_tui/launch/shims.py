"""Launchers for tools started by hand or by an editor: `ccs use`, `.ccs-profile`, and the shims.

A shim is a small POSIX sh script named after a client's program (each client spec's ``program``),
kept in ccs's own folder (``<state>/shims``, which the user puts first on ``PATH``). It runs
``main`` below, which picks the profile for this tool here and then:

- no profile (``ccs use --none``, or nothing selected): runs the real binary untouched;
- inside a ccs launch of that same profile and tool (``CCS_PROFILE``/``CCS_TOOL``/``CCS_LAUNCH_ID``
  in the environment): runs the real binary with the launch's environment, so a client that starts
  itself again (a daemon of its own, found by name on PATH) keeps working;
- inside a launch of another profile: refused, as any nested launch is (one line);
- otherwise: ``ccs launch PROFILE TOOL -- ARGS`` in this process (``--nested`` inside a launch of
  the same profile for another tool).

The real binary is the first one on ``PATH``'s absolute entries that is not a ccs shim, of this
install or another: a shim never runs itself or another shim, nor a binary that an empty or relative
entry (the working folder) would find; ``ccs launch`` uses the same ``find_real``. Selection, in
order: ``ccs use --none`` (for the tool or all), the nearest ``.ccs-profile`` that is the user's own
(``ownership``; ``PROFILE`` and/or ``tool=PROFILE`` lines), ``ccs use PROFILE``.

Writing the shims and the choice is ``shim_setup.py``. This module runs on every shim start: it
imports nothing beyond the standard library and ``ownership`` until it launches or has an error to
tell, and never the client registry (the shim script names its tool).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence

from ccswitch_tui.launch.ownership import NotOwned, read_owned

TYPE_CHECKING = False  # typing itself is not imported: a shim starts on every run of a client
if TYPE_CHECKING:  # pathlib, typing's classes and dataclasses cost a shim start more than it does here
    from pathlib import Path

MARKER = b"# ccs-shim "  # the second line of every shim; how a shim (of any install) is told from a binary
PROJECT_FILE = ".ccs-profile"
SELECTION_FILE = "use"  # `ccs use`'s choice, in the syntax of .ccs-profile; OFF for straight through
ALL = "*"
OFF = "-"
_NAME_FIRST = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_NAME_REST = _NAME_FIRST | frozenset("._-")
PROBE_BYTES = 256


# --- where things are ------------------------------------------------------------------------------

def shim_dir(state: Path, environ: Mapping[str, str] | None = None) -> Path:
    """``$CCS_SHIM_DIR`` when set, otherwise ``<state>/shims``."""
    from pathlib import Path  # lazy: keeps pathlib off a shim's pass-through's imports

    env = os.environ if environ is None else environ
    return Path(env["CCS_SHIM_DIR"]).expanduser() if env.get("CCS_SHIM_DIR") else Path(state) / "shims"


def selection_path(state: str | Path) -> str:
    return os.path.join(state, SELECTION_FILE)


# --- finding the real binary -----------------------------------------------------------------------

def is_shim(path: str | Path) -> bool:
    """Whether ``path`` is a ccs shim (of any install): a regular file whose second line is the marker.
    Read without blocking and only its first bytes (a FIFO or a huge binary on PATH is no shim)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        head = os.read(fd, PROBE_BYTES)
    except OSError:
        return False
    finally:
        os.close(fd)
    first, _, rest = head.partition(b"\n")
    return first.startswith(b"#!") and rest.startswith(MARKER)


class Found:
    __slots__ = ("path", "shims", "relative", "skipped")

    def __init__(self, path: str | None, shims: tuple[str, ...] = (), relative: tuple[str, ...] = (),
                 skipped: tuple[str, ...] = ()):
        self.path = path  # the real binary, or None
        self.shims = shims  # the shims passed over on the way (this install's and others')
        self.relative = relative  # PATH's empty and relative entries, never searched
        self.skipped = skipped  # executables named ``program`` those entries would have found (absolute)


def _executable(candidate: str) -> bool:
    return os.path.isfile(candidate) and os.access(candidate, os.X_OK)


def find_real(program: str, path_env: str | None) -> Found:
    """The first executable ``program`` on ``path_env`` that is not a ccs shim. Empty and relative
    entries (``::``, ``.``, ``bin``) are never searched: they mean the current folder, where a
    repository's own ``./claude`` would get the profile's key (Go's ``exec.LookPath`` refuses them for
    this reason). A ``program`` with a ``/`` is the caller's own choice and taken as it is."""
    if os.sep in program:
        ok = _executable(program) and not is_shim(program)
        return Found(program if ok else None)
    shims_seen: list[str] = []
    relative: list[str] = []
    skipped: list[str] = []
    for entry in (path_env if path_env is not None else os.defpath).split(os.pathsep):
        candidate = os.path.join(entry, program)
        if not os.path.isabs(entry):
            if entry not in relative:
                relative.append(entry)
                where = os.path.abspath(candidate)
                if where not in skipped and _executable(candidate) and not is_shim(candidate):
                    skipped.append(where)
            continue
        if not _executable(candidate):
            continue
        if is_shim(candidate):
            shims_seen.append(candidate)
            continue
        return Found(candidate, tuple(shims_seen), tuple(relative), tuple(skipped))
    return Found(None, tuple(shims_seen), tuple(relative), tuple(skipped))


def which_real(program: str, path_env: str | None) -> str | None:
    """``shutil.which`` that passes over ccs shims and relative PATH entries: what ``ccs launch`` runs."""
    return find_real(program, path_env).path


def entries_text(entries: Sequence[str]) -> str:
    """PATH entries as a message names them: ``'.'``, ``the empty entry``."""
    return ", ".join("the empty entry" if not e else repr(e) for e in dict.fromkeys(entries))


def relative_note(program: str, found: Found) -> str | None:
    """The one line that says a relative PATH entry was passed over, when it mattered: appended to the
    not-found error, or (a binary found further on) a warning of its own. None when nothing was."""
    if found.path is None and found.relative:
        return (f"PATH's relative entries ({entries_text(found.relative)}) are never searched for a client; "
                f"put the absolute folder of the real {program} on PATH")
    if found.skipped:
        return (f"{found.skipped[0]} is never run: PATH's empty and relative entries ({entries_text(found.relative)}) "
                f"never find a client; running {found.path} instead (keep only absolute folders on PATH)")
    return None


# --- selection -------------------------------------------------------------------------------------

class SelectionError(ValueError):
    """A ``.ccs-profile`` or selection file that cannot be used: one line, where and how to fix."""


class Choice:
    """Which profile a shim of ``tool`` uses here, and why; the project files passed over on the way."""

    __slots__ = ("tool", "profile", "source", "where", "ignored", "unserved")

    def __init__(self, tool: str, profile: str | None, source: str, where: str | None = None,
                 ignored: tuple[Ignored, ...] = (), unserved: str | None = None):
        self.tool = tool
        self.profile = profile  # None: the shim passes straight through
        self.source = source  # "project" | "use" | "none" | "off"
        self.where = where  # the project file, or the selection file
        self.ignored = ignored
        self.unserved = unserved  # the project file's profile for every tool, which does not serve this one

    def why(self) -> str:
        if self.source == "project" and self.unserved:
            return f"project file {self.where}: {self.unserved} does not serve {self.tool}, passes straight through"
        if self.source == "project" and self.profile is None:
            return f"project file {self.where}: {self.tool}=- passes straight through"
        if self.source == "project":
            return f"project file {self.where}"
        if self.source == "use":
            return "`ccs use`"
        if self.source == "off":
            return "`ccs use --none`: passes straight through"
        return "nothing selected: passes straight through"


class Ignored:
    """A project file that is not the user's own (``ownership``): named, never obeyed."""

    __slots__ = ("path", "what", "fix")

    def __init__(self, path: str, what: str, fix: str):
        self.path = path
        self.what = what
        self.fix = fix

    def line(self) -> str:
        return f"{self.path} {self.what}, so ccs ignores it; {self.fix}"

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "why": self.what, "fix": self.fix}


def valid_name(name: str) -> bool:
    """``profile.NAME_RE`` without ``re`` (a shim start does not pay for it); a test keeps them equal."""
    return 0 < len(name) <= 64 and name[0] in _NAME_FIRST and all(c in _NAME_REST for c in name)


EXCERPT = 12  # characters of a line from a file an error may show, after the output filter


def excerpt(value: str, name: str = "") -> str | None:
    """``value`` (read from a file, under variable-like ``name`` when the line had one) as an error line
    may quote it: escaped, through the output filter, at most ``EXCERPT`` characters; None when it
    reads like a credential or is longer than any profile name (a secret file linked or copied there)."""
    from ccswitch_tui.policy import is_secret  # lazy: only an error line pays for the policy
    from ccswitch_tui.policy.redact import redact_text  # lazy: only an error line pays for the policy

    if len(value) > 64 or is_secret(name, value):
        return None
    shown = redact_text(value.encode("unicode_escape").decode("ascii"))
    return repr(shown if len(shown) <= EXCERPT else shown[:EXCERPT] + "…")


def _quoted(value: str, name: str = "") -> str:
    shown = excerpt(value, name)
    return shown if shown is not None else f"a line of {len(value)} characters (not shown: it may hold a secret)"


def parse_project_file(text: str, where: str, off: bool = False) -> dict[str, str | None]:
    """``.ccs-profile``: one profile name for every tool, and/or ``tool=profile`` lines; ``#`` comments.
    Returns tool (or ``*``) → profile. Tool names are checked by the caller (it knows the registry).
    ``off``: ``-`` in place of a name means straight through (None), as `ccs use --none` writes it.
    An error quotes the file only as ``excerpt`` allows."""
    out: dict[str, str | None] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        tool, eq, name = line.partition("=")
        tool, name = (tool.strip(), name.strip()) if eq else (ALL, tool.strip())
        if eq and not tool:
            raise SelectionError(f"{where}:{n}: {_quoted(line)} names no tool; write TOOL=PROFILE or just PROFILE")
        if off and name == OFF:
            out[tool] = None
            continue
        if not valid_name(name):
            raise SelectionError(f"{where}:{n}: {_quoted(name, '' if tool == ALL else tool)} is not a profile name "
                                 "(lower case letters, digits, '.', '_', '-'); fix the line or remove the file")
        if tool in out:
            what = "a second profile line" if tool == ALL else f"a second {_quoted(tool)}= line"
            raise SelectionError(f"{where}:{n}: {what}; keep one")
        out[tool] = name
    return out


SMALL_FILE = 64 * 1024


def _decoded(data: bytes, path: str | Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # lazy: keeps ccswitch_tui.errors off a shim's pass-through's imports
        from ccswitch_tui.safe_read import decode_error_line

        raise SelectionError(f"{path}: {decode_error_line(exc)}") from None


def _too_big(data: bytes, path: str | Path) -> None:
    if len(data) > SMALL_FILE:
        raise SelectionError(f"{path} is over {SMALL_FILE} bytes; remove it")


def read_small(path: str | Path) -> str:
    """A small regular file as UTF-8 text, as ``safe_read.read_text`` reads it (no FIFO, no device, at
    most ``SMALL_FILE`` bytes) without its imports. Raises FileNotFoundError or SelectionError."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise SelectionError(f"{path}: cannot be read ({exc.strerror or exc}); fix or remove it") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SelectionError(f"{path} is not a regular file; remove it")
        data = os.read(fd, SMALL_FILE + 1)
    finally:
        os.close(fd)
    _too_big(data, path)
    return _decoded(data, path)


def read_project_text(path: str | Path, checked: dict[str, str | None] | None = None) -> str:
    """A ``.ccs-profile``'s text, when it is the user's own (``ownership``): ``NotOwned`` when it is
    not, ``SelectionError`` when it cannot be read, FileNotFoundError when there is none."""
    try:
        data = read_owned(str(path), SMALL_FILE, checked)
    except (FileNotFoundError, NotOwned):
        raise
    except OSError as exc:
        raise SelectionError(f"{path}: cannot be read ({exc.strerror or exc}); fix or remove it") from None
    _too_big(data, path)
    return _decoded(data, path)


def read_project_file(path: str | Path, checked: dict[str, str | None] | None = None) -> dict[str, str | None]:
    """A ``.ccs-profile``'s entries (``read_project_text``, then ``parse_project_file``); ``tool=-`` (or
    a bare ``-``) passes that tool (or every one) straight through here, as in the selection file."""
    return parse_project_file(read_project_text(path, checked), str(path), off=True)


class ProjectFile:
    """The nearest ``.ccs-profile`` that counts (its path and entries), and those passed over."""

    __slots__ = ("path", "entries", "ignored")

    def __init__(self, path: str | None, entries: dict[str, str | None], ignored: tuple[Ignored, ...]):
        self.path = path
        self.entries = entries
        self.ignored = ignored


def find_project_file(cwd: str | Path) -> ProjectFile:
    """The nearest ``.ccs-profile`` in ``cwd`` or its parents that is the user's own; one that is not
    (another user's, a link, a FIFO, writable by others, in a folder others control) is passed over
    and named in ``ignored``. A file of the user's own that cannot be used raises SelectionError."""
    d = os.path.abspath(cwd)
    checked: dict[str, str | None] = {}
    ignored: list[Ignored] = []
    while True:
        candidate = os.path.join(d, PROJECT_FILE)
        try:
            return ProjectFile(candidate, read_project_file(candidate, checked), tuple(ignored))
        except FileNotFoundError:
            pass
        except NotOwned as exc:
            ignored.append(Ignored(exc.path, exc.what, exc.fix))
        parent = os.path.dirname(d)
        if parent == d:
            return ProjectFile(None, {}, tuple(ignored))
        d = parent


def read_selection(state: str | Path) -> dict[str, str | None]:
    """What `ccs use` chose: tool (or ``*``) → profile, or None for `--none`. Missing: nothing."""
    path = selection_path(state)
    try:
        return parse_project_file(read_small(path), path, off=True)
    except FileNotFoundError:
        return {}
    except SelectionError as exc:
        raise SelectionError(f"{exc} (or run `ccs use --clear` to start over)") from None


def serves(profiles: str | Path, name: str, tool: str) -> bool | None:
    """Whether profile ``name`` has a ``[tool]`` table; None when its file cannot tell (missing, not
    TOML: the launch then says what is wrong). Read only for a project file's line for every tool."""
    # lazy: a shim pays for the TOML reader only when a project file names a profile for every tool
    from ccswitch_tui.safe_read import tomllib_module

    try:
        data = tomllib_module().loads(read_small(os.path.join(profiles, f"{name}.toml")))
    except (OSError, ValueError, SelectionError, RecursionError):
        return None
    return isinstance(data.get(tool), dict)


def choose(tool: str, cwd: str | Path, state: str | Path, tool_names: Sequence[str] | None = None,
           profiles: str | Path | None = None) -> Choice:
    """The profile a shim of ``tool`` uses in ``cwd``. ``tool_names``, when given, checks the project
    file's ``tool=`` lines against the registry. A project file's profile for every tool covers the
    tools it serves (read from ``profiles``) and passes the others straight through, as `ccs use
    PROFILE` does; ``tool=-`` passes one through."""
    selection = read_selection(state)
    pick = selection.get(tool, selection.get(ALL, "")) if selection else ""
    if pick is None:
        return Choice(tool, None, "off", selection_path(state))
    project = find_project_file(cwd)
    if project.path is not None:
        if tool_names is not None:
            for t in project.entries:
                if t != ALL and t not in tool_names:
                    raise SelectionError(f"{project.path}: {_quoted(t)} is not a tool ccs launches; use one of: "
                                         f"{', '.join(tool_names)}")
        if tool in project.entries or ALL in project.entries:
            name = project.entries[tool] if tool in project.entries else project.entries[ALL]
            if name is not None and tool not in project.entries and profiles is not None \
                    and serves(profiles, name, tool) is False:
                return Choice(tool, None, "project", project.path, project.ignored, unserved=name)
            return Choice(tool, name, "project", project.path, project.ignored)
    if pick:
        return Choice(tool, pick, "use", selection_path(state), project.ignored)
    return Choice(tool, None, "none", None, project.ignored)


# --- the shim itself -------------------------------------------------------------------------------

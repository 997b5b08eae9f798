"""What a client's importer declares for `ccs import`: how to read the client's own live config, a
CC Switch row of its app, and how the table an import brings is compared, written and exported.

A spec names its importer module (``ToolSpec.importer``); that module's ``IMPORTER`` is a
``ClientImporter``. The importers' core (``importers/``: the planner, the writer, CC Switch's
database, the report) asks it and never names a client. Nothing here writes files; tomlkit is
imported only when a TOML text is parsed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

from ccswitch_tui.errors import UsageError
from ccswitch_tui.model import Profile
from ccswitch_tui.safe_read import decode_error_line, loads_json, read_text
from ccswitch_tui.valueclass import field, valueclass

# (variable, value) → why that value may not be written into a profile file, or None. The profiles
# layer answers it (validation's own rule); an importer asks before keeping an env entry.
EnvCheck = Callable[[str, str], str | None]
# An export's cleaner for an env table: (table, where, warnings) → the table with credential-looking
# values emptied (each with a warning).
EnvCleaner = Callable[[Mapping[str, str], str, list[str]], dict[str, str]]


class RowProblem(Exception):
    """A source entry that is not imported; ``action`` is "skipped" (nothing to import) or "error"."""

    def __init__(self, action: str, reason: str):
        super().__init__(reason)
        self.action = action
        self.reason = reason


def skip(reason: str) -> RowProblem:
    return RowProblem("skipped", reason)


def fail(reason: str) -> RowProblem:
    return RowProblem("error", reason)


def norm_url(url: str) -> str:
    """A base URL as the importers compare it: surrounding blanks and trailing slashes dropped."""
    return url.strip().rstrip("/")


def nonblank(v: Any) -> str | None:
    """A string with its surrounding blanks dropped; None for a blank string or anything else."""
    return v.strip() if isinstance(v, str) and v.strip() else None


def routing(table: Mapping[str, Any], name: str, where: str) -> str | None:
    """``nonblank`` for a field that decides where requests (or the key) go: a value of the wrong type
    (``ANTHROPIC_BASE_URL: 5``) makes the entry skipped instead of silently falling back to a default."""
    v = table.get(name)
    if v is None or isinstance(v, str):
        return nonblank(v)
    kind = {bool: "a boolean", int: "a number", float: "a number", list: "a list", dict: "an object"}.get(
        type(v), type(v).__name__)
    raise skip(f"{where}{name} is {kind}, not text; ccs will not guess where this provider routes: "
               "fix the value in the source")


def truthy(v: Any) -> bool:
    return str(v).strip().lower() in ("1", "true", "yes", "on") if v is not None else False


def env_value(v: Any) -> str | None:
    """A settings file's env value as a variable's text (a boolean is "1"/"0"); None for a table or list."""
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
        return v
    return None


def parse_toml_text(text: str) -> dict[str, Any]:
    """A TOML text → plain dict; a syntax error → RowProblem naming line and column."""
    import tomlkit  # lazy: tomlkit loads only when a profile is written
    from tomlkit.exceptions import ParseError  # lazy: tomlkit loads only when a profile is written

    try:
        return tomlkit.parse(text).unwrap()
    except RecursionError:
        raise fail("config is nested too deeply for ccs to read") from None
    except ParseError as exc:
        msg = str(exc).split(" at line ")[0]
        raise fail(f"config is not valid TOML (line {exc.line}, column {exc.col}: {msg})") from None


def own_dir(environ: Mapping[str, str], name: str) -> str | None:
    """$name, unless this runs inside a ccs child, where it is ccs's own per-profile folder."""
    return None if environ.get("CCS_LAUNCH_ID") else environ.get(name)


def read_file_text(path: Path, missing: str | None = "not found") -> str | None:
    """The file's text. A missing file: UsageError with ``missing``, or None when ``missing`` is None."""
    try:
        return read_text(path)
    except FileNotFoundError:
        if missing is None:
            return None
        raise UsageError(f"{path}: {missing}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: cannot read: {decode_error_line(exc)}") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc}") from None


def read_json_file(path: Path, required: bool = True) -> Any:
    """The file's JSON (an empty file reads as {}); None for a missing file that is not required."""

    text = read_file_text(path, "not found" if required else None)
    if text is None:
        return None
    if not text.strip():
        return {}
    try:
        return loads_json(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}; fix or move the file") from None


@valueclass
class Parsed:
    """What an importer read from one entry: the client's table (its side) and the key, which lives
    in memory only."""

    fields: Any
    key: str | None = field(default=None, repr=False)
    key_vars: list[str] = field(default_factory=list)   # variables that hold the key
    warnings: list[str] = field(default_factory=list)
    provider_name: str | None = None                    # when the source names the provider
    key_from: str | None = None                         # where the key came from ("env:VAR": this shell)


@valueclass
class LiveRead:
    """The client's live config as `ccs import NAME` read it: the files (for the report and for
    ``--scrub``) and what they hold (``parsed``), or why they hold nothing to import (``problem``)."""

    source: str                       # the report's reference for the entry
    origin: str                       # a longer description for the profile's header comment
    read: list[str]                   # the files read
    files: dict[str, Path]            # role → path, in the order ``--scrub`` rewrites them
    formats: dict[str, str]           # role → "json" | "toml"
    parsed: Parsed | None = None
    problem: RowProblem | None = None


@valueclass(frozen=True)
class LiveOption:
    """`ccs import NAME`'s option for where the live config is (``--settings FILE``, ``--home DIR``)."""

    flag: str
    dest: str
    directory: bool
    help: str


S = TypeVar("S")  # the side an import compares and writes: the client's side, or what its parser reads


class ClientImporter(Generic[S]):
    """The base every client's importer extends."""

    cc_switch_app: str | None = None  # CC Switch's ``app_type`` for the client's providers
    live_label: str = ""  # "Claude Code's live settings", for the TUI's import dialog
    live_what: str = "its file"  # what to point the import dialog at instead, for people
    live_option: LiveOption | None = None
    command_help: str = ""  # `ccs import NAME --help`'s first line
    name_help: str = "Profile name (default: from the base URL's host)."
    scrub_help: str = ""
    run_export: str = "openai"  # what an imported profile's [run] exports when this side leads it
    run_rank: int = 0  # which side leads [run] in a profile an import creates (lowest first)
    carries_env: bool = False  # its CC Switch entry holds the profile's shared [env]
    managed_provider_types: tuple[str, ...] = ()  # CC Switch's providerType of its signed-in accounts (not imported)

    def live_path(self, environ: Mapping[str, str], home: Path) -> Path:
        """Where the client's live config is by default."""
        raise NotImplementedError

    def read_live(self, where: Path, environ: Mapping[str, str], env_check: EnvCheck) -> LiveRead:
        """Read the live config; a file that cannot be read is a UsageError (one line)."""
        raise NotImplementedError

    def from_cc_switch(self, settings: Mapping[str, Any], meta: Mapping[str, Any], env_check: EnvCheck) -> Parsed:
        """One CC Switch row of the client's app (its ``settings_config`` and ``meta``). Raises RowProblem."""
        raise NotImplementedError

    def compared(self, side: S) -> dict[str, Any]:
        """The settings that make two sides the same setup (what the planner matches on)."""
        raise NotImplementedError

    def table(self, side: S, provider_base_url: str, profile_name: str) -> dict[str, Any]:
        """The profile table an import writes for the side, fields in order (a dict value is a sub-table)."""
        raise NotImplementedError

    def to_cc_switch(self, profile: Profile, side: S, shared_env: Mapping[str, str], env_elsewhere: bool,
                     clean: EnvCleaner, warnings: list[str]) -> dict[str, Any]:
        """The CC Switch provider entry for the profile's side, key fields empty (`ccs export --format json`):
        ``settingsConfig`` and any other fields it adds. ``shared_env`` is the profile's [env], already
        cleaned; ``env_elsewhere`` says whether another side's entry carries it."""
        raise NotImplementedError

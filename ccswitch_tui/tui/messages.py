"""What the workers report back to the app (tests watch these through ``message_hook``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from textual.message import Message

from ccswitch_tui.valueclass import replace, valueclass

if TYPE_CHECKING:  # the records' and the running tab's and a launch's types: their modules load when used
    from ccswitch_tui.diagnose.inspect import Inspection
    from ccswitch_tui.launch.launcher import Prepared
    from ccswitch_tui.profiles.store import Entry
    from ccswitch_tui.tui.service import Detail, Presence, Severity


class ProfilesLoaded(Message):
    def __init__(self, entries: Sequence[Entry], keep: str | None = None, generation: int = 0,
                 presence: Presence | None = None):
        super().__init__()
        self.entries = list(entries)
        self.keep = keep
        self.generation = generation  # which read it is (App.load_profiles): older ones are dropped
        self.presence = presence  # the keys and marks of the rows on screen, when known (the rest: PresenceReady)


class PresenceReady(Message):
    def __init__(self, presence: Presence):
        super().__init__()
        self.presence = presence


class DetailReady(Message):
    def __init__(self, detail: Detail):
        super().__init__()
        self.detail = detail


class ShimsRead(Message):
    """Which profile a tool started by name here gets (``Service.shim_header``), for the header."""

    def __init__(self, text: str):
        super().__init__()
        self.text = text


class RequestsReady(Message):
    def __init__(self, launch_id: str, records: Sequence[dict[str, Any]]):
        super().__init__()
        self.launch_id = launch_id
        self.records = list(records)


class ProcessesReady(Message):
    def __init__(self, processes: Sequence[Any], inspection: Inspection | None = None, error: str | None = None,
                 inspected_pid: int | None = None):
        super().__init__()
        self.processes = list(processes)
        self.inspection = inspection
        self.error = error
        self.inspected_pid = inspected_pid


class InspectionReady(Message):
    def __init__(self, pid: int, inspection: Inspection | None = None, error: str | None = None):
        super().__init__()
        self.pid = pid
        self.inspection = inspection
        self.error = error


class CheckDone(Message):
    def __init__(self, profile: str, results: Sequence[Any], summary: str, severity: Severity):
        super().__init__()
        self.profile = profile
        self.results = list(results)
        self.summary = summary
        self.severity = severity


class Failed(Message):
    """A core error from a worker, shown as a notification."""

    def __init__(self, what: str, error: str):
        super().__init__()
        self.what = what
        self.error = error


class Done(Message):
    """A change made by a worker: say so, then reload (keeping ``select`` under the cursor)."""

    def __init__(self, text: str, select: str | None = None, reload: bool = True, changed: Sequence[str] = ()):
        super().__init__()
        self.text = text
        self.select = select
        self.reload = reload
        self.changed = tuple(changed)  # profiles whose file this change rewrote


@valueclass(frozen=True)
class LaunchRequest:
    profile: str
    tool: str
    label: str  # "Claude Code", "a shell", "python run.py"
    args: tuple[str, ...] = ()
    argv_override: tuple[str, ...] | None = None
    isolate: bool = False
    force: bool = False
    nested: bool = False
    hold: bool = False  # keep the command's output on screen until a key is pressed
    key_id: str | None = None  # the profile's key, the one k stores: a failure storing it is said as k

    def allowing(self, flag: str) -> LaunchRequest:
        """The same request with one of the options a refusal offers (LaunchRefused.flags) set."""
        if flag not in ("isolate", "force", "nested"):
            raise ValueError(f"not a launch option: {flag!r}")
        return replace(self, isolate=self.isolate or flag == "isolate", force=self.force or flag == "force",
                       nested=self.nested or flag == "nested")


class LaunchReady(Message):
    def __init__(self, request: LaunchRequest, prepared: Prepared):
        super().__init__()
        self.request = request
        self.prepared = prepared


class LaunchRefused(Message):
    def __init__(self, request: LaunchRequest, message: str, ways_out: Sequence[str], flags: Sequence[str] = ()):
        super().__init__()
        self.request = request
        self.message = message
        self.ways_out = list(ways_out)
        self.flags = tuple(flags)  # the launch options that get past it (LaunchRefused.flags)


class Launched(Message):
    """Posted after a launch returns (tests wait for it)."""

    def __init__(self, request: LaunchRequest, status: int | None, error: str | None = None):
        super().__init__()
        self.request = request
        self.status = status
        self.error = error


class ProfilesChanged(Message):
    """Profile files changed on disk since the last look (names added, removed or rewritten)."""

    def __init__(self, names: set[str]):
        super().__init__()
        self.names = names

"""The TUI's calls into the core, gathered in one Textual-free place.

Every method here may block (files, keyring, processes, HTTP) and is called from a worker thread.
Nothing here decides anything the CLI does not: it calls the same functions `ccs list`, `ccs show`,
`ccs env --diff`, `ccs runs`, `ccs key`, `ccs new` and `ccs launch` call, and packs the results
into small frozen records for the widgets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ccswitch_tui import policy
from ccswitch_tui.errors import CcsError, KeyError_, UsageError
from ccswitch_tui.keys.keyring import KeyStore
from ccswitch_tui.model import LaunchPlan, Profile
from ccswitch_tui.paths import Paths
from ccswitch_tui.policy import mask
from ccswitch_tui.policy.families import SHARED_ONLY, Families
from ccswitch_tui.profiles.schema import configured_tools
from ccswitch_tui.profiles.store import Entry, ProfileChanged, Store
from ccswitch_tui.valueclass import field, replace, valueclass

# The launch machinery (plans, launcher, removal, shims) and the run manifests load with their first
# use, in a worker after the first frame: the first frame needs the records below and no plan.
if TYPE_CHECKING:
    from ccswitch_tui.importers.report import Report as ImportReport
    from ccswitch_tui.importers.sources import Source
    from ccswitch_tui.launch.environment import EnvDiff
    from ccswitch_tui.launch.launcher import Prepared
    from ccswitch_tui.launch.ptytail import Tail
    from ccswitch_tui.launch.removal import Removal

# The plans behind the previews get this launch id; a real launch gets a fresh one.
PREVIEW_LAUNCH_ID = "(new-at-launch)"
MISSING_KEY = "(missing)"
Severity = Literal["information", "warning", "error"]  # a notification's, as the app shows it


def in_tui(error: CcsError, key_id: str | None) -> str:
    """A core error as the TUI says it: a way out that stores ``key_id`` (the profile's key, the one
    k stores) is said as that key, from the error's ``remedy``; any other error as the core says it."""
    if isinstance(error, KeyError_) and error.remedy is not None and error.remedy.key_id == key_id:
        return f"{error.problem}; press k to store it"
    return str(error)


@valueclass(frozen=True)
class Problem:
    severity: Literal["error", "warn"]
    text: str


@valueclass(frozen=True)
class KeyState:
    key_id: str
    present: bool | None  # None: the keyring could not be asked
    mask: str | None = None
    fingerprint: str | None = None
    error: str | None = None


@valueclass(frozen=True)
class ToolView:
    """One tool's preview: the plan (what `ccs env` prints) or why there is none."""

    tool: str
    plan: LaunchPlan | None
    error: str | None = None
    families: Families = SHARED_ONLY  # the routing families the plan was built with (the registry's)
    # the key store's fingerprint (fp:…), for two secrets whose masks look alike
    fingerprint: Callable[[str], str] | None = field(default=None, compare=False, repr=False)

    def shown_value(self, name: str, value: str) -> str:
        """A value as the TUI may show it: the policy's one rule (``policy.plan_shown``), a missing key said so."""
        if self.plan is None:
            return policy.shown(name, value)
        if name in self.plan.secret_names and not value:
            return MISSING_KEY
        return policy.plan_shown(self.plan, name, value)

    def diff(self, parent_env: Mapping[str, str]) -> EnvDiff | None:
        from ccswitch_tui.launch.environment import diff_env  # lazy: see the imports

        if self.plan is None:
            return None
        return diff_env(parent_env, self.plan.env, self.families, self.plan.routing_names)


@valueclass(frozen=True)
class RunRow:
    manifest: Mapping[str, Any]
    against: str | None  # the previous run of the same tool, if any
    drifted: tuple[str, ...] = ()
    observed: Mapping[str, Any] | None = None  # the request summary of a recorded run (live while it runs)
    differences: tuple[Any, ...] = ()  # ``verdict.Difference``s: each drifted field with its kind and cause
    round: Mapping[str, Any] | None = None  # for a run with a label: its round's row of the consistency table

    @property
    def live(self) -> bool:
        """A recorded run still going: its requests keep coming."""
        return self.manifest.get("exit_status") is None and bool(self.manifest.get("recording"))


@valueclass(frozen=True)
class Detail:
    entry: Entry
    key: KeyState | None
    views: Mapping[str, ToolView] = field(default_factory=dict)
    runs: tuple[RunRow, ...] = ()
    problems: tuple[Problem, ...] = ()
    usage: Any = None  # usage.Usage of the profile's recorded requests in the last 7 days

    @property
    def profile(self) -> Profile | None:
        return self.entry.profile


@valueclass(frozen=True)
class Presence:
    """Key presence and problems for every listed profile."""

    keys: Mapping[str, bool]
    problems: Mapping[str, tuple[Problem, ...]]
    keyring_error: str | None = None
    complete: bool = True  # False: the marks of the rows on screen only, the others' still to come


class Service:
    def __init__(self, paths: Paths, store: Store, keys: KeyStore, environ: Mapping[str, str], cwd: Path):
        self.paths = paths
        self.store = store
        self.keys = keys
        self.environ = environ
        self.cwd = cwd

    # --- listing ------------------------------------------------------------------------------

    def entries(self) -> list[Entry]:
        return self.store.entries()

    def presence(self, entries: Sequence[Entry]) -> Presence:
        *_, whole = self.presence_in_steps(entries)
        return whole

    def presence_in_steps(self, entries: Sequence[Entry], first: int = 0) -> Iterator[Presence]:
        """The key presence and problem marks of the ``first`` entries (the rows on screen: yielded as
        soon as they are known), then of every entry. The plans are judged with each layer file read
        once (``layer_files.one_look``)."""
        from ccswitch_tui.launch.layer_files import one_look  # lazy: see the imports

        steps = [entries[:first], entries[first:]] if 0 < first < len(entries) else [entries]
        present: dict[str, bool] = {}
        problems: dict[str, tuple[Problem, ...]] = {}
        keyring_error: str | None = None
        with one_look():
            for n, step in enumerate(steps, 1):
                refs = sorted({e.profile.key_id for e in step if e.profile} - set(present))
                if refs:
                    found, error = self.keys.presence(refs)
                    present.update(found)
                    keyring_error = keyring_error or error
                for e in step:
                    problems[e.name] = self.problems(e, present.get(e.profile.key_id) if e.profile else None)
                yield Presence(dict(present), dict(problems), keyring_error, complete=n == len(steps))

    def problems(self, entry: Entry, key_present: bool | None,
                 views: Mapping[str, ToolView] | None = None) -> tuple[Problem, ...]:
        """What keeps a profile from launching cleanly: a broken file, a missing key, the plans'
        warnings and refusals (settings layers in the working directory)."""
        if entry.profile is None:
            return (Problem("error", entry.error or "cannot be read"),)
        p = entry.profile
        out: list[Problem] = []
        if key_present is False:
            how = f"export {p.key_id[4:]}" if p.key_id.startswith("env:") else "press k to store it"
            out.append(Problem("error", f"key {p.key_id} is missing ({how})"))
        views = views or self.views(p, "")
        seen: set[str] = set()
        configured = configured_tools(p, self.store.registry)
        for view in views.values():
            if view.tool not in configured:  # a side the profile does not set up (an empty `ccs run`)
                continue
            if view.error:
                out.append(Problem("error", f"{view.tool}: {view.error}"))
            if view.plan is not None:
                out += _plan_problems(view.tool, view.plan, seen)
        return tuple(out)

    # --- one profile --------------------------------------------------------------------------

    def key_state(self, profile: Profile) -> tuple[KeyState, str | None]:
        """The key's state and value (the value stays in the worker, for the plans)."""
        try:
            value = self.keys.lookup(profile.key_id)
        except CcsError as exc:
            return KeyState(profile.key_id, None, error=str(exc)), None
        if not value:
            return KeyState(profile.key_id, False), None
        return KeyState(profile.key_id, True, mask(value), self.keys.fingerprint(value)), value

    def views(self, profile: Profile, key: str) -> dict[str, ToolView]:
        from ccswitch_tui.launch.plan import plan_for  # lazy: see the imports

        out = {}
        for tool in profile.tools:
            try:
                plan = plan_for(profile, tool, key, self.environ, self.cwd, paths=self.paths,
                                launch_id=PREVIEW_LAUNCH_ID, registry=self.store.registry)
                out[tool] = ToolView(tool, plan, families=self.store.registry.families,
                                     fingerprint=self.keys.fingerprint)
            except CcsError as exc:
                out[tool] = ToolView(tool, None, str(exc))
        return out

    def runs(self, name: str) -> tuple[RunRow, ...]:
        """The profile's manifests, newest first. A run with a label is compared with the first run of its
        round (as `ccs runs report --label` does) and carries its round's summary; any other run with the
        previous run of its tool."""

        # lazy: the manifests, the verdict and the rounds load with the first profile's detail, after the first frame
        from ccswitch_tui.runs.manifests import load_manifests
        from ccswitch_tui.runs.rounds import rounds_table  # lazy: as above
        from ccswitch_tui.runs.verdict import compare_views  # lazy: as above
        from ccswitch_tui.runs.verdict import view as run_view  # lazy: as above

        manifests: Sequence[Mapping[str, Any]] = load_manifests(self.paths, name)
        views = [run_view(m, self.paths) for m in manifests]
        labels = {m["label"] for m in manifests if isinstance(m.get("label"), str)}
        rounds: dict[str, tuple[Any, Mapping[str, Any]]] = {}
        if labels:
            newest = load_manifests(self.paths)  # a round may span profiles
            every = list(reversed(newest))  # oldest first
            # The rounds in the order they began, each with what changed since the one before.
            order = list(dict.fromkeys(str(m["label"]) for m in every if m.get("label") in labels))
            table = rounds_table(order, [m for m in newest if m.get("label") in labels], self.paths)
            for label, summary in zip(order, table["rounds"], strict=True):
                first = next(m for m in every if m.get("label") == label)
                rounds[label] = (run_view(first, self.paths), summary)
        rows = []
        for i, (m, v) in enumerate(zip(manifests, views, strict=True)):
            first, summary = rounds.get(str(m.get("label") or ""), (None, None))
            if first is not None:
                older = first if first.launch_id != v.launch_id else None
            else:
                older = next((o for o in views[i + 1:] if o.manifest.get("tool") == m.get("tool")), None)
            if older is None:
                rows.append(RunRow(m, None, observed=v.summary, round=summary))
            else:
                verdict = compare_views(older, v)
                rows.append(RunRow(m, older.launch_id, tuple(verdict.drifted), v.summary, verdict.differences,
                                   summary))
        # The runs of one round next to each other, rounds (and unlabeled runs) newest first.
        first_seen: dict[Any, int] = {}
        for i, m in enumerate(manifests):
            first_seen.setdefault(m.get("label") if isinstance(m.get("label"), str) else ("", i), i)
        rows.sort(key=lambda r: first_seen[r.manifest.get("label") if isinstance(r.manifest.get("label"), str)
                                          else ("", manifests.index(r.manifest))])
        return tuple(rows)

    def requests(self, manifest: Mapping[str, Any]) -> list[dict[str, Any]]:
        """A recorded run's request records so far (none for a run that was not recorded)."""

        from ccswitch_tui.runs.manifests import records_file  # lazy: as below
        from ccswitch_tui.runs.record_reader import read_list  # lazy: only a run's requests, when asked for

        records = records_file(self.paths, manifest)
        return read_list(records)[0] if records is not None else []

    def detail(self, name: str) -> Detail:
        try:
            path = self.store.path_for(name)
        except CcsError:  # a misnamed file, listed as broken: show why
            entry = next((e for e in self.store.entries() if e.name == name), None)
            entry = entry or Entry(name, self.store.root / name, error=f"{name}: no such profile file")
            return Detail(entry, None, problems=(Problem("error", entry.error or ""),))
        try:
            entry = Entry(name, path, profile=self.store.load(name))
        except CcsError as exc:
            return Detail(Entry(name, path, error=str(exc)), None, problems=(Problem("error", str(exc)),))
        p = entry.profile
        assert p is not None
        key, value = self.key_state(p)
        views = self.views(p, value or "")
        runs = self.runs(name)
        return Detail(entry, key, views, runs, self.problems(entry, key.present, views),
                      usage=self.usage(p, [r.manifest for r in runs]))

    def usage(self, profile: Profile, manifests: Sequence[Mapping[str, Any]] | None = None, days: int = 7) -> Any:
        """The profile's usage totals over the last ``days`` days (today included), priced by its ``[pricing]``."""
        from ccswitch_tui.runs.usage import parse_since, totals  # lazy: with the first profile's detail

        return totals(self.paths, profile=profile.name, since=parse_since(f"{days}d"),
                      prices=lambda _name: profile.pricing, manifests=manifests)

    def shim_header(self) -> str:
        """Which profile a tool started by name here would get, and why (empty when shims are unused)."""
        from ccswitch_tui.launch.use_status import header  # lazy: see the imports

        return header(self.paths, self.environ, self.cwd)

    # --- changes ------------------------------------------------------------------------------

    def set_key(self, key_id: str, value: str) -> KeyState:
        self.keys.set(key_id, value)
        return KeyState(key_id, True, mask(value.strip()), self.keys.fingerprint(value.strip()))

    def remove_key(self, key_id: str) -> bool:
        return self.keys.delete(key_id)

    def key_users(self, key_id: str) -> list[str]:
        """The profiles naming this key id (they share one key)."""
        return [e.name for e in self.store.entries() if e.profile and e.profile.key_id == key_id]

    def presets(self) -> list[Any]:
        from ccswitch_tui.profiles.presets import list_presets  # lazy: tomlkit loads only when a profile is written

        return list_presets()

    def create(self, name: str, preset: str | None, base_url: str | None,
               key: str | None) -> tuple[Profile, tuple[str, ...]]:
        """The new profile, and the URL each tool will use (``ccs new``'s lines: a URL a tool would
        misuse is fixed and said)."""
        from ccswitch_tui.profiles.presets import new_profile  # lazy: tomlkit loads only when a profile is written

        new = new_profile(name, preset, base_url=base_url or None, key=key or None)
        return self.store.save_text(name, new.text, create=True), new.urls

    def duplicate(self, name: str, new_name: str) -> Profile:
        # lazy: tomlkit loads only when a profile is written
        from ccswitch_tui.profiles.presets import copy_profile_text

        return self.store.save_text(new_name, copy_profile_text(self.store, name, new_name), create=True)

    def removal(self, name: str) -> Removal:
        """What deleting ``name`` removes (``ccs rm``'s plan): its file and tool state."""
        from ccswitch_tui.launch.removal import plan_removal  # lazy: see the imports

        return plan_removal(self.store, self.paths, name)

    def delete(self, removal: Removal) -> list[str]:
        """Delete the profile and its tool state, as `ccs rm` does; the lines saying what went."""
        from ccswitch_tui.launch.removal import carry_out  # lazy: see the imports

        return carry_out(self.store, self.paths, None, removal)

    def read_text(self, name: str) -> str:
        return self.store.read_text(name)

    def save_text(self, name: str, text: str, expected: str | None = None) -> Profile:
        """Save an edit; refuse when the file changed on disk since the editor read it (checked
        under the store's lock, so a concurrent writer cannot slip in between). A refused edit is
        kept in a file of its own, named in the error, as `ccs edit` keeps it."""

        try:
            return self.store.save_text(name, text, expected=expected)
        except ProfileChanged as exc:
            from ccswitch_tui.profiles.edit_session import keep_aside  # lazy: a refused edit only

            try:
                kept = f"is kept in {keep_aside(name, text)}"
            except OSError as err:
                kept = f"could not be kept ({err.strerror})"
            raise UsageError(f"{exc}; your edit was not saved and {kept} — press e to reopen the editor on "
                             "the new file and carry it over") from None

    def import_from(self, source: Source, dry_run: bool = False,
                    on_wait: Callable[[str], None] | None = None) -> ImportReport:
        """`ccs import cc-switch|claude|codex` with its default paths; returns the importers' report.
        Another import running (a `ccs import`, say) is waited for; ``on_wait`` gets the line saying so."""

        from ccswitch_tui.importers.sources import run_import  # lazy: the importers load for an import

        return run_import(source, self.store, self.keys, self.environ, dry_run=dry_run, on_wait=on_wait)

    # --- launching ----------------------------------------------------------------------------

    def prepare(self, name: str, tool: str, *, args: Sequence[str] = (), argv_override: Sequence[str] | None = None,
                isolate: bool = False, force: bool = False, nested: bool = False) -> Any:
        """What `ccs launch|run|shell` does before the fork; raises LaunchRefused with its ways out."""
        from ccswitch_tui.launch import launcher as launch  # lazy: see the imports

        launch.refuse_nested(self.environ, nested)
        return launch.build(name, tool, store=self.store, keys=self.keys, paths=self.paths,
                            environ=self.environ, cwd=self.cwd, args=args, isolate=isolate, force=force,
                            nested=nested, argv_override=argv_override)

    def execute(self, prep: Prepared, tail: Tail | None = None, on_resume: Callable[[str], None] | None = None) -> int:
        # the plan carries force/nested; the resume hint goes to the app, which shows it once back
        from ccswitch_tui.launch import launcher as launch  # lazy: see the imports

        return launch.execute(prep, self.paths, tail=tail, on_resume=on_resume)

    # --- running tools (`ccs ps`, `ccs inspect`) ---------------------------------------------

    def processes(self, all_: bool = False) -> list[Any]:
        from ccswitch_tui.diagnose.inspect import list_processes  # lazy: the Running tab, when shown

        return list_processes(self.store, self.keys, all_)

    def inspect(self, pid: int) -> tuple[Any, str | None]:
        """The inspection of one process, or why there is none (it exited, another user's…)."""

        from ccswitch_tui.diagnose.inspect import inspect_pid  # lazy: the Running tab, when shown

        try:
            return inspect_pid(pid, self.store, self.keys), None
        except CcsError as exc:
            return None, str(exc)
        except Exception as exc:  # noqa: BLE001 — a process vanishing mid-read must not end the app
            return None, f"pid {pid}: {type(exc).__name__}: {exc}"

    # --- endpoint checks (`ccs check`) -------------------------------------------------------

    def check(self, name: str, timeout: float = 10.0) -> tuple[list[Any], str, Severity]:
        """Probe the profile's endpoints; (findings, one-line summary, notification severity)."""
        from ccswitch_tui.diagnose.check import check_profile  # lazy: httpx loads only when ccs sends a request itself

        profile = self.store.load(name)
        results = check_profile(profile, self.keys, timeout=timeout, environ=self.environ)
        findings = [(replace(r, detail=in_tui(r.key_error, profile.key_id)) if r.key_error else r).finding()
                    for r in results]
        failed = [r for r in results if not r.ok]
        if not results:
            return findings, f"{name}: nothing to probe (no client table, nothing exported)", "warning"
        if not failed:
            return findings, f"{name}: {len(results)} probe(s) ok", "information"
        what = ", ".join(f"{r.tool} {r.outcome}" for r in failed)
        return findings, f"{name}: {len(failed)} of {len(results)} probe(s) failed: {what}", "error"


def _plan_problems(tool: str, plan: LaunchPlan, seen: set[str]) -> list[Problem]:
    """A plan's warnings and refusals not ``seen`` yet (another tool's plan may say the same)."""
    out: list[Problem] = []
    for w in plan.warnings:
        if w not in seen:
            seen.add(w)
            out.append(Problem("warn", w))
    for r in plan.refusals:
        if r.message not in seen:
            seen.add(r.message)
            out.append(Problem("warn", f"{tool} launch refused: {r.message}"))
    return out

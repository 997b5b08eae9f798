"""LaunchPlan → process: write the plan's files, start the child in its clean environment with the
terminal handed over, forward signals, write the run manifest, return the child's status."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ccswitch_tui import __version__, tools
from ccswitch_tui.atomic import atomic_write, locked
from ccswitch_tui.errors import LaunchRefused, UsageError
from ccswitch_tui.keys import extra as secondary
from ccswitch_tui.keys.keyring import KeyStore
from ccswitch_tui.launch import liveness
from ccswitch_tui.launch.launches import Launches
from ccswitch_tui.launch.plan import plan_for
from ccswitch_tui.launch.shims import find_real, relative_note
from ccswitch_tui.launch.supervise import FORWARDED, check_here, on_terminal, supervise
from ccswitch_tui.model import LaunchPlan
from ccswitch_tui.paths import Paths, ensure_private_dir
from ccswitch_tui.policy.redact import redact_text
from ccswitch_tui.profiles.digest import profile_digest
from ccswitch_tui.runs.inplace import reserve, rewrite
from ccswitch_tui.runs.manifests import env_digests, env_hash, manifest_path, write_manifest
from ccswitch_tui.runs.origin import this_machine
from ccswitch_tui.tempfiles import sweep_temp_files
from ccswitch_tui.terminal_text import visible
from ccswitch_tui.tools import share
from ccswitch_tui.tools.capabilities import Hooking, Resuming
from ccswitch_tui.tools.spec import HookContext, LaunchHook, ToolSpec
from ccswitch_tui.valueclass import field, replace, valueclass

if TYPE_CHECKING:
    from ccswitch_tui.launch.ptytail import Tail
    from ccswitch_tui.profiles.store import Store



def refuse_nested(environ: Mapping[str, str], nested: bool) -> None:
    """Inside a ccs child a launch is refused unless asked for; checked before anything else."""
    if environ.get("CCS_LAUNCH_ID") and not nested:
        where = f"profile {environ.get('CCS_PROFILE', '?')}, launch {environ['CCS_LAUNCH_ID']}"
        reason = f"refusing a nested launch: this shell is already a ccs child ({where})"
        raise LaunchRefused(f"{reason}; pass --nested to launch inside it anyway", ("--nested",), flags=("nested",),
                            reason=reason)


def check_refusals(plan: LaunchPlan, force: bool) -> None:
    live = [r for r in plan.refusals if not (force and "force" in r.flags)]
    if live:
        r = live[0]
        flags = tuple(f for f in r.flags if all(f in other.flags for other in live))  # what lifts them all
        ways = tuple(dict.fromkeys(w for x in live for w in x.ways_out))
        reasons = "; ".join(x.message for x in live)  # every one named: lifting one would only show the next
        reason = f"refusing to launch: {reasons}"
        raise LaunchRefused(f"{reason}; ways out: {'; '.join(ways)}", ways, flags, reason=reason)


@valueclass(frozen=True)
class Prepared:
    plan: LaunchPlan
    executable: str
    key_fingerprint: str
    key: str = field(default="", repr=False)  # for the recording bridge, which holds it instead of the child
    record: bool = False  # the profile's [policy].record
    key_salt: str | None = None  # the id of the salt the fingerprint was taken under (keys.salt)
    profile_digest: str | None = None  # what the profile sets for its launches (profiles.digest)
    machine: str | None = None  # where it runs (runs.origin)
    user_args: tuple[str, ...] | None = None  # the client's arguments as typed (None: a shell, argv overridden)
    spec: ToolSpec | None = field(default=None, repr=False)  # the launched client's (its hooks, version, resume)


def build(
    profile_name: str,
    tool: str,
    *,
    store: Store,
    keys: KeyStore,
    paths: Paths,
    environ: Mapping[str, str],
    cwd: Path,
    args: Sequence[str] = (),
    isolate: bool = False,
    force: bool = False,
    nested: bool = False,
    argv_override: Sequence[str] | None = None,
) -> Prepared:
    """Everything up to the fork: profile, key, plan, refusals, executable. No side effects
    beyond reading (and creating the fingerprint salt)."""
    registry = store.registry
    profile = store.load(profile_name)
    adapter = registry.require(profile, tool)  # before the key: a wrong tool is reported as such
    key = keys.resolve(profile)
    # [secrets]: the child's environment only
    extra = secondary.resolve(profile, keys, registry.multiline_vars()) if profile.secrets else {}
    plan = plan_for(profile, tool, key, environ, cwd, paths=paths, args=args, isolate=isolate, secrets=extra,
                    registry=registry)
    plan = replace(plan, force=force, nested=nested)
    if argv_override is not None:
        plan = replace(plan, argv=tuple(argv_override))
    check_refusals(plan, force)
    if not plan.argv:
        raise UsageError(f"no command given; put it after --, e.g. `ccs run {profile.name} -- python run.py`")

    found = find_real(plan.argv[0], plan.env.get("PATH", os.defpath))  # never a ccs shim, nor a relative entry
    executable, path_note = found.path, relative_note(plan.argv[0], found)
    if executable is None and os.sep in plan.argv[0] and os.path.isfile(plan.argv[0]):
        raise UsageError(f"{plan.argv[0]!r} is not executable; chmod +x it or run it through its interpreter")
    if executable is None:
        hint = adapter.install_hint if adapter.program and plan.argv[0] == adapter.program else \
            "check the command name and the profile's PATH"
        raise UsageError(f"{plan.argv[0]!r} not found on PATH ({plan.env.get('PATH', '')}); {hint}"
                         + (f"; {path_note}" if path_note else ""))
    if path_note:
        plan = replace(plan, warnings=(*plan.warnings, path_note))
    digest = profile_digest(profile, (tool, *adapter.reads_tables))
    return Prepared(plan, executable, keys.fingerprint(key), key, profile.record, keys.salt().id, digest,
                    this_machine(environ, strict=False), None if argv_override is not None else tuple(args), adapter)


def files_lock(folder: Path) -> Path:
    """The lock that launches writing into ``folder`` (a tool's config dir) take: beside the folder,
    not in it, so the tool's own home holds only the tool's files."""
    return folder.parent / f".{folder.name}.lock"


def write_plan_files(plan: LaunchPlan) -> dict[str, str]:
    """Create the plan's directories (0700) and files (their modes); return file → sha256.

    Each folder's files are written under that folder's lock, after the temp files of those same
    files are swept (a launch killed between its temp file and the rename leaves one; under the lock
    no live launch can be writing it). Temp names of any other file are left alone."""

    for d in plan.dirs:
        ensure_private_dir(d)
    digests = {}
    folders: dict[Path, list[Any]] = {}
    for f in plan.files:
        folders.setdefault(f.path.parent, []).append(f)
    for folder, files in folders.items():
        ensure_private_dir(folder)
        with locked(files_lock(folder)):
            for f in files:
                sweep_temp_files(folder, f.path.name)
                atomic_write(f.path, f.content, mode=f.mode, durable=False)
                digests[str(f.path)] = "sha256:" + hashlib.sha256(f.content.encode()).hexdigest()
    return digests


def tool_version(executable: str, package: str | None = None) -> str | None:
    """The npm package version next to a resolved executable, or the version of the PyPI ``package`` in
    the virtual environment whose script it is, when it is that cheap to get."""
    path = Path(os.path.realpath(executable))
    if package:
        dist = package.replace("-", "_").lower()
        found = sorted(path.parent.parent.glob(f"lib/python*/site-packages/{dist}-*.dist-info"))
        if found:
            return f"{package}@{found[-1].name[len(dist) + 1:-len('.dist-info')]}"
    for parent in list(path.parents)[:3]:
        pkg = parent / "package.json"
        if pkg.is_file():
            try:
                data = json.loads(pkg.read_text())
            except (OSError, ValueError):
                return None
            return f"{data.get('name')}@{data.get('version')}" if data.get("version") else None
    return None


def _version_of(spec: ToolSpec, executable: str) -> str | None:
    if not spec.program:
        return None
    return tool_version(executable, spec.package.name if spec.package and spec.package.manager == "pypi" else None)


def _spec(prep: Prepared) -> ToolSpec:
    """The launched client's spec: the one the plan was built with."""
    if prep.spec is not None:
        return prep.spec
    return tools.load().get(prep.plan.tool)


def utc_now() -> str:
    """UTC ISO-8601 with microseconds, so runs started within one second still sort."""

    seconds, nanoseconds = divmod(time.time_ns(), 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{nanoseconds // 1000:06d}Z"


def manifest_for(prep: Prepared, files: Mapping[str, str]) -> dict[str, Any]:
    plan = prep.plan
    return {
        "launch_id": plan.launch_id,
        "profile": plan.profile,
        "tool": plan.tool,
        "argv": [redact_text(a) for a in plan.argv],  # a credential typed into argv stays out of the record
        **({} if prep.user_args is None else {"user_args": [redact_text(a) for a in prep.user_args]}),
        "executable": prep.executable,
        "cwd": str(plan.cwd),
        "started": utc_now(),
        "ended": None,
        "exit_status": None,
        "base_urls": dict(plan.base_urls),
        "models": dict(plan.models),
        "key_id": plan.key_id,
        "key_fingerprint": prep.key_fingerprint,
        "key_salt": prep.key_salt,
        "profile_digest": prep.profile_digest,
        "env_names": sorted(plan.env),
        "env_hash": env_hash(plan.non_secret_env()),
        "env_digests": env_digests(plan.non_secret_env()),
        "files": dict(files),
        "tool_version": _version_of(_spec(prep), prep.executable),
        "ccs_version": __version__,
        "machine": prep.machine,
        "forced": bool(plan.force and plan.refusals),
        "overridden": [r.message for r in plan.refusals] if plan.force else [],
        "nested": plan.nested,
        "warnings": [redact_text(w) for w in plan.warnings],
        **plan.manifest_fields(),
    }


@valueclass(frozen=True)
class Recording:
    """Whether a launch goes through the recording bridge: as the profile's ``[policy] record``
    says (``PROFILE``), on with these options, or off. A launch whose client needs a translation
    goes through the bridge whatever this says (``ccs shell`` is always off)."""

    mode: Literal["profile", "on", "off"] = "profile"
    bodies: bool = False  # --record-bodies
    strict_model: bool = False  # --strict-model

    def wanted(self, profile_record: bool) -> bool:
        return self.mode == "on" or (self.mode == "profile" and profile_record)


PROFILE_RECORDING = Recording()
NO_RECORDING = Recording("off")


class RecordingHook(LaunchHook):
    """The child talks to a loopback bridge that alone holds the key (``bridge/``): the plan is
    rerouted before its files are written, the manifest keeps the real base URLs and gains where the
    records are and, at the end, their summary. Imports the bridge only here."""

    def __init__(self, key: str, recording: Recording, translations: Mapping[str, str]):
        self.key = key
        self.recording = recording
        self.translations = translations
        self.session: Any = None

    def prepare(self, ctx: HookContext) -> None:
        # lazy: keeps ccswitch_tui.bridge off `ccs run`'s imports
        from ccswitch_tui.bridge.session import RecordingSession, RecordOptions

        handlers: dict[str, Any] = {}
        if self.translations:
            # lazy: the translation only for a launch that needs it
            from ccswitch_tui.bridge.translate.handler import translation_handlers

            handlers = translation_handlers(ctx.plan, self.translations)
        options = RecordOptions(bodies=self.recording.bodies, strict_model=self.recording.strict_model)
        self.session = RecordingSession.start(ctx.plan, self.key, ctx.key_fingerprint, ctx.paths, options, handlers)
        ctx.plan = self.session.plan
        ctx.manifest.update(self.session.manifest_fields())

    def in_child(self) -> None:
        """In the child before its exec: the port's guard learns its process group (``bridge.guard``)."""
        self.session.in_child()

    def child_started(self, ctx: HookContext, pgid: int) -> None:
        self.session.child_started(pgid)  # the guard that ends the child if ccs dies

    def close(self, ctx: HookContext) -> None:
        if self.session is not None and (summary := self.session.stop()) is not None:
            ctx.manifest["requests"] = summary


class SharedPiecesHook(LaunchHook):
    """The user's own setup linked into the profile's config dirs (``[policy] share``)."""

    def before(self, ctx: HookContext) -> None:
        for problem in share.apply_links(ctx.plan.client.shared or ()):
            print(visible(f"ccs: warning: {problem}"), file=sys.stderr)


def hooks_for(prep: Prepared, recording: Recording) -> list[LaunchHook]:
    """The steps around this launch: the bridge when recording or translating, the shared pieces,
    then the client's own (its spec's)."""
    spec = _spec(prep)
    translations = spec.translations(prep.plan) if isinstance(spec, Hooking) else {}
    out: list[LaunchHook] = []
    if translations or recording.wanted(prep.record):
        out.append(RecordingHook(prep.key, recording, translations))
    out.append(SharedPiecesHook())
    if isinstance(spec, Hooking):
        out.extend(spec.hooks(prep.plan))
    return out


def execute(prep: Prepared, paths: Paths, *, recording: Recording = PROFILE_RECORDING, label: str | None = None,  # noqa: C901
            tail: Tail | None = None, fields: Mapping[str, Any] | None = None,
            hooks: Sequence[LaunchHook] = (), from_shim: bool = False,
            on_resume: Callable[[str], None] | None = None) -> int:
    """Write the plan's files and a manifest, run the child supervised, complete the manifest; the
    hooks (``hooks``, then ``hooks_for``'s) run around each step and are closed in reverse. With
    ``tail`` (a ``ptytail.Tail``) the child runs on a pseudo-terminal of its own and its last output is
    kept there. ``fields`` go into the manifest as they are (a held launch's ``same_as``, ``locked``).

    After a session the client can resume, the line that resumes it with the same profile goes to
    ``on_resume`` (the TUI shows it), else to stderr on a terminal; none after a one-prompt run
    started by a shim (``claude -p`` in a script)."""

    ctx = HookContext(plan=prep.plan, paths=paths, key_fingerprint=prep.key_fingerprint, runs=Launches(paths))
    hooks = [*hooks, *hooks_for(prep, recording)]
    in_child = [f for hook in hooks if (f := getattr(hook, "in_child", None)) is not None]
    check_here(bool(in_child), tail is not None)
    manifest: dict[str, Any] | None = None
    prepared: list[LaunchHook] = []
    try:
        for hook in hooks:
            prepared.append(hook)
            hook.prepare(ctx)
        plan = ctx.plan
        ctx.files = write_plan_files(plan)
        manifest = manifest_for(prep, ctx.files) | liveness.owner()
        manifest["argv"] = [redact_text(a) for a in plan.argv]
        if label:
            manifest["label"] = label
        manifest.update(fields or {})
        manifest.update(ctx.manifest)
        ctx.manifest = manifest
        for hook in hooks:
            hook.before(ctx)
        started = time.time()
        signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)  # a manifest saying "running" gets its child
        try:
            try:
                reserve(write_manifest(paths, manifest))
            except OSError as exc:  # before the child: nothing ran, nothing to complete
                manifest = None
                raise UsageError(f"cannot write the run manifest in {paths.runs} ({exc.strerror or exc}), so "
                                 f"{plan.argv[0]!r} was not started; make ccs's state folder writable (CCS_HOME, "
                                 "or ~/.local/state/ccs)") from None

            def started_(pgid: int) -> None:
                for hook in hooks:
                    hook.child_started(ctx, pgid)

            def before_exec() -> None:  # in the child, between its fork and its exec
                for f in in_child:
                    f()

            ended = [False]
            spec = _spec(prep)
            if spec.program and isinstance(spec, Resuming) and spec.batch(prep.user_args or ()) and \
                    not any(isinstance(h, RecordingHook) for h in hooks):
                # lazy: only a one-prompt launch pays for the check of its endpoints
                from ccswitch_tui.launch.reachable import watch

                watch(plan, spec.label, lambda: ended[0])

            if tail is not None:
                # lazy: keeps ccswitch_tui.launch.ptytail off `ccs run`'s imports
                from ccswitch_tui.launch.ptytail import supervise_on_pty

                status = supervise_on_pty(plan.argv, prep.executable, plan.env, plan.cwd, tail, FORWARDED,
                                          started=started_, before_exec=before_exec)
            else:
                status = supervise(plan.argv, prep.executable, plan.env, plan.cwd, started=started_,
                                   before_exec=before_exec if in_child else None)
            ended[0] = True
        except OSError as exc:
            assert manifest is not None
            manifest.update(ended=utc_now(), exit_status=127, error=f"{type(exc).__name__}: {exc}")
            raise UsageError(f"cannot start {plan.argv[0]!r}: {exc}") from None
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
            for hook in hooks:
                hook.after(ctx)
        ctx.status = status
        assert manifest is not None
        manifest.update(ended=utc_now(), exit_status=status)
    finally:
        for hook in reversed(prepared):
            hook.close(ctx)
        if manifest is not None:
            close_manifest(paths, manifest)
    spec = _spec(prep)
    wanted = on_resume is not None or on_terminal()
    if wanted and isinstance(spec, Resuming) and not (from_shim and spec.batch(prep.user_args or ())) and (
            args := spec.resume_command(plan, started)):
        line = visible(f"to resume this session with profile {plan.profile!r}: {resume_line(plan, recording, args)}")
        if on_resume is not None:  # a session id read from the client's own files: shown escaped
            on_resume(line)
        else:
            print(f"ccs: {line}", file=sys.stderr)
    return status


def resume_line(plan: LaunchPlan, recording: Recording, args: str) -> str:
    """The `ccs launch` that resumes a session with the same profile and the launch's own flags."""
    flags = [f for f, on in (("--isolate", plan.client.isolate), ("--force", plan.force),
                             ("--nested", plan.nested), ("--record", recording.mode == "on"),
                             ("--no-record", recording.mode == "off"), ("--record-bodies", recording.bodies),
                             ("--strict-model", recording.strict_model)) if on]
    return " ".join(["ccs launch", plan.profile, plan.tool, *flags, "--", args])


LARGE_SUMMARY = ("by_task", "tasks_left_out", "timeline", "usage")  # a summary's parts that grow with the run


def close_manifest(paths: Paths, manifest: dict[str, Any]) -> None:
    """The closing write of a manifest. The child's status wins over a full disk: when the file
    cannot be replaced it is rewritten in the room reserved at launch, and failing that ccs says so
    in one line and still exits with the child's status."""
    try:
        write_manifest(paths, manifest)
        return
    except OSError as exc:
        path = manifest_path(paths, manifest["launch_id"])
        if rewrite(path, json.dumps(manifest, indent=2) + "\n"):
            return
        summary = manifest.get("requests")
        if isinstance(summary, dict):  # the room reserved at launch holds it without its per-task counts and timeline
            slim = {**manifest, "requests": {k: v for k, v in summary.items() if k not in LARGE_SUMMARY}}
            if rewrite(path, json.dumps(slim, indent=2) + "\n"):
                return
        print(f"ccs: warning: could not complete the run manifest {path} ({exc.strerror or exc}); "
              f"the run ended with status {manifest.get('exit_status')}", file=sys.stderr)

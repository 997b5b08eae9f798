"""Running tools against what their profile expects: `ccs ps` and `ccs inspect`.

A process's environment is read as it was handed to ``execve`` (``/proc/PID/environ`` on Linux);
changes a process makes to its own environment later are invisible. A process carrying ccs's
markers is judged against the plan its profile would produce today (the same plan `ccs launch`
builds); any other process is judged against a clean environment, so every routing variable it
carries is listed with the family it belongs to.

Keys are never kept or shown: the profile's key is read once per key id, turned into its
fingerprint, and compared by fingerprint only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccswitch_tui.bridge.reroute import as_recorded
from ccswitch_tui.diagnose import runtimes
from ccswitch_tui.diagnose.findings import counts, has_errors, sort_findings
from ccswitch_tui.diagnose.loaders import process_findings, unexpected_loaders
from ccswitch_tui.diagnose.processes import (
    STATUS_DENIED,
    STATUS_GONE,
    STATUS_OK,
    details,
    recognise,
    scan,
    tool_internal,
)
from ccswitch_tui.errors import CcsError, UsageError
from ccswitch_tui.keys.salt import current_salt, fingerprint
from ccswitch_tui.launch.environment import EnvDiff, diff_env
from ccswitch_tui.launch.isolation import inspect_findings
from ccswitch_tui.launch.launches import Launches
from ccswitch_tui.launch.plan import plan_for
from ccswitch_tui.model import ERROR, INFO, WARN, Finding, LaunchPlan, Profile, Severity
from ccswitch_tui.paths import Paths
from ccswitch_tui.policy import MARKERS, inherited_env, secret_name, shown
from ccswitch_tui.runs.manifests import find_manifest, recording_bridge
from ccswitch_tui.runs.verdict import against_launch
from ccswitch_tui.safe_read import no_surrogates
from ccswitch_tui.tools.capabilities import OwningProcesses
from ccswitch_tui.valueclass import field, replace, valueclass

if TYPE_CHECKING:
    from ccswitch_tui.keys.keyring import KeyStore
    from ccswitch_tui.policy.families import Families
    from ccswitch_tui.profiles.store import Store
    from ccswitch_tui.tools.registry import Registry


ENV_NOTE = ("environment as handed to the process at exec time; changes the process made to its own "
            "environment afterwards are invisible")



def own_families(tool: str | None, registry: Registry) -> tuple[str, ...] | None:
    """The families a client reads itself (its spec's ``reads``); a variable of another client's family
    is `foreign-family`. None for `run`, shells and unknown programs, which may read any family."""

    return registry.get(tool).reads if tool in registry.names() else None


def launchable(tool: str | None, registry: Registry) -> bool:
    return tool in registry.names() and registry.get(tool).launchable

_URL_VARS = frozenset({"OPENAI_API_BASE", "AZURE_OPENAI_ENDPOINT"})
_KEY_PLACEHOLDER = "\x00ccs-profile-key\x00"



# --- results --------------------------------------------------------------------------------------

def iso_utc(ts: float | None) -> str | None:
    return None if ts is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


@valueclass(frozen=True)
class ProcessInfo:
    """One row of `ccs ps`."""

    pid: int
    name: str
    tool: str | None  # claude | codex | run | … (from CCS_TOOL or the command line); None when unknown
    profile: str | None  # from CCS_PROFILE; None for an unmanaged process
    launch_id: str | None
    cwd: str | None
    started: float | None  # epoch seconds
    user: str | None
    status: str  # ok | access-denied | gone
    reasons: tuple[str, ...]  # why it is listed: tool, marker, routing
    counts: Mapping[str, int] | None  # findings by severity; None when the environment was unreadable
    error: str | None = None

    @property
    def managed(self) -> bool:
        return self.profile is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "name": self.name,
            "tool": self.tool,
            "profile": self.profile,
            "managed": self.managed,
            "launch_id": self.launch_id,
            "cwd": self.cwd,
            "started": iso_utc(self.started),
            "user": self.user,
            "status": self.status,
            "reasons": list(self.reasons),
            "findings": dict(self.counts) if self.counts is not None else None,
            "error": self.error,
        }


@valueclass(frozen=True)
class Inspection:
    """A process's environment against what its profile (or a clean environment) expects.

    ``expected``/``actual`` and ``diff`` hold values in clear (for the TUI and tests); print them
    only through :meth:`display_diff`, which masks.
    """

    pid: int
    name: str
    tool: str | None
    profile: str | None  # the profile judged against; None = clean
    profile_source: str | None  # "marker" | "option" | None
    launch_id: str | None
    cwd: str | None
    started: float | None
    user: str | None
    expected: Mapping[str, str]
    actual: Mapping[str, str]
    diff: EnvDiff
    findings: tuple[Finding, ...]
    key_fingerprint: str | None = None  # the profile's key, now
    fingerprints: Mapping[str, str] = field(default_factory=dict)  # secret-looking variable → fp of its value
    secret_names: frozenset[str] = frozenset()
    note: str = ENV_NOTE

    @property
    def managed(self) -> bool:
        return "CCS_LAUNCH_ID" in self.actual

    @property
    def judged_against(self) -> str:
        return f"profile {self.profile}" if self.profile else "clean"

    @property
    def has_errors(self) -> bool:
        return has_errors(self.findings)

    def show(self, name: str, value: str) -> str:
        """A value as it may be printed: masked unless known non-secret; keys with their fingerprint."""
        if value == _KEY_PLACEHOLDER:
            return f"(profile key {self.key_fingerprint or 'unknown'})"
        text = shown(name, value)
        fp = self.fingerprints.get(name) if self.actual.get(name) == value else None
        return f"{text} ({fp})" if fp else text

    def display_diff(self) -> dict[str, Any]:
        d = self.diff
        return {
            "added": {k: self.show(k, v) for k, v in d.added.items()},
            "removed": {k: self.show(k, v) for k, v in d.removed.items()},
            "changed": {k: {"expected": self.show(k, a), "actual": self.show(k, b)} for k, (a, b) in d.changed.items()},
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "name": self.name,
            "tool": self.tool,
            "profile": self.profile,
            "profile_source": self.profile_source,
            "managed": self.managed,
            "judged_against": self.judged_against,
            "launch_id": self.launch_id,
            "cwd": self.cwd,
            "started": iso_utc(self.started),
            "user": self.user,
            "note": self.note,
            "key_fingerprint": self.key_fingerprint,
            "diff": self.display_diff(),
            "findings": [f.to_dict() for f in self.findings],
            "counts": counts(self.findings),
        }


# --- judging --------------------------------------------------------------------------------------

def _norm_url(url: str) -> str:
    return url.strip().rstrip("/").lower()


def _is_url_var(name: str, family: str | None, families: Families) -> bool:
    return family in families.client_families() and (name.endswith("_BASE_URL") or name in _URL_VARS)


def _is_model_var(name: str, family: str | None) -> bool:
    return (family is not None and name.endswith("_MODEL")) or name == "CCS_MODEL"


@valueclass(frozen=True)
class _Against:
    """What judging one process's environment against its plan needs besides the two environments."""

    pid: int
    plan: LaunchPlan
    tool: str | None
    own: tuple[str, ...] | None  # the tool's own routing families (None: any)
    extras: Mapping[str, Any]  # the key's fingerprints and id, or why they are unknown
    relaunch: str  # how to restart the process under the profile

    def finding(self, code: str, severity: Severity, name: str | None, message: str, family: str | None) -> Finding:
        return Finding(code, severity, message, pid=self.pid, variable=name, family=family)


@valueclass
class _KeyInfo:
    fingerprint: str | None
    error: str | None


class Inspector:
    """Judges processes; caches profiles and key fingerprints for its lifetime (one `ccs ps`, one
    TUI refresh). Keys are read lazily, once per key id, and only their fingerprints are kept."""

    def __init__(self, store: Store, keys: KeyStore, paths: Paths | None = None):
        self.store = store
        self.keys = keys
        self.registry: Registry = store.registry
        self.families: Families = self.registry.families
        self.internal = tool_internal(self.registry)  # what the clients' own launchers put in their processes
        self.paths: Paths = paths or store.paths
        self._profiles: dict[str, Profile | CcsError] = {}
        self._keyinfo: dict[str, _KeyInfo] = {}
        self._fp: Callable[[str], str] | None = None
        self._salt_id: str | None = None  # the salt of the fingerprints taken here (keys.salt)
        self._rts: dict[int, frozenset[str] | None] = {}

    # caches
    def profile(self, name: str) -> Profile | CcsError:
        if name not in self._profiles:
            try:
                self._profiles[name] = self.store.load(name)
            except CcsError as exc:
                self._profiles[name] = exc
        return self._profiles[name]

    def fingerprint(self, value: str) -> str:
        if self._fp is None:

            salt = current_salt(self.paths)
            self._salt_id = salt.id
            self._fp = lambda v: fingerprint(v, salt.value)
        return self._fp(value)

    def key_info(self, profile: Profile) -> _KeyInfo:
        ref = profile.key_id
        if ref not in self._keyinfo:
            try:
                value = self.keys.lookup(ref)
                if value:
                    info = _KeyInfo(self.fingerprint(value), None)
                else:
                    where = f"{ref[4:]} is not set in ccs's environment" if ref.startswith("env:") \
                        else f"no key stored for id {ref!r}"
                    info = _KeyInfo(None, where)
                del value
            except CcsError as exc:
                info = _KeyInfo(None, str(exc))
            self._keyinfo[ref] = info
        return self._keyinfo[ref]

    # the core
    def judge(  # noqa: C901
        self, pid: int, actual: Mapping[str, str], tool: str | None, cwd: str | None,
        profile_name: str | None = None, profile_source: str | None = None,
    ) -> tuple[dict[str, str], EnvDiff, list[Finding], dict[str, Any]]:
        """(expected env, diff expected→actual, findings, extras) for one process environment."""

        findings: list[Finding] = []
        extras: dict[str, Any] = {"profile": None, "key_fingerprint": None, "secret_names": frozenset()}
        plan: LaunchPlan | None = None
        if profile_name:
            prof = self.profile(profile_name)
            if isinstance(prof, CcsError):
                if profile_source == "option":
                    raise prof
                findings.append(Finding(
                    "profile-unknown", WARN,
                    f"marked with profile {profile_name!r}, which cannot be loaded now ({prof}); "
                    "judged against a clean environment instead", pid=pid, variable="CCS_PROFILE"))
            else:
                plan_tool = tool if tool in self.registry.names() else "run"
                try:
                    plan = plan_for(
                        prof, plan_tool, _KEY_PLACEHOLDER, actual, Path(cwd or "/"), paths=self.paths,
                        launch_id=actual.get("CCS_LAUNCH_ID"),
                        secrets=dict.fromkeys(getattr(prof, "secrets", {}), _KEY_PLACEHOLDER), registry=self.registry)
                    # [secrets] values are not the profile's key: no key-drift against it
                    plan = replace(plan, secret_names=plan.secret_names - set(getattr(prof, "secrets", {})))
                except CcsError as exc:
                    if profile_source == "option":
                        raise
                    findings.append(Finding(
                        "profile-unknown", WARN, f"{exc}; judged against a clean environment instead",
                        pid=pid, variable="CCS_TOOL"))
                if plan is not None:
                    extras["profile"] = prof.name
                    extras["secret_names"] = plan.secret_names
                    info = self.key_info(prof) if any(n in actual for n in plan.secret_names) else None
                    extras["key_fingerprint"] = info.fingerprint if info else None
                    extras["key_error"] = info.error if info else None
                    extras["key_id"] = prof.key_id

        if plan is not None:

            recorded = as_recorded(plan, actual, lambda launch_id: recording_bridge(self.paths, launch_id))
            if recorded is not None:  # a recorded launch: the child holds the bridge's URLs and token
                plan, token = recorded
                extras["held_fingerprint"] = self.fingerprint(token)
                findings += self._since_launch(pid, actual, plan, extras)
            held = extras.get("held_fingerprint") or extras["key_fingerprint"]
            expected = dict(plan.env)
            if "CCS_LAUNCH_ID" not in actual:  # judged with --profile: markers are not expected
                for m in MARKERS:
                    expected.pop(m, None)
            for name in plan.secret_names:
                if name in actual and held and self.fingerprint(actual[name]) == held:
                    expected[name] = actual[name]
            for name in getattr(self.profile(plan.profile), "secrets", {}):  # [secrets]: expected, never shown
                if name in actual:
                    expected[name] = actual[name]
            findings += self._against_plan(pid, actual, expected, plan, tool, extras)
            # doors the profile opened, with their source
            findings += inspect_findings(pid, actual, plan, self.families)
            way = (f"restart it with `ccs launch {plan.profile} {tool}`" if launchable(tool, self.registry)
                   else f"restart it with `ccs run {plan.profile} -- …`")
        else:
            kept, trusted = inherited_env(actual)
            expected = {**kept, **trusted}
            for m in MARKERS:
                if m in actual:
                    expected[m] = actual[m]
            findings += self._against_clean(pid, actual, tool)
            way = _clean_way(tool, self.registry)
        if loader_names := unexpected_loaders(actual, expected, self.internal, self.families):  # code loaded into it
            findings += process_findings(pid, actual, loader_names, tool, way, self._runtimes(pid, actual),
                                         self.registry)
        own_names = plan.routing_names if plan is not None else {}
        fps = {k: self.fingerprint(v) for k, v in actual.items()
               if secret_name(k) and (self.families.routing_family(k) or k in own_names) and v}
        extras["fingerprints"] = fps
        return expected, diff_env(expected, actual, self.families, own_names), sort_findings(findings), extras

    def _process_findings(self, pid: int, argv: Sequence[str], env: Mapping[str, str] | None) -> list[Finding]:
        """What each client's spec finds wrong with one of its own processes (an orphaned daemon)."""

        runs = Launches(self.paths)
        return [f for spec in self.registry.specs() if isinstance(spec, OwningProcesses)
                for f in spec.process_findings(pid, argv, env, runs)]
    def _since_launch(self, pid: int, actual: Mapping[str, str], plan: LaunchPlan,
                      extras: Mapping[str, Any]) -> list[Finding]:
        """A bridged launch (recorded or translated): the bridge holds the key the run was launched with,
        the child only a token. The launch's manifest says which key that was; the verdict compares it
        with the key stored now."""

        try:
            manifest = find_manifest(self.paths, actual.get("CCS_LAUNCH_ID", ""))
        except CcsError:
            return []
        name = next((n for n in sorted(plan.secret_names) if n in actual), None)
        relaunch = f"restart it with `ccs launch {plan.profile} {plan.tool}`" if launchable(plan.tool, self.registry) \
            else f"restart it with `ccs run {plan.profile} -- …`"
        return [Finding("key-drift", ERROR,
                        f"the bridge of launch {manifest.get('launch_id')} sends key {d.base}, but the key of profile "
                        f"{plan.profile!r} (id {extras.get('key_id')!r}) is {d.run} now: {d.cause}; {relaunch}",
                        pid=pid, variable=name, family=self.families.routing_family(name) if name else None)
                for d in against_launch(manifest, extras.get("key_fingerprint"), self._salt_id)]

    def _key_note(self, value: str, extras: Mapping[str, Any]) -> str:
        fp = self.fingerprint(value)
        mine = extras.get("key_fingerprint")
        if mine is None:
            return fp
        return f"{fp}, {'the same as' if fp == mine else 'not'} the profile's key"

    def _against_plan(self, pid: int, actual: Mapping[str, str], expected: Mapping[str, str], plan: LaunchPlan,
                      tool: str | None, extras: Mapping[str, Any]) -> list[Finding]:
        prof = plan.profile
        at = _Against(pid, plan, tool, own_families(tool, self.registry), extras,
                      relaunch=(f"restart it with `ccs launch {prof} {tool}`" if launchable(tool, self.registry)
                                else f"restart it with `ccs run {prof} -- …`"))
        out: list[Finding] = []
        key_unknown_reported = False
        for name in sorted(actual):
            value = actual[name]
            # the profile's own names ([run].export tables) included
            fam = self.families.plan_routing_family(plan, name)
            is_model = _is_model_var(name, fam)
            if (fam is None and not is_model) or name in self.internal or name in MARKERS:
                continue
            found: Finding | None = None
            if name in plan.secret_names:
                found = self._key_finding(at, name, value, fam, key_unknown_reported)
                key_unknown_reported = key_unknown_reported or (found is not None and found.code == "key-unavailable")
            elif expected.get(name) != value and not (name == "CCS_MODEL" and name not in expected):
                found = self._drift_finding(at, name, value, expected, fam, is_model)
            if found is not None:
                out.append(found)
        for name in sorted(set(expected) - set(actual)):
            found = self._missing_finding(at, name, expected)
            if found is not None:
                out.append(found)
        return out

    def _key_finding(self, at: _Against, name: str, value: str, fam: str | None,
                     unknown_reported: bool) -> Finding | None:
        """The process's key against the profile's: unknown (said once), or another key."""
        prof, extras = at.plan.profile, at.extras
        if extras.get("key_fingerprint") is None:
            if unknown_reported:
                return None
            return at.finding("key-unavailable", WARN, name,
                              f"cannot compare {name} with the key of profile {prof!r} ({extras.get('key_error')}); "
                              f"its fingerprint is {self.fingerprint(value)}", fam)
        if self.fingerprint(value) != (extras.get("held_fingerprint") or extras["key_fingerprint"]):
            return at.finding("key-drift", ERROR, name,
                              f"{name} carries key {self.fingerprint(value)}, but the key of profile {prof!r} "
                              f"(id {extras.get('key_id')!r}) is {extras['key_fingerprint']} now (rotated since the "
                              f"launch, or started with another key); {at.relaunch}", fam)
        return None

    def _drift_finding(self, at: _Against, name: str, value: str, expected: Mapping[str, str], fam: str | None,
                       is_model: bool) -> Finding:
        """A routing variable whose value the plan does not give it, by what it routes."""
        prof, tool, own, relaunch = at.plan.profile, at.tool, at.own, at.relaunch
        show = shown(name, value)
        in_plan = name in expected
        if fam == "proxy":
            sev: Severity = INFO if name.lower() == "no_proxy" else WARN
            what = f"differs from the profile's {shown(name, expected[name])}" if in_plan else \
                "is not set by the profile"
            return at.finding("proxy", sev, name,
                              f"{name}={show} {what}; requests may go through it (set it in the profile's [env] or "
                              f"policy.inherit if it is wanted, else {relaunch})", fam)
        if self.families.cloud_switch(name):
            return at.finding("cloud-switch", ERROR, name,
                              f"{name}={show} sends {self.registry.switched_label(name)}'s requests to a cloud "
                              f"provider instead of profile {prof!r}'s endpoint; {relaunch} from a shell without it",
                              fam)
        if own is not None and fam in self.families.client_families() and fam not in own:
            return at.finding("foreign-family", ERROR, name,
                              f"{name}={show} belongs to the {fam} family, not to {self.registry.label(tool)}; "
                              f"it reaches every command the tool runs; {relaunch}", fam)
        profile_urls = {_norm_url(u) for u in at.plan.base_urls.values()}
        if _is_url_var(name, fam, self.families) and (in_plan or _norm_url(value) not in profile_urls):
            urls_text = ", ".join(sorted(set(at.plan.base_urls.values()))) or "none"
            return at.finding("base-url-drift", ERROR, name,
                              f"{name}={show} but profile {prof!r} routes to {urls_text}; {relaunch}", fam)
        if is_model:
            want = f"the profile's {expected[name]}" if in_plan else "a model the profile does not set"
            return at.finding("model-drift", ERROR, name, f"{name}={value} differs from {want}; {relaunch}", fam)
        if secret_name(name):
            return at.finding("unmanaged-routing", ERROR if (own is None or fam in own) else WARN, name,
                              f"{name}={show} ({self._key_note(value, at.extras)}) is not set by profile {prof!r}; "
                              f"{self.registry.label(tool)} may send it; {relaunch}", fam)
        sev = ERROR if fam in self.families.client_families() and (own is None or fam in own) else WARN
        what = f"differs from the profile's {shown(name, expected[name])}" if in_plan else \
            f"is not set by profile {prof!r}"
        return at.finding("unmanaged-routing", sev, name, f"{name}={show} {what}; {relaunch}", fam)

    def _missing_finding(self, at: _Against, name: str, expected: Mapping[str, str]) -> Finding | None:
        """A variable the plan sets that the process lacks."""
        plan, prof, relaunch = at.plan, at.plan.profile, at.relaunch
        fam = self.families.plan_routing_family(plan, name)
        if name in plan.secret_names:
            return at.finding("key-drift", ERROR, name,
                              f"{name} is missing: the process has no key for profile {prof!r}; {relaunch}", fam)
        if name in plan.base_urls:
            return at.finding("base-url-drift", ERROR, name,
                              f"{name} is missing: the tool falls back to its default endpoint instead of "
                              f"{plan.base_urls[name]}; {relaunch}", fam)
        if name in plan.models:
            return at.finding("model-drift", ERROR, name,
                              f"{name} is missing: the tool uses its default model instead of {plan.models[name]}; "
                              f"{relaunch}", fam)
        if fam is not None:
            return at.finding("routing-missing", ERROR, name,
                              f"{name} is missing (profile {prof!r} sets it to {shown(name, expected[name])}); "
                              f"{relaunch}", fam)
        return None

    def _runtimes(self, pid: int, environ: Mapping[str, str]) -> frozenset[str] | None:
        if pid not in self._rts:
            self._rts[pid] = runtimes.of_process(pid, environ)
        return self._rts[pid]

    def _against_clean(self, pid: int, actual: Mapping[str, str], tool: str | None) -> list[Finding]:
        out: list[Finding] = []
        own = own_families(tool, self.registry)
        way = _clean_way(tool, self.registry)
        urls: dict[str, list[str]] = {}
        for name in sorted(actual):
            value = actual[name]
            fam = self.families.routing_family(name)
            if fam is None or name in self.internal:
                continue
            show = shown(name, value)
            if secret_name(name) and value:
                show = f"{show} ({self.fingerprint(value)})"
            if _is_url_var(name, fam, self.families) and value.strip():
                urls.setdefault(_norm_url(value), []).append(name)
            effect = self.families.effect(fam)
            if fam == "proxy":
                add = Finding("proxy", INFO if name.lower() == "no_proxy" else WARN,
                              f"{name}={show} ({fam}): read by {effect}; {way}", pid=pid, variable=name, family=fam)
            elif self.families.cloud_switch(name):
                owner = self.registry.cloud_switch_owner(name)
                add = Finding("cloud-switch", ERROR if tool is None or (owner and tool == owner.name) else WARN,
                              f"{name}={show} ({fam} family): sends {self.registry.switched_label(name)}'s "
                              f"requests to a cloud provider; {way}",
                              pid=pid, variable=name, family=fam)
            elif own is not None and fam in self.families.client_families() and fam not in own:
                add = Finding("foreign-family", ERROR,
                              f"{name}={show} belongs to the {fam} family, not to {self.registry.label(tool)}; "
                              f"it reaches every command the tool runs; {way}", pid=pid, variable=name, family=fam)
            else:
                add = Finding("unmanaged-routing", WARN if fam in self.families.client_families() else INFO,
                              f"{name}={show} ({fam} family, read by {effect}) is not managed by any ccs profile; "
                              f"{way}",
                              pid=pid, variable=name, family=fam)
            out.append(add)
        if len(urls) > 1:
            listing = "; ".join(f"{', '.join(names)}={url}" for url, names in sorted(urls.items()))
            out.append(Finding(
                "base-url-drift", ERROR,
                f"{len(urls)} distinct base URLs ({listing}): requests may go to any of them; {way}",
                pid=pid, variable=",".join(sorted(n for names in urls.values() for n in names))))
        return out

    # the two entry points
    def list_processes(self, all_: bool = False) -> list[ProcessInfo]:
        out = []
        for seen in scan(all_, self.registry):
            det = details(seen.pid, seen.argv)
            env = seen.env
            status = STATUS_GONE if det.gone else seen.status
            tool = (env or {}).get("CCS_TOOL") or seen.tool
            profile = (env or {}).get("CCS_PROFILE") if env and "CCS_LAUNCH_ID" in env else None
            launch_id = env.get("CCS_LAUNCH_ID") if env else None
            cnt = None
            error = None
            if env is not None and status == STATUS_OK:
                try:
                    _, _, found, _ = self.judge(seen.pid, env, tool, det.cwd, profile, "marker")
                    cnt = counts(found + self._process_findings(seen.pid, seen.argv, env))
                except CcsError as exc:  # pragma: no cover — judge turns profile errors into findings
                    error = str(exc)
            elif status == STATUS_DENIED:
                error = "environment not readable (another user's process)"
            elif status == STATUS_GONE:
                error = "exited while being read"
            out.append(ProcessInfo(
                pid=seen.pid, name=det.name, tool=tool, profile=profile or None, launch_id=launch_id,
                cwd=det.cwd, started=det.started, user=det.user, status=status, reasons=tuple(seen.reasons),
                counts=cnt, error=error))
        out.sort(key=lambda p: (p.started or 0, p.pid))
        return out

    def inspect_pid(self, pid: int, profile: str | None = None) -> Inspection:
        import psutil  # lazy: psutil loads only for process listings

        if pid <= 0:
            raise UsageError(f"pid {pid} is not a process id; see `ccs ps`")
        try:
            proc = psutil.Process(pid)
            with proc.oneshot():
                argv = proc.cmdline()
                actual = {no_surrogates(k): no_surrogates(v) for k, v in proc.environ().items()}
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            raise UsageError(f"pid {pid}: no such process (it has exited); see `ccs ps`") from None
        except (psutil.AccessDenied, PermissionError):
            owner = _owner(pid)
            raise UsageError(
                f"pid {pid}: cannot read its environment{f' (it belongs to {owner})' if owner else ''}; "
                "run ccs as that user or as root") from None
        det = details(pid, argv)
        if det.gone:
            raise UsageError(f"pid {pid}: no such process (it has exited); see `ccs ps`")
        tool = actual.get("CCS_TOOL") or recognise(argv, self.registry)
        if profile:
            source: str | None = "option"
        elif "CCS_LAUNCH_ID" in actual and actual.get("CCS_PROFILE"):
            profile, source = actual["CCS_PROFILE"], "marker"
        else:
            source = None
        if profile and tool is None:
            tool = "run"
        expected, diff, found, extras = self.judge(pid, actual, tool, det.cwd, profile, source)
        found = sort_findings(found + self._process_findings(pid, argv, actual))
        return Inspection(
            pid=pid, name=det.name, tool=tool, profile=extras.get("profile"),
            profile_source=source if extras.get("profile") else None,
            launch_id=actual.get("CCS_LAUNCH_ID"), cwd=det.cwd, started=det.started, user=det.user,
            expected=expected, actual=actual, diff=diff, findings=tuple(found),
            key_fingerprint=extras.get("key_fingerprint"), fingerprints=extras.get("fingerprints", {}),
            secret_names=frozenset(extras.get("secret_names", ())),
        )


def _clean_way(tool: str | None, registry: Registry) -> str:
    """The way out for a process ccs did not launch."""
    if launchable(tool, registry):
        return (f"start it with `ccs launch PROFILE {tool}` for a clean environment, or unset the variable "
                "in the shell it came from")
    return "start it with `ccs run PROFILE -- …` for a clean environment, or unset the variable in its shell"


def _owner(pid: int) -> str | None:
    import psutil  # lazy: psutil loads only for process listings

    try:
        return psutil.Process(pid).username()
    except Exception:  # noqa: BLE001 — only for a message
        return None


def list_processes(store: Store, keys: KeyStore, all_: bool = False) -> list[ProcessInfo]:
    """Every running Claude Code / Codex process and every ccs child (with ``all_``: every process
    whose environment holds routing variables), with finding counts."""
    return Inspector(store, keys).list_processes(all_)


def inspect_pid(pid: int, store: Store, keys: KeyStore, profile: str | None = None) -> Inspection:
    """One process against its profile's plan (from its marker, or ``profile``), or against clean."""
    return Inspector(store, keys).inspect_pid(pid, profile)

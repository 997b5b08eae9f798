"""One verdict on whether a rerun is comparable with another: every command that judges runs asks here.

`ccs runs diff`, `ccs runs report` (its marks, its footer and its rounds), `ccs inspect`/`ps` (a live
run against its own launch) and the TUI's Runs tab all take their differences from ``compare``, so
they cannot disagree. Each difference has a field, a kind and, when the manifests tell, a cause:

- routing: where requests went and with what — base URLs, endpoints reached, key fingerprint (or,
  when the fingerprints were taken under different salts, that they cannot be compared), proxy, the
  variables the key went into;
- model: the models the profile pinned (or that it pinned none), requested and served;
- profile: what the profile sets for its launches (its digest: an edit shows, a comment does not);
- override: a launch forced past a refusal, and what the force let through;
- project: project files that applied to the client (a repository's own settings layer);
- client: which client and its version, and ccs's own version;
- environment: other variables of the launch (named, values never kept);
- outcome: requests per path, errors, retries, auth failures, rate limits, the exit status.

Manifests written by earlier versions lack some fields: a field absent from either side is not
compared (nothing is invented for it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ccswitch_tui.keys.salt import install_salt_id
from ccswitch_tui.paths import Paths
from ccswitch_tui.policy import MARKERS
from ccswitch_tui.runs.manifests import SESSION_ENV, env_changes, observed
from ccswitch_tui.runs.origin import imported_from, machine_of
from ccswitch_tui.valueclass import field, valueclass

ROUTING, MODEL, PROFILE, OVERRIDE, PROJECT, CLIENT, ENVIRONMENT, OUTCOME = (
    "routing", "model", "profile", "override", "project", "client", "environment", "outcome")
KINDS = (ROUTING, MODEL, PROFILE, OVERRIDE, PROJECT, CLIENT, ENVIRONMENT, OUTCOME)

# The fields compared, in the order they are reported, each with its kind.
FIELDS: tuple[tuple[str, str], ...] = (
    ("base_urls", ROUTING), ("key_fingerprint", ROUTING), ("fingerprint_salt", ROUTING), ("proxy", ROUTING),
    ("secret_names", ROUTING), ("models", MODEL), ("profile_digest", PROFILE), ("env", ENVIRONMENT),
    ("tool", CLIENT), ("tool_version", CLIENT), ("ccs_version", CLIENT), ("forced", OVERRIDE),
    ("project_layers", PROJECT), ("models_requested", MODEL), ("models_served", MODEL), ("endpoints", ROUTING),
    ("request_counts", OUTCOME), ("errors", OUTCOME), ("retries", OUTCOME), ("auth_failures", OUTCOME),
    ("rate_limited", OUTCOME), ("exit_status", OUTCOME),
)
KIND_OF = dict(FIELDS)
OBSERVED = ("models_requested", "models_served", "endpoints", "request_counts", "errors", "retries",
            "auth_failures", "rate_limited")
# Where ccs itself keeps its files (passed to the child so that a ccs in it finds the same profiles): two
# machines, or two state folders, differ in it without a request going elsewhere.
STATE_ENV = frozenset({"CCS_HOME"})
PROXY_NAMES = frozenset({"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy",
                         "NO_PROXY", "no_proxy"})


@valueclass(frozen=True)
class Difference:
    field: str
    kind: str
    base: Any
    run: Any
    cause: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "kind": self.kind, "base": self.base, "run": self.run, "cause": self.cause}


@valueclass(frozen=True)
class Verdict:
    launch_id: str
    against: str
    differences: tuple[Difference, ...] = ()
    env_changes: Mapping[str, list[str]] | None = None
    notes: tuple[str, ...] = ()

    @property
    def drifted(self) -> list[str]:
        return [d.field for d in self.differences]

    @property
    def comparable(self) -> bool:
        return not self.differences

    @property
    def routing_differences(self) -> list[Difference]:
        """What makes two reruns measure different setups (everything but the run's own outcome)."""
        return [d for d in self.differences if d.kind != OUTCOME]

    def headline(self) -> str:
        if self.comparable:
            return f"{self.launch_id} vs {self.against}: comparable (no drift)"
        return f"{self.launch_id} vs {self.against}: drifted: {', '.join(self.drifted)}"

    def to_dict(self) -> dict[str, Any]:
        """The shape `ccs runs diff --json` has always had, plus the differences with kind and cause."""
        values = {d.field: {"base": d.base, "run": d.run} for d in self.differences}
        return {"launch_id": self.launch_id, "against": self.against, "drifted": self.drifted, "values": values,
                "env_changes": dict(self.env_changes) if self.env_changes is not None else None,
                "notes": list(self.notes), "comparable": self.comparable,
                "differences": [d.to_dict() for d in self.differences]}


@valueclass
class RunView:
    """What a run is compared on, from its manifest and (when recorded) its request summary. ``paths``:
    the state it was read from (for the salt of a fingerprint its manifest does not name)."""

    manifest: Mapping[str, Any]
    summary: Mapping[str, Any] | None
    problems: list[str] = field(default_factory=list)
    paths: Paths | None = field(default=None, repr=False)

    @property
    def launch_id(self) -> str:
        return str(self.manifest.get("launch_id"))


def view(m: Mapping[str, Any], paths: Paths | None = None) -> RunView:
    problems: list[str] = []
    return RunView(m, observed(paths, m, problems), problems, paths)


# --- the salt a fingerprint was taken under ----------------------------------------------------------

def _named_salt(m: Mapping[str, Any]) -> str | None:
    salt = m.get("key_salt")
    return salt if isinstance(salt, str) and salt else None


def _implied_salt(v: RunView) -> str | None:
    """The salt of a manifest written before salts were named: its machine's own. For an imported run
    the exporting machine said which that was; for a run of this machine, it is this install's."""
    origin = imported_from(v.manifest)
    if origin is not None:
        salt = origin.get("install_salt")
        return salt if isinstance(salt, str) and salt else None
    return install_salt_id(v.paths) if v.paths is not None else None


def salt_of(v: RunView) -> str | None:
    """The salt of a run's fingerprint: named by its manifest, else implied (``_implied_salt``)."""
    return _named_salt(v.manifest) or _implied_salt(v)


def salts(a: RunView, b: RunView) -> tuple[str | None, str | None] | None:
    """The salts of two runs' fingerprints, as far as they can be told; None when the two runs are of
    this machine and name no salt (manifests of earlier versions: one install, one salt)."""
    sa, sb = _named_salt(a.manifest), _named_salt(b.manifest)
    if sa and sb:
        return sa, sb
    if sa is None and sb is None and imported_from(a.manifest) is None and imported_from(b.manifest) is None:
        return None
    return sa or _implied_salt(a), sb or _implied_salt(b)


def _salt_difference(a: RunView, b: RunView) -> Difference | None:
    """Fingerprints taken under different salts cannot be compared: that, instead of a rotated key."""
    pair = salts(a, b)
    if pair is None or not (a.manifest.get("key_fingerprint") and b.manifest.get("key_fingerprint")):
        return None
    sa, sb = pair
    if sa and sb:
        if sa == sb:
            return None
        return Difference("fingerprint_salt", ROUTING, sa, sb, SALT_CAUSE)
    if machine_of(a.manifest) == machine_of(b.manifest):
        return None
    return Difference("fingerprint_salt", ROUTING, sa, sb, f"{SALT_CAUSE} (taken on {machine_of(a.manifest)} "
                      f"and on {machine_of(b.manifest)}, before salts were recorded)")


SALT_CAUSE = "fingerprints from different salts: the keys cannot be compared (give every machine the same salt)"


def _status_count(summary: Mapping[str, Any], *codes: str) -> int:
    by_status = summary.get("by_status") or {}
    return sum(n for s, n in by_status.items() if s in codes and isinstance(n, int))


def failures(summary: Mapping[str, Any], error_class: str, *codes: str) -> int:
    """How many requests failed with ``error_class`` (``auth``, ``rate_limit``: the record's class of
    the provider's error, whatever status the child was given and whether the error came as a
    status or inside a stream); for a summary written before records had a class, the requests
    answered with one of the HTTP statuses ``codes``."""
    classes = summary.get("error_classes")
    if isinstance(classes, Mapping):
        n = classes.get(error_class)
        return n if isinstance(n, int) and not isinstance(n, bool) else 0
    return _status_count(summary, *codes)


def values(v: RunView) -> dict[str, Any]:
    """Each field's value for one run; a field the run cannot tell (an older manifest, a run not
    recorded) is missing from the result."""
    m, s = v.manifest, v.summary
    out: dict[str, Any] = {}
    for f in ("base_urls", "key_fingerprint", "models", "tool", "tool_version", "profile_digest", "ccs_version"):
        if f in m:
            out[f] = m[f]
    names, digests = m.get("env_names"), m.get("env_digests")
    if isinstance(names, list) and isinstance(digests, dict):
        out["secret_names"] = sorted(str(n) for n in names if n not in digests and n not in MARKERS)
    out["env"] = m.get("env_hash")
    if "forced" in m:
        out["forced"] = bool(m.get("forced"))
    layers = m.get("project_layers")
    out["project_layers"] = sorted(str(x) for x in layers) if isinstance(layers, list) else []
    if m.get("ended") is not None or m.get("exit_status") is not None:
        out["exit_status"] = m.get("exit_status")
    if s is not None:
        out["models_requested"] = sorted(s.get("models_requested") or {})
        out["models_served"] = sorted(s.get("models_served") or {})
        out["endpoints"] = sorted(s.get("endpoints") or {})
        out["request_counts"] = dict(s.get("by_path") or {})
        out["errors"] = s.get("errors")
        if isinstance(s.get("retries"), int):
            out["retries"] = s["retries"]
        out["auth_failures"] = failures(s, "auth", "401", "403")
        out["rate_limited"] = failures(s, "rate_limit", "429")
    return out


def _proxy_and_env(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[dict[str, list[str]] | None, list[str]]:
    """The variable changes and, apart, the proxy variables among them. Session variables, ccs's own
    markers, its state folder and the variables that carry the base URLs and models (compared as such)
    are left out."""
    changes = env_changes(a, b)
    if changes is None:
        return None, []
    covered = set(MARKERS) | SESSION_ENV | STATE_ENV
    for m in (a, b):
        for f in ("base_urls", "models"):
            if isinstance(m.get(f), dict):
                covered |= set(m[f])
    proxy = sorted(n for part in changes.values() for n in part if n in PROXY_NAMES)
    rest = {k: [n for n in names if n not in PROXY_NAMES and n not in covered] for k, names in changes.items()}
    return rest, proxy


def _overridden(m: Mapping[str, Any]) -> str:
    over = [str(x) for x in m.get("overridden") or []]
    return "; ".join(over) if over else "a refusal"


def _cause(f: str, a: Mapping[str, Any], b: Mapping[str, Any], va: Mapping[str, Any], vb: Mapping[str, Any],  # noqa: C901
           sb: Mapping[str, Any] | None) -> str | None:
    forced = [m for m in (a, b) if m.get("forced")]
    layers = vb.get("project_layers") or va.get("project_layers")
    if f == "key_fingerprint":
        if a.get("key_id") and a.get("key_id") == b.get("key_id"):
            return f"the key stored under id {a['key_id']!r} changed between the runs (rotated)"
        if a.get("key_id") != b.get("key_id"):
            return f"another key id: {a.get('key_id')!r} -> {b.get('key_id')!r}"
    if f == "base_urls":
        if a.get("profile") != b.get("profile"):
            return f"another profile: {a.get('profile')!r} -> {b.get('profile')!r}"
        return f"profile {b.get('profile')!r} changed its base URL between the runs"
    if f in ("models_requested", "models", "models_served", "endpoints") and forced:
        return f"launch {forced[-1].get('launch_id')} was forced past: {_overridden(forced[-1])}"
    if f in ("models_requested", "models") and layers:
        return f"project settings applied: {', '.join(layers)}"
    if f == "models_served" and va.get("models_requested") == vb.get("models_requested"):
        return "the same models were requested: the provider answered with another"
    if f == "models" and (not va.get("models")) != (not vb.get("models")):
        return "one run pins no model (the client picks its own)"
    if f == "forced":
        return f"{b.get('launch_id') if b.get('forced') else a.get('launch_id')} was forced past: " \
               f"{_overridden(b if b.get('forced') else a)}"
    if f in ("errors", "auth_failures", "rate_limited") and sb is not None:
        parts = [f"{o} x{n}" for o, n in (sb.get("by_outcome") or {}).items() if o != "ok"]
        parts += [f"HTTP {s} x{n}" for s, n in (sb.get("by_status") or {}).items() if s[:1] in ("4", "5")]
        return ", ".join(parts) or None
    if f == "tool_version":
        return "the client was updated or another install was found on PATH"
    if f == "ccs_version":
        return "ccs itself was updated between the runs"
    if f == "profile_digest":
        if a.get("profile") != b.get("profile"):
            return f"another profile: {a.get('profile')!r} -> {b.get('profile')!r}"
        return f"profile {b.get('profile')!r} was edited between the runs"
    if f == "secret_names":
        return "the key (or a [secrets] value) goes into other variables"
    return None


def compare_views(a: RunView, b: RunView) -> Verdict:  # noqa: C901
    """``b`` against ``a``."""
    ma, mb = a.manifest, b.manifest
    va, vb = values(a), values(b)
    rest, proxy = _proxy_and_env(ma, mb)
    salt = _salt_difference(a, b)
    diffs: list[Difference] = []
    for f, kind in FIELDS:
        if f == "fingerprint_salt":
            if salt is not None:
                diffs.append(salt)
            continue
        if f == "key_fingerprint" and salt is not None:
            continue  # not comparable, not rotated
        if f == "proxy":
            if proxy:
                diffs.append(Difference(f, kind, None, proxy, "proxy variables added, removed or changed"))
            continue
        if f == "env":
            differs = any(rest.values()) if rest is not None else va["env"] != vb["env"]
            if differs:
                diffs.append(Difference(f, kind, va["env"], vb["env"], _env_text(rest) if rest else None))
            continue
        if f not in va or f not in vb:
            continue
        if va[f] != vb[f]:
            diffs.append(Difference(f, kind, va[f], vb[f], _cause(f, ma, mb, va, vb, b.summary or a.summary)))
    notes = []
    if (a.summary is None) != (b.summary is None):
        notes.append(f"only {(a if b.summary is None else b).launch_id} was recorded: what was sent is not compared")
    if imported_from(ma) is not None or imported_from(mb) is not None:
        here = machine_of(ma), machine_of(mb)
        if here[0] != here[1]:
            notes.append(f"{b.launch_id} ran on {here[1]}, {a.launch_id} on {here[0]}")
    for m in (ma, mb):
        marks = m.get("live_drift")
        if isinstance(marks, list) and marks:
            shown = ", ".join(f"{x.get('field')} {x.get('value')}" for x in marks[:5] if isinstance(x, dict))
            notes.append(f"{m.get('launch_id')} drifted while it ran: {shown}")
    for m in (ma, mb):
        if m.get("forced") and not any(d.field == "forced" for d in diffs):
            notes.append(f"{m.get('launch_id')} was forced past: {_overridden(m)}")
    return Verdict(b.launch_id, a.launch_id, tuple(diffs), rest if any(d.field == "env" for d in diffs) else None,
                   tuple(dict.fromkeys(notes)))


def _env_text(ch: Mapping[str, list[str]]) -> str:
    parts = [f"+{n}" for n in ch.get("added", [])] + [f"-{n}" for n in ch.get("removed", [])]
    return " ".join(parts + [f"~{n}" for n in ch.get("changed", [])])


def compare(a: Mapping[str, Any], b: Mapping[str, Any], paths: Paths | None = None) -> Verdict:
    return compare_views(view(a, paths), view(b, paths))


def compare_all(manifests: Sequence[Mapping[str, Any]], paths: Paths | None = None) -> list[Verdict]:
    """Each run after the first against the first."""
    views = [view(m, paths) for m in manifests]
    return [compare_views(views[0], v) for v in views[1:]]


# --- a recorded rerun, request by request, against its baseline -------------------------------------

LIVE_FIELDS = ("models_served", "endpoints")


def live_expectations(base: RunView) -> dict[str, frozenset[str]] | None:
    """What the baseline's requests were served by and went to; None when it was not recorded."""
    if base.summary is None:
        return None
    v = values(base)
    return {f: frozenset(str(x) for x in v[f]) for f in LIVE_FIELDS}


def live_differences(expected: Mapping[str, frozenset[str]], record: Mapping[str, Any]) -> list[Difference]:
    """A request record of a run going on whose served model or endpoint the baseline never saw: the
    same fields, compared the same way, as ``compare_views`` judges once the run has ended."""
    out = []
    served = record.get("model_served")
    if isinstance(served, str) and served and served not in expected["models_served"]:
        out.append(Difference("models_served", MODEL, sorted(expected["models_served"]), served,
                              f"request {record.get('id')} was answered by {served!r}"))
    url = record.get("upstream_url")
    endpoint = url.split("?")[0] if isinstance(url, str) else ""
    if endpoint and endpoint not in expected["endpoints"]:
        out.append(Difference("endpoints", ROUTING, sorted(expected["endpoints"]), endpoint,
                              f"request {record.get('id')} went to {endpoint}"))
    return out


# --- a live run against its own launch ------------------------------------------------------------

def against_launch(manifest: Mapping[str, Any], key_fingerprint_now: str | None,
                   salt_now: str | None = None) -> list[Difference]:
    """What changed since a run was launched that it still runs with: the key stored under its key id
    (the run, or the bridge in front of it, holds the key it was launched with). A fingerprint taken
    under another salt than ``salt_now`` (the id of the salt of ``key_fingerprint_now``) tells nothing."""
    then = manifest.get("key_fingerprint")
    if salt_now and _named_salt(manifest) and _named_salt(manifest) != salt_now:
        return []
    if then and key_fingerprint_now and then != key_fingerprint_now:
        return [Difference("key_fingerprint", ROUTING, then, key_fingerprint_now,
                           f"the key stored under id {manifest.get('key_id')!r} changed since the launch (rotated): "
                           "the run still sends the old one")]
    return []


def diff_runs(manifests: Sequence[Mapping[str, Any]], paths: Paths | None = None) -> list[dict[str, Any]]:
    """Each run after the first against the first: which fields drifted, with both values."""
    return [v.to_dict() for v in compare_all(manifests, paths)]

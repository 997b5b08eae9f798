"""Contamination sources at rest: the current shell (routing and loader variables), every layer each
client declares (as a client started by hand here would follow it, and what someone added to a profile's
own), the keyring, the installed clients and the profiles' keys.

Each source becomes findings with the way out. Values are masked unless known non-secret.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccswitch_tui.diagnose import runtimes
from ccswitch_tui.diagnose.findings import counts, counts_text, sort_findings
from ccswitch_tui.diagnose.loaders import shell_findings as loader_shell_findings
from ccswitch_tui.diagnose.processes import tool_internal
from ccswitch_tui.errors import CcsError
from ccswitch_tui.launch import layers
from ccswitch_tui.launch.isolation import profile_findings
from ccswitch_tui.launch.launcher import tool_version
from ccswitch_tui.launch.shims import which_real
from ccswitch_tui.launch.use_status import doctor_findings, shim_report
from ccswitch_tui.model import ERROR, INFO, WARN, Finding, Profile, Severity
from ccswitch_tui.paths import Paths
from ccswitch_tui.policy import MARKERS, secret_name, shown
from ccswitch_tui.tools.capabilities import Doctoring
from ccswitch_tui.tools.quiet import VERSION_PROBE_ENV
from ccswitch_tui.tools.spec import DoctorContext, ToolSpec
from ccswitch_tui.valueclass import field, replace, valueclass

if TYPE_CHECKING:
    from ccswitch_tui.keys.keyring import KeyStore
    from ccswitch_tui.policy.families import Families
    from ccswitch_tui.profiles.store import Store
    from ccswitch_tui.tools.registry import Registry



@valueclass
class DoctorReport:
    cwd: Path
    findings: list[Finding] = field(default_factory=list)
    shell: list[dict[str, Any]] = field(default_factory=list)
    sections: dict[str, Any] = field(default_factory=dict)  # each client's doctor part, by its section name
    section_lines: list[str] = field(default_factory=list)
    keyring: dict[str, Any] = field(default_factory=dict)
    clients: dict[str, dict[str, Any]] = field(default_factory=dict)
    profiles: list[dict[str, Any]] = field(default_factory=list)

    @property
    def has_errors(self) -> bool:
        return any(f.severity == ERROR for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        return {
            "cwd": str(self.cwd),
            "counts": counts(self.findings),
            "findings": [f.to_dict() for f in sort_findings(self.findings)],
            "shell": self.shell,
            **self.sections,
            "keyring": self.keyring,
            "clients": self.clients,
            "profiles": self.profiles,
        }

    def text(self) -> str:
        lines = [f"ccs doctor for {self.cwd}", ""]
        lines.append("shell")
        if not self.shell:
            lines.append("  no routing or loader variables")
        for v in self.shell:
            lines.append(f"  {v['name']}={v['value']}  ({v['family']}: affects {v['affects']})")
        lines += self.section_lines
        kr = self.keyring
        lines.append(f"keyring    {kr.get('backend') or '?'}: {'reachable' if kr.get('reachable') else 'UNREACHABLE'}")
        for name, c in self.clients.items():
            lines.append(f"{name:<10} {c.get('version') or '-'}  {c.get('path') or 'not found on PATH'}")
        missing = [p["name"] for p in self.profiles if p.get("key_present") is False]
        broken = [p["name"] for p in self.profiles if p.get("error")]
        lines.append(f"profiles   {len(self.profiles)}"
                     + (f"; key missing: {', '.join(missing)}" if missing else "")
                     + (f"; broken: {', '.join(broken)}" if broken else ""))
        lines.append("")
        listed = [f for f in sort_findings(self.findings)
                  if not (f.code in ("client", "keyring") and f.severity == INFO)]  # those are shown above
        above = len(self.findings) - len(listed)
        lines.append(f"findings   {counts_text(counts(self.findings))}"
                     + (f" ({above} info about the keyring and clients shown above)" if above else ""))
        for f in listed:
            lines.append(f"  {f.line()}")
        return "\n".join(lines)


# --- the shell ------------------------------------------------------------------------------------

def shell_findings(environ: Mapping[str, str], registry: Registry, fingerprint: Callable[[str], str] | None = None,
                   ) -> tuple[list[dict[str, Any]], list[Finding]]:
    families = registry.families
    rows: list[dict[str, Any]] = []
    out: list[Finding] = []
    inside = environ.get("CCS_LAUNCH_ID")
    if inside:
        out.append(Finding(
            "nested", INFO,
            f"this shell is a ccs child (profile {environ.get('CCS_PROFILE', '?')}, tool "
            f"{environ.get('CCS_TOOL', '?')}, launch {inside}); its routing variables come from that profile, "
            "and launches from here are refused unless --nested", variable="CCS_LAUNCH_ID"))
    for name in sorted(environ):
        fam = families.routing_family(name)
        if fam is None or name in tool_internal(registry) or name in MARKERS:
            continue
        value = environ[name]
        show = shown(name, value)
        if fingerprint and secret_name(name) and value:
            show = f"{show} ({fingerprint(value)})"
        affects = families.effect(fam)
        rows.append({"name": name, "family": fam, "value": show, "affects": affects})
        tail = ("set by the ccs profile of this shell" if inside else
                f"ccs launches drop it; unset {name} (and remove it from your shell's startup files) "
                "so tools started directly do not inherit it")
        sev: Severity = INFO if inside else WARN
        if fam == "proxy":
            note = "".join(f" ({s.label} {s.proxy_note})" for s in registry.clients() if s.proxy_note) \
                if name.lower() != "no_proxy" else ""
            verb = "decides which hosts skip the proxy for" if name.lower() == "no_proxy" else \
                "sends the requests through a proxy for"
            clients = ", ".join(s.label for s in registry.clients())
            out.append(Finding("proxy", INFO if inside or name.lower() == "no_proxy" else WARN,
                               f"{name}={show} in this shell {verb} {clients} and SDK programs started "
                               f"from here{note}; {tail}",
                               path="shell", variable=name, family=fam))
        elif families.cloud_switch(name):
            out.append(Finding("cloud-switch", sev,
                               f"{name}={show} in this shell: {registry.switched_label(name)} started from here sends "
                               f"everything to a cloud provider; {tail}", path="shell", variable=name, family=fam))
        else:
            out.append(Finding("unmanaged-routing", sev,
                               f"{name}={show} in this shell ({fam} family) would affect {affects} started from "
                               f"here; {tail}", path="shell", variable=name, family=fam))
    return rows, out


# --- clients, keyring, profiles ------------------------------------------------------------------

def client_info(name: str, environ: Mapping[str, str], package: str | None = None) -> dict[str, Any]:
    exe = which_real(name, environ.get("PATH", os.defpath))  # the real client, not a ccs shim
    if exe is None:
        return {"path": None, "version": None}

    version = tool_version(exe, package)
    if version:
        version = version.rsplit("@", 1)[-1]
    else:
        env = {"PATH": environ.get("PATH", os.defpath), "HOME": environ.get("HOME", "/"), **VERSION_PROBE_ENV}
        try:
            res = subprocess.run([exe, "--version"], env=env, capture_output=True, text=True, timeout=5,
                                 stdin=subprocess.DEVNULL)
            m = re.search(r"\d+\.\d+\.\d+[\w.-]*", res.stdout)
            version = m.group(0) if m else None
        except (OSError, subprocess.TimeoutExpired):
            version = None
    return {"path": exe, "version": version}


def launch_refusals(spec: ToolSpec, profiles: list[Profile], environ: Mapping[str, str], cwd: Path,
                    paths: Paths, families: Families) -> dict[tuple[str, str], list[str]]:
    """(file, key) → the profiles whose launch of ``spec`` here that key of that file would refuse: each
    profile's launch is judged as `ccs launch` would judge it (no key is read; a stand-in fills its place)."""
    out: dict[tuple[str, str], list[str]] = {}
    for p in profiles:
        if spec.name not in p.tools:
            continue
        try:
            plan = spec.plan(p, "ccs-doctor-stand-in", environ, cwd, paths=paths, families=families)
        except CcsError:
            continue  # `ccs check` and the launch say why it cannot be planned
        judged = layers.judge(spec, plan, environ, paths.tool_dir(p.name, spec.name), isolate=False,
                              families=families)
        for where, keys in judged.refused_at:
            for key in keys:
                out.setdefault((where, key), []).append(p.name)
    return out


def with_launch_refusals(found: list[Finding], refused: dict[tuple[str, str], list[str]]) -> list[Finding]:
    """The layer findings, an error where a profile's launch would be refused for it, and a finding of its
    own for what someone added to a profile's own layers (its state folder)."""
    out = []
    for f in found:
        names = refused.pop((f.path or "", f.variable or ""), None)
        if names:
            f = replace(f, severity=ERROR, message=f"{f.message}; `ccs launch` refuses it for profile(s) "
                                                   f"{', '.join(names)} (--force to launch anyway)")
        out.append(f)
    for (where, key), names in refused.items():
        out.append(Finding("settings-override", ERROR, f"{where} sets {key}, which `ccs launch` refuses for "
                           f"profile(s) {', '.join(names)}; remove it from the file", path=where, variable=key))
    return out


def run_doctor(store: Store, keys: KeyStore, environ: Mapping[str, str], cwd: Path, *,  # noqa: C901
               paths: Paths | None = None) -> DoctorReport:
    """Every contamination source at rest, as a report whose ``findings`` carry the ways out."""
    paths = paths or store.paths
    registry = store.registry
    families = registry.families
    report = DoctorReport(cwd=cwd)
    f = report.findings

    def fp(value: str) -> str:
        return keys.fingerprint(value)

    for spec in registry.clients():
        pypi = spec.package.name if spec.package and spec.package.manager == "pypi" else None
        report.clients[spec.name] = client_info(spec.program or spec.name, environ, pypi)
    report.shell, found = shell_findings(environ, registry, fp)
    f += found
    installed = {name: runtimes.of_file(c["path"], environ) for name, c in report.clients.items() if c["path"]}
    rows, found = loader_shell_findings(environ, installed, tool_internal(registry), registry,
                                        bool(environ.get("CCS_LAUNCH_ID")))
    report.shell += rows
    f += found
    entries = store.entries()

    loaded = [e.profile for e in entries if e.profile is not None]
    for spec in registry.clients():
        c = report.clients[spec.name]
        if c["path"]:
            f.append(Finding("client", INFO, f"{spec.name} {c['version'] or '(version unknown)'} at {c['path']}",
                             path=c["path"]))
        else:
            f.append(Finding("client", INFO, f"{spec.name} is not on PATH; {spec.install_hint} if you use it",
                             variable=spec.name))
        context = DoctorContext(environ, cwd, paths, loaded, c.get("version"))
        parts = [spec.doctor(context) if isinstance(spec, Doctoring) else None,
                 layers.doctor_part(spec, environ, cwd, families)]
        found = []
        for part in (p for p in parts if p is not None):
            report.sections[part.section] = part.info
            report.section_lines += part.lines
            found += part.findings
        f += with_launch_refusals(found, launch_refusals(spec, loaded, environ, cwd, paths, families))

    report.sections["shims"] = shim_report(paths, environ, cwd, store)
    f += doctor_findings(report.sections["shims"])

    refs = [e.profile.key_id for e in entries if e.profile]
    keyring_refs = [r for r in refs if not r.startswith("env:")]
    kr: dict[str, Any] = {"backend": None, "reachable": False, "error": None}
    present: dict[str, bool] = {r: bool(environ.get(r[4:])) for r in refs if r.startswith("env:")}
    try:
        if keyring_refs:
            present.update(keys.present(keyring_refs))
        else:
            keys.get("ccs-doctor-probe")
        kr["reachable"] = True
    except CcsError as exc:
        kr["error"] = str(exc)
    except Exception as exc:  # noqa: BLE001 — a backend that fails to load is reported, not raised
        kr["error"] = f"{type(exc).__name__}: {exc}"
    try:  # named after asking: when the Secret Service answered straight away, the keyring library is not loaded
        kr["backend"] = keys.backend_name()
    except Exception as exc:  # noqa: BLE001 — a backend that fails to load is reported, not raised
        kr["error"] = kr["error"] or f"{type(exc).__name__}: {exc}"
    report.keyring = kr
    if kr["reachable"]:
        f.append(Finding("keyring", INFO, f"keyring backend {kr['backend']} answers", variable="keyring"))
    else:
        users = sorted({e.name for e in entries if e.profile and not e.profile.key_id.startswith("env:")})
        f.append(Finding(
            "keyring", ERROR if users else WARN,
            f"keyring backend {kr['backend'] or '?'} does not answer ({kr['error']})"
            + (f"; profiles {', '.join(users)} cannot launch" if users else ""), variable="keyring"))

    for e in entries:
        p = e.profile
        row: dict[str, Any] = {"name": e.name, "path": str(e.path), "key_id": p.key_id if p else None,
                               "key_present": None, "error": e.error}
        report.profiles.append(row)
        if p is None:
            f.append(Finding("profile-invalid", ERROR, f"{e.error}; fix it with `ccs edit {e.name}`", path=str(e.path)))
            continue
        row["key_present"] = present.get(p.key_id)
        f += profile_findings(p, str(e.path), environ, registry)  # routing/loader variables the profile lets in
        if row["key_present"] is False:
            how = (f"export {p.key_id[4:]}=… before running ccs" if p.key_id.startswith("env:")
                   else f"store it with `ccs key set {p.key_id}`")
            f.append(Finding("key-missing", WARN, f"profile {e.name!r} has no key ({p.key_id}); {how}",
                             path=str(e.path), variable=p.key_id))
    report.findings = sort_findings(f)
    return report

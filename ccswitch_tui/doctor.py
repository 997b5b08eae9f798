"""Contamination sources at rest: the current shell, Claude Code's settings layers for a directory,
Codex's config files, the keyring, the installed clients and the profiles' keys.

Each source becomes findings with the way out. Values are masked unless known non-secret.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .env import MARKERS, looks_secret, routing_family
from .errors import CcsError
from .findings import ERROR, INFO, WARN, Finding, counts, counts_text, shown, sort_findings
from .inspect import family_effect
from .isolation import profile_findings
from .paths import Paths
from .processes import TOOL_INTERNAL
from .profile import BUILTIN_CODEX_PROVIDERS
from .safe_read import read_text

LAYER_ORDER = ("managed", "local", "project", "user")


@dataclass
class DoctorReport:
    cwd: Path
    findings: list[Finding] = field(default_factory=list)
    shell: list[dict[str, Any]] = field(default_factory=list)
    claude_layers: list[dict[str, Any]] = field(default_factory=list)
    codex: dict[str, Any] = field(default_factory=dict)
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
            "claude_layers": self.claude_layers,
            "codex": self.codex,
            "keyring": self.keyring,
            "clients": self.clients,
            "profiles": self.profiles,
        }

    def text(self) -> str:
        lines = [f"ccs doctor for {self.cwd}", ""]
        lines.append("shell")
        if not self.shell:
            lines.append("  no routing variables")
        for v in self.shell:
            lines.append(f"  {v['name']}={v['value']}  ({v['family']}: affects {v['affects']})")
        lines.append("claude code settings layers (highest first)")
        for layer in self.claude_layers:
            state = "absent" if not layer["exists"] else (
                f"unreadable: {layer['error']}" if layer["error"] else (
                    ", ".join(f"{k}={v}" for k, v in layer["routing"].items()) or "no routing keys"))
            lines.append(f"  {layer['kind']:<8} {layer['path']}: {state}")
        lines.append(f"codex home {self.codex.get('home')}")
        for f in self.codex.get("files", []):
            lines.append(f"  {f['path']}: {'present' if f['exists'] else 'absent'}")
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
            lines.append(f"  {f.severity:<5}  {f.code:<20} {f.where}: {f.message}")
        return "\n".join(lines)


# --- the shell ------------------------------------------------------------------------------------

def shell_findings(environ: Mapping[str, str], fingerprint: Any = None) -> tuple[list[dict[str, Any]], list[Finding]]:
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
        fam = routing_family(name)
        if fam is None or name in TOOL_INTERNAL or name in MARKERS:
            continue
        value = environ[name]
        show = shown(name, value)
        if fingerprint and looks_secret(name) and value:
            show = f"{show} ({fingerprint(value)})"
        affects = family_effect(fam)
        rows.append({"name": name, "family": fam, "value": show, "affects": affects})
        tail = ("set by the ccs profile of this shell" if inside else
                f"ccs launches drop it; unset {name} (and remove it from your shell's startup files) "
                "so tools started directly do not inherit it")
        sev = INFO if inside else WARN
        if fam == "proxy":
            note = " (Claude Code sends even loopback requests through it unless NO_PROXY covers them)" \
                if name.lower() != "no_proxy" else ""
            verb = "decides which hosts skip the proxy for" if name.lower() == "no_proxy" else \
                "sends the requests through a proxy for"
            out.append(Finding("proxy", INFO if inside or name.lower() == "no_proxy" else WARN,
                               f"{name}={show} in this shell {verb} Claude Code, Codex and SDK programs started "
                               f"from here{note}; {tail}",
                               path="shell", variable=name, family=fam))
        elif name.startswith("CLAUDE_CODE_USE_"):
            out.append(Finding("cloud-switch", sev,
                               f"{name}={show} in this shell: Claude Code started from here sends everything to a "
                               f"cloud provider; {tail}", path="shell", variable=name, family=fam))
        else:
            out.append(Finding("unmanaged-routing", sev,
                               f"{name}={show} in this shell ({fam} family) would affect {affects} started from "
                               f"here; {tail}", path="shell", variable=name, family=fam))
    return rows, out


# --- Claude Code settings layers ----------------------------------------------------------------

def _setting_shown(key: str, value: Any) -> str:
    name = key[4:] if key.startswith("env.") else key
    text = value if isinstance(value, str) else json.dumps(value)
    return text if name == "model" else shown(name, text)


def claude_layer_paths(cwd: Path, environ: Mapping[str, str]) -> list[tuple[str, Path]]:
    from .tools.claude import managed_settings_path

    home = Path(environ.get("HOME") or os.path.expanduser("~"))
    user_dir = Path(environ["CLAUDE_CONFIG_DIR"]) if environ.get("CLAUDE_CONFIG_DIR") else home / ".claude"
    return [
        ("managed", managed_settings_path(environ)),
        ("local", cwd / ".claude" / "settings.local.json"),
        ("project", cwd / ".claude" / "settings.json"),
        ("user", user_dir / "settings.json"),
    ]


def claude_findings(cwd: Path, environ: Mapping[str, str]) -> tuple[list[dict[str, Any]], list[Finding]]:
    from .tools.claude import read_layer

    rows: list[dict[str, Any]] = []
    out: list[Finding] = []
    for kind, path in claude_layer_paths(cwd, environ):
        layer = read_layer(kind, path)
        row: dict[str, Any] = {"kind": kind, "path": str(path), "exists": layer is not None, "error": None,
                               "routing": {}}
        rows.append(row)
        if layer is None:
            continue
        if layer.error:
            row["error"] = layer.error
            out.append(Finding("settings-invalid", WARN,
                               f"{kind} settings layer {layer.error}; Claude Code may refuse or ignore it; "
                               "fix the file",
                               path=str(path)))
            continue
        row["routing"] = {k: _setting_shown(k, v) for k, v in layer.routing.items()}
        for key, value in layer.routing.items():
            show = f"{key}={_setting_shown(key, value)}"
            if key == "model" and kind != "managed":
                # Measured: ANTHROPIC_MODEL in the environment beats a settings `model` key.
                out.append(Finding(
                    "settings-override", WARN,
                    f"{kind} settings set {show}, which picks the model of Claude Code started "
                    f"{'in ' + str(cwd) if kind != 'user' else 'directly'} unless ANTHROPIC_MODEL is set (the "
                    "environment wins); ccs launches of a profile with [claude].model are not affected; remove it "
                    "from the file to pick the model in one place", path=str(path), variable=key))
            elif kind == "managed":
                out.append(Finding(
                    "settings-override", ERROR,
                    f"managed settings set {show}, which beats every other layer and the environment, "
                    "ccs launches included; ask whoever manages this machine to remove it (ccs only launches past "
                    "it with --force)", path=str(path), variable=key))
            elif kind in ("project", "local"):
                out.append(Finding(
                    "settings-override", ERROR,
                    f"{kind} settings set {show}, which beats the environment of any Claude Code started in "
                    f"{cwd}; remove it from the file, or launch with `ccs launch PROFILE claude --isolate`",
                    path=str(path), variable=key))
            else:
                out.append(Finding(
                    "settings-override", WARN,
                    f"user settings set {show}, which beats the environment of Claude Code started directly "
                    "(ccs launches use their own CLAUDE_CONFIG_DIR); remove it from the file",
                    path=str(path), variable=key))
    return rows, out


def ccs_layer_findings(store: Any, paths: Paths) -> list[Finding]:
    """Routing keys someone added to a profile's own Claude Code user layer (ccs's --settings beats
    only the keys the profile sets; apiKeyHelper and the rest would still apply)."""
    from .tools.claude import read_layer

    out: list[Finding] = []
    for e in store.entries():
        p = e.profile
        if p is None or p.claude is None:
            continue
        path = paths.tool_dir(p.name, "claude") / "settings.json"
        layer = read_layer("user", path)
        if layer is None or layer.error:
            continue
        ours = {f"env.{k}" for k in {**p.env, **p.claude.env, "ANTHROPIC_BASE_URL": "",
                                      **p.claude.model_vars()}} | ({"model"} if p.claude.model else set())
        for key, value in layer.routing.items():
            if key in ours:
                continue
            out.append(Finding(
                "settings-override", ERROR,
                f"profile {p.name!r}'s own Claude Code user layer sets {key}={_setting_shown(key, value)}, "
                "which ccs's --settings does not override; remove it from the file", path=str(path), variable=key))
    return out


# --- Codex config -------------------------------------------------------------------------------

def _line_of(text: str, pattern: str) -> int | None:
    for i, line in enumerate(text.splitlines(), 1):
        if re.search(pattern, line):
            return i
    return None


def codex_file_findings(path: Path, environ: Mapping[str, str], version: str | None,
                        main: bool = True) -> list[Finding]:
    """Check one Codex config file against what Codex 0.171 accepts."""
    from .errors import ProfileError
    from .store import parse_toml

    codex = f"Codex {version}" if version else "Codex"
    try:
        text = read_text(path)
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        return [Finding("codex-config-invalid", ERROR, f"cannot read: {exc}", path=str(path))]
    try:
        data = parse_toml(text, str(path)).unwrap()
    except ProfileError as exc:  # "path:line:col: message", or "path: message" for a table defined twice
        where = str(exc).split(": ")[0]
        return [Finding("codex-config-invalid", ERROR,
                        f"not valid TOML ({exc}); {codex} will not start; fix the file", path=where)]

    out: list[Finding] = []

    def at(pattern: str) -> str:
        line = _line_of(text, pattern)
        return f"{path}:{line}" if line else str(path)

    if "profile" in data:
        out.append(Finding(
            "codex-config-invalid", ERROR,
            f"top-level profile = {data['profile']!r} is a hard error in {codex}; move that profile's settings "
            f"to {path.parent}/{data['profile']}.config.toml, remove the line and select it with "
            "`codex --profile NAME`",
            path=at(r"^\s*profile\s*="), variable="profile"))
    profiles = data.get("profiles")
    if isinstance(profiles, dict) and profiles:
        for name in profiles:
            out.append(Finding(
                "codex-config-invalid", WARN,
                f"[profiles.{name}] is legacy: {codex} ignores it, and `codex --profile {name}` fails while it is "
                f"there; move it to {path.parent}/{name}.config.toml",
                path=at(rf"^\s*\[profiles\.{re.escape(str(name))}\]"), variable=f"profiles.{name}"))
    providers = data.get("model_providers")
    selected = data.get("model_provider")
    if not isinstance(providers, dict):
        providers = {}
    for pid, entry in providers.items():
        where = at(rf"^\s*\[model_providers\.\"?{re.escape(str(pid))}\"?\]")
        if not isinstance(entry, dict):
            continue
        if entry.get("wire_api") == "chat":
            out.append(Finding(
                "codex-config-invalid", ERROR,
                f'[model_providers.{pid}] wire_api = "chat" is no longer supported by {codex} (a hard error); '
                "for a Chat Completions endpoint, import it (`ccs import codex`) or put wire_api = \"chat\" in a "
                "ccs profile's [codex] table, and launch with `ccs launch PROFILE codex`: ccs translates for Codex; "
                'or use wire_api = "responses" if the endpoint serves the Responses API',
                path=at(r"^\s*wire_api\s*=\s*[\"']chat"), variable=f"model_providers.{pid}.wire_api"))
        if pid in BUILTIN_CODEX_PROVIDERS:
            url = entry.get("base_url")
            out.append(Finding(
                "codex-config-invalid", ERROR,
                f"[model_providers.{pid}] reuses the built-in provider id {pid!r}"
                + (f" for {url}" if url else "")
                + f"; {codex} refuses to start (built-in provider ids are reserved); rename it to a custom id "
                "(and model_provider with it)", path=where, variable=f"model_providers.{pid}"))
        env_key = entry.get("env_key")
        if isinstance(env_key, str) and env_key and not environ.get(env_key):
            chosen = main and selected == pid
            out.append(Finding(
                "codex-config-invalid", ERROR if chosen else WARN,
                f"[model_providers.{pid}] env_key = {env_key!r}, but {env_key} is not set in this shell; "
                f"{codex} {'fails' if chosen else 'fails when this provider is used'} with "
                f"\"Missing environment variable: `{env_key}`\"; export it, or launch with `ccs launch PROFILE codex`",
                path=where, variable=env_key))
    if main and isinstance(selected, str) and selected not in providers and selected not in BUILTIN_CODEX_PROVIDERS:
        out.append(Finding(
            "codex-config-invalid", ERROR,
            f"model_provider = {selected!r} names no [model_providers.{selected}] table and no built-in provider; "
            "add the table or fix the name", path=at(r"^\s*model_provider\s*="), variable="model_provider"))
    return out


def codex_findings(environ: Mapping[str, str], version: str | None) -> tuple[dict[str, Any], list[Finding]]:
    home = Path(environ["CODEX_HOME"]) if environ.get("CODEX_HOME") else \
        Path(environ.get("HOME") or os.path.expanduser("~")) / ".codex"
    main = home / "config.toml"
    files = [main] + sorted(p for p in home.glob("*.config.toml")) if home.is_dir() else [main]
    out: list[Finding] = []
    info = {"home": str(home), "files": []}
    for f in files:
        info["files"].append({"path": str(f), "exists": f.is_file()})
        out += codex_file_findings(f, environ, version, main=(f == main))
    return info, out


# --- clients, keyring, profiles ------------------------------------------------------------------

def client_info(name: str, environ: Mapping[str, str]) -> dict[str, Any]:
    exe = shutil.which(name, path=environ.get("PATH", os.defpath))
    if exe is None:
        return {"path": None, "version": None}
    from .launch import tool_version

    version = tool_version(exe)
    if version:
        version = version.rsplit("@", 1)[-1]
    else:
        env = {"PATH": environ.get("PATH", os.defpath), "HOME": environ.get("HOME", "/"),
               "AWS_EC2_METADATA_DISABLED": "true", "DISABLE_AUTOUPDATER": "1",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
        try:
            res = subprocess.run([exe, "--version"], env=env, capture_output=True, text=True, timeout=5,
                                 stdin=subprocess.DEVNULL)
            m = re.search(r"\d+\.\d+\.\d+[\w.-]*", res.stdout)
            version = m.group(0) if m else None
        except (OSError, subprocess.TimeoutExpired):
            version = None
    return {"path": exe, "version": version}


def run_doctor(store: Any, keys: Any, environ: Mapping[str, str], cwd: Path, *,
               paths: Paths | None = None) -> DoctorReport:
    """Every contamination source at rest, as a report whose ``findings`` carry the ways out."""
    paths = paths or store.paths
    report = DoctorReport(cwd=cwd)
    f = report.findings

    def fp(value: str) -> str:
        return keys.fingerprint(value)

    report.shell, found = shell_findings(environ, fp)
    f += found
    report.claude_layers, found = claude_findings(cwd, environ)
    f += found
    f += ccs_layer_findings(store, paths)

    for name in ("claude", "codex"):
        c = client_info(name, environ)
        report.clients[name] = c
        if c["path"]:
            f.append(Finding("client", INFO, f"{name} {c['version'] or '(version unknown)'} at {c['path']}",
                             path=c["path"]))
        else:
            f.append(Finding("client", INFO, f"{name} is not on PATH; install it with npm if you use it",
                             variable=name))
    report.codex, found = codex_findings(environ, report.clients["codex"].get("version"))
    f += found

    entries = store.entries()
    refs = [e.profile.key_id for e in entries if e.profile]
    keyring_refs = [r for r in refs if not r.startswith("env:")]
    kr: dict[str, Any] = {"backend": None, "reachable": False, "error": None}
    present: dict[str, bool] = {r: bool(environ.get(r[4:])) for r in refs if r.startswith("env:")}
    try:
        kr["backend"] = keys.backend_name()
        if keyring_refs:
            present.update(keys.present(keyring_refs))
        else:
            keys.get("ccs-doctor-probe")
        kr["reachable"] = True
    except CcsError as exc:
        kr["error"] = str(exc)
    except Exception as exc:  # noqa: BLE001 — a backend that fails to load is reported, not raised
        kr["error"] = f"{type(exc).__name__}: {exc}"
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
        f += profile_findings(p, str(e.path), environ)  # routing/loader variables the profile lets in
        if row["key_present"] is False:
            how = (f"export {p.key_id[4:]}=… before running ccs" if p.key_id.startswith("env:")
                   else f"store it with `ccs key set {p.key_id}`")
            f.append(Finding("key-missing", WARN, f"profile {e.name!r} has no key ({p.key_id}); {how}",
                             path=str(e.path), variable=p.key_id))
    report.findings = sort_findings(f)
    return report

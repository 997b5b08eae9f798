"""The flows every registered client goes through, written once and run for any spec: a launch from a
contaminated shell, ``ps``/``inspect`` of the running client, ``doctor``, a recorded launch and its
records, ``export``, and the TUI's launch key and editor section. The client is a stub named after the
spec's ``program`` (tests/client_stub.py), so the flows need no real client and nothing here names
one: tests/test_conformance_flows.py runs them for the registry, tests/test_adding_a_client.py for a
client registered from a temporary module.

Each flow takes a ``World`` (the test's ``ccs`` runner, shell, stub servers, key, folders) and a spec,
and asserts what the contract says for any client."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomllib
from stub_server import StubServer
from waiting import until

from ccswitch_tui import policy, tools
from ccswitch_tui.launch.plan import plan_for
from ccswitch_tui.model import LaunchPlan
from ccswitch_tui.paths import Paths
from ccswitch_tui.profiles.schema import profile_from_data
from ccswitch_tui.tools.capabilities import TuiFace
from ccswitch_tui.tools.fields import editor_form
from ccswitch_tui.tools.spec import ToolSpec

TESTS = Path(__file__).resolve().parent
KEY = "sk-conformance-0123456789abcdefXYZ"
STALE_KEY = "sk-stale-wrong-0123456789abcdef"
OTHER_KEY = "sk-other-key-0123456789abcdefXYZ"  # a key the shell holds for a client started by hand
PROFILE = "p"


@dataclass
class World:
    ccs: Callable[..., subprocess.CompletedProcess]
    env: dict[str, str]  # the test's shell: its PATH has ``stub_dir`` first
    stubs: Callable[[str], StubServer]
    key_id: str  # a key id whose value in the real keyring is KEY (``store_key``)
    stub_dir: Path  # where the stub client is installed, under the spec's program name
    work: Path  # the folder launches start in

    def store_key(self) -> None:
        r = self.ccs("key", "set", self.key_id, input=KEY, env=self.env)
        assert r.returncode == 0, r.stderr


# --- the profile, the plan, the stub ---------------------------------------------------------------

def table_for(spec: ToolSpec) -> dict[str, Any]:
    """The smallest table the spec takes: its required fields, each a value of its kind."""
    return {f.name: f.choices[0] if f.choices else f"m-{spec.name}" for f in spec.fields if f.required}


def toml_table(name: str, table: dict[str, Any]) -> str:
    return f"[{name}]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in table.items())


def write_profile(spec: ToolSpec, url: str, key_id: str, table: dict[str, Any] | None = None) -> Path:
    path = Path(os.environ["CCS_HOME"]) / "profiles" / f"{PROFILE}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'schema = 1\n[provider]\nname = "Stub"\nbase_url = "{url}"\nkey = "{key_id}"\n\n'
                    + toml_table(spec.name, table_for(spec) if table is None else table))
    return path


def plan_of(spec: ToolSpec, url: str, cwd: Path) -> LaunchPlan:
    """The plan a launch of the profile makes (pure: no side effects), for what the flows expect."""
    profile = profile_from_data(PROFILE, {"schema": 1, "provider": {"name": "P", "base_url": url, "key": "env:PKEY"},
                                          spec.name: table_for(spec)})
    return plan_for(profile, spec.name, KEY, {"PATH": "/usr/bin"}, cwd,
                    paths=Paths(profiles=Path("/nonexistent/p"), state=Path("/nonexistent/s")))


def request_path(spec: ToolSpec, url: str) -> str:
    """The path the client sends a turn to, below the base URL (its spec's ``endpoint``)."""
    profile = profile_from_data(PROFILE, {"schema": 1, "provider": {"name": "P", "base_url": url, "key": "env:PKEY"},
                                          spec.name: table_for(spec)})
    endpoint = spec.endpoint(profile.sides[spec.name]) or f"{url}/chat/completions"
    return endpoint.split()[0][len(url.rstrip("/")):]


def install_stub(spec: ToolSpec, folder: Path, url: str) -> Path:
    """The stub client as ``folder/PROGRAM``, told the spec's pin, request path, model and key variables."""
    assert spec.program, f"{spec.name} has no program to stand in for"
    folder.mkdir(parents=True, exist_ok=True)
    plan = plan_of(spec, url, folder)
    (folder / "stub.json").write_text(json.dumps({
        "program": spec.program, "version": spec.package.version if spec.package else "0.0.0",
        "path": request_path(spec, url), "model": next(iter(plan.models.values()), None),
        "secret_names": sorted(plan.secret_names)}))
    exe = folder / spec.program
    exe.write_text(f"#!{sys.executable}\n" + (TESTS / "client_stub.py").read_text())
    exe.chmod(0o755)
    return exe


def calls(folder: Path) -> list[dict[str, Any]]:
    """What the stub recorded, one entry per start (``--version`` aside)."""
    return [json.loads(p.read_text()) for p in sorted((folder / "calls").glob("[0-9]*.json"))]


def setup(w: World, spec: ToolSpec, good: StubServer) -> LaunchPlan:
    write_profile(spec, good.url, w.key_id)
    w.store_key()
    install_stub(spec, w.stub_dir, good.url)
    return plan_of(spec, good.url, w.work)


def family_names(family: str) -> list[str]:
    """Variables of a family a shell may hold: its literal names, and each prefix with common endings."""
    specs = tools.load().specs()
    rx = next(r for f, r in [*policy.shared_families(), *((f, r) for s in specs for f, r in s.families.items())]
              if f == family)
    out = []
    for alt in rx.split("|"):
        alt = alt.replace("\\", "")
        if alt.endswith(".*"):
            out += [alt[:-2] + tail for tail in ("BASE_URL", "API_KEY", "MODEL")]
        elif "(" not in alt and "*" not in alt:
            out.append(alt)
    return out


def spec_family_names(spec: ToolSpec) -> list[str]:
    """The variables of the spec's own families that its plan sets (a shell may hold stale ones)."""
    plan = plan_of(spec, "https://gw.example/api", Path("/"))
    return [k for k in plan.env if any(re.fullmatch(rx, k) for rx in spec.families.values())]


def contaminated(env: dict[str, str], wrong: str, specs: list[ToolSpec]) -> dict[str, str]:
    """Every family the policy knows (the shared OPENAI_*, proxies and cloud ones too), and every given
    client's routing variables, as a shell would hold them, pointing at ``wrong``."""
    out = dict(env)
    families = tools.load().families
    for family in families.names():
        for name in family_names(family):
            if families.cloud_switch(name):
                out[name] = "1"
            elif not name.endswith(("_DIR", "_HOME")):
                out[name] = wrong if ("URL" in name or "PROXY" in name.upper() or "BASE" in name) else STALE_KEY
    for spec in specs:
        for name in spec_family_names(spec):
            out[name] = wrong if "URL" in name else STALE_KEY
    out["AWS_EC2_METADATA_DISABLED"] = "true"  # a cloud switch in the shell: no metadata lookups, ever
    for name in ("NO_PROXY", "no_proxy"):
        out.pop(name, None)
    return out


def _texts(call: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, text) of everything the client got: each variable, its arguments, each file it can see
    (ccs's own profiles, run manifests and parsed profiles aside: they name the provider's URL, and no
    client reads them)."""
    home = Path(os.environ["CCS_HOME"])
    own = (f"{home / 'profiles'}/", f"{home / 'state' / 'runs'}/", f"{home / 'state' / 'cache' / 'toml'}/")
    return [*((f"${k}", v) for k, v in call["env"].items()), ("argv", "\0".join(call["argv"])),
            *((path, text) for path, text in call["files"].items() if not path.startswith(own))]


def assert_only_the_profile(call: dict[str, Any], plan: LaunchPlan, wrong: StubServer) -> None:
    for where, text in _texts(call):
        assert wrong.url not in text and STALE_KEY not in text, f"the shell's stale routing reached {where}"
    for name, value in call["env"].items():
        if KEY in value:
            assert name in plan.secret_names and value == KEY, f"the key reached ${name}"
    for where, text in _texts(call):
        if not where.startswith("$"):
            assert KEY not in text, f"the key reached {where}"
    assert wrong.requests == []


# --- the flows ------------------------------------------------------------------------------------

def launch_from_a_contaminated_shell(w: World, spec: ToolSpec) -> None:
    """`ccs launch` from a shell holding every family's stale values: the client gets the profile's
    endpoint, model and key (the key only in its key's variable), and reaches only the profile."""
    good, wrong = w.stubs("good"), w.stubs("wrong")
    plan = setup(w, spec, good)
    r = w.ccs("launch", PROFILE, spec.name, "--", "say", "hi", env=contaminated(w.env, wrong.url, [spec]), cwd=w.work)
    assert r.returncode == 0, r.stderr[-2000:]
    (call,) = calls(w.stub_dir)
    assert Path(call["argv"][0]).name == spec.program and call["cwd"] == str(w.work)
    assert_only_the_profile(call, plan, wrong)
    assert call["env"]["CCS_PROFILE"] == PROFILE and call["env"]["CCS_TOOL"] == spec.name
    assert call["request"]["url"].startswith(good.url), call["request"]
    (post,) = good.posts()
    assert KEY in post.headers.get("authorization", "") + post.headers.get("x-api-key", "")


def stray_variable(spec: ToolSpec) -> tuple[str, str]:
    """(family, variable): a key variable of the client's own first family, as a shell would hold it."""
    family = next(iter(spec.families))
    names = family_names(family)
    return family, next((n for n in names if n.endswith("_API_KEY")), names[0])


def ps_and_inspect(w: World, spec: ToolSpec, allowed: frozenset[str] = frozenset()) -> None:
    """The client running under a launch: `ps` names it with its profile, `inspect` finds it matches
    the profile (no error finding; ``allowed``: codes the test's own shell causes, e.g. a PYTHONPATH).
    The same client started by hand with a key of its family in its environment (and its launcher's own
    variables): `inspect` names that variable, its family and who reads it, never its value, and
    nothing about the launcher's variables."""
    good = w.stubs("good")
    setup(w, spec, good)
    strays: list[subprocess.Popen[bytes]] = []
    launch = subprocess.Popen([sys.executable, "-m", "ccswitch_tui", "launch", PROFILE, spec.name, "--", "stub-wait"],
                              env={**w.env, "CCS_HOME": os.environ["CCS_HOME"]}, cwd=w.work,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        call = until(lambda: next(iter(calls(w.stub_dir)), None) or launch.poll() is not None, 60,
                     "the client to start")
        assert isinstance(call, dict), launch.communicate()[1][-2000:]
        pid = call["pid"]
        r = w.ccs("ps", "--json", env=w.env)
        assert r.returncode == 0, r.stderr
        (row,) = [p for p in json.loads(r.stdout)["processes"] if p["pid"] == pid]
        assert (row["tool"], row["profile"]) == (spec.name, PROFILE), row
        r = w.ccs("inspect", str(pid), "--json", env=w.env)
        findings = json.loads(r.stdout)["findings"]
        errors = [f for f in findings if f["severity"] == "error" and f["code"] not in allowed]
        assert errors == [], errors
        assert r.returncode == (3 if any(f["severity"] == "error" for f in findings) else 0), r.stderr
        assert KEY not in r.stdout + r.stderr
        family, variable = stray_variable(spec)
        stray = subprocess.Popen([str(w.stub_dir / (spec.program or "")), "stub-wait"], cwd=w.work,
                                 env={**w.env, variable: OTHER_KEY, **dict.fromkeys(spec.internal_vars, "1")},
                                 stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        strays.append(stray)
        rows = until(lambda: [p for p in json.loads(w.ccs("ps", "--json", "--all", env=w.env).stdout)["processes"]
                              if p["pid"] == stray.pid], 30, "ps to list the client started by hand")
        assert rows[0]["tool"] == spec.name and not rows[0].get("launch_id"), rows
        r = w.ccs("inspect", str(stray.pid), "--json", env=w.env)
        stray_findings = json.loads(r.stdout)["findings"]
        (finding,) = [f for f in stray_findings if f["code"] == "unmanaged-routing"]
        # what its own launcher puts in its processes is no finding
        assert not [f for f in stray_findings if f.get("variable") in spec.internal_vars], stray_findings
        assert (finding["family"], finding["variable"]) == (family, variable), finding
        if family in spec.family_effects:
            assert f"read by {spec.family_effects[family]}" in finding["message"], finding
        assert OTHER_KEY not in r.stdout + r.stderr
    finally:
        (w.stub_dir / "release").touch()
        out, err = launch.communicate(timeout=60)
        for stray in strays:
            stray.wait(60)
    assert launch.returncode == 0, err[-2000:]


def doctor(w: World, spec: ToolSpec) -> None:
    """`ccs doctor` finds the client on PATH, says its version (the stub's: the pin), and reports."""
    exe = install_stub(spec, w.stub_dir, "http://127.0.0.1:9")
    r = w.ccs("doctor", "--json", env=w.env, cwd=w.work)
    data = json.loads(r.stdout)
    expected = spec.package.version if spec.package else "0.0.0"
    assert data["clients"][spec.name] == {"path": str(exe), "version": expected}, data["clients"][spec.name]
    # 3 only for the error findings it lists (a test-only client's PYTHONPATH in the shell is one)
    assert r.returncode == (3 if any(f["severity"] == "error" for f in data["findings"]) else 0), r.stderr
    text = w.ccs("doctor", env=w.env, cwd=w.work).stdout
    assert f"{expected}  {exe}" in text, text[-2000:]


def recorded_launch(w: World, spec: ToolSpec) -> None:
    """`ccs launch --record` from a contaminated shell: the client gets the bridge's route and a launch
    token (never the key, the profile's URL or the shell's); the bridge carries its turn to the profile
    with the key, and the run's records hold it, without the key."""
    good, wrong = w.stubs("good"), w.stubs("wrong")
    plan = setup(w, spec, good)
    assert plan.base_urls, f"{spec.name}'s plan has no base URL: nothing to record"
    r = w.ccs("launch", PROFILE, spec.name, "--record", "--", "say", "hi", env=contaminated(w.env, wrong.url, [spec]),
              cwd=w.work)
    assert r.returncode == 0, r.stderr[-2000:]
    (call,) = calls(w.stub_dir)
    assert_only_the_profile(call, plan, wrong)
    for where, text in _texts(call):
        assert KEY not in text and good.url not in text, f"the key or the real base URL reached {where}"
    tokens = [call["env"][n] for n in plan.secret_names if n in call["env"]]
    assert tokens and all(t.startswith("ccs-bridge-") for t in tokens), tokens
    assert not call["request"]["url"].startswith(good.url) and call["request"]["status"] == 200, call["request"]
    (post,) = good.posts()
    assert KEY in post.headers.get("authorization", "") + post.headers.get("x-api-key", "")
    assert tokens[0] not in json.dumps(post.headers)  # the bridge swapped the token for the key
    runs = json.loads(w.ccs("runs", "--json", env=w.env).stdout)["runs"]
    (manifest,) = [m for m in runs if m["tool"] == spec.name]
    records = Path(os.environ["CCS_HOME"]) / "state" / "runs" / f"{manifest['launch_id']}.requests.jsonl"
    (rec,) = [json.loads(line) for line in records.read_text().splitlines()]
    assert rec["status"] == 200 and rec["upstream_url"].startswith(good.url), rec
    assert rec["model_requested"] == next(iter(plan.models.values()), None), rec
    assert KEY not in records.read_text() and tokens[0] not in records.read_text()


def export(w: World, spec: ToolSpec) -> None:
    """`ccs export`: the table as the profile holds it, each secret field emptied (and said so)."""
    secret = "hunter2-but-longer-than-16"
    table = {**table_for(spec), **{f: secret for f in spec.secret_fields}}
    write_profile(spec, "https://gw.example/api", "gw", table)
    r = w.ccs("export", PROFILE, env=w.env)
    assert r.returncode == 0, r.stderr
    assert secret not in r.stdout + r.stderr
    exported = tomllib.loads(r.stdout)[spec.name]
    assert {k: v for k, v in exported.items() if k not in spec.secret_fields} == table_for(spec), exported
    for f in spec.secret_fields:
        assert exported[f] == "" and f"[{spec.name}].{f} is secret; exported empty" in r.stderr, r.stderr


def tui(w: World, spec: ToolSpec) -> None:
    """The TUI offers the client for a profile that serves it: its launch key (or the launch menu)
    launches it with the profile, the editor shows its switch on and its section, and saves it back."""
    good = w.stubs("good")
    setup(w, spec, good)
    before = (Path(os.environ["CCS_HOME"]) / "profiles" / f"{PROFILE}.toml").read_text()
    r = subprocess.run([sys.executable, str(TESTS / "tui_client_probe.py"), os.environ["CCS_HOME"], PROFILE, spec.name,
                        str(w.work)], env={**w.env, "CCS_HOME": os.environ["CCS_HOME"], "TERM": "xterm-256color"},
                       capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.splitlines()[-1])
    key = spec.tui_key if isinstance(spec, TuiFace) else None  # without a face: no key, the menu launches it
    assert out["launch_key"] == key
    assert [key or "", spec.label, spec.name] in out["launch_menu"], out["launch_menu"]
    assert out["launch_enabled"]
    assert out["launched"]["status"] == 0 and out["launched"]["error"] is None, out
    (call,) = calls(w.stub_dir)
    assert call["env"]["CCS_PROFILE"] == PROFILE and call["env"]["CCS_TOOL"] == spec.name
    assert call["request"]["url"].startswith(good.url) and len(good.posts()) == 1
    assert spec.name in out["switches"] and out["switch_on"] and out["section_shown"]
    assert out["fields"] == sorted(f"f-{spec.name}-{f.key}" for f in editor_form(spec.name, spec.fields))
    assert out["editor_error"] is None
    assert tomllib.loads(out["saved"])[spec.name] == tomllib.loads(before)[spec.name]


FLOWS: dict[str, Callable[..., None]] = {
    "launch": launch_from_a_contaminated_shell, "ps-inspect": ps_and_inspect, "doctor": doctor,
    "record": recorded_launch, "export": export, "tui": tui,
}

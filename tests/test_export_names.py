"""`[run] export` tables: a program's own names for the key and the base URL (TAOTOKEN_API_KEY,
TAOTOKEN_BASE_URL) get the guarantees of OPENAI_*: in the plan as key and base URL, masked, in the
manifest's base URLs, the profile's own for `inspect` and `ccs env --diff`, compared by the verdict,
and the bridge's token and URL under --record. Names that would be anything else are refused."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest
from provider_stub import ProviderStub

from ccswitch_tui import policy, tools
from ccswitch_tui.errors import ProfileError
from ccswitch_tui.launch.plan import plan_for
from ccswitch_tui.paths import resolve_paths
from ccswitch_tui.profiles.presets import load_preset
from ccswitch_tui.profiles.schema import profile_from_data
from ccswitch_tui.runs.verdict import compare

KEY = "sk-names-real-key-0123456789abcdef"
OTHER = "sk-names-stale-key-fedcba9876543210"
PATHS = resolve_paths({"CCS_HOME": "/nonexistent/ccs-home"})
NAMES = {"key": "TAOTOKEN_API_KEY", "base_url": "TAOTOKEN_BASE_URL"}


def prof(export, **extra):
    data = {"schema": 1, "provider": {"name": "T", "base_url": "https://tt.example/api", "key": "tt"},
            "codex": {"model": "gpt-4.1", "provider_id": "tt", "base_url": "https://tt.example/api/v1"},
            "claude": {"base_url": "https://tt.example/anthropic"},
            "run": {"export": export, "model": "gpt-4.1"}, **extra}
    return profile_from_data("tt", data)


def test_custom_names_carry_the_key_and_the_openai_url():
    p = plan_for(prof(["openai", NAMES]), "run", KEY, {"PATH": "/bin"}, Path("/"), paths=PATHS)
    assert p.env["TAOTOKEN_API_KEY"] == p.env["OPENAI_API_KEY"] == KEY
    assert p.env["TAOTOKEN_BASE_URL"] == p.env["OPENAI_BASE_URL"] == "https://tt.example/api/v1"
    assert {"TAOTOKEN_API_KEY", "OPENAI_API_KEY"} <= p.secret_names
    assert p.base_urls == {"OPENAI_BASE_URL": "https://tt.example/api/v1",
                           "TAOTOKEN_BASE_URL": "https://tt.example/api/v1"}
    assert p.routing_names == {"TAOTOKEN_API_KEY": "openai", "TAOTOKEN_BASE_URL": "openai"}
    assert tools.load().families.plan_routing_family(p, "TAOTOKEN_BASE_URL") == "openai"
    assert tools.load().families.routing_family("TAOTOKEN_BASE_URL") is None  # only this profile's plan knows it
    assert KEY not in json.dumps(policy.masked_env(p))
    assert "TAOTOKEN_API_KEY" not in p.non_secret_env()
    # family = "anthropic": the Anthropic base URL; the table alone exports no OPENAI_*
    p = plan_for(prof([{**NAMES, "family": "anthropic"}]), "run", KEY, {}, Path("/"), paths=PATHS)
    assert p.env["TAOTOKEN_BASE_URL"] == "https://tt.example/anthropic"
    assert not any(k.startswith(("OPENAI_", "ANTHROPIC_")) for k in p.env) and not p.warnings


def test_show_and_round_trip():
    from ccswitch_tui import tools

    side = prof(["openai", NAMES]).side("run")
    spec = tools.load().get("run")
    assert spec.side_dict(side)["export"] == ["openai", NAMES]
    assert "TAOTOKEN_API_KEY+TAOTOKEN_BASE_URL" in spec.show(side)
    assert prof(spec.side_dict(side)["export"]).side("run") == side


@pytest.mark.parametrize(("entry", "message"), [
    ({"key": "OPENAI_API_KEY"}, "known variable of the openai family"),
    ({"base_url": "ANTHROPIC_BASE_URL"}, "known variable of the claude family"),
    ({"key": "GEMINI_API_KEY"}, "known variable"),
    ({"base_url": "HTTPS_PROXY"}, "known variable of the proxy family"),
    ({"base_url": "NODE_OPTIONS"}, "changes what code a program loads"),
    ({"key": "LD_PRELOAD_KEY"}, "changes what code a program loads"),
    ({"base_url": "SSL_CERT_FILE"}, "which certificates"),
    ({"key": "CCS_PROFILE"}, "ccs sets or keeps itself"),
    ({"base_url": "PATH"}, "ccs sets or keeps itself"),
    ({"key": "1TAO_KEY"}, "not a variable name"),
    ({"key": "TAO-TOKEN_KEY"}, "not a variable name"),
    ({"key": "TAOTOKEN_ENDPOINT"}, "does not read as a secret name"),
    ({"base_url": "TAOTOKEN_API_KEY"}, "reads as a secret name"),
    ({}, "names no variable"),
    ({"key": "TAOTOKEN_API_KEY", "url": "X"}, "unknown field 'url'"),
    ({"key": "TAOTOKEN_API_KEY", "family": "gemini"}, "family 'gemini' must be one of"),
])
def test_bad_names_are_refused_in_one_line(entry, message):
    with pytest.raises(ProfileError, match=message) as exc:
        prof(["openai", entry])
    assert "\n" not in str(exc.value) and "[run].export[1]" in str(exc.value)


def test_a_name_exported_twice_is_refused():
    with pytest.raises(ProfileError, match=r"\[run\].export\[2\].key: TAOTOKEN_API_KEY is exported twice"):
        prof(["openai", NAMES, {"key": "TAOTOKEN_API_KEY"}])


def test_taotoken_preset_exports_both_sets():
    import tomlkit

    data = tomlkit.parse(load_preset("taotoken").text).unwrap()
    p = plan_for(profile_from_data("taotoken", data), "run", KEY, {}, Path("/"), paths=PATHS)
    assert {"OPENAI_API_KEY", "TAOTOKEN_API_KEY"} <= p.secret_names
    assert p.env["TAOTOKEN_BASE_URL"] == p.env["OPENAI_BASE_URL"] == "https://taotoken.net/api"


def test_verdict_compares_the_custom_base_url():
    base = {"launch_id": "a", "profile": "tt", "base_urls": {"OPENAI_BASE_URL": "https://x/v1",
                                                              "TAOTOKEN_BASE_URL": "https://x/v1"},
            "key_fingerprint": "fp:1", "env_names": [], "env_hash": "h"}
    moved = {**base, "launch_id": "b", "base_urls": {**base["base_urls"], "TAOTOKEN_BASE_URL": "https://y/v1"}}
    assert compare(base, base).comparable
    v = compare(base, moved)
    assert v.drifted == ["base_urls"] and v.differences[0].run["TAOTOKEN_BASE_URL"] == "https://y/v1"


# --- through the real CLI, keyring and bridge ------------------------------------------------------

def write_profile(export: str, url: str, key_id: str) -> None:
    d = Path(os.environ["CCS_HOME"]) / "profiles"
    d.mkdir(parents=True, exist_ok=True)
    (d / "tt.toml").write_text(textwrap.dedent(f'''\
        schema = 1
        [provider]
        name = "T"
        base_url = "{url}"
        key = "{key_id}"
        [run]
        export = {export}
        model = "gpt-4.1"
        '''))


def test_a_bad_name_in_a_profile_file_is_one_line_rc_2(ccs, base_env):
    write_profile('["openai", { key = "OPENAI_API_KEY" }]', "https://tt.example/api", "tt")
    r = ccs("env", "tt", env=base_env)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert "tt.toml" in r.stderr and "OPENAI_API_KEY is a known variable of the openai family" in r.stderr


@pytest.mark.usefixtures("secret_service")
def test_env_diff_names_a_stale_shell_value(ccs, base_env, key_id):
    write_profile('["openai", { key = "TAOTOKEN_API_KEY", base_url = "TAOTOKEN_BASE_URL" }]',
                  "https://tt.example/api", key_id)
    assert ccs("key", "set", key_id, input=KEY, env=base_env).returncode == 0
    stale = {**base_env, "TAOTOKEN_BASE_URL": "https://stale.example/api", "TAOTOKEN_API_KEY": OTHER}
    r = ccs("env", "tt", "--diff", env=stale)
    assert r.returncode == 0, r.stderr
    summary = r.stdout.splitlines()[0]
    assert "routing, keys, proxies" in summary and "~TAOTOKEN_BASE_URL" in summary and "~TAOTOKEN_API_KEY" in summary
    assert "~ TAOTOKEN_BASE_URL: https://stale.example/api -> https://tt.example/api" in r.stdout
    assert KEY not in r.stdout + r.stderr and OTHER not in r.stdout + r.stderr
    r = ccs("env", "tt", "--format", "json", env=stale)
    assert KEY not in r.stdout and json.loads(r.stdout)


@pytest.mark.usefixtures("secret_service")
def test_record_hands_the_custom_names_the_bridge(ccs, base_env, key_id, tmp_path):
    stub = ProviderStub()
    try:
        write_profile('["openai", { key = "TAOTOKEN_API_KEY", base_url = "TAOTOKEN_BASE_URL" }]',
                      stub.url + "/v1", key_id)
        assert ccs("key", "set", key_id, input=KEY, env=base_env).returncode == 0
        program = tmp_path / "p.py"
        program.write_text(textwrap.dedent('''
            import json, os, sys, openai
            c = openai.OpenAI(api_key=os.environ["TAOTOKEN_API_KEY"], base_url=os.environ["TAOTOKEN_BASE_URL"],
                              max_retries=0)
            c.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "hi"}])
            json.dump(dict(os.environ), open(sys.argv[1], "w"))
        '''))
        out = tmp_path / "env.json"
        stale = {**base_env, "TAOTOKEN_BASE_URL": "https://stale.example/api", "TAOTOKEN_API_KEY": OTHER}
        r = ccs("run", "--record", "tt", "--", sys.executable, str(program), str(out), env=stale, timeout=120)
        assert r.returncode == 0, r.stderr
        env = json.loads(out.read_text())
        assert env["TAOTOKEN_API_KEY"].startswith("ccs-bridge-") and env["TAOTOKEN_API_KEY"] == env["OPENAI_API_KEY"]
        assert env["TAOTOKEN_BASE_URL"].startswith("http://127.0.0.1:") and "stale" not in json.dumps(env)
        assert KEY not in json.dumps(env) and OTHER not in json.dumps(env)
        (seen,) = stub.posts()
        assert seen.headers["authorization"] == f"Bearer {KEY}"
        manifest = json.loads(ccs("runs", "--json", env=base_env).stdout)["runs"][0]
        assert manifest["base_urls"]["TAOTOKEN_BASE_URL"] == stub.url + "/v1"
        assert manifest["requests"]["requests"] == 1
        assert "TAOTOKEN_API_KEY" in manifest["env_names"]
        for p in Path(os.environ["CCS_HOME"]).rglob("*"):
            if p.is_file():
                assert KEY.encode() not in p.read_bytes(), p
    finally:
        stub.close()


@pytest.mark.usefixtures("secret_service")
@pytest.mark.parametrize(("change", "expected"), [
    ({}, set()),
    ({"TAOTOKEN_BASE_URL": "https://stale.example/api"}, {("base-url-drift", "TAOTOKEN_BASE_URL")}),
    ({"TAOTOKEN_API_KEY": OTHER}, {("key-drift", "TAOTOKEN_API_KEY")}),
    ({"TAOTOKEN_API_KEY": None}, {("key-drift", "TAOTOKEN_API_KEY")}),
])
def test_inspect_knows_the_names_as_the_profiles_own(ccs_home, key_id, tmp_path, change, expected):
    import subprocess

    from ccswitch_tui.diagnose.inspect import Inspector
    from ccswitch_tui.keys.keyring import KeyStore
    from ccswitch_tui.profiles.store import Store

    write_profile('["openai", { key = "TAOTOKEN_API_KEY", base_url = "TAOTOKEN_BASE_URL" }]',
                  "https://tt.example/api", key_id)
    keys = KeyStore(ccs_home, os.environ)
    keys.set(key_id, KEY)
    store = Store(ccs_home)
    plan = plan_for(store.load("tt"), "run", KEY, {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, tmp_path,
                    paths=ccs_home)
    env = {k: v for k, v in {**plan.env, **change}.items() if v is not None}
    proc = subprocess.Popen(["sleep", "60"], env=env, cwd=tmp_path)
    try:
        import time

        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and b"CCS_LAUNCH_ID" not in Path(f"/proc/{proc.pid}/environ").read_bytes():
            time.sleep(0.01)
        ins = Inspector(store, keys).inspect_pid(proc.pid)
        errors = {(f.code, f.variable) for f in ins.findings if f.severity == "error"}
        assert errors == expected
        assert KEY not in json.dumps(ins.to_dict()) and OTHER not in json.dumps(ins.to_dict())
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.usefixtures("secret_service")
@pytest.mark.parametrize("record", [False, True])
def test_ps_and_inspect_on_a_real_ccs_run_child(ccs, base_env, key_id, tmp_path, record):
    """A real `ccs run` child holding the custom names (the bridge's token and URL when recorded) is
    clean for `inspect`; after the key is rotated the custom key variable is named in the key drift."""
    import shutil
    import subprocess
    import time

    import psutil

    write_profile('["openai", { key = "TAOTOKEN_API_KEY", base_url = "TAOTOKEN_BASE_URL" }]',
                  "http://127.0.0.1:9/api", key_id)
    assert ccs("key", "set", key_id, input=KEY, env=base_env).returncode == 0
    sleep = shutil.which("sleep") or "/bin/sleep"
    sup = subprocess.Popen([sys.executable, "-m", "ccswitch_tui", "run", *(["--record"] if record else []), "tt",
                            "--", sleep, "300"], env=base_env, cwd=tmp_path, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        pid = None
        deadline = time.monotonic() + 30
        while pid is None and time.monotonic() < deadline:
            assert sup.poll() is None, "the supervisor exited early"
            for k in psutil.Process(sup.pid).children(recursive=True):
                try:
                    if k.name() == "sleep" and "TAOTOKEN_API_KEY" in k.environ():
                        pid = k.pid
                except psutil.Error:
                    continue
            time.sleep(0.05)
        assert pid is not None
        held = psutil.Process(pid).environ()
        assert held["TAOTOKEN_API_KEY"].startswith("ccs-bridge-") if record else held["TAOTOKEN_API_KEY"] == KEY
        r = ccs("inspect", str(pid), "--json", env=base_env)
        data = json.loads(r.stdout)
        assert r.returncode == 0 and data["profile"] == "tt" and data["counts"]["error"] == 0, r.stdout
        rows = {p["pid"]: p for p in json.loads(ccs("ps", "--json", env=base_env).stdout)["processes"]}
        assert rows[pid]["profile"] == "tt" and rows[pid]["findings"]["error"] == 0
        assert ccs("key", "set", key_id, input=OTHER, env=base_env).returncode == 0
        r = ccs("inspect", str(pid), "--json", env=base_env)
        found = {(f["code"], f["variable"]) for f in json.loads(r.stdout)["findings"]}
        # recorded: the bridge holds the old key, one finding for the launch; else each key variable drifts
        expected = {("key-drift", "OPENAI_API_KEY")} if record else {("key-drift", "OPENAI_API_KEY"),
                                                                       ("key-drift", "TAOTOKEN_API_KEY")}
        assert r.returncode == 3 and found == expected, r.stdout
        assert KEY not in r.stdout and OTHER not in r.stdout
    finally:
        for k in psutil.Process(sup.pid).children(recursive=True):
            k.kill()
        sup.kill()
        sup.wait(timeout=10)


def test_the_editor_keeps_the_export_tables():
    """The TUI editor shows the families as checkboxes; saving keeps the tables the file names."""
    from ccswitch_tui.safe_read import parse_toml
    from ccswitch_tui.tui.screens.editor import FIELDS, apply_changes, form_value

    text = 'schema = 1\n[run]\nexport = ["openai", { key = "TAOTOKEN_API_KEY", base_url = "TAOTOKEN_BASE_URL" }]\n'
    doc = parse_toml(text, "tt.toml")
    fid = next(k for k, f in FIELDS.items() if f.kind == "exports")
    before = form_value(doc, FIELDS[fid])
    assert before == ("openai",)
    out = apply_changes(doc, {fid: before}, {fid: ("openai", "anthropic")}, {})
    assert out.unwrap()["run"]["export"] == ["openai", "anthropic",
                                             {"key": "TAOTOKEN_API_KEY", "base_url": "TAOTOKEN_BASE_URL"}]

"""Every registered client spec, and ``fakecli`` (tests/fake_client: one spec module and a stub client,
registered only in the tests), served by every part of ccs from its spec alone: the table (fields,
validation, ``show --json``, export's secret fields, the env table's credential refusal), the plan
(a contaminated shell cannot reach the child; the key only in the key's variable), ``env --diff``,
``ps``/``inspect``, ``doctor``, ``check``, a recorded launch and its records, and the TUI (launch key,
editor section, overview). The CLI runs as real child processes; the fake client reaches them through
a sitecustomize on PYTHONPATH (ccs reads no variable or file that names code to load)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from fake_client.spec import TOOL as FAKE
from stub_server import StubServer
from test_conformance_layers import family_names

from ccswitch_tui import tools
from ccswitch_tui.diagnose.processes import recognise
from ccswitch_tui.errors import ProfileError
from ccswitch_tui.launch.plan import plan_for
from ccswitch_tui.paths import Paths
from ccswitch_tui.profiles.schema import profile_from_data
from ccswitch_tui.tools.capabilities import Probing
from ccswitch_tui.tools.fields import editor_form
from ccswitch_tui.tools.spec import ToolSpec

ROOT = Path(__file__).resolve().parent.parent
FAKE_DIR = ROOT / "tests" / "fake_client"
KEY = "sk-conformance-0123456789abcdefXYZ"
SPECS: dict[str, ToolSpec] = {**{s.name: s for s in tools.load().clients()}, FAKE.name: FAKE}
CLIENTS = list(SPECS)


def table_for(spec: ToolSpec) -> dict[str, Any]:
    """The smallest table the spec takes: its required fields, each a value of its kind."""
    out: dict[str, Any] = {}
    for f in spec.fields:
        if f.required:
            out[f.name] = f.choices[0] if f.choices else f"m-{spec.name}"
    return out


def toml_table(name: str, table: dict[str, Any]) -> str:
    return f"[{name}]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in table.items())


def write_profile(tool: str, url: str, key_id: str, extra: str = "") -> Path:
    path = Path(os.environ["CCS_HOME"]) / "profiles" / "p.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'schema = 1\n[provider]\nname = "Stub"\nbase_url = "{url}"\nkey = "{key_id}"\n\n'
                    + toml_table(tool, table_for(SPECS[tool])) + extra)
    return path


@pytest.fixture(scope="module", autouse=True)
def fake_registered():
    """The fake client in this process too (the children get it from the sitecustomize), only for
    this module: the rest of the suite sees the registry as it is."""
    tools.register(FAKE.name, "fake_client.spec")
    yield
    tools.unregister(FAKE.name)


@pytest.fixture
def env(base_env: dict[str, str]) -> dict[str, str]:
    """The tests' shell, with the fake client registered and its stub on PATH."""
    return {**base_env, "PYTHONPATH": str(FAKE_DIR / "site"), "PATH": f"{FAKE_DIR / 'bin'}:{base_env['PATH']}"}


def contaminated(env: dict[str, str], wrong: str) -> dict[str, str]:
    """Every family the policy knows (the shared OPENAI_*, proxies and cloud ones too), and every client's
    routing variables, as the shell would hold them, pointing at ``wrong``."""
    out = dict(env)
    for family in tools.load().families.names():
        for name in family_names(family):
            if tools.load().families.cloud_switch(name):
                out[name] = "1"
            elif not name.endswith(("_DIR", "_HOME")):
                out[name] = wrong if ("URL" in name or "PROXY" in name.upper() or "BASE" in name) else \
                    "sk-stale-wrong-0123456789abcdef"
    for spec in SPECS.values():
        for name in _family_names(spec):
            out[name] = wrong if "URL" in name else "sk-stale-wrong-0123456789abcdef"
    out["AWS_EC2_METADATA_DISABLED"] = "true"  # a cloud switch in the shell: no metadata lookups, ever
    for name in ("NO_PROXY", "no_proxy"):
        out.pop(name, None)
    return out


def _family_names(spec: ToolSpec) -> list[str]:
    """Variables of the spec's families a shell may hold: the plan's own names, plus any the spec's
    doctor or docs would name (the plan's are enough to prove they are replaced or dropped)."""
    profile = profile_from_data("p", {"schema": 1, "provider": {"name": "P", "base_url": "https://gw.example/api",
                                                                "key": "env:PKEY"}, spec.name: table_for(spec)})
    plan = plan_for(profile, spec.name, KEY, {"PATH": "/usr/bin"}, Path("/"),
                    paths=Paths(profiles=Path("/nonexistent/p"), state=Path("/nonexistent/s")))
    return [k for k in plan.env if any(re.fullmatch(rx, k) for rx in spec.families.values())]


# --- the spec itself ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", CLIENTS)
def test_the_spec_is_complete_and_its_table_declared_once(name):
    spec = SPECS[name]
    assert spec.label and spec.program and spec.families, name
    assert [f.key for f in editor_form(spec.name, spec.fields)] == [f.name for f in spec.fields if f.editor]
    assert any(f.kind == "env" for f in spec.fields), f"{name}: no env table"
    assert spec.exe_names or spec.scripts, f"{name}: ps cannot recognise it"
    assert all(tools.load().recognise(exe, None) == name for exe in spec.exe_names)


@pytest.mark.parametrize("name", CLIENTS)
def test_the_plan_from_a_contaminated_shell_holds_only_the_profile(name, tmp_path):
    spec = SPECS[name]
    profile = profile_from_data("p", {"schema": 1, "provider": {"name": "P", "base_url": "https://gw.example/api",
                                                                "key": "env:PKEY"}, name: table_for(spec)})
    shell = contaminated({"PATH": "/usr/bin", "HOME": str(tmp_path)}, "https://wrong.example")
    plan = plan_for(profile, name, KEY, shell, tmp_path,
                    paths=Paths(profiles=tmp_path / "profiles", state=tmp_path / "state"))
    assert plan.base_urls and all(u.startswith("https://gw.example/api") for u in plan.base_urls.values())
    for k, v in plan.env.items():
        assert "wrong.example" not in v and "stale-wrong" not in v, (k, v)
        if KEY in v:
            assert k in plan.secret_names and v == KEY, k
    for f in plan.files:
        assert KEY not in f.content and "wrong.example" not in f.content, f.path


# --- the CLI, in child processes -------------------------------------------------------------------

@pytest.mark.parametrize("name", CLIENTS)
def test_show_json_and_validation(name, ccs, env):
    spec = SPECS[name]
    write_profile(name, "https://gw.example/api", "gw")
    r = ccs("show", "p", "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert list(json.loads(r.stdout)[name]) == list(spec.field_names)
    path = write_profile(name, "https://gw.example/api", "gw",
                         f'[{name}.env]\nMY_CUSTOM_HEADERS = "Authorization: Bearer abc"\n')
    for args in (("export", "p"), ("show", "p")):
        r = ccs(*args, env=env)
        assert r.returncode == 2 and "Bearer abc" not in r.stdout + r.stderr, r.stderr
        assert f"[{name}.env].MY_CUSTOM_HEADERS holds a credential" in r.stderr
        assert "Traceback" not in r.stderr
    path = write_profile(name, "https://gw.example/api", "gw")
    path.write_text(path.read_text().replace("[provider]", "[provider]\nnmae = 1", 1))
    r = ccs("show", "p", env=env)
    assert r.returncode == 2 and "did you mean 'name'" in r.stderr
    bad = toml_table(name, {**table_for(spec), "modle": "x"})
    write_profile(name, "https://gw.example/api", "gw")
    path.write_text(path.read_text().replace(toml_table(name, table_for(spec)), bad))
    r = ccs("show", "p", env=env)
    assert r.returncode == 2 and f"unknown field [{name}].modle" in r.stderr


@pytest.mark.parametrize("name", CLIENTS)
def test_the_table_refuses_what_its_fields_refuse(name):
    """Each refusal its declared fields make, one line naming the field (the editor points at it):
    a required field left out, a misspelt field, a base URL that is not http(s), a secret-looking
    variable in its env table."""
    spec = SPECS[name]
    good = table_for(spec)
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({k: v for k, v in good.items() if k != f}, f"[{name}].{f} is required", f"[{name}].{f}") for f in good]
    if "model" in spec.field_names:
        cases.append(({**good, "modle": "x"}, f"unknown field [{name}].modle; did you mean 'model'?",
                      f"[{name}].modle"))
    if "base_url" in spec.field_names:
        cases.append(({**good, "base_url": "ftp://x"}, "is not an http(s) URL", f"[{name}].base_url"))
    variable = f"{name.upper()}_TOKEN"
    cases.append(({**good, "env": {variable: "x"}}, "looks like a secret", f"[{name}.env].{variable}"))
    for table, message, field in cases:
        with pytest.raises(ProfileError) as exc:
            profile_from_data("p", {"schema": 1, "provider": {"name": "P", "base_url": "https://gw.example/api",
                                                              "key": "gw"}, name: table})
        assert message in str(exc.value) and exc.value.field == field, (table, str(exc.value), exc.value.field)


@pytest.mark.usefixtures("secret_service")
@pytest.mark.parametrize("name", CLIENTS)
def test_env_diff_replaces_the_shells_routing(name, ccs, env, key_id):
    write_profile(name, "https://gw.example/api", key_id)
    assert ccs("key", "set", key_id, input=KEY, env=env).returncode == 0
    shell = contaminated(env, "https://wrong.example")
    r = ccs("env", "p", "--tool", name, "--diff", env=shell)
    assert r.returncode == 0, r.stderr
    assert KEY not in r.stdout and "stale-wrong-0123456789abcdef" not in r.stdout
    for var in _family_names(SPECS[name]):
        assert f"{var}" in r.stdout, var
    r = ccs("env", "p", "--tool", name, "--format", "json", env=shell)
    data = json.loads(r.stdout)
    assert KEY not in r.stdout and "wrong.example" not in json.dumps(data)


@pytest.mark.usefixtures("secret_service")
@pytest.mark.parametrize("name", CLIENTS)
def test_check_probes_the_profiles_endpoint_with_its_key(name, ccs, env, stubs, key_id):
    good: StubServer = stubs("good")
    write_profile(name, good.url, key_id)
    assert ccs("key", "set", key_id, input=KEY, env=env).returncode == 0
    r = ccs("check", "p", "--json", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    results = {x["tool"]: x for x in json.loads(r.stdout)["results"]}
    assert results[name]["outcome"] == "ok", results
    posts = good.posts()
    assert posts and all(KEY in (p.headers.get("authorization", "") + p.headers.get("x-api-key", "")
                                 + p.headers.get("x-goog-api-key", "")) for p in posts)
    # what it probes is what the launch would use: each probe the spec reads from the launch's plan
    # went to that path, with that model, carrying the key where the probe says
    spec = SPECS[name]
    assert isinstance(spec, Probing), f"{name} is not probed"
    profile = profile_from_data("p", {"schema": 1, "provider": {"name": "Stub", "base_url": good.url,
                                                                "key": "env:PKEY"}, name: table_for(spec)})
    plan = plan_for(profile, name, KEY, {"PATH": "/usr/bin"}, Path("/"),
                    paths=Paths(profiles=Path("/nonexistent/p"), state=Path("/nonexistent/s")))
    probes = spec.probes(plan, profile)
    assert [urlsplit(p.path).path for p in posts] == [urlsplit(q.url).path for q in probes], (posts, probes)
    for post, probe in zip(posts, probes, strict=True):
        if probe.body is not None and "model" in probe.body:
            assert post.body["model"] == probe.model == table_for(spec).get("model", probe.model), post.body
        header = "authorization" if probe.auth == "bearer" else probe.auth.lower()
        assert post.headers[header] == (f"Bearer {KEY}" if probe.auth == "bearer" else KEY), post.headers


def test_doctor_reports_each_client(ccs, env, tmp_path):
    (Path(env["HOME"]) / ".fakecli.json").write_text(json.dumps({"base_url": "https://wrong.example"}))
    r = ccs("doctor", "--json", env=env)
    data = json.loads(r.stdout)
    assert set(CLIENTS) <= set(data["clients"]), data["clients"]
    (user,) = [row for row in data["fakecli_layers"] if row["kind"] == "user"]
    assert user["routing"] == {"base_url": "https://wrong.example"}
    assert any(f["variable"] == "base_url" and f["path"].endswith(".fakecli.json") for f in data["findings"])
    r = ccs("doctor", env=env)
    assert "Fake CLI layers" in r.stdout


def test_ps_and_inspect_recognise_it(ccs, env):
    assert recognise(["python3", str(FAKE_DIR / "bin" / "fakecli"), "--wait"]) == "fakecli"
    stray = subprocess.Popen([sys.executable, str(FAKE_DIR / "bin" / "fakecli"), "--wait"],
                             env={**env, "FAKECLI_API_KEY": "sk-other-key-0123456789abcdefXYZ"})
    try:
        deadline = time.monotonic() + 20
        rows: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            rows = json.loads(ccs("ps", "--json", "--all", env=env).stdout)["processes"]
            if any(r["pid"] == stray.pid for r in rows):
                break
            time.sleep(0.2)
        (row,) = [r for r in rows if r["pid"] == stray.pid]
        assert row["tool"] == "fakecli"
        r = ccs("inspect", str(stray.pid), "--json", env=env)
        findings = json.loads(r.stdout)["findings"]
        (finding,) = [f for f in findings if f["code"] != "loader"]
        (loader,) = [f for f in findings if f["code"] == "loader"]  # the sitecustomize registering it ran in it
        assert (loader["variable"], loader["severity"]) == ("PYTHONPATH", "error") and "Python" in loader["message"]
        assert (finding["code"], finding["family"], finding["variable"]) == (
            "unmanaged-routing", "fakecli", "FAKECLI_API_KEY")
        assert "read by Fake CLI" in finding["message"] and "sk-other-key" not in r.stdout
    finally:
        stray.terminate()
        stray.wait(10)


@pytest.mark.usefixtures("secret_service")
def test_the_tui_offers_its_launch_key_editor_section_and_overview(ccs, env, key_id):
    write_profile("fakecli", "https://gw.example/api", key_id)
    assert ccs("key", "set", key_id, input=KEY, env=env).returncode == 0
    r = subprocess.run([sys.executable, str(FAKE_DIR / "tui_probe.py"), os.environ["CCS_HOME"], "p"],
                       env={**env, "TERM": "xterm-256color"}, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.splitlines()[-1])
    assert out["launch_key"] == "f" and out["launch_enabled"]
    assert "fakecli" in out["switches"] and out["switch_on"] and out["section_shown"]
    assert out["fields"] == sorted(f"f-fakecli-{n}" for n in FAKE.field_names if n)
    assert "FAKECLI_MODEL=m-fakecli" in out["overview"] and "FAKECLI_BASE_URL" in out["overview"]
    # the footer folds the launch keys (five clients do not fit 80 columns); the menu lists it
    assert "[fakecli].retries must be a whole number, not 'x3'" in out["bad_number"] and out["error"] is None
    assert "retries = 3\n" in out["saved"] and "verbose = true\n" in out["saved"]
    assert out["footer_words"] == ["Launch…", "Quit", "Help"] and ["f", "Fake CLI", "fakecli"] in out["launch_menu"]

"""Kilo Code CLI, added as one spec module (tools/kilo.py, sharing tools/opencode_family.py with
OpenCode) and a registry line: the real pinned `kilo` (@kilocode/cli 7.7.7) against loopback stubs
from a shell contaminated with every routing variable and a repository that tries to redirect it,
quiet launches traced in a private network namespace, the resume hint, `ps` of the real kilo (its launcher
and native binary), `doctor` (its layers in the real kilo's order) and the profile's own rules. What every
client gets (`check`, `--record`, `inspect` of a client started by hand, the table's field rules) is the
conformance suite's and, with the real kilo recorded, tests/test_new_clients.py's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import real_client_files
from conftest import ROOT
from stub_server import StubServer

from ccswitch_tui import policy, tools
from ccswitch_tui.diagnose.processes import recognise
from ccswitch_tui.launch.layers import doctor_part
from ccswitch_tui.launch.plan import plan_for
from ccswitch_tui.profiles.schema import profile_from_data

KEY = "sk-kilo-test-0123456789abcdefXYZ"
VERSION = "7.7.7"


kilo_bin = real_client_files.pinned_bin("kilo")  # the install script checks that its binary runs


def contaminated(base: dict[str, str], wrong: StubServer, clients_bin: Path) -> dict[str, str]:
    """A shell whose every routing variable Kilo Code (or its OpenCode ancestry) reads points elsewhere."""
    stray = {"model": "wrong/m", "provider": {"wrong": {"npm": "@ai-sdk/openai-compatible", "options": {
        "baseURL": f"{wrong.url}/v1", "apiKey": "sk-stale"}, "models": {"m": {}}}}}
    wrong_cfg = Path(base["HOME"]) / "wrong-config"
    wrong_cfg.mkdir(exist_ok=True)
    (wrong_cfg / "kilo.json").write_text(json.dumps(stray))
    return {
        **base,
        "PATH": f"{clients_bin}:{base['PATH']}",
        "KILO_CONFIG": str(wrong_cfg / "kilo.json"),
        "KILO_CONFIG_DIR": str(wrong_cfg),
        "KILO_CONFIG_CONTENT": json.dumps(stray),
        "KILO_API_KEY": "sk-stale-kilo-gateway",
        "KILO_API_URL": wrong.url,
        "KILO_OPENROUTER_BASE": wrong.url,
        "KILO_MODELS_URL": wrong.url,
        "KILO_BIN_PATH": "/nonexistent/kilo",
        "OPENCODE_CONFIG": str(wrong_cfg / "kilo.json"),
        "OPENCODE_CONFIG_CONTENT": json.dumps(stray),
        "OPENCODE_API_KEY": "sk-stale-opencode",
        "OPENAI_API_KEY": "sk-stale-wrong",
        "OPENAI_BASE_URL": f"{wrong.url}/v1",
        "ANTHROPIC_API_KEY": "sk-ant-stale",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "ALL_PROXY": "http://127.0.0.1:9",
    }


def redirecting_project(root: Path, wrong: StubServer) -> Path:
    """A repository whose own files try to send Kilo Code elsewhere: a provider, the model, an agent's
    model (it beats the top-level one) and the enabled providers, in every project file Kilo reads."""
    proj = root / "repo"
    provider = {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": f"{wrong.url}/v1", "apiKey": "x"},
                "models": {"project-model": {}}}
    data = {"model": "proj/project-model", "small_model": "proj/project-model", "provider": {"proj": provider},
            "agent": {"code": {"model": "proj/project-model"}, "build": {"model": "proj/project-model"}},
            "enabled_providers": ["proj"]}
    for rel in ("kilo.json", "kilo.jsonc", "opencode.json", ".kilo/kilo.json", ".kilocode/kilo.json",
                ".opencode/opencode.json"):
        (proj / rel).parent.mkdir(parents=True, exist_ok=True)
        (proj / rel).write_text(json.dumps(data))
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    return proj


PROFILE = real_client_files.PROVIDER + """[kilo]
base_url = "{url}/v1"
model = "p-kilo"
"""


def make_profile(ccs, env: dict[str, str], url: str, key_id: str, name: str = "p") -> None:
    real_client_files.write_profile(ccs, env, PROFILE.format(url=url, key_id=key_id), key_id, KEY, name)


def tool_dir(name: str = "p") -> Path:
    return real_client_files.tool_dir("kilo", name)


def assert_key_in_no_file(*roots: Path) -> None:
    real_client_files.assert_key_in_no_file(KEY, *roots)


# --- the real client ----------------------------------------------------------------------------

@pytest.mark.usefixtures("secret_service")
def test_kilo_from_a_contaminated_shell_and_a_redirecting_project_reaches_only_the_profile(
        ccs, base_env, stubs, kilo_bin, key_id, tmp_path):
    good, wrong = stubs("good"), stubs("wrong")
    env = contaminated(base_env, wrong, kilo_bin)
    make_profile(ccs, env, good.url, key_id)
    proj = redirecting_project(tmp_path, wrong)
    r = real_client_files.launched(ccs, "kilo", ("run", "say hi"), env, cwd=proj)
    posts = good.posts()
    assert posts and all(p.path == "/v1/chat/completions" for p in posts)
    assert {p.headers["authorization"] for p in posts} == {f"Bearer {KEY}"}
    assert {p.body["model"] for p in posts} == {"p-kilo"}
    assert wrong.requests == []
    assert "kept out" in r.stderr and "KILO_CONFIG_CONTENT" in r.stderr  # the shell's variables are named
    config = json.loads((tool_dir() / "config" / "kilo.json").read_text())
    assert config["model"] == config["small_model"] == "p/p-kilo"
    assert config["provider"]["p"]["options"] == {"baseURL": f"{good.url}/v1", "apiKey": "{env:CCS_KILO_API_KEY}"}
    assert config["enabled_providers"] == ["p"]
    assert_key_in_no_file(tool_dir(), Path(os.environ["CCS_HOME"]) / "profiles", Path(base_env["HOME"]), proj)
    (manifest,) = json.loads(ccs("runs", "--json", env=env).stdout)["runs"]
    assert manifest["tool_version"] == f"@kilocode/cli@{VERSION}"
    assert manifest["models"] == {"model": "p/p-kilo"} and manifest["exit_status"] == 0
    assert manifest["base_urls"] == {"provider.p.options.baseURL": f"{good.url}/v1"}


def test_without_ccs_the_project_redirects_kilo(base_env, stubs, kilo_bin, tmp_path):
    """The hostile repository is real: the same `kilo run` with ccs's config dir but without
    KILO_DISABLE_PROJECT_CONFIG follows the project's agent model, and the request never reaches the
    profile's stub (ccs's enabled_providers makes it fail instead of reaching the project's)."""
    good, wrong = stubs("good"), stubs("wrong")
    proj = redirecting_project(tmp_path, wrong)
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "kilo.json").write_text(json.dumps({
        "model": "p/p-kilo", "small_model": "p/p-kilo", "enabled_providers": ["p"],
        "provider": {"p": {"npm": "@ai-sdk/openai-compatible", "options": {
            "baseURL": f"{good.url}/v1", "apiKey": "{env:CCS_KILO_API_KEY}"}, "models": {"p-kilo": {}}}}}))
    env = {"PATH": f"{kilo_bin}:/usr/bin:/bin", "HOME": base_env["HOME"], "KILO_CONFIG_DIR": str(cfg),
           "CCS_KILO_API_KEY": KEY, "KILO_DISABLE_MODELS_FETCH": "1", "KILO_TELEMETRY_LEVEL": "off",
           "KILO_DISABLE_AUTOUPDATE": "1"}
    r = subprocess.run(["kilo", "run", "say hi"], cwd=proj, env=env, capture_output=True, text=True, timeout=180,
                       stdin=subprocess.DEVNULL)
    # kilo's own status, which it does not document: the project's model in its error is the proof
    assert r.returncode != 0 and "proj/project-model" in r.stdout + r.stderr
    assert good.posts() == []
    r = subprocess.run(["kilo", "run", "say hi"], cwd=proj, env={**env, "KILO_DISABLE_PROJECT_CONFIG": "1"},
                       capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and "stub reply" in r.stdout, r.stderr
    assert wrong.requests == []


@pytest.mark.usefixtures("secret_service")
def test_the_resume_hint_names_the_session_the_launch_wrote_and_kilo_resumes_it(
        ccs, base_env, stubs, kilo_bin, key_id, tmp_path):
    import time

    from ccswitch_tui.paths import resolve_paths
    from ccswitch_tui.profiles.store import Store

    good = stubs("good")
    env = {**base_env, "PATH": f"{kilo_bin}:{base_env['PATH']}"}
    make_profile(ccs, env, good.url, key_id)
    proj = tmp_path / "work"
    proj.mkdir()
    since = time.time() - 1
    r = ccs("launch", "p", "kilo", "--", "run", "say hi", env=env, cwd=proj, timeout=180)
    assert r.returncode == 0, r.stderr
    paths = resolve_paths({"CCS_HOME": os.environ["CCS_HOME"]})
    plan = plan_for(Store(paths).load("p"), "kilo", KEY, env, proj, paths=paths)
    spec = tools.load().get("kilo")
    hint = spec.resume_command(plan, since)
    assert hint is not None and re.fullmatch(r"--session ses_[A-Za-z0-9]+", hint), hint
    assert spec.resume_command(plan, time.time() + 60) is None  # nothing written since then
    assert spec.resume_command(plan_for(Store(paths).load("p"), "kilo", KEY, env, tmp_path, paths=paths),
                               since) is None  # another directory's sessions are not this one's
    r = ccs("launch", "p", "kilo", "--", "run", *hint.split(), "and again", env=env, cwd=proj, timeout=180)
    assert r.returncode == 0, r.stderr
    last = good.posts()[-1].body["messages"]
    said = json.dumps(last)
    assert "say hi" in said and "stub reply" in said and "and again" in said  # the first turn came back


# --- the install script ----------------------------------------------------------------------------

def stand_in_clients(tree: Path) -> Path:
    """Every registered client's package as the install script finds it installed (a script that prints
    its pinned version), from the specs' declarations; returns the clients folder."""
    dest = tree / ".cache" / "clients"
    for spec in tools.load().clients():
        p = spec.package
        if p is None:
            continue
        if p.manager == "npm":
            exe = dest / "node_modules" / ".bin" / spec.program
            (dest / "node_modules" / p.name).mkdir(parents=True, exist_ok=True)
            (dest / "node_modules" / p.name / "package.json").write_text(json.dumps({"version": p.version}))
        else:
            venv = dest / "venvs" / p.name
            exe = venv / "bin" / spec.program
            (venv / "lib" / "python3.11" / "site-packages" / f"{p.name.replace('-', '_')}-{p.version}.dist-info"
             ).mkdir(parents=True)
        exe.parent.mkdir(parents=True, exist_ok=True)
        exe.write_text(f"#!/bin/sh\necho {p.version}\n")
        exe.chmod(0o755)
    return dest


def test_the_install_script_fails_loudly_when_kilo_has_no_binary(tmp_path):
    """@kilocode/cli whose optional binary package was not installed (what 7.8.1 gives: npm says
    nothing): the script says so and exits 1 instead of leaving a `kilo` that cannot run. The npm and
    the clients here are stand-ins (the real install needs the registry); the script is the real one,
    and it takes the list of clients from the registry."""
    tree = tmp_path / "tree"
    (tree / "scripts").mkdir(parents=True)
    (tree / "scripts" / "install-clients.sh").write_text((ROOT / "scripts" / "install-clients.sh").read_text())
    dest = stand_in_clients(tree)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CCS_PYTHON": sys.executable}
    r = subprocess.run(["bash", str(tree / "scripts" / "install-clients.sh")], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr  # everything at its pin: nothing installed, every link made
    assert {p.name for p in (dest / "bin").iterdir()} == {s.program for s in tools.load().clients() if s.package}
    kilo = dest / "node_modules" / ".bin" / "kilo"
    # the real launcher's words when it finds no binary package
    kilo.write_text('#!/bin/sh\necho "It seems that your package manager failed to install the right '
                    'version of the Kilo CLI for your platform." >&2\nexit 1\n')
    r = subprocess.run(["bash", str(tree / "scripts" / "install-clients.sh")], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1
    assert f"kilo {VERSION} does not run: its binary package @kilocode/cli-linux-x64@{VERSION}" in r.stderr
    assert "failed to install the right version" in r.stderr
    # a kilo that runs but is another version is refused too
    kilo.write_text("#!/bin/sh\necho 7.8.1\n")
    r = subprocess.run(["bash", str(tree / "scripts" / "install-clients.sh")], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and f"kilo --version says 7.8.1, not the pinned {VERSION}" in r.stderr


def test_the_install_script_names_no_client():
    """The list of clients is the registry's: each spec declares its pin and package manager."""
    script = (ROOT / "scripts" / "install-clients.sh").read_text()
    for spec in tools.load().clients():
        assert spec.package is not None, f"{spec.name} declares no package"
        words = {spec.name, spec.program, spec.package.name, spec.package.version}
        assert not [w for w in words if re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", script)], spec.name


# --- quiet launches, traced in a private network namespace ---------------------------------------

def _scenario_quiet(args: dict[str, Any]) -> dict[str, Any]:
    """Inside the namespace: a stub, a profile, and every connect() of `ccs launch p kilo -- run`."""
    env = args["env"]
    stub = StubServer("provider")
    try:
        path = Path(env["CCS_HOME"]) / "profiles" / "p.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        policy_table = "" if args["quiet"] is None else f"\n[policy]\nquiet = {str(args['quiet']).lower()}\n"
        path.write_text(PROFILE.format(url=stub.url, key_id="env:KILO_TEST_KEY") + policy_table)
        trace = Path(env["HOME"]) / f"trace-{args['quiet']}.txt"
        r = subprocess.run(["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(trace), sys.executable, "-m",
                            "ccswitch_tui", "launch", "p", "kilo", "--", "run", "say hi"],
                           env={**env, "KILO_TEST_KEY": KEY}, capture_output=True, text=True, timeout=240,
                           stdin=subprocess.DEVNULL)
        connects = set()
        for line in trace.read_text().splitlines():
            m = re.search(r'sin6?_port=htons\((\d+)\).*?(?:inet_addr|inet_pton\(AF_INET6, )\("?([0-9a-f.:]+)"', line)
            if m and "AF_UNIX" not in line:
                connects.add(f"{m.group(2)}:{m.group(1)}")
        return {"rc": r.returncode, "stderr": r.stderr[-2000:], "stub": stub.url.rsplit(":", 1)[1],
                "connects": sorted(connects), "posts": len(stub.posts())}
    finally:
        stub.close()


def test_a_quiet_launch_connects_only_to_the_profile(base_env, kilo_bin, tmp_path):
    """Quiet (the default for a third-party endpoint): models.dev, PostHog and the update check are
    off, so the only connect() is to the profile's stub; with quiet = false Kilo tries more hosts."""
    import shutil

    import netns

    if not shutil.which("strace"):
        pytest.fail("strace is needed (scripts/install-test-deps.sh installs it)")
    env = {**base_env, "PATH": f"{kilo_bin}:{base_env['PATH']}", "PYTHONPATH": str(ROOT)}
    quiet = netns.run("quiet", script="test_kilo.py", env=env, quiet=None)
    assert quiet["rc"] == 0 and quiet["posts"] >= 1, quiet
    assert quiet["connects"] == [f"127.0.0.1:{quiet['stub']}"], quiet["connects"]
    loud = netns.run("quiet", script="test_kilo.py", env=env, quiet=False)
    assert loud["rc"] == 0 and loud["posts"] >= 1, loud
    assert set(loud["connects"]) - {f"127.0.0.1:{loud['stub']}"}, loud["connects"]


# --- the profile table and the plan -----------------------------------------------------------------

_data = real_client_files.profile_data


def test_the_table_is_validated_by_its_spec():
    p = profile_from_data("my.prof", _data(kilo={"model": "k"}))
    assert "kilo" in p.tools
    side = p.side("kilo")
    assert (side.base_url, side.model, side.provider_id, side.model_ref) == (
        "https://gw.example/api", "k", "my-prof", "my-prof/k")
    cases = [
        (dict(kilo={"model": "k", "provider_id": "Bad Id"}), "[kilo].provider_id 'Bad Id' may hold only a-z",
         "[kilo].provider_id"),
        (dict(kilo={"model": "k", "env": {"MY_HEADERS": "Authorization: Bearer abc"}}), "holds a credential",
         "[kilo.env].MY_HEADERS"),
    ]
    real_client_files.assert_each_refused(cases, _data, never="Bearer abc")


def test_the_plan_routes_through_one_config_file_and_keeps_the_key_in_the_environment(tmp_path):
    from ccswitch_tui.paths import Paths

    paths = Paths(profiles=tmp_path / "profiles", state=tmp_path / "state")
    p = profile_from_data("p", _data(kilo={"model": "k", "env": {"X": "1"}}))
    parent = {"PATH": "/usr/bin", "HOME": "/h", "KILO_CONFIG": "/x", "KILO_CONFIG_CONTENT": "{}",
              "KILO_BIN_PATH": "/evil", "OPENCODE_CONFIG_DIR": "/y", "CCS_KILO_MANAGED_DIR": str(tmp_path / "none")}
    plan = plan_for(p, "kilo", KEY, parent, tmp_path, paths=paths)
    home = paths.tool_dir("p", "kilo")
    assert plan.argv == ("kilo",) and plan.secret_names == {"CCS_KILO_API_KEY"}
    assert plan.env["CCS_KILO_API_KEY"] == KEY and policy.plan_shown(plan, "CCS_KILO_API_KEY") != KEY
    assert not {"KILO_CONFIG", "KILO_CONFIG_CONTENT", "KILO_BIN_PATH", "OPENCODE_CONFIG_DIR"} & set(plan.env)
    assert plan.env["KILO_CONFIG_DIR"] == str(home / "config") and plan.env["KILO_DISABLE_PROJECT_CONFIG"] == "1"
    assert (plan.env["XDG_DATA_HOME"], plan.env["XDG_CACHE_HOME"]) == (str(home / "data"), str(home / "cache"))
    assert "XDG_CONFIG_HOME" not in plan.env  # a nested ccs finds the user's own profiles
    assert {k: plan.env[k] for k in ("KILO_DISABLE_MODELS_FETCH", "KILO_TELEMETRY_LEVEL", "KILO_DISABLE_AUTOUPDATE")} \
        == {"KILO_DISABLE_MODELS_FETCH": "1", "KILO_TELEMETRY_LEVEL": "off", "KILO_DISABLE_AUTOUPDATE": "1"}
    assert plan.env["X"] == "1" and plan.refusals == ()
    (f,) = plan.files
    assert f.path == home / "config" / "kilo.json" and KEY not in f.content
    data = json.loads(f.content)
    assert data["$schema"] == "https://app.kilo.ai/config.json" and data["autoupdate"] is False
    assert data["provider"]["p"]["options"]["baseURL"] == "https://gw.example/api"
    # an official endpoint is not quiet by default; [policy] quiet = false turns quiet off
    loud = profile_from_data("p", {**_data(kilo={"model": "k"}), "policy": {"quiet": False}})
    plan = plan_for(loud, "kilo", KEY, parent, tmp_path, paths=paths)
    assert "KILO_TELEMETRY_LEVEL" not in plan.env and "autoupdate" not in json.loads(plan.files[0].content)


def test_a_managed_kilo_layer_that_sets_routing_refuses_the_launch(ccs, base_env, tmp_path, kilo_bin):
    """/etc/kilo beats every layer, ccs's config dir included: a routing key there refuses the launch
    (--force launches anyway and the manifest says so). CCS_KILO_MANAGED_DIR points ccs elsewhere."""
    managed = tmp_path / "etc-kilo"
    managed.mkdir()
    (managed / "kilo.json").write_text(json.dumps({"model": "corp/model", "provider": {"corp": {
        "options": {"baseURL": "https://corp.example/v1", "apiKey": "sk-corp-secret-0123456789"}}}}))
    env = {**base_env, "PATH": f"{kilo_bin}:{base_env['PATH']}", "CCS_KILO_MANAGED_DIR": str(managed), "KK": KEY}
    real_client_files.write_profile(ccs, env, PROFILE.format(url="http://127.0.0.1:9", key_id="env:KK"), "env:KK", KEY)
    r = ccs("launch", "p", "kilo", "--", "--version", env=env)
    assert r.returncode == 2
    assert f"the managed Kilo Code settings {managed / 'kilo.json'} set model" in r.stderr
    assert "--force" in r.stderr and "sk-corp-secret" not in r.stderr
    r = ccs("launch", "p", "kilo", "--force", "--", "--version", env=env)
    assert r.returncode == 0, r.stderr
    assert VERSION in r.stdout
    (manifest,) = json.loads(ccs("runs", "--json", env=env).stdout)["runs"]
    assert manifest["forced"] is True


# --- the rest of the core, through the registry ---------------------------------------------------

def test_ps_recognises_its_processes():
    assert recognise(["node", "/x/node_modules/.bin/kilo", "run", "hi"]) == "kilo"
    assert recognise(["/x/node_modules/@kilocode/cli/bin/.kilo"]) == "kilo"  # the native binary
    assert recognise(["/x/node_modules/@kilocode/cli-linux-x64/bin/kilo", "run"]) == "kilo"
    assert recognise(["node", "/x/node_modules/@kilocode/cli/bin/kilo"]) == "kilo"
    assert recognise(["node", "/x/kilometre.js"]) is None
    families = tools.load().families
    assert families.routing_family("KILO_CONFIG_DIR") == "kilo"
    assert families.routing_family("CCS_KILO_API_KEY") == "kilo"
    assert tools.load().families.routing_prefilter().search(b"A=1\0KILO_API_KEY=x\0")
    assert policy.inherit_problem("KILO_*", tools.load().families) is not None  # a glob cannot let the family in


@pytest.mark.usefixtures("secret_service")
def test_a_running_kilo_is_judged_against_its_profile(ccs, base_env, tmp_path, key_id, kilo_bin):
    """`ccs inspect` of the real kilo started by a launch (its Node launcher and the native binary,
    which gains KILO_TREE_SITTER_WASM_DIR from the launcher): no error; a kilo started by hand with a
    Kilo gateway key in its environment is named, with the kilo family."""
    import time

    stub = StubServer("slow")
    env = {**base_env, "PATH": f"{kilo_bin}:{base_env['PATH']}"}
    make_profile(ccs, env, stub.url, key_id)
    proj = tmp_path / "work"
    proj.mkdir()
    child = subprocess.Popen([sys.executable, "-m", "ccswitch_tui", "launch", "p", "kilo", "--", "debug", "wait"],
                             env=env, cwd=proj, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    stray = subprocess.Popen(["kilo", "debug", "wait"], cwd=proj, start_new_session=True,
                             env={**env, "KILO_API_KEY": "sk-other-key-0123456789abcdefXYZ",
                                  "KILO_DISABLE_MODELS_FETCH": "1", "KILO_TELEMETRY_LEVEL": "off"},
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        mine: list[dict[str, Any]] = []
        theirs: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            rows = json.loads(ccs("ps", "--json", env=env).stdout)["processes"]
            ours = [r for r in rows if r["tool"] == "kilo" and r["cwd"] == str(proj)]  # not another test's kilo
            mine = [r for r in ours if r.get("launch_id")]
            theirs = [r for r in ours if not r.get("launch_id")]
            if len(mine) >= 2 and len(theirs) >= 2:  # the Node launcher and the native binary, each
                break
            time.sleep(0.5)
        assert len(mine) >= 2 and len(theirs) >= 2, rows
        for row in mine:
            found = json.loads(ccs("inspect", str(row["pid"]), "--json", env=env).stdout)["findings"]
            assert [f for f in found if f["severity"] == "error"] == [], found
        r = ccs("inspect", str(theirs[0]["pid"]), "--json", env=env)
        found = json.loads(r.stdout)["findings"]
        assert any((f["code"], f["family"], f["variable"]) == ("unmanaged-routing", "kilo", "KILO_API_KEY")
                   for f in found), found
        assert "sk-other-key" not in r.stdout
    finally:
        for proc in (child, stray):
            try:
                os.killpg(proc.pid, 15)
            except ProcessLookupError:
                pass
            proc.wait(20)
        stub.close()


def test_presets_serve_kilo_where_the_provider_speaks_chat_completions():
    from ccswitch_tui.profiles.presets import list_presets

    with_kilo = set()
    for preset in list_presets():
        side = preset.profile.side("kilo")
        if side is not None:
            with_kilo.add(preset.name)
            assert side.model and side.base_url.startswith("https://")
            assert side.base_url == (preset.profile.side("codex") or side).base_url  # the endpoint Codex uses
    assert {"deepseek", "kimi", "glm", "openrouter", "qwen", "taotoken"} <= with_kilo


# --- doctor: the layers, in the real kilo's order -----------------------------------------------

@pytest.fixture
def world(ccs_home, tmp_path):
    home = tmp_path / "home"
    repo = tmp_path / "outside" / "repo"
    (repo / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)  # kilo walks up to the git root
    home.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "CCS_KILO_MANAGED_DIR": str(tmp_path / "managed")}
    return {"home": home, "repo": repo, "cwd": repo / "sub", "env": env, "paths": ccs_home, "tmp": tmp_path}


def write(path: Path, data: dict[str, Any] | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def layers(world, env: dict[str, str] | None = None):
    part = doctor_part(tools.load().get("kilo"), env or world["env"], world["cwd"], tools.load().families)
    return part, [row for row in part.info if row["exists"]]


def test_doctor_names_each_layer_and_its_routing_keys(world, ccs, base_env):
    secret = "sk-kilo-doctor-0123456789abcdef"
    glob = write(world["home"] / ".config" / "kilo" / "kilo.jsonc",
                 '// mine\n{"agent": {"code": {"model": "g/agent"}}, "disabled_providers": ["p"],}\n')
    proj = write(world["repo"] / "kilo.json", {"model": "p/project", "provider": {"p": {"options": {
        "baseURL": "http://127.0.0.1:9/v1", "apiKey": secret}}}})
    dot = write(world["cwd"] / ".kilocode" / "kilo.json", {"agent": {"code": {"model": "d/dot"}}})
    write(world["tmp"] / "outside" / "kilo.json", {"model": "above/the-git-root"})  # not Kilo's: not listed
    part, found = layers(world)
    assert [(r["kind"], r["path"]) for r in found] == [("project-dir", str(dot)), ("project", str(proj)),
                                                       ("global", str(glob))]
    assert found[1]["routing"]["provider.p.options.baseURL"] == "http://127.0.0.1:9/v1"
    text = json.dumps(part.info) + "\n".join(part.lines) + " ".join(f.message for f in part.findings)
    assert secret not in text
    codes = {(f.severity, f.path, f.variable) for f in part.findings if f.code == "settings-override"}
    assert ("error", str(proj), "model") in codes and ("error", str(dot), "agent.code.model") in codes
    assert ("warn", str(glob), "agent.code.model") in codes and ("warn", str(glob), "disabled_providers") in codes
    assert any("an agent's model beats the top-level model" in f.message for f in part.findings
               if f.variable == "agent.code.model" and f.path == str(glob))
    _, found = layers(world, {**world["env"], "KILO_DISABLE_PROJECT_CONFIG": "1"})
    assert [r["kind"] for r in found] == ["global"]
    # the whole doctor from the CLI: its report carries the section
    r = ccs("doctor", "--cwd", str(world["cwd"]), "--json", env={**base_env, "HOME": str(world["home"])})
    data = json.loads(r.stdout)
    assert any(row["path"] == str(dot) for row in data["kilo_layers"]) and "kilo" in data["clients"]


def kilo_model(clients_bin: Path, world, extra: dict[str, str]) -> str | None:
    env = {"PATH": f"{clients_bin}:/usr/bin:/bin", "HOME": str(world["home"]), "KILO_DISABLE_MODELS_FETCH": "1",
           "KILO_TELEMETRY_LEVEL": "off", "KILO_DISABLE_AUTOUPDATE": "1", **extra}
    r = subprocess.run(["kilo", "debug", "config"], cwd=world["cwd"], env=env, capture_output=True, text=True,
                       timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout[r.stdout.index("{"):]).get("model")


def test_the_listed_order_is_the_real_kilos_precedence(world, kilo_bin):
    """For each arrangement, the highest layer doctor lists that sets `model` names the model the real
    kilo resolves (its managed dir pointed at a test folder: KILO_TEST_MANAGED_CONFIG_DIR for kilo,
    CCS_KILO_MANAGED_DIR for ccs)."""
    home, repo, cwd, tmp = world["home"], world["repo"], world["cwd"], world["tmp"]
    cfg_dir, env_file, managed = tmp / "cfgdir", tmp / "env-config.json", tmp / "managed"
    steps = [
        ({}, [(home / ".config" / "kilo" / "config.json", {"model": "g/config"})]),
        ({}, [(home / ".config" / "kilo" / "kilo.jsonc", '// c\n{"model": "g/jsonc"}')]),
        ({"KILO_CONFIG": str(env_file)}, [(env_file, {"model": "e/env-file"})]),
        ({}, [(tmp / "outside" / "kilo.json", {"model": "above/git-root"})]),
        ({}, [(repo / "kilo.json", {"model": "p/root-kilo"})]),
        ({}, [(cwd / "kilo.json", {"model": "p/sub-kilo"})]),
        ({}, [(repo / "opencode.json", {"model": "p/root-opencode"})]),
        ({}, [(repo / ".opencode" / "opencode.json", {"model": "p/dot-opencode"})]),  # not read by kilo
        ({}, [(repo / ".kilocode" / "kilo.json", {"model": "p/dot-kilocode"})]),
        ({}, [(cwd / ".kilo" / "kilo.json", {"model": "p/sub-dot-kilo"})]),  # the dir nearer the root wins
        ({}, [(repo / ".kilo" / "kilo.json", {"model": "p/root-dot-kilo"})]),  # .kilo beats .kilocode
        ({}, [(home / ".kilo" / "kilo.json", {"model": "h/home-dot-kilo"})]),
        ({"KILO_CONFIG_DIR": str(cfg_dir)}, [(cfg_dir / "kilo.json", {"model": "c/config-dir"})]),
        ({"KILO_TEST_MANAGED_CONFIG_DIR": str(managed)}, [(managed / "kilo.json", {"model": "m/managed"})]),
    ]
    extra: dict[str, str] = {}
    seen = []
    for add_env, files in steps:
        extra.update(add_env)
        for path, data in files:
            write(path, data)
        _, found = layers(world, {**world["env"], **extra})
        listed = next((r["routing"]["model"] for r in found if "model" in r["routing"]), None)
        real = kilo_model(kilo_bin, world, extra)
        seen.append(real)
        assert listed == real, (extra, [(r["kind"], r["path"], r["routing"]) for r in found])
    assert seen == ["g/config", "g/jsonc", "e/env-file", "e/env-file", "p/root-kilo", "p/sub-kilo",
                    "p/root-opencode", "p/root-opencode", "p/dot-kilocode", "p/dot-kilocode", "p/root-dot-kilo",
                    "h/home-dot-kilo",
                    "c/config-dir", "m/managed"]
    extra["KILO_DISABLE_PROJECT_CONFIG"] = "1"
    os.remove(home / ".kilo" / "kilo.json")
    for f in (cfg_dir / "kilo.json", managed / "kilo.json"):
        os.remove(f)
    _, found = layers(world, {**world["env"], **extra})
    assert next(r["routing"]["model"] for r in found if "model" in r["routing"]) == kilo_model(kilo_bin, world, extra) \
        == "e/env-file"


if __name__ == "__main__":  # a scenario inside a private network namespace (tests/netns.py)
    scenarios = {"quiet": _scenario_quiet}
    print(json.dumps(scenarios[sys.argv[1]](json.loads(sys.argv[2]))))

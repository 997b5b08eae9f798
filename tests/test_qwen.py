"""Qwen Code, added as one spec module (tools/qwen.py) and a registry line: the real pinned npm client
against loopback stubs from a contaminated shell, a repository and home files that try to redirect it,
the system layers, the profile table, the plan, `doctor`, `ps` and the resume hint. What every client gets
(`check`, `--record`, `inspect` of a client started by hand, the table's field rules) is the conformance
suite's and, with the real qwen recorded, tests/test_new_clients.py's."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import netns
import pytest
import real_client_files
from conftest import CLIENTS_BIN, skip_or_fail
from pty_session import PtySession
from real_client_files import profile_path, write_profile
from stub_server import StubServer
from waiting import open_by_anyone, until

from ccswitch_tui import policy, tools
from ccswitch_tui.diagnose.processes import recognise, tool_internal
from ccswitch_tui.errors import UsageError
from ccswitch_tui.launch.plan import plan_for
from ccswitch_tui.paths import Paths
from ccswitch_tui.profiles.presets import list_presets
from ccswitch_tui.profiles.schema import profile_from_data

KEY = "sk-qwenclient-0123456789abcdefXYZ"
VERSION = "0.24.4"


qwen_bin = real_client_files.pinned_bin("qwen")


def contaminated(base: dict[str, str], wrong: StubServer, bin_dir: Path) -> dict[str, str]:
    """A shell whose every routing variable Qwen Code reads points at the wrong stub or elsewhere."""
    hostile = Path(base["HOME"]).parent / "hostile-settings.json"
    hostile.write_text(json.dumps({"model": {"name": "shell-model"},
                                   "security": {"auth": {"selectedType": "anthropic"}}}))
    return {
        **base,
        "PATH": f"{bin_dir}:{base['PATH']}",
        "OPENAI_API_KEY": "sk-stale-wrong",
        "OPENAI_BASE_URL": f"{wrong.url}/v1",
        "OPENAI_MODEL": "stale-model",
        "QWEN_HOME": "/nonexistent/qwen-home",
        "QWEN_CODE_SYSTEM_SETTINGS_PATH": str(hostile),
        "QWEN_CODE_SYSTEM_DEFAULTS_PATH": str(hostile),
        "QWEN_DEFAULT_AUTH_TYPE": "anthropic",
        "QWEN_CODE_MODEL": "stale-model",
        "QWEN_USAGE_STATISTICS_ENABLED": "true",
        "DASHSCOPE_API_KEY": "sk-stale-dashscope",
        "DASHSCOPE_PROXY_BASE_URL": wrong.url,
        "ANTHROPIC_BASE_URL": wrong.url,
        "ANTHROPIC_API_KEY": "sk-ant-stale",
        "GEMINI_API_KEY": "stale-gemini-key",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "ALL_PROXY": "http://127.0.0.1:9",
    }


def redirecting_project(root: Path, wrong: StubServer, unbeatable: bool = True) -> Path:
    """A repository whose own files try to send Qwen Code elsewhere (its settings and .env files): with
    keys ccs's own system layer and environment beat, and (``unbeatable``) a proxy they cannot."""
    proj = root / "repo"
    (proj / ".qwen").mkdir(parents=True)
    settings: dict = {
        "security": {"auth": {"selectedType": "anthropic"}, "folderTrust": {"enabled": False}},
        "model": {"name": "project-model"},
        "modelProviders": {"openai": [{"id": "p-qwen", "name": "x", "baseUrl": f"{wrong.url}/v1",
                                       "envKey": "PROJECT_KEY"}]},
        "env": {"PROJECT_KEY": "sk-project", "OPENAI_BASE_URL": f"{wrong.url}/v1"},
    }
    dotenv = f"OPENAI_BASE_URL={wrong.url}/v1\nOPENAI_MODEL=project-model\nQWEN_CODE_SYSTEM_SETTINGS_PATH=/tmp/x.json\n"
    if unbeatable:
        settings["proxy"] = "http://127.0.0.1:9"
        settings["env"]["HTTPS_PROXY"] = "http://127.0.0.1:9"
        dotenv += "HTTPS_PROXY=http://127.0.0.1:9\nHTTP_PROXY=http://127.0.0.1:9\n"
    (proj / ".qwen" / "settings.json").write_text(json.dumps(settings))
    (proj / ".env").write_text(dotenv)
    (proj / ".qwen" / ".env").write_text(dotenv)
    return proj


PROFILE = real_client_files.PROVIDER.replace('"{url}"', '"{url}/v1"') + """[qwen]
model = "p-qwen"
"""


def make_profile(ccs, env, url: str, key_id: str, name: str = "p", extra: str = "") -> None:
    write_profile(ccs, env, PROFILE.format(url=url, key_id=key_id) + extra, key_id, KEY, name)


def tool_dir(name: str = "p") -> Path:
    return real_client_files.tool_dir("qwen", name)


def assert_key_in_no_file(*roots: Path) -> None:
    real_client_files.assert_key_in_no_file(KEY, *roots)


def manifest(ccs, env) -> dict:
    (m,) = json.loads(ccs("runs", "--json", env=env).stdout)["runs"]
    return m


# --- the real client -----------------------------------------------------------------------------

@pytest.mark.usefixtures("secret_service")
def test_qwen_from_a_contaminated_shell_and_a_redirecting_project_reaches_only_the_profile(
        ccs, base_env, stubs, qwen_bin, key_id, tmp_path):
    good, wrong = stubs("good"), stubs("wrong")
    env = contaminated(base_env, wrong, qwen_bin)
    home = Path(env["HOME"])
    # home .env files it reads whatever the folder: what ccs sets itself is ignored there, and the system
    # layer paths are pinned, so these do not redirect the launch
    hostile = tmp_path / "home-system.json"
    hostile.write_text(json.dumps({"model": {"name": "home-env-model"}}))
    (home / ".env").write_text(f"OPENAI_BASE_URL={wrong.url}/v1\nOPENAI_API_KEY=sk-home-env\n"
                               f"QWEN_CODE_SYSTEM_SETTINGS_PATH={hostile}\n")
    (home / ".qwen").mkdir()
    (home / ".qwen" / ".env").write_text(f"OPENAI_MODEL=home-env-model\nQWEN_CODE_SYSTEM_DEFAULTS_PATH={hostile}\n")
    (home / ".qwen" / "settings.json").write_text(json.dumps({"model": {"name": "user-model"}}))
    before = sorted(p.relative_to(home).as_posix() for p in home.rglob("*"))
    make_profile(ccs, env, good.url, key_id)
    proj = redirecting_project(tmp_path, wrong, unbeatable=False)
    r = ccs("launch", "p", "qwen", "--", "--yolo", "-p", "say hi", env=env, cwd=proj, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("stub reply")
    assert "would redirect a Qwen Code started here by hand" in r.stderr  # the project is named
    assert "Approval mode overridden" not in r.stderr  # the folder stays trusted: --yolo works
    posts = good.posts()
    assert posts and all(p.path == "/v1/chat/completions" for p in posts)  # the turn, then a memory extraction
    assert {p.headers["authorization"] for p in posts} == {f"Bearer {KEY}"}
    assert {p.body["model"] for p in posts} == {"p-qwen"}
    assert wrong.requests == []
    settings = json.loads((tool_dir() / "system-settings.json").read_text())
    assert settings["security"] == {"auth": {"selectedType": "openai"}}
    assert settings["model"]["name"] == "p-qwen"
    assert settings["modelProviders"] == {"openai": [{"id": "p-qwen", "name": "p-qwen", "baseUrl": f"{good.url}/v1",
                                                      "envKey": "OPENAI_API_KEY"}]}
    assert settings["privacy"]["usageStatisticsEnabled"] is False  # quiet: no usage statistics host
    assert settings["general"]["enableAutoUpdate"] is False  # no update check, no update run in its place
    assert any(tool_dir().glob("projects/*/chats/*.jsonl"))  # its sessions live in the profile's state
    after = sorted(p.relative_to(home).as_posix() for p in home.rglob("*"))
    assert after == before  # nothing written to the user's home
    assert_key_in_no_file(tool_dir(), home, proj, Path(os.environ["CCS_HOME"]) / "profiles")
    m = manifest(ccs, env)
    assert m["tool_version"] == f"@qwen-code/qwen-code@{VERSION}"
    assert m["base_urls"] == {"OPENAI_BASE_URL": f"{good.url}/v1"}
    assert m["models"] == {"OPENAI_MODEL": "p-qwen"} and m["exit_status"] == 0


@pytest.mark.usefixtures("secret_service")
def test_a_project_proxy_refuses_the_launch_and_isolate_leaves_the_project_out(
        ccs, base_env, stubs, qwen_bin, key_id, tmp_path):
    """A proxy in the project's settings, its env table or its .env is what ccs's own layer cannot
    replace: the launch is refused with the ways out; --isolate launches with the folder untrusted."""
    good, wrong = stubs("good"), stubs("wrong")
    env = {**base_env, "PATH": f"{qwen_bin}:{base_env['PATH']}"}
    make_profile(ccs, env, good.url, key_id)
    proj = redirecting_project(tmp_path, wrong)
    r = ccs("launch", "p", "qwen", "--", "-p", "say hi", env=env, cwd=proj, timeout=120)
    assert r.returncode == 2, r.stderr
    for named in (f"{proj / '.qwen' / 'settings.json'} sets proxy, env.HTTPS_PROXY (",
                  f"{proj / '.qwen' / '.env'} sets HTTPS_PROXY, HTTP_PROXY ("):
        assert named in r.stderr
    assert "--isolate" in r.stderr and "--force" in r.stderr and good.requests == []
    r = ccs("launch", "p", "qwen", "--isolate", "--", "-p", "say hi", env=env, cwd=proj, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "--isolate: Qwen Code runs with this folder untrusted" in r.stderr
    posts = good.posts()
    assert posts and {p.body["model"] for p in posts} == {"p-qwen"} and wrong.requests == []
    assert json.loads((tool_dir() / "trustedFolders.json").read_text()) == {str(proj): "DO_NOT_TRUST"}
    assert json.loads((tool_dir() / "system-settings.json").read_text())["security"]["folderTrust"] == {
        "enabled": True}


@pytest.mark.usefixtures("secret_service")
def test_a_home_env_file_that_would_route_it_refuses_the_launch(ccs, base_env, stubs, qwen_bin, key_id):
    """Qwen Code reads ~/.env and ~/.qwen/.env at every start and takes what its environment lacks: a
    proxy there would carry the launch elsewhere, so ccs refuses, naming the file and the variable."""
    good = stubs("good")
    env = {**base_env, "PATH": f"{qwen_bin}:{base_env['PATH']}"}
    home = Path(env["HOME"])
    make_profile(ccs, env, good.url, key_id)
    for path in (home / ".env", home / ".qwen" / ".env"):
        path.parent.mkdir(exist_ok=True)
        path.write_text("HTTPS_PROXY=http://127.0.0.1:9\nQWEN_USAGE_STATISTICS_ENABLED=true\nEDITOR=vi\n")
        r = ccs("launch", "p", "qwen", "--", "-p", "say hi", env=env)
        assert r.returncode == 2, r.stderr
        assert f"{path} sets HTTPS_PROXY, QWEN_USAGE_STATISTICS_ENABLED (Qwen Code's user layer" in r.stderr
        assert "read at every start, whatever the folder" in r.stderr
        assert "--force" in r.stderr and "Traceback" not in r.stderr
        path.unlink()
    assert good.requests == []
    # the shell's own proxy (kept with policy.inherit) beats the file's: nothing to refuse then
    (home / ".env").write_text("NO_PROXY=example.com\n")
    r = ccs("launch", "p", "qwen", "--", "--version", env=env)
    assert r.returncode == 2 and "sets NO_PROXY" in r.stderr
    path = profile_path()
    path.write_text(path.read_text() + '\n[policy]\ninherit = ["NO_PROXY"]\n')
    r = ccs("launch", "p", "qwen", "--", "-p", "say hi", env={**env, "NO_PROXY": "127.0.0.1"}, timeout=120)
    assert r.returncode == 0, r.stderr
    assert good.posts()


def test_the_system_layers_refuse_what_ccs_cannot_override(ccs, base_env, tmp_path, qwen_bin):
    """The system layer beats every other one: routing keys there refuse the launch (--force passes and
    is recorded). The system defaults lose to ccs's own user layer for the keys it sets; a proxy there
    would still apply, so that refuses too."""
    system = tmp_path / "etc" / "settings.json"
    system.parent.mkdir()
    env = {**base_env, "PATH": f"{qwen_bin}:{base_env['PATH']}", "CCS_QWEN_SYSTEM_SETTINGS": str(system), "QKEY": KEY}
    make_profile(ccs, env, "http://127.0.0.1:9", "env:QKEY")
    system.write_text('{\n  // comments are allowed\n  "security": {"auth": {"selectedType": "qwen-oauth"}}\n}\n')
    r = ccs("launch", "p", "qwen", "--", "--version", env=env)
    assert r.returncode == 2
    assert f"the system Qwen Code settings {system} set security.auth.selectedType" in r.stderr
    assert "--force" in r.stderr
    r = ccs("launch", "p", "qwen", "--force", "--", "--version", env=env)
    assert r.returncode == 0 and r.stdout.strip() == VERSION, r.stderr
    assert manifest(ccs, env)["forced"] is True
    system.unlink()
    defaults = system.parent / "system-defaults.json"
    defaults.write_text(json.dumps({"model": {"name": "x"}, "modelProviders": {"openai": []}}))
    r = ccs("env", "p", "--tool", "qwen", env=env)
    assert r.returncode == 0 and "system-defaults" not in r.stderr, r.stderr  # ccs's user layer sets both
    assert f"QWEN_CODE_SYSTEM_DEFAULTS_PATH={defaults}" in r.stdout
    defaults.write_text(json.dumps({"proxy": "http://user:secret@proxy.example:3128", "env": {"EDITOR": "vi"}}))
    r = ccs("launch", "p", "qwen", "--", "--version", env=env)
    assert r.returncode == 2
    assert f"the system Qwen Code settings {defaults} set proxy=" not in r.stderr  # keys named, values not
    assert f"the system Qwen Code settings {defaults} set proxy, which beat the layers ccs gives" in r.stderr
    assert "secret" not in r.stderr


@pytest.mark.usefixtures("secret_service")
def test_a_system_defaults_provider_entry_loses_to_the_profile(ccs, base_env, stubs, tmp_path, qwen_bin, key_id):
    """Measured: a modelProviders entry for the model in the system defaults beats OPENAI_BASE_URL; ccs's
    user layer names its own entry, which beats it."""
    good, wrong = stubs("good"), stubs("wrong")
    system = tmp_path / "etc" / "settings.json"
    system.parent.mkdir()
    (system.parent / "system-defaults.json").write_text(json.dumps({"modelProviders": {"openai": [
        {"id": "p-qwen", "name": "x", "baseUrl": f"{wrong.url}/v1", "envKey": "OPENAI_API_KEY"}]}}))
    env = {**base_env, "PATH": f"{qwen_bin}:{base_env['PATH']}", "CCS_QWEN_SYSTEM_SETTINGS": str(system)}
    make_profile(ccs, env, good.url, key_id)
    r = ccs("launch", "p", "qwen", "--", "-p", "say hi", env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert good.posts() and wrong.requests == []


@pytest.mark.usefixtures("secret_service")
def test_the_resume_hint_names_the_session_the_launch_wrote(ccs, base_env, stubs, qwen_bin, key_id, tmp_path):
    good = stubs("good")
    env = {**base_env, "PATH": f"{qwen_bin}:{base_env['PATH']}"}
    make_profile(ccs, env, good.url, key_id)
    since = time.time() - 1
    r = ccs("launch", "p", "qwen", "--", "-p", "say hi", env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    (session,) = tool_dir().glob("projects/*/chats/*.jsonl")
    p = profile_from_data("p", {"schema": 1, "provider": {"name": "S", "base_url": good.url, "key": key_id},
                                "qwen": {"model": "p-qwen"}})
    paths = Paths(profiles=profile_path().parent, state=Path(os.environ["CCS_HOME"]) / "state")
    plan = plan_for(p, "qwen", KEY, env, tmp_path, paths=paths)
    hint = tools.load().get("qwen").resume_command(plan, since)
    assert hint == f"--resume {session.stem}"
    r = ccs("launch", "p", "qwen", "--", *hint.split(), "-p", "again", env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    assert len(good.posts()[-1].body["messages"]) > len(good.posts()[0].body["messages"])  # the session went on
    assert tools.load().get("qwen").resume_command(plan, time.time() + 60) is None


# --- profile table and plan ------------------------------------------------------------------------

def _data(**tables):
    return real_client_files.profile_data("https://gw.example/v1", **tables)


def test_the_table_is_validated_by_its_spec():
    p = profile_from_data("p", _data(qwen={"model": "q"}))
    assert p.tools == ("qwen", "run")
    assert (p.side("qwen").base_url, p.side("qwen").model) == ("https://gw.example/v1", "q")
    # what its fields refuse (a missing model, a misspelt field, an ftp URL, a secret in [qwen.env]) is
    # tests/test_conformance.py's, for every client


def test_the_plan_routes_through_the_environment_and_its_own_user_layer(tmp_path):
    paths = Paths(profiles=tmp_path / "profiles", state=tmp_path / "state")
    p = profile_from_data("p", _data(qwen={"model": "q", "env": {"X": "1"}}))
    parent = {"PATH": "/usr/bin", "HOME": str(tmp_path / "home"), "OPENAI_API_KEY": "stale", "QWEN_HOME": "/x",
              "QWEN_CODE_SYSTEM_SETTINGS_PATH": "/x.json", "DASHSCOPE_API_KEY": "stale"}
    plan = plan_for(p, "qwen", KEY, parent, tmp_path, paths=paths)
    home = paths.tool_dir("p", "qwen")
    assert plan.env["OPENAI_API_KEY"] == KEY and plan.secret_names == {"OPENAI_API_KEY"}
    assert (plan.env["OPENAI_BASE_URL"], plan.env["OPENAI_MODEL"], plan.env["X"]) == ("https://gw.example/v1", "q", "1")
    assert plan.env["QWEN_HOME"] == str(home) and "DASHSCOPE_API_KEY" not in plan.env
    assert plan.env["QWEN_CODE_SYSTEM_SETTINGS_PATH"] == str(home / "system-settings.json")
    assert plan.env["QWEN_CODE_SYSTEM_DEFAULTS_PATH"] == "/etc/qwen-code/system-defaults.json"
    assert plan.env["QWEN_CODE_TRUSTED_FOLDERS_PATH"] == str(home / "trustedFolders.json")
    assert plan.argv == ("qwen",) and all(KEY not in f.content for f in plan.files)
    assert policy.plan_shown(plan, "OPENAI_API_KEY") != KEY
    assert plan.refusals == () and plan.client.quiet is True


def test_its_layers_keep_what_others_wrote_and_drop_what_would_route_it(tmp_path):
    """ccs's system layer is the machine's with ccs's keys on top. In the profile's user layer what Qwen
    Code or the user added stays; a key an interactive /auth saved, a proxy, an auth type ccs did not
    choose and routing variables in its env table go."""
    paths = Paths(profiles=tmp_path / "profiles", state=tmp_path / "state")
    machine = tmp_path / "etc" / "settings.json"
    machine.parent.mkdir()
    machine.write_text('{"ui": {"brand": "Corp"}, // the operator keeps it\n "model": {"maxSessionTurns": 5}}')
    settings = paths.tool_dir("p", "qwen") / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({
        "$version": 4, "ui": {"theme": "GitHub"}, "proxy": "http://127.0.0.1:9",
        "security": {"auth": {"selectedType": "anthropic", "apiKey": "sk-saved", "enforcedType": "anthropic"}},
        "modelProviders": {"openai": [{"id": "other"}], "anthropic": [{"id": "a"}]},
        "env": {"HTTPS_PROXY": "http://127.0.0.1:9", "OPENAI_MODEL": "x", "FOO": "bar"},
    }))
    p = profile_from_data("p", _data(qwen={"model": "q"}, policy={"quiet": False}))
    parent = {"HOME": str(tmp_path), "CCS_QWEN_SYSTEM_SETTINGS": str(machine)}
    system, user = plan_for(p, "qwen", KEY, parent, tmp_path, paths=paths).files
    assert system.path.name == "system-settings.json" and user.path == settings
    data = json.loads(user.content)
    assert data["$version"] == 4 and data["ui"] == {"theme": "GitHub"} and data["env"] == {"FOO": "bar"}
    assert "proxy" not in data and data["security"]["auth"] == {"selectedType": "anthropic"}
    assert data["modelProviders"] == {"openai": [{"id": "other"}], "anthropic": [{"id": "a"}]}
    data = json.loads(system.content)
    assert data["ui"] == {"brand": "Corp"} and data["model"] == {"maxSessionTurns": 5, "name": "q"}
    assert data["security"] == {"auth": {"selectedType": "openai"}}
    assert data["modelProviders"] == {"openai": [{"id": "q", "name": "q", "baseUrl": "https://gw.example/v1",
                                                  "envKey": "OPENAI_API_KEY"}]}
    assert "privacy" not in data and data["general"] == {"enableAutoUpdate": False}  # quiet off: stats stay on
    settings.write_text("{not json")

    with pytest.raises(UsageError, match="cannot read .*; remove it"):
        plan_for(p, "qwen", KEY, {"HOME": str(tmp_path)}, tmp_path, paths=paths)


# --- the rest of the core, through the registry ----------------------------------------------------

def test_ps_recognises_its_processes():
    """Its bin (cli-entry.js, through the .bin link) runs cli.js in a child node: both are Qwen Code."""
    pkg = "/x/node_modules/@qwen-code/qwen-code"
    assert recognise(["node", "/x/node_modules/.bin/qwen", "-p", "hi"]) == "qwen"
    assert recognise(["qwen"]) == "qwen"
    assert recognise(["/usr/bin/node", "--expose-gc", f"{pkg}/cli.js", "-p", "hi"]) == "qwen"
    assert recognise(["node", f"{pkg}/cli-entry.js"]) == "qwen"
    assert recognise(["node", "/x/qwen-like.js"]) is None

    hint = tools.load().families.routing_prefilter()
    assert hint.search(b"A=1\0QWEN_HOME=/x\0") and hint.search(b"DASHSCOPE_API_KEY=x\0")
    assert tools.load().families.routing_family("QWEN_DEFAULT_AUTH_TYPE") == "qwen"
    assert tools.load().families.routing_family("DASHSCOPE_API_KEY") == "qwen"  # inspect names it so
    assert "QWEN_CODE_LAUNCHER_PID" in tool_internal() and "QWEN_HOME" not in tool_internal()


def test_doctor_shows_its_layers_and_the_env_files_it_reads(ccs, base_env, stubs, tmp_path):
    wrong = stubs("wrong")
    proj = redirecting_project(tmp_path, wrong)
    home = Path(base_env["HOME"])
    (home / ".env").write_text("HTTPS_PROXY=http://127.0.0.1:9\nOPENAI_API_KEY=sk-in-a-home-file-0123456789\n")
    system = tmp_path / "etc" / "settings.json"
    system.parent.mkdir()
    system.write_text(json.dumps({"security": {"auth": {"apiKey": "sk-system-0123456789abcdef"}}}))
    profile = Path(os.environ["CCS_HOME"]) / "profiles" / "p.toml"  # a profile whose launch doctor judges
    profile.parent.mkdir(parents=True, exist_ok=True)
    profile.write_text('schema = 1\n[provider]\nname = "P"\nbase_url = "http://127.0.0.1:9/v1"\nkey = "env:QKEY"\n'
                       '[qwen]\nmodel = "p-qwen"\n')
    r = ccs("doctor", "--cwd", str(proj), "--json", env={**base_env, "CCS_QWEN_SYSTEM_SETTINGS": str(system)})
    data = json.loads(r.stdout)
    layers = {x["kind"]: x for x in data["qwen_layers"]}
    assert {"system", "system-defaults", "user", "project", "qwen-home-env", "home-env", "project-env"} <= set(layers)
    assert layers["project"]["routing"]["security.auth.selectedType"] == "anthropic"
    assert f"{wrong.url}/v1" in layers["project"]["routing"]["modelProviders"]
    assert layers["project"]["routing"]["env.OPENAI_BASE_URL"] == f"{wrong.url}/v1"
    assert layers["project"]["routing"]["env.HTTPS_PROXY"] == "http://127.0.0.1:9"
    assert "env.PROJECT_KEY" not in layers["project"]["routing"]  # not routing
    assert layers["system"]["routing"]["security.auth.apiKey"] != "sk-system-0123456789abcdef"
    assert not layers["user"]["exists"] and not layers["system-defaults"]["exists"]
    found = [f for f in data["findings"] if f["code"] == "settings-override" and "Qwen Code" in f["message"]]
    assert any(f["severity"] == "error" and f["variable"] == "security.auth.selectedType" for f in found)
    # measured: OPENAI_API_KEY beats a settings apiKey, even the system layer's; a launch sets it
    assert any(f["severity"] == "warn" and f["variable"] == "security.auth.apiKey"
               and "unless OPENAI_API_KEY is set" in f["message"] for f in found)
    home_env = {f["variable"]: f for f in data["findings"] if f["path"] == str(home / ".env")
                and "Qwen Code" in f["message"]}  # Gemini CLI and Aider read ~/.env too
    assert set(home_env) == {"HTTPS_PROXY", "OPENAI_API_KEY"}
    # the profile's launch would be refused for the proxy (it sets no proxy), not for the key (it sets one)
    assert home_env["HTTPS_PROXY"]["severity"] == "error" and "profile(s) p" in home_env["HTTPS_PROXY"]["message"]
    assert home_env["OPENAI_API_KEY"]["severity"] == "warn"
    assert "read at every start, whatever the folder" in home_env["OPENAI_API_KEY"]["message"]
    assert any(f["variable"] == "OPENAI_BASE_URL" and f["path"] == str(proj / ".qwen" / ".env")
               for f in data["findings"])
    assert "sk-system" not in r.stdout and "sk-in-a-home-file" not in r.stdout
    assert "qwen" in data["clients"]
    text = ccs("doctor", "--cwd", str(proj), env=base_env).stdout
    assert "Qwen Code layers" in text and re.search(r"project +\S+settings.json: .*selectedType", text)


def test_its_spec_declares_the_pin_the_install_script_installs(client_bin):
    clients_bin = client_bin("qwen")
    package = tools.load().get("qwen").package
    assert (package.manager, package.name, package.version) == ("npm", "@qwen-code/qwen-code", VERSION)
    pkg = clients_bin.parent / "node_modules" / "@qwen-code" / "qwen-code" / "package.json"
    assert json.loads(pkg.read_text())["version"] == VERSION


def test_presets_whose_provider_serves_chat_completions_carry_a_qwen_table():
    served = {p.name: p.profile.side("qwen") for p in list_presets() if p.profile.side("qwen")}
    assert {"qwen", "deepseek", "kimi", "glm", "openrouter", "taotoken", "minimax", "openai", "kimi-coding"} <= set(
        served)
    # the same rule as OpenCode's: a provider with an OpenAI-compatible endpoint serves both
    assert set(served) == {p.name for p in list_presets() if p.profile.side("opencode")}
    assert served["qwen"].base_url == "https://dashscope.aliyuncs.com/compatible-mode/v1"
    for name, side in served.items():
        assert side.base_url.startswith("https://") and side.model, name


def test_quiet_by_default_except_on_alibabas_own_api(tmp_path):
    """Its usage statistics go to Alibaba and its update check to npm whatever the endpoint: quiet is on by
    default even on OpenAI's API, off on DashScope, and [policy] quiet decides when it is set."""
    paths = Paths(profiles=tmp_path / "profiles", state=tmp_path / "state")

    def quiet(base: str, **policy_) -> bool:
        data = {**_data(qwen={"model": "q", "base_url": base}), "policy": policy_}
        return plan_for(profile_from_data("p", data), "qwen", KEY, {}, tmp_path, paths=paths).client.quiet

    assert quiet("https://api.openai.com/v1") and quiet("https://gw.example/v1")
    assert not quiet("https://dashscope.aliyuncs.com/compatible-mode/v1")
    assert not quiet("https://coding-intl.dashscope.aliyuncs.com/v1")
    assert quiet("https://dashscope.aliyuncs.com/compatible-mode/v1", quiet=True)
    assert not quiet("https://gw.example/v1", quiet=False)


# --- hosts besides the provider, in a private network namespace -----------------------------------

_CONNECT = re.compile(r"connect\(\d+, \{sa_family=AF_INET6?, sin6?_port=htons\((\d+)\), "
                      r"(?:sin_addr=inet_addr\(\"([^\"]+)\"\)|.*?inet_pton\(AF_INET6, \"([^\"]+)\")")


def scenario_hosts(tmp: str, quiet: bool) -> dict:
    """Inside the namespace: a stub, a profile, and Qwen Code under strace, once with `-p` and once
    interactive in a terminal for a while; every TCP/UDP connect it tries that is not to loopback."""


    root = Path(tmp)
    stub = StubServer("good")
    home, ccs_home, wrappers = root / "home", root / "ccs-home", root / "bin"
    for d in (home, wrappers, ccs_home / "profiles"):
        d.mkdir(parents=True, exist_ok=True)
    (ccs_home / "profiles" / "p.toml").write_text(
        PROFILE.format(url=stub.url, key_id="env:QKEY") + f"\n[policy]\nquiet = {str(quiet).lower()}\n")
    trace = root / "connect.trace"
    (wrappers / "qwen").write_text(f'#!/bin/sh\nexec strace -f -qq -e trace=connect -o {trace} '
                                   f'{CLIENTS_BIN / "qwen"} "$@"\n')
    (wrappers / "qwen").chmod(0o755)
    env = {"PATH": f"{wrappers}:{CLIENTS_BIN}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home),
           "CCS_HOME": str(ccs_home), "QKEY": KEY, "LANG": "C.UTF-8", "TERM": "xterm-256color"}
    ccs_argv = [sys.executable, "-m", "ccswitch_tui", "launch", "p", "qwen"]
    r = subprocess.run([*ccs_argv, "--", "-p", "say hi"], env=env, cwd=root, capture_output=True, text=True,
                       timeout=120, stdin=subprocess.DEVNULL)
    foreign = {"print": [], "interactive": []}

    def collect(into: list) -> None:
        for line in trace.read_text(errors="replace").splitlines():
            m = _CONNECT.search(line)
            if m and (m.group(2) or m.group(3)) not in ("127.0.0.1", "::1"):
                into.append(f"{m.group(2) or m.group(3)}:{m.group(1)}")
        trace.unlink()

    collect(foreign["print"])
    posts = len(stub.posts())
    s = PtySession(ccs_argv, env, cwd=root)
    try:
        s.expect("Type your message", 90)
        s.pump(12)  # the update check and usage statistics run after the first render
    finally:
        s.close()
        until(lambda: not open_by_anyone(trace), 30, "strace to close its log")
    collect(foreign["interactive"])
    return {"rc": r.returncode, "stderr": r.stderr[-2000:], "posts": posts, "foreign": foreign}


@pytest.mark.parametrize("quiet", [True, False], ids=["quiet", "not-quiet"])
def test_a_quiet_launch_contacts_only_the_provider(qwen_bin, tmp_path, quiet):
    """In a network namespace where only loopback exists, every connect Qwen Code tries is traced. Quiet,
    `-p` and an interactive session try nothing but the stub; not quiet, they try the usage statistics
    and update hosts (a DNS lookup first), which shows the trace would see them."""


    if not shutil.which("strace"):
        skip_or_fail("strace is needed (scripts/install-test-deps.sh installs it)")
    out = netns.run("scenario_hosts", script="test_qwen.py", tmp=str(tmp_path), quiet=quiet)
    assert out["rc"] == 0 and out["posts"], out["stderr"]
    if quiet:
        assert out["foreign"] == {"print": [], "interactive": []}
    else:
        assert out["foreign"]["print"] and out["foreign"]["interactive"], out


if __name__ == "__main__":  # tests/netns.py runs a scenario: `python test_qwen.py NAME JSON`
    print(json.dumps(globals()[sys.argv[1]](**json.loads(sys.argv[2]))))

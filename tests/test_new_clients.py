"""Gemini CLI and OpenCode, each added as one spec module (tools/gemini.py, tools/opencode.py) and a
registry line: the real pinned npm clients against loopback stubs from a contaminated shell, project
layers that try to redirect them, their own tables, plans, `check` and `doctor` findings, and the
guard that nothing outside tools/ names any registered client, and a recorded launch of each real npm
client (Gemini CLI, OpenCode, Kilo Code, Qwen Code). What every client must get from the core
(validation, show, export, env, ps and inspect, doctor, check, runs, the TUI) is tests/test_conformance.py
and tests/test_conformance_flows.py."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import real_client_files
from real_client_files import files_under, write_profile
from stub_server import StubServer

from ccswitch_tui import policy
from ccswitch_tui.diagnose.processes import recognise
from ccswitch_tui.launch.plan import plan_for
from ccswitch_tui.profiles.schema import profile_from_data

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-newclient-0123456789abcdefXYZ"


def contaminated(base: dict[str, str], wrong: StubServer, clients_bin: Path) -> dict[str, str]:
    """A shell whose every routing variable for these clients points at the wrong stub."""
    return {
        **base,
        "PATH": f"{clients_bin}:{base['PATH']}",
        "GEMINI_API_KEY": "stale-gemini-key",
        "GOOGLE_API_KEY": "stale-google-key",
        "GOOGLE_GEMINI_BASE_URL": wrong.url,
        "GEMINI_MODEL": "stale-model",
        "GOOGLE_GENAI_USE_VERTEXAI": "true",
        "GEMINI_CLI_HOME": "/nonexistent/gemini-home",
        "OPENCODE_CONFIG": "/nonexistent/opencode.json",
        "OPENCODE_CONFIG_CONTENT": json.dumps({"model": "wrong/model"}),
        "OPENAI_API_KEY": "sk-stale-wrong",
        "OPENAI_BASE_URL": f"{wrong.url}/v1",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "ALL_PROXY": "http://127.0.0.1:9",
    }


def redirecting_project(root: Path, wrong: StubServer) -> Path:
    """A repository whose own files try to send each client elsewhere."""
    proj = root / "repo"
    (proj / ".gemini").mkdir(parents=True)
    (proj / ".gemini" / "settings.json").write_text(json.dumps(
        {"security": {"auth": {"selectedType": "oauth-personal"}}, "model": {"name": "project-model"}}))
    (proj / ".env").write_text(f"GOOGLE_GEMINI_BASE_URL={wrong.url}\nGEMINI_MODEL=project-model\n"
                               "HTTPS_PROXY=http://127.0.0.1:9\nHTTP_PROXY=http://127.0.0.1:9\n")
    (proj / ".gemini" / ".env").write_text(f"GOOGLE_GEMINI_BASE_URL={wrong.url}\n")
    provider = {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": f"{wrong.url}/v1", "apiKey": "x"},
                "models": {"project-model": {}}}
    (proj / "opencode.json").write_text(json.dumps(
        {"model": "proj/project-model", "small_model": "proj/project-model", "provider": {"proj": provider}}))
    (proj / ".opencode").mkdir()
    (proj / ".opencode" / "opencode.json").write_text(json.dumps({"model": "proj/project-model",
                                                                  "provider": {"proj": provider}}))
    return proj


PROFILE = real_client_files.PROVIDER + """[gemini]
model = "p-gemini"

[opencode]
base_url = "{url}/v1"
model = "p-opencode"
"""


def make_profile(ccs, env, url: str, key_id: str, name: str = "p") -> None:
    write_profile(ccs, env, PROFILE.format(url=url, key_id=key_id), key_id, KEY, name)


def tool_dir(name: str, tool: str) -> Path:
    return real_client_files.tool_dir(tool, name)


def assert_key_in_no_file(*roots: Path) -> None:
    real_client_files.assert_key_in_no_file(KEY, *roots)


# --- the real clients ---------------------------------------------------------------------------

@pytest.mark.usefixtures("secret_service")
def test_gemini_from_a_contaminated_shell_and_a_redirecting_project_reaches_only_the_profile(
        ccs, base_env, stubs, client_bin, key_id, tmp_path):
    clients_bin = client_bin("gemini")
    good, wrong = stubs("good"), stubs("wrong")
    env = contaminated(base_env, wrong, clients_bin)
    make_profile(ccs, env, good.url, key_id)
    proj = redirecting_project(tmp_path, wrong)
    r = ccs("launch", "p", "gemini", "--", "-p", "say hi", "--output-format", "json", env=env, cwd=proj,
            timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout[r.stdout.index("{"):])["response"] == "stub reply"
    assert "would redirect a Gemini CLI started here by hand" in r.stderr  # the project is named
    (post,) = good.posts()  # one request: the profile's model, so no model router
    assert post.path == "/v1beta/models/p-gemini:streamGenerateContent?alt=sse"
    assert post.headers["x-goog-api-key"] == KEY
    assert "authorization" not in post.headers
    assert wrong.requests == []
    settings = json.loads((tool_dir("p", "gemini") / ".gemini" / "settings.json").read_text())
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert settings["privacy"]["usageStatisticsEnabled"] is False  # quiet: no usage statistics host
    assert_key_in_no_file(tool_dir("p", "gemini"), Path(os.environ["CCS_HOME"]) / "profiles")
    (manifest,) = json.loads(ccs("runs", "--json", env=env).stdout)["runs"]
    assert manifest["tool_version"] == "@google/gemini-cli@0.61.0"
    assert manifest["base_urls"] == {"GOOGLE_GEMINI_BASE_URL": good.url}
    assert manifest["models"] == {"GEMINI_MODEL": "p-gemini"} and manifest["exit_status"] == 0


@pytest.mark.usefixtures("secret_service")
def test_opencode_from_a_contaminated_shell_and_a_redirecting_project_reaches_only_the_profile(
        ccs, base_env, stubs, client_bin, key_id, tmp_path):
    clients_bin = client_bin("opencode")
    good, wrong = stubs("good"), stubs("wrong")
    env = contaminated(base_env, wrong, clients_bin)
    del env["OPENCODE_CONFIG_CONTENT"]  # measured: it beats every file, ccs's too; ccs never passes it on
    make_profile(ccs, env, good.url, key_id)
    proj = redirecting_project(tmp_path, wrong)
    real_client_files.launched(ccs, "opencode", ("run", "say hi"), env, cwd=proj, timeout=120)
    posts = good.posts()
    assert posts and all(p.path == "/v1/chat/completions" for p in posts)  # a title request and the turn
    assert {p.headers["authorization"] for p in posts} == {f"Bearer {KEY}"}
    assert {p.body["model"] for p in posts} == {"p-opencode"}
    assert wrong.requests == []
    config = json.loads((tool_dir("p", "opencode") / "config" / "opencode.json").read_text())
    assert config["model"] == config["small_model"] == "p/p-opencode"
    assert config["provider"]["p"]["options"]["apiKey"] == "{env:CCS_OPENCODE_API_KEY}"
    assert_key_in_no_file(tool_dir("p", "opencode"), Path(os.environ["CCS_HOME"]) / "profiles")
    (manifest,) = json.loads(ccs("runs", "--json", env=env).stdout)["runs"]
    assert manifest["tool_version"] == "opencode-ai@1.18.33"
    assert manifest["models"] == {"model": "p/p-opencode"} and manifest["exit_status"] == 0


@pytest.mark.usefixtures("secret_service")
def test_what_the_clients_and_the_user_add_to_their_config_is_kept(ccs, base_env, stubs, client_bin, key_id):
    clients_bin = client_bin("gemini", "opencode")
    good = stubs("good")
    env = {**base_env, "PATH": f"{clients_bin}:{base_env['PATH']}"}
    make_profile(ccs, env, good.url, key_id)
    for tool in ("gemini", "opencode"):
        assert ccs("env", "p", "--tool", tool, env=env).returncode == 0
    r = ccs("launch", "p", "opencode", "--", "--version", env=env)
    assert r.returncode == 0, r.stderr
    r = ccs("launch", "p", "gemini", "--", "--version", env=env)
    assert r.returncode == 0, r.stderr
    oc = tool_dir("p", "opencode") / "config" / "opencode.json"
    gm = tool_dir("p", "gemini") / ".gemini" / "settings.json"
    oc.write_text(json.dumps({**json.loads(oc.read_text()), "mcp": {"s": {"type": "local", "command": ["echo"]}}}))
    gm.write_text(json.dumps({**json.loads(gm.read_text()), "ui": {"theme": "GitHub"}, "model": {"name": "x"}}))
    path = Path(os.environ["CCS_HOME"]) / "profiles" / "p.toml"
    path.write_text(path.read_text().replace('"p-gemini"', '"p-gemini-2"').replace('"p-opencode"', '"p-oc-2"'))
    for tool in ("opencode", "gemini"):
        r = ccs("launch", "p", tool, "--", "--version", env=env)
        assert r.returncode == 0, r.stderr
    assert json.loads(oc.read_text())["mcp"] == {"s": {"type": "local", "command": ["echo"]}}
    assert json.loads(oc.read_text())["model"] == "p/p-oc-2"
    settings = json.loads(gm.read_text())
    assert settings["ui"] == {"theme": "GitHub"} and settings["model"]["name"] == "p-gemini-2"


# --- profile tables and plans --------------------------------------------------------------------

_data = real_client_files.profile_data


def test_tables_are_validated_by_their_specs():
    p = profile_from_data("p", _data(gemini={"model": "g"}, opencode={"model": "o"}))
    assert p.tools == ("gemini", "opencode", "run")
    assert (p.side("gemini").base_url, p.side("opencode").base_url, p.side("opencode").provider_id) == (
        "https://gw.example/api", "https://gw.example/api", "p")
    assert p.side("claude") is None and p.side("codex") is None
    # what every table's fields refuse is tests/test_conformance.py's; opencode's own rule:
    cases = [(dict(opencode={"model": "o", "provider_id": "Bad Id"}), "may hold only a-z", "[opencode].provider_id")]
    real_client_files.assert_each_refused(cases, _data)


def test_the_plans_route_through_the_environment_and_one_config_file(tmp_path):
    from ccswitch_tui.paths import Paths

    paths = Paths(profiles=tmp_path / "profiles", state=tmp_path / "state")
    p = profile_from_data("p", _data(gemini={"model": "g", "env": {"X": "1"}}, opencode={"model": "o"}))
    parent = {"PATH": "/usr/bin", "HOME": "/h", "GEMINI_API_KEY": "stale", "OPENCODE_CONFIG": "/x"}
    g = plan_for(p, "gemini", KEY, parent, tmp_path, paths=paths)
    assert g.env["GEMINI_API_KEY"] == KEY and g.secret_names == {"GEMINI_API_KEY"}
    assert (g.env["GOOGLE_GEMINI_BASE_URL"], g.env["GEMINI_MODEL"], g.env["X"]) == ("https://gw.example/api", "g", "1")
    assert g.env["GEMINI_CLI_HOME"] == str(paths.tool_dir("p", "gemini"))
    assert g.env["GEMINI_CLI_TRUST_WORKSPACE"] == "false"
    assert g.argv == ("gemini",) and all(KEY not in f.content for f in g.files)
    o = plan_for(p, "opencode", KEY, parent, tmp_path, paths=paths)
    assert "OPENCODE_CONFIG" not in o.env and o.env["OPENCODE_DISABLE_PROJECT_CONFIG"] == "1"
    assert o.env["CCS_OPENCODE_API_KEY"] == KEY and o.secret_names == {"CCS_OPENCODE_API_KEY"}
    assert o.env["OPENCODE_CONFIG_DIR"] == str(paths.tool_dir("p", "opencode") / "config")
    assert o.env["OPENCODE_DISABLE_MODELS_FETCH"] == "1"  # quiet by default for a third-party endpoint
    (f,) = o.files
    assert json.loads(f.content)["provider"]["p"]["options"]["baseURL"] == "https://gw.example/api"
    assert policy.plan_shown(o, "CCS_OPENCODE_API_KEY") != KEY


def test_a_system_gemini_layer_that_sets_routing_refuses_the_launch(ccs, base_env, tmp_path, client_bin):
    clients_bin = client_bin("gemini")
    system = tmp_path / "system-settings.json"
    system.write_text(json.dumps({"security": {"auth": {"selectedType": "vertex-ai"}}}))
    env = {**base_env, "PATH": f"{clients_bin}:{base_env['PATH']}", "CCS_GEMINI_SYSTEM_SETTINGS": str(system),
           "GKEY": KEY}
    write_profile(ccs, env, PROFILE.format(url="http://127.0.0.1:9", key_id="env:GKEY"), "env:GKEY", KEY)
    r = ccs("launch", "p", "gemini", "--", "--version", env=env)
    assert r.returncode == 2
    assert f"the system Gemini CLI settings {system} set security.auth.selectedType" in r.stderr
    assert "--force" in r.stderr
    r = ccs("launch", "p", "gemini", "--force", "--", "--version", env=env)
    assert r.returncode == 0, r.stderr
    (manifest,) = json.loads(ccs("runs", "--json", env=env).stdout)["runs"]
    assert manifest["forced"] is True


# --- the rest of the core, through the registry ---------------------------------------------------

def test_ps_recognises_their_processes():
    assert recognise(["node", "/x/node_modules/.bin/gemini", "-p", "hi"]) == "gemini"
    assert recognise(["/usr/bin/node", "--max-old-space-size=4096", "/x/node_modules/.bin/gemini"]) == "gemini"
    assert recognise(["opencode", "run", "hi"]) == "opencode"
    assert recognise(["/x/node_modules/opencode-ai/bin/opencode.exe", "run"]) == "opencode"
    assert recognise(["node", "/x/gemini-like.js"]) is None


def test_doctor_reads_geminis_layers_and_env_files(ccs, base_env, stubs, tmp_path):
    wrong = stubs("wrong")
    proj = redirecting_project(tmp_path, wrong)
    r = ccs("doctor", "--cwd", str(proj), "--json", env=base_env)
    data = json.loads(r.stdout)
    project = next(x for x in data["gemini_layers"] if x["kind"] == "project")
    assert project["routing"]["security.auth.selectedType"] == "oauth-personal"
    found = [f for f in data["findings"] if f["code"] == "settings-override" and "Gemini" in f["message"]]
    assert any(f["severity"] == "error" and f["variable"] == "security.auth.selectedType" for f in found)
    assert any(f["variable"] == "GOOGLE_GEMINI_BASE_URL" and f["path"].endswith(".env") for f in data["findings"])
    assert {"gemini", "opencode"} <= set(data["clients"])


def code_words(path: Path) -> set[str]:
    """The words the module uses in code: identifiers and strings, docstrings and comments aside
    (those explain; they steer nothing)."""
    import ast
    import io
    import tokenize

    src = path.read_text()
    docs: set[int] = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant) \
                    and isinstance(first.value.value, str):
                docs.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    words: set[str] = set()
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.STRING and tok.start[0] in docs:
            continue
        if tok.type in (tokenize.NAME, tokenize.STRING):
            words.update(w.lower() for w in re.findall(r"[A-Za-z]+", tok.string))
    return words


def test_a_client_is_named_only_in_its_own_module_and_the_registry():
    """Every registered client, names taken from the registry: nothing outside tools/ names it in
    code (the registry line aside)."""
    from ccswitch_tui import tools

    package = ROOT / "ccswitch_tui"
    words = {rel: code_words(f) for f in package.rglob("*.py")
             if not (rel := f.relative_to(package).as_posix()).startswith("tools/")}
    for spec in tools.load().clients():
        offenders = {rel for rel, used in words.items() if spec.name in used}
        assert not offenders, f"{spec.name} is named outside tools/: {sorted(offenders)}"
        registry = (ROOT / "ccswitch_tui" / "tools" / "__init__.py").read_text()
        assert len([line for line in registry.splitlines() if f'"{spec.name}":' in line]) == 1


def test_the_name_guard_sees_code_not_comments(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text('"""Works with Gemini CLI."""\n# gemini\nx = 1\n')
    assert "gemini" not in code_words(sample)
    sample.write_text('"""Doc."""\nif tool == "gemini":\n    pass\n')
    assert "gemini" in code_words(sample)


# every real npm client ccs writes a config for or reads the environment of, recorded: the provider's
# URL in none of its files (where it has one, the bridge's is), the key in none
RECORDED = real_client_files.PROVIDER + """[gemini]
model = "p-gemini"

[opencode]
base_url = "{url}/v1"
model = "p-opencode"

[kilo]
base_url = "{url}/v1"
model = "p-kilo"

[qwen]
base_url = "{url}/v1"
model = "p-qwen"
"""
BRIDGE_IN = {"opencode": "config/opencode.json", "kilo": "config/kilo.json", "qwen": "system-settings.json"}


@pytest.mark.usefixtures("secret_service")
@pytest.mark.parametrize("tool,args", [("gemini", ["-p", "say hi"]), ("opencode", ["run", "say hi"]),
                                       ("kilo", ["run", "say hi"]), ("qwen", ["-p", "say hi"])])
def test_a_recorded_launch_holds_the_key_in_the_bridge_and_records_each_request(
        ccs, base_env, stubs, client_bin, key_id, tool, args):
    good = stubs("good")
    env = {**base_env, "PATH": f"{client_bin(tool)}:{base_env['PATH']}"}
    write_profile(ccs, env, RECORDED.format(url=good.url, key_id=key_id), key_id, KEY)
    real_client_files.recorded_launch(ccs, env, good, tool, tuple(args), f"p-{tool}", KEY)
    (manifest,) = json.loads(ccs("runs", "--json", env=env).stdout)["runs"]
    for f in files_under(tool_dir("p", tool)):
        assert good.url not in f.read_text(errors="replace"), f  # only the bridge knows the provider
    if tool in BRIDGE_IN:
        assert manifest["recording"]["bridge"] in (tool_dir("p", tool) / BRIDGE_IN[tool]).read_text()
    assert_key_in_no_file(tool_dir("p", tool))

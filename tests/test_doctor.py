"""`ccs doctor` against real files in temporary directories: the shell, Claude Code's settings
layers, Codex config files (checked against the real codex too), the keyring, clients, profiles."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ccswitch_tui.diagnose.doctor import run_doctor
from ccswitch_tui.keys.keyring import KeyStore
from ccswitch_tui.profiles.store import Store
from ccswitch_tui.tools.codex import config_problems

KEY = "sk-doctor-SECRET-0123456789abcdef"
SHELL_KEY = "sk-doctor-SHELL-fedcba9876543210"

GOOD_CODEX = """model = "gpt-test"
model_provider = "loop"

[model_providers.loop]
name = "Loop"
base_url = "http://127.0.0.1:9/v1"
env_key = "LOOP_KEY"
wire_api = "responses"
"""


@pytest.fixture
def world(ccs_home, tmp_path):
    """An empty HOME, a project dir, no managed settings, and an environment pointing at them."""
    home = tmp_path / "home"
    project = tmp_path / "project"
    home.mkdir()
    project.mkdir()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "CCS_HOME": os.environ["CCS_HOME"],
        "DBUS_SESSION_BUS_ADDRESS": os.environ.get("DBUS_SESSION_BUS_ADDRESS", ""),
        "CCS_CLAUDE_MANAGED_SETTINGS": str(tmp_path / "managed" / "managed-settings.json"),
        "LANG": "C.UTF-8",
    }
    return {"home": home, "project": project, "env": env, "tmp": tmp_path, "paths": ccs_home}


def doctor(world, env=None):
    paths = world["paths"]
    environ = env or world["env"]
    return run_doctor(Store(paths), KeyStore(paths, environ), environ, world["project"], paths=paths)


def by(report, code):
    return [f for f in report.findings if f.code == code]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_clean_machine_has_no_errors(world):
    r = doctor(world)
    assert not r.has_errors
    assert {f.code for f in r.findings} <= {"client", "keyring"}
    assert r.keyring["reachable"] and r.keyring["backend"]
    assert [layer["kind"] for layer in r.sections["claude_layers"]] == ["managed", "local", "project", "user"]
    assert not any(layer["exists"] for layer in r.sections["claude_layers"])


def test_shell_routing_variables_and_the_tools_they_affect(world):
    env = {**world["env"], "ANTHROPIC_BASE_URL": "https://stale.example/api", "OPENAI_API_KEY": SHELL_KEY,
           "CODEX_HOME": str(world["tmp"] / "nowhere"), "HTTPS_PROXY": "http://u:proxypw@127.0.0.1:9",
           "NO_PROXY": "localhost", "CLAUDE_CODE_USE_BEDROCK": "1", "AWS_PROFILE": "dev", "EDITOR": "vi"}
    r = doctor(world, env)
    shell = {row["name"]: row for row in r.shell}
    assert set(shell) == {"ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "CODEX_HOME", "HTTPS_PROXY", "NO_PROXY",
                          "CLAUDE_CODE_USE_BEDROCK", "AWS_PROFILE"}
    assert shell["ANTHROPIC_BASE_URL"]["family"] == "claude" and "Claude Code" in shell["ANTHROPIC_BASE_URL"]["affects"]
    assert shell["OPENAI_API_KEY"]["family"] == "openai" and "OpenAI SDK" in shell["OPENAI_API_KEY"]["affects"]
    assert shell["CODEX_HOME"]["affects"] == "Codex"
    assert shell["OPENAI_API_KEY"]["value"].startswith("sk-…3210 (fp:")
    assert shell["HTTPS_PROXY"]["value"] == "http://u:****@127.0.0.1:9"
    codes = {(f.code, f.variable, f.severity) for f in r.findings if f.path == "shell"}
    assert ("unmanaged-routing", "ANTHROPIC_BASE_URL", "warn") in codes
    assert ("proxy", "HTTPS_PROXY", "warn") in codes and ("proxy", "NO_PROXY", "info") in codes
    assert ("cloud-switch", "CLAUDE_CODE_USE_BEDROCK", "warn") in codes
    assert all("ccs launches drop it" in f.message for f in r.findings if f.path == "shell")
    assert not r.has_errors  # the shell alone never stops a ccs launch
    text = r.text() + json.dumps(r.to_dict())
    assert SHELL_KEY not in text and "proxypw" not in text


def test_inside_a_ccs_child(world):
    env = {**world["env"], "CCS_LAUNCH_ID": "20261202T000000Z-abcd", "CCS_PROFILE": "p", "CCS_TOOL": "run",
           "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    r = doctor(world, env)
    (nested,) = by(r, "nested")
    assert "launch 20261202T000000Z-abcd" in nested.message and "--nested" in nested.message
    assert [f.severity for f in r.findings if f.path == "shell"] == ["info"]


def test_claude_settings_layers(world):
    project, home = world["project"], world["home"]
    write(project / ".claude" / "settings.json",
          json.dumps({"env": {"ANTHROPIC_BASE_URL": "https://proj.example/api", "ANTHROPIC_AUTH_TOKEN": KEY,
                              "DISABLE_TELEMETRY": "1"}, "permissions": {}}))
    write(project / ".claude" / "settings.local.json", json.dumps({"apiKeyHelper": f"echo {KEY}"}))
    write(home / ".claude" / "settings.json", json.dumps({"model": "opus", "env": {"HTTPS_PROXY": "http://p:1"}}))
    write(Path(world["env"]["CCS_CLAUDE_MANAGED_SETTINGS"]), json.dumps({"env": {"CLAUDE_CODE_USE_VERTEX": "1"}}))
    r = doctor(world)
    got = {(Path(f.path).name if f.path else None, f.variable, f.severity) for f in by(r, "settings-override")}
    assert got == {
        ("settings.json", "env.ANTHROPIC_BASE_URL", "error"),
        ("settings.json", "env.ANTHROPIC_AUTH_TOKEN", "error"),
        ("settings.local.json", "apiKeyHelper", "error"),
        ("managed-settings.json", "env.CLAUDE_CODE_USE_VERTEX", "error"),
        ("settings.json", "model", "warn"),  # the user layer: beaten by ccs's own config dir
        ("settings.json", "env.HTTPS_PROXY", "warn"),
    }
    proj = next(f for f in by(r, "settings-override") if f.variable == "env.ANTHROPIC_BASE_URL")
    assert "--isolate" in proj.message and "https://proj.example/api" in proj.message
    managed = next(f for f in by(r, "settings-override") if f.variable == "env.CLAUDE_CODE_USE_VERTEX")
    assert "--force" in managed.message
    assert r.has_errors
    layers = {layer["kind"]: layer for layer in r.sections["claude_layers"]}
    assert layers["project"]["routing"]["env.ANTHROPIC_AUTH_TOKEN"] == "sk-…cdef"
    assert layers["local"]["routing"]["apiKeyHelper"] == "echo sk-…cdef"  # the key masked, the command readable
    text = r.text() + json.dumps(r.to_dict())
    assert KEY not in text


def test_a_settings_model_is_named_as_beaten_by_anthropic_model_in_the_environment(world):
    """Measured with Claude Code: ANTHROPIC_MODEL in the environment beats a settings file's `model`, so
    the finding is a warning that says so, for the user layer and a project's alike."""
    project, home = world["project"], world["home"]
    write(home / ".claude" / "settings.json", json.dumps({"model": "opus"}))
    write(project / ".claude" / "settings.json", json.dumps({"model": "sonnet"}))
    found = {Path(f.path).parent.parent.name: f for f in by(doctor(world), "settings-override")
             if f.variable == "model"}
    assert set(found) == {"home", "project"} and {f.severity for f in found.values()} == {"warn"}
    user, proj = found["home"].message, found["project"].message
    assert user.startswith("user Claude Code layer 'user' sets model=opus, which a Claude Code started directly "
                           "follows unless ANTHROPIC_MODEL is set (the environment wins)")
    assert proj.startswith(f"project Claude Code layer 'project' sets model=sonnet, which a Claude Code started in "
                           f"{project} follows unless ANTHROPIC_MODEL is set (the environment wins)")


def test_claude_config_dir_moves_the_user_layer_and_broken_json_is_reported(world):
    cfg = world["tmp"] / "cfg"
    write(cfg / "settings.json", json.dumps({"env": {"ANTHROPIC_MODEL": "x"}}))
    write(world["project"] / ".claude" / "settings.json", "{not json")
    write(world["project"] / ".claude" / "settings.local.json", json.dumps({"env": {"FOO": "1"}}))
    r = doctor(world, {**world["env"], "CLAUDE_CONFIG_DIR": str(cfg)})
    assert [(f.variable, f.severity) for f in by(r, "settings-override")] == [("env.ANTHROPIC_MODEL", "warn")]
    (bad,) = by(r, "settings-invalid")
    assert bad.path.endswith(".claude/settings.json") and "not valid JSON" in bad.message


def test_profiles_own_claude_user_layer(world, key_id):
    store = Store(world["paths"])
    store.save_text("p", f'schema = 1\n[provider]\nname = "P"\nbase_url = "http://127.0.0.1:9"\nkey = "{key_id}"\n'
                         '[claude]\nmodel = "m"\n', create=True)
    layer = world["paths"].tool_dir("p", "claude") / "settings.json"
    write(layer, json.dumps({"env": {"ANTHROPIC_MODEL": "beaten-by-ccs"}, "apiKeyHelper": "cat /tmp/k"}))
    r = doctor(world)
    assert [(f.variable, f.severity) for f in by(r, "settings-override")] == [("apiKeyHelper", "error")]


# --- Codex ----------------------------------------------------------------------------------------

CODEX_CASES = [
    (GOOD_CODEX, {"LOOP_KEY": "x"}, set()),
    (GOOD_CODEX.replace('"responses"', '"chat"'), {"LOOP_KEY": "x"},
     {("model_providers.loop.wire_api", "error")}),
    ('profile = "work"\n' + GOOD_CODEX, {"LOOP_KEY": "x"}, {("profile", "error")}),
    (GOOD_CODEX + '\n[profiles.work]\nmodel = "m"\n', {"LOOP_KEY": "x"}, {("profiles.work", "warn")}),
    (GOOD_CODEX.replace("loop", "openai"), {"LOOP_KEY": "x"}, {("model_providers.openai", "error")}),
    (GOOD_CODEX, {}, {("LOOP_KEY", "error")}),
    (GOOD_CODEX.replace('model_provider = "loop"', 'model_provider = "openai"'), {}, {("LOOP_KEY", "warn")}),
    (GOOD_CODEX.replace('model_provider = "loop"', 'model_provider = "lopo"'), {"LOOP_KEY": "x"},
     {("model_provider", "error")}),
    ('model = "x"\nopenai_base_url = "http://127.0.0.1:9/v1"\n', {}, set()),
]


@pytest.mark.parametrize(("text", "extra_env", "expected"), CODEX_CASES)
def test_codex_config_rules(world, text, extra_env, expected):
    cx = world["tmp"] / "codex-home"
    write(cx / "config.toml", text)
    r = doctor(world, {**world["env"], "CODEX_HOME": str(cx), **extra_env})
    assert {(f.variable, f.severity) for f in by(r, "codex-config-invalid")} == expected
    assert r.sections["codex"]["home"] == str(cx)


@pytest.mark.parametrize("pid", ["openai", "ollama", "lmstudio", "amazon-bedrock"])
def test_a_built_in_provider_id_in_model_providers_is_called_a_refusal_to_start(world, pid):
    cx = world["tmp"] / "codex-home"
    write(cx / "config.toml", GOOD_CODEX.replace("loop", pid))
    r = doctor(world, {**world["env"], "CODEX_HOME": str(cx), "LOOP_KEY": "x"})
    (f,) = by(r, "codex-config-invalid")
    assert f.severity == "error" and f.variable == f"model_providers.{pid}"
    assert f.message == (f"[model_providers.{pid}] reuses the built-in provider id {pid!r} for http://127.0.0.1:9/v1; "
                         "Codex refuses to start (built-in provider ids are reserved); rename it to a custom id "
                         "(and model_provider with it)"), f.message
    assert f.path.endswith("config.toml:4"), f.path


@pytest.mark.parametrize("pid", ["azure", "oss"])
def test_azure_and_oss_are_free_provider_ids(world, pid):
    cx = world["tmp"] / "codex-home"
    write(cx / "config.toml", GOOD_CODEX.replace("loop", pid))
    r = doctor(world, {**world["env"], "CODEX_HOME": str(cx), "LOOP_KEY": "x"})
    assert by(r, "codex-config-invalid") == []


def test_codex_home_defaults_to_dot_codex_and_names_lines(world):
    path = write(world["home"] / ".codex" / "config.toml", GOOD_CODEX.replace('"responses"', '"chat"'))
    r = doctor(world, {**world["env"], "LOOP_KEY": "x"})
    (f,) = by(r, "codex-config-invalid")
    assert f.path == f"{path}:8" and 'wire_api = "chat"' in f.message
    assert "ccs import codex" in f.message and "[codex] table" in f.message  # the way out is ccs's translation
    assert r.has_errors


def test_codex_syntax_error_and_profile_files(world):
    cx = world["tmp"] / "cx"
    write(cx / "config.toml", 'model = "x"\n[model_providers.a\n')
    write(cx / "work.config.toml", GOOD_CODEX.replace('"responses"', '"chat"'))
    r = doctor(world, {**world["env"], "CODEX_HOME": str(cx)})
    got = {(Path(f.path.split(":")[0]).name, f.severity) for f in by(r, "codex-config-invalid")}
    assert ("config.toml", "error") in got and ("work.config.toml", "error") in got
    syntax = next(f for f in by(r, "codex-config-invalid") if f.path.startswith(str(cx / "config.toml")))
    assert f"not valid TOML ({cx / 'config.toml'}:2:" in syntax.message
    write(cx / "config.toml", 'model = "x"\n[a]\nb = 1\n[a.b]\nc = 2\n')  # a table defined twice
    r = doctor(world, {**world["env"], "CODEX_HOME": str(cx)})
    main = str(cx / "config.toml")  # with the line of the second definition where tomlkit knows it
    twice = next(f for f in by(r, "codex-config-invalid") if f.path == main or f.path.startswith(main + ":"))
    assert "not valid TOML" in twice.message
    # in a profile file an unset env_key matters only when that profile is used
    assert ("work.config.toml", "warn") in got


def test_the_real_codex_rejects_what_doctor_calls_errors(world, client_bin, tmp_path):
    """Cross-check the rules with the installed Codex: both hard errors stop it before any request."""
    clients_bin = client_bin("codex")
    for name, text, needle in (("chat", GOOD_CODEX.replace('"responses"', '"chat"'), "wire_api"),
                               ("profile", 'profile = "work"\n' + GOOD_CODEX, "profile"),
                               ("builtin", GOOD_CODEX.replace("loop", "openai"), "reserved built-in provider")):
        cx = tmp_path / f"cx-{name}"
        write(cx / "config.toml", text)
        found = config_problems(cx / "config.toml", (cx / "config.toml").read_text(), {"LOOP_KEY": "x"})
        assert {f.severity for f in found} == {"error"}
        env = {"PATH": f"{clients_bin}:/usr/bin:/bin", "HOME": str(tmp_path), "CODEX_HOME": str(cx), "LOOP_KEY": "x"}
        res = subprocess.run([str(clients_bin / "codex"), "exec", "--skip-git-repo-check", "hi"], env=env,
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        # Codex's own status, which it does not document: that it stops, and why, is what matters here
        assert res.returncode != 0 and needle in res.stderr + res.stdout, res.stderr


def codex_starts(clients_bin: Path, codex_home: Path, tmp_path: Path, env: dict[str, str]) -> str:
    """Run the real `codex exec` until it has read its config and named the provider in its header
    (its request then goes to a closed port and is retried; it is stopped there); its output."""
    p = subprocess.Popen([str(clients_bin / "codex"), "exec", "--skip-git-repo-check", "hi"],
                         env={"PATH": f"{clients_bin}:/usr/bin:/bin", "HOME": str(tmp_path),
                              "CODEX_HOME": str(codex_home), **env},
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)  # its own group: the npm wrapper and the native codex under it
    seen = []
    try:
        for line in p.stdout:
            seen.append(line)
            if line.startswith("provider: "):
                break
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate(timeout=30)
    return "".join(seen)


@pytest.mark.parametrize("pid", ["azure", "oss"])
def test_azure_and_oss_are_accepted_as_codex_provider_id(world, client_bin, tmp_path, pid):
    """ccs accepts them as [codex].provider_id (unlike the built-in ids), writes them into the
    profile's config.toml, doctor finds nothing wrong there, and the real Codex starts with it."""
    clients_bin = client_bin("codex")
    store = Store(world["paths"])
    store.save_text("p", 'schema = 1\n[provider]\nname = "P"\nbase_url = "http://127.0.0.1:9/v1"\n'
                         f'key = "env:P_KEY"\n[codex]\nmodel = "m"\nprovider_id = "{pid}"\n', create=True)
    profile = store.load("p")  # validated: no "built-in Codex provider id" refusal
    assert profile.side("codex").provider_id == pid
    from ccswitch_tui.tools.codex.config import content

    home = world["paths"].tool_dir("p", "codex")
    config = content(home / "config.toml", profile, quiet=True)  # what a launch writes there
    write(home / "config.toml", config)
    assert f"[model_providers.{pid}]" in config and f'model_provider = "{pid}"' in config
    assert config_problems(home / "config.toml", config, {"CCS_CODEX_API_KEY": "x"}) == []
    out = codex_starts(clients_bin, home, tmp_path, {"CCS_CODEX_API_KEY": "x"})
    assert f"provider: {pid}\n" in out and "reserved" not in out, out


# --- keyring, clients, profiles, the command ------------------------------------------------------

def test_clients_keys_and_profiles(world, key_id, client_bin):
    clients_bin = client_bin("claude", "codex")
    store = Store(world["paths"])
    base = 'schema = 1\n[provider]\nname = "P"\nbase_url = "http://127.0.0.1:9"\n'
    store.save_text("has-key", base + f'key = "{key_id}"\n', create=True)
    store.save_text("no-key", base + 'key = "never-stored-id"\n', create=True)
    store.save_text("env-key", base + 'key = "env:DOCTOR_TEST_KEY"\n', create=True)
    write(store.path_for("broken"), "schema = 1\n[provider\n")
    KeyStore(world["paths"]).set(key_id, KEY)
    env = {**world["env"], "PATH": f"{clients_bin}:/usr/bin:/bin"}
    r = doctor(world, env)
    missing = {f.variable for f in by(r, "key-missing")}
    assert missing == {"never-stored-id", "env:DOCTOR_TEST_KEY"}
    assert {f.severity for f in by(r, "key-missing")} == {"warn"}
    (broken,) = by(r, "profile-invalid")
    assert broken.severity == "error" and "broken.toml" in broken.path
    rows = {p["name"]: p for p in r.profiles}
    assert rows["has-key"]["key_present"] is True and rows["no-key"]["key_present"] is False
    assert r.clients["claude"]["version"].startswith("2.") and r.clients["codex"]["version"].startswith("0.")
    assert r.clients["codex"]["path"] == str(clients_bin / "codex")
    r2 = doctor(world, {**env, "DOCTOR_TEST_KEY": "x"})
    assert {f.variable for f in by(r2, "key-missing")} == {"never-stored-id"}
    assert doctor(world).clients["claude"] == {"path": None, "version": None}


def test_command_exit_codes_json_and_no_key(world, ccs, key_id, client_bin):
    clients_bin = client_bin("claude", "codex")
    env = {**world["env"], "PATH": f"{clients_bin}:{Path(sys.executable).parent}:/usr/bin:/bin",
           "ANTHROPIC_AUTH_TOKEN": SHELL_KEY}
    Store(world["paths"]).save_text(
        "p", f'schema = 1\n[provider]\nname = "P"\nbase_url = "http://127.0.0.1:9"\nkey = "{key_id}"\n', create=True)
    KeyStore(world["paths"]).set(key_id, KEY)
    outputs = []
    r = ccs("doctor", "--cwd", str(world["project"]), env=env)
    outputs += [r.stdout, r.stderr]
    assert r.returncode == 0, r.stderr
    assert "Claude Code layers (highest first" in r.stdout and "ANTHROPIC_AUTH_TOKEN=sk-…3210 (fp:" in r.stdout
    write(world["project"] / ".claude" / "settings.json", json.dumps({"env": {"ANTHROPIC_API_KEY": KEY}}))
    for args in (["doctor", "--cwd", str(world["project"])], ["doctor", "--json", "--cwd", str(world["project"])]):
        r = ccs(*args, env=env)
        outputs += [r.stdout, r.stderr]
        assert r.returncode == 3 and r.stderr.strip() == "ccs: error: doctor: 1 error finding(s)"
    data = json.loads(outputs[-2])
    assert set(data) == {"cwd", "counts", "findings", "shell", "claude_layers", "codex", "codex_layers",
                         "gemini_layers", "opencode_layers", "kilo_layers", "qwen_layers", "aider_layers",
                         "keyring", "clients",
                         "profiles", "shims"}
    assert data["counts"]["error"] == 1 and data["findings"][0]["code"] == "settings-override"
    assert data["keyring"]["reachable"] is True
    r = ccs("doctor", env=env, cwd=world["project"])  # the current directory by default
    outputs += [r.stdout, r.stderr]
    assert r.returncode == 3
    r = ccs("doctor", "--cwd", str(world["tmp"] / "nope"), env=env)
    assert r.returncode == 2 and "no such directory" in r.stderr and "Traceback" not in r.stderr
    for out in outputs:
        assert KEY not in out and SHELL_KEY not in out


def test_keyring_unreachable_is_an_error_when_profiles_need_it(world, ccs):
    Store(world["paths"]).save_text(
        "p", 'schema = 1\n[provider]\nname = "P"\nbase_url = "http://127.0.0.1:9"\nkey = "some-id"\n', create=True)
    env = {k: v for k, v in world["env"].items() if k != "DBUS_SESSION_BUS_ADDRESS"}
    env["PATH"] = f"{Path(sys.executable).parent}:/usr/bin:/bin"
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
    r = ccs("doctor", "--json", "--cwd", str(world["project"]), env=env)
    assert r.returncode == 3, r.stderr
    data = json.loads(r.stdout)
    assert data["keyring"]["reachable"] is False and "fail" in data["keyring"]["backend"]
    (kr,) = [f for f in data["findings"] if f["code"] == "keyring"]
    assert kr["severity"] == "error" and "profiles p cannot launch" in kr["message"]


@pytest.mark.usefixtures("secret_service")
def test_doctor_names_the_secret_service_without_the_keyring_library(world):
    """When the Secret Service answers on the fast path (no PYTHON_KEYRING_BACKEND, no keyringrc.cfg),
    doctor names it as keyring would, without importing the keyring library to ask its name."""
    Store(world["paths"]).save_text(
        "p", 'schema = 1\n[provider]\nname = "P"\nbase_url = "http://127.0.0.1:9"\nkey = "some-id"\n', create=True)
    code = ("import json, sys\n"
            "from pathlib import Path\n"
            "from ccswitch_tui.diagnose.doctor import run_doctor\n"
            "from ccswitch_tui.keys.keyring import KeyStore\n"
            "from ccswitch_tui.paths import resolve_paths\n"
            "from ccswitch_tui.profiles.store import Store\n"
            "paths = resolve_paths()\n"
            "r = run_doctor(Store(paths), KeyStore(paths), dict(__import__('os').environ), Path(sys.argv[1]))\n"
            "print(json.dumps([r.keyring, 'keyring' in sys.modules]))")
    env = {**world["env"], "CCS_HOME": str(world["paths"].profiles.parent)}
    r = subprocess.run([sys.executable, "-c", code, str(world["project"])], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    keyring, imported = json.loads(r.stdout)
    assert keyring == {"backend": "SecretService.Keyring", "reachable": True, "error": None} and not imported
    from keyring.backends import SecretService

    # what the keyring library calls that backend
    assert keyring["backend"] == KeyStore(world["paths"], backend=SecretService.Keyring()).backend_name()

"""`ccs doctor` reads OpenCode's configuration layers (global, OPENCODE_CONFIG, a project's opencode.json[c]
and .opencode/ up to the git root, OPENCODE_CONFIG_DIR) and names the routing keys they set; the order it
lists them in is the real opencode's precedence (`opencode debug config` resolves the same model)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ccswitch_tui import tools
from ccswitch_tui.diagnose.doctor import run_doctor
from ccswitch_tui.keys.keyring import KeyStore
from ccswitch_tui.launch.layers import doctor_part
from ccswitch_tui.profiles.store import Store

SECRET = "sk-opencode-doctor-0123456789abcdef"


@pytest.fixture
def world(ccs_home, tmp_path):
    home = tmp_path / "home"
    repo = tmp_path / "outside" / "repo"
    (repo / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)  # a real repository: opencode asks git
    home.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "CCS_HOME": os.environ["CCS_HOME"], "LANG": "C.UTF-8",
           "DBUS_SESSION_BUS_ADDRESS": os.environ.get("DBUS_SESSION_BUS_ADDRESS", ""),
           "CCS_CLAUDE_MANAGED_SETTINGS": str(tmp_path / "no-managed.json")}
    return {"home": home, "repo": repo, "cwd": repo / "sub", "env": env, "paths": ccs_home, "tmp": tmp_path}


def write(path: Path, data: dict | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def layers(world, env=None):
    part = doctor_part(tools.load().get("opencode"), env or world["env"], world["cwd"], tools.load().families)
    return part, [row for row in part.info if row["exists"]]


def test_doctor_names_each_layer_and_its_routing_keys(world):
    glob = write(world["home"] / ".config" / "opencode" / "opencode.jsonc",
                 '// mine\n{"model": "g/global", "disabled_providers": ["p"],}\n')
    proj = write(world["repo"] / "opencode.json", {"model": "p/project", "provider": {"p": {"options": {
        "baseURL": "http://127.0.0.1:9/v1", "apiKey": SECRET}}}})
    dot = write(world["cwd"] / ".opencode" / "opencode.json", {"small_model": "d/dot"})
    write(world["tmp"] / "outside" / "opencode.json", {"model": "above/the-git-root"})  # not OpenCode's: not listed
    part, found = layers(world)
    assert [(r["kind"], r["path"]) for r in found] == [("project", str(dot)), ("project", str(proj)),
                                                       ("global", str(glob))]
    assert found[1]["routing"]["provider.p.options.baseURL"] == "http://127.0.0.1:9/v1"
    assert SECRET not in json.dumps(part.info) + "\n".join(part.lines) + " ".join(f.message for f in part.findings)
    codes = {(f.severity, f.path, f.variable) for f in part.findings if f.code == "settings-override"}
    assert ("error", str(proj), "model") in codes and ("error", str(dot), "small_model") in codes
    assert ("warn", str(glob), "model") in codes and ("warn", str(glob), "disabled_providers") in codes
    assert any("ccs launches included" in f.message for f in part.findings if f.variable == "disabled_providers")

    write(proj, "{ not json")
    part, _ = layers(world)
    assert any(f.code == "settings-invalid" and f.path == str(proj) for f in part.findings)

    # the whole doctor: its report carries the section and the findings
    report = run_doctor(Store(world["paths"]), KeyStore(world["paths"], world["env"]), world["env"], world["cwd"],
                        paths=world["paths"])
    assert "opencode_layers" in report.sections
    assert any(f.path == str(dot) for f in report.findings)


def test_project_layers_are_dropped_as_opencode_drops_them(world):
    write(world["repo"] / "opencode.json", {"model": "p/project"})
    _, found = layers(world, {**world["env"], "OPENCODE_DISABLE_PROJECT_CONFIG": "1"})
    assert [r["kind"] for r in found] == []


def opencode_model(clients_bin: Path, world, extra: dict[str, str]) -> str | None:
    env = {"PATH": f"{clients_bin}:/usr/bin:/bin", "HOME": str(world["home"]), "OPENCODE_DISABLE_MODELS_FETCH": "1",
           "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_SHARE": "1", **extra}
    r = subprocess.run(["opencode", "debug", "config"], cwd=world["cwd"], env=env, capture_output=True, text=True,
                       timeout=90, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout[r.stdout.index("{"):]).get("model")


def test_the_listed_order_is_the_real_opencodes_precedence(world, client_bin):
    """For each arrangement, the highest layer doctor lists that sets `model` names the model the real
    opencode resolves."""
    clients_bin = client_bin("opencode")
    cfg_dir = world["tmp"] / "cfgdir"
    env_file = world["tmp"] / "env-config.json"
    steps = [
        ({}, [(world["home"] / ".config" / "opencode" / "opencode.jsonc", '// c\n{"model": "g/jsonc"}')]),
        ({}, [(world["tmp"] / "outside" / "opencode.json", {"model": "above/git-root"})]),
        ({}, [(world["repo"] / "opencode.json", {"model": "p/root"})]),
        ({"OPENCODE_CONFIG": str(env_file)}, [(env_file, {"model": "e/env-file"})]),
        ({}, [(world["cwd"] / ".opencode" / "opencode.jsonc", {"model": "s/sub-dot"})]),
        ({"OPENCODE_CONFIG_DIR": str(cfg_dir)}, [(cfg_dir / "opencode.json", {"model": "c/config-dir"})]),
        ({"OPENCODE_DISABLE_PROJECT_CONFIG": "1"}, []),
    ]
    extra: dict[str, str] = {}
    seen = []
    for add_env, files in steps:
        extra.update(add_env)
        for path, data in files:
            write(path, data)
        _, found = layers(world, {**world["env"], **extra})
        listed = next((r["routing"]["model"] for r in found if "model" in r["routing"]), None)
        real = opencode_model(clients_bin, world, extra)
        seen.append(real)
        assert listed == real, (extra, [(r["kind"], r["path"], r["routing"]) for r in found])
    assert seen == ["g/jsonc", "g/jsonc", "p/root", "p/root", "s/sub-dot", "c/config-dir", "c/config-dir"]


def test_doctor_says_an_opencode(world):
    """The findings read "which a OpenCode started … follows"."""
    write(world["home"] / ".config" / "opencode" / "opencode.json", {"model": "g/global"})
    write(world["repo"] / "opencode.json", {"model": "p/project"})
    part, _ = layers(world)
    messages = " ".join(f.message for f in part.findings)
    assert "an OpenCode started" in messages and "a OpenCode" not in messages, messages

"""`ccs use`, `.ccs-profile` and the shims, with real parts: the real `claude` and `codex` started by
name through the shim folder first on PATH, from a contaminated shell, against loopback stubs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_launch import KEY, contaminated, make_profile

from ccswitch_tui import tools
from ccswitch_tui.launch import shim_setup, shims


def shim_dir() -> Path:
    return Path(os.environ["CCS_HOME"]) / "state" / "shims"


def by_name(env: dict[str, str], *argv: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """A client started by name, as a person or an editor starts it: no ccs in the command."""
    return subprocess.run(list(argv), env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def manifests(ccs, env) -> list[dict]:
    return json.loads(ccs("runs", "--json", env=env).stdout)["runs"]


def repository(tmp_path: Path, profile_line: str) -> Path:
    repo = tmp_path / "repo"
    (repo / "src" / "deep").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".ccs-profile").write_text(f"# this project's provider\n{profile_line}\n")
    return repo / "src" / "deep"


@pytest.mark.usefixtures("secret_service")
def test_clients_started_by_name_reach_only_the_project_profile(ccs, base_env, stubs, client_bin, key_id,
                                                                tmp_path):
    clients_bin = client_bin("claude", "codex")
    good, other, wrong = stubs("good"), stubs("other"), stubs("wrong")
    env = contaminated(base_env, wrong, clients_bin)
    make_profile(ccs, env, "p", good.url, key_id)
    make_profile(ccs, env, "q", other.url, key_id)
    r = ccs("use", "q", env=env)  # the global choice, which the project's file beats
    assert r.returncode == 0, r.stderr
    assert f'export PATH="{shim_dir()}:$PATH"' in r.stdout  # the one-time PATH line
    env["PATH"] = f"{shim_dir()}:{env['PATH']}"  # shims first, the real clients right behind them
    cwd = repository(tmp_path, "p")

    status = ccs("status", "--json", env=env, cwd=cwd)
    rows = {row["tool"]: row for row in json.loads(status.stdout)["tools"]}
    assert rows["claude"]["profile"] == "p" and rows["claude"]["source"] == "project"
    assert rows["claude"]["where"] == str(cwd.parent.parent / ".ccs-profile")
    assert "project file" in ccs("status", env=env, cwd=cwd).stdout

    r = by_name(env, "claude", "-p", "say hi", "--output-format", "json", cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["result"] == "stub reply"
    r = by_name(env, "codex", "exec", "--skip-git-repo-check", "say hi", cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert "stub reply" in r.stdout

    claude_post, codex_post = good.posts()
    assert claude_post.path.split("?")[0] == "/v1/messages" and claude_post.body["model"] == "p-claude"
    assert codex_post.path == "/responses" and codex_post.body["model"] == "p-codex"
    assert {claude_post.headers["authorization"], codex_post.headers["authorization"]} == {f"Bearer {KEY}"}
    assert other.requests == [] and wrong.requests == []
    runs = manifests(ccs, env)
    assert sorted((m["profile"], m["tool"]) for m in runs) == [("p", "claude"), ("p", "codex")]
    # ccs launched the real binaries, never a shim
    assert {Path(m["executable"]).parent for m in runs} == {clients_bin}
    assert {m["tool_version"] for m in runs} == {"@anthropic-ai/claude-code@2.1.332", "@openai/codex@0.171.0"}


@pytest.mark.usefixtures("secret_service")
def test_use_none_passes_the_same_commands_through_untouched(ccs, base_env, stubs, client_bin, key_id, tmp_path):
    clients_bin = client_bin("claude", "codex")
    good, users = stubs("good"), stubs("users-own")
    make_profile(ccs, base_env, "p", good.url, key_id)
    assert ccs("use", "p", env=base_env).returncode == 0
    r = ccs("use", "--none", env=base_env)
    assert r.returncode == 0 and "pass straight through" in r.stdout
    cwd = repository(tmp_path, "p")  # even the project's file is ignored: --none wins
    # the user's own setup, which the real binaries must see as it is
    codex_home = tmp_path / "users-codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        f'model = "users-model"\nmodel_provider = "mine"\n[model_providers.mine]\nname = "mine"\n'
        f'base_url = "{users.url}"\nenv_key = "MY_KEY"\nwire_api = "responses"\n')
    env = {**base_env, "PATH": f"{shim_dir()}:{clients_bin}:{base_env['PATH']}",
           "ANTHROPIC_BASE_URL": users.url, "ANTHROPIC_AUTH_TOKEN": "users-own-token",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "CLAUDE_CONFIG_DIR": str(tmp_path / "users-claude"),
           "CODEX_HOME": str(codex_home), "MY_KEY": "users-own-key"}
    assert "passes straight through" in ccs("status", env=env, cwd=cwd).stdout

    r = by_name(env, "claude", "-p", "say hi", "--output-format", "json", cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["result"] == "stub reply"
    r = by_name(env, "codex", "exec", "--skip-git-repo-check", "say hi", cwd=cwd)
    assert r.returncode == 0, r.stderr
    claude_post, codex_post = users.posts()
    assert claude_post.headers["authorization"] == "Bearer users-own-token"
    assert codex_post.headers["authorization"] == "Bearer users-own-key" and codex_post.body["model"] == "users-model"
    assert good.requests == [] and manifests(ccs, env) == []  # no launch at all


@pytest.mark.usefixtures("secret_service")
def test_inside_a_launch_of_the_profile_the_shim_runs_the_real_binary(ccs, base_env, stubs, client_bin, key_id,
                                                                     tmp_path):
    """A client that starts itself by name inside its own launch (as an interactive client starts its
    daemons) gets the real binary with the launch's environment, not a second launch."""
    clients_bin = client_bin("codex")
    good = stubs("good")
    env = {**base_env, "PATH": f"{clients_bin}:{base_env['PATH']}"}
    make_profile(ccs, env, "p", good.url, key_id)
    assert ccs("use", "p", env=env).returncode == 0
    env["PATH"] = f"{shim_dir()}:{env['PATH']}"
    # a shell with the launch's environment for codex; the commands come on its stdin
    script = ("codex exec --skip-git-repo-check 'say hi' </dev/null; echo rc=$?;"
              "(printf '%s\\n' '{\"id\":1,\"method\":\"initialize\",\"params\":{\"clientInfo\":"
              "{\"name\":\"t\",\"version\":\"1\"}}}'; sleep 3) | timeout 20 codex app-server | head -n 1\n")
    r = ccs("shell", "p", "--tool", "codex", input=script, env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "stub reply" in r.stdout and "rc=0" in r.stdout, r.stdout + r.stderr
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("{"), r.stdout + r.stderr
    answer = json.loads(last)
    assert answer["id"] == 1 and "result" in answer, answer  # the real app-server answered initialize
    (post,) = good.posts()
    assert post.headers["authorization"] == f"Bearer {KEY}" and post.body["model"] == "p-codex"
    (run,) = manifests(ccs, env)  # only the shell's launch: the shim launched nothing
    assert run["tool"] == "codex" and run["argv"][0].endswith("sh")


@pytest.mark.usefixtures("secret_service")
def test_inside_another_profiles_launch_the_nested_rule_applies(ccs, base_env, stubs, client_bin, key_id,
                                                                tmp_path):
    clients_bin = client_bin("codex")
    good = stubs("good")
    env = {**base_env, "PATH": f"{shim_dir()}:{clients_bin}:{base_env['PATH']}"}
    make_profile(ccs, env, "p", good.url, key_id)
    assert ccs("use", "p", env=env).returncode == 0
    inside = {**env, "CCS_LAUNCH_ID": "outer-launch", "CCS_PROFILE": "other", "CCS_TOOL": "codex"}
    r = by_name(inside, "codex", "exec", "--skip-git-repo-check", "say hi", cwd=tmp_path)
    assert r.returncode == 2 and "refusing a nested launch" in r.stderr and "profile other" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and good.requests == []


@pytest.mark.usefixtures("secret_service")
def test_interactive_codex_by_name_works_under_the_shim_and_leaves_no_daemon(base_env, client_bin, key_id):
    clients_bin = client_bin("codex")
    import netns

    out = netns.run("codex_by_name_under_shim", env={**base_env, "PATH": f"{clients_bin}:{base_env['PATH']}"},
                    key_id=key_id, key=KEY)
    assert out["rc"] == 0, out
    (run,) = out["runs"]  # the shim's one launch
    assert (run["profile"], run["tool"]) == ("p", "codex")
    # the launch's `-c` options keep Codex's app-server in its own process: no daemon, during or after
    assert out["daemons"] == [] and out["daemons_after"] == [], out
    assert out["auth"] == [f"Bearer {KEY}"]


def test_the_real_binary_is_found_past_every_shim(tmp_path):
    """Two installs' shim folders on PATH: neither shim runs the other, and with no real binary
    behind them the answer is one line, not a loop."""
    real_dir, a, b = tmp_path / "real", tmp_path / "a", tmp_path / "b"
    real_dir.mkdir()
    real = real_dir / "tool"
    real.write_text("#!/bin/sh\necho real \"$@\"\n")
    real.chmod(0o755)
    for folder in (a, b):
        shim_setup.install(folder, {"t": "tool"}, tmp_path / "profiles", tmp_path / f"state-{folder.name}")
    found = shims.find_real("tool", os.pathsep.join(map(str, (a, b, real_dir))))
    assert found.path == str(real) and found.shims == (str(a / "tool"), str(b / "tool"))
    env = {"PATH": os.pathsep.join(map(str, (a, b, "/usr/bin", "/bin"))), "HOME": str(tmp_path)}
    r = subprocess.run([str(a / "tool"), "x"], env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 127 and "two ccs installs" in r.stderr and len(r.stderr.splitlines()) == 1
    env["PATH"] = os.pathsep.join(map(str, (a, b, real_dir, "/usr/bin", "/bin")))
    r = subprocess.run(["tool", "x", "y z"], env=env, capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stdout) == (0, "real x y z\n")  # nothing selected: straight through


def test_the_working_directory_and_pythonpath_cannot_take_over_a_shim(ccs, base_env, tmp_path):
    """A repository's json.py or ccswitch_tui/ folder, or a PYTHONPATH, never runs in place of ccs."""
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    (real_dir / "codex").write_text("#!/bin/sh\necho real codex \"$@\"\n")
    (real_dir / "codex").chmod(0o755)
    assert ccs("use", "--none", env=base_env).returncode == 0
    repo = tmp_path / "repo"
    (repo / "ccswitch_tui").mkdir(parents=True)
    evil = "import sys; sys.stderr.write('TAKEN OVER\\n'); sys.exit(9)\n"
    for name in ("json.py", "stat.py", "ccswitch_tui/__init__.py", "ccswitch_tui/shims.py"):
        (repo / name).write_text(evil)
    env = {**base_env, "PATH": f"{shim_dir()}:{real_dir}:{base_env['PATH']}", "PYTHONPATH": str(repo)}
    r = by_name(env, "codex", "a b", cwd=repo)
    assert (r.returncode, r.stdout, r.stderr) == (0, "real codex a b\n", "")


def test_shim_bad_input_is_one_line_and_the_real_binary_is_kept(ccs, base_env, tmp_path):
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    real = real_dir / "codex"
    real.write_text("#!/bin/sh\necho real codex\n")
    real.chmod(0o755)
    r = ccs("new", "p", "--base-url", "http://127.0.0.1:9", "--key", "env:PK", "--claude-model", "m",
            env=base_env)  # serves claude only
    assert r.returncode == 0, r.stderr
    assert ccs("use", "--none", env=base_env).returncode == 0
    env = {**base_env, "PATH": f"{shim_dir()}:{real_dir}:{base_env['PATH']}"}
    project = tmp_path / "proj"
    project.mkdir()
    cases = [("missing-profile\n", "no profile named 'missing-profile'"),
             ("codex=p\n", "no [codex] table"),
             ("Bad Name\n", "is not a profile name"),
             ("grok=p\n", "'grok' is not a tool ccs launches")]
    assert ccs("use", "--clear", env=env).returncode == 0
    for content, message in cases:
        (project / ".ccs-profile").write_text(content)
        if "grok" not in content:
            r = by_name(env, "codex", cwd=project)
            assert r.returncode == 2 and message in r.stderr, (content, r.stderr)
            assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
        r = ccs("status", env=env, cwd=project)
        if "grok" in content or "Bad" in content:
            assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        else:
            assert message in r.stdout, r.stdout
    assert real.read_text() == "#!/bin/sh\necho real codex\n"
    # a folder that cannot take the shims: one line, nothing replaced
    (project / ".ccs-profile").unlink()
    selection = (Path(os.environ["CCS_HOME"]) / "state" / "use").read_text()
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    for folder, message in ((a_file, "not a writable folder"), (a_file / "sub", "cannot create the shim folder")):
        r = ccs("use", "p", env={**env, "CCS_SHIM_DIR": str(folder)})
        assert r.returncode == 2 and message in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    assert (Path(os.environ["CCS_HOME"]) / "state" / "use").read_text() == selection  # no choice changed
    # a file in the shim folder that is not a shim is never replaced
    other = tmp_path / "theirs"
    other.mkdir()
    (other / "codex").write_text("#!/bin/sh\necho mine\n")
    r = ccs("use", "p", env={**env, "CCS_SHIM_DIR": str(other)})
    assert r.returncode == 2 and "is not a ccs shim" in r.stderr
    assert (other / "codex").read_text() == "#!/bin/sh\necho mine\n"


def test_use_here_writes_the_project_file(ccs, base_env, tmp_path):
    for name in ("p", "q"):
        assert ccs("new", name, "--base-url", "http://127.0.0.1:9", "--key", "env:PK", "--claude-model", "m",
                   "--codex-model", "n", env=base_env).returncode == 0
    project = tmp_path / "proj"
    project.mkdir()
    assert ccs("use", "--here", "p", env=base_env, cwd=project).returncode == 0
    assert ccs("use", "--here", "q", "--tool", "codex", env=base_env, cwd=project).returncode == 0
    assert ccs("use", "--here", "q", env=base_env, cwd=project).returncode == 0
    assert (project / ".ccs-profile").read_text() == "q\ncodex=q\n"
    r = ccs("use", env=base_env, cwd=project)  # bare: what is chosen here, and why
    assert r.returncode == 0 and f"claude: profile q (project file {project / '.ccs-profile'})" in r.stdout
    r = ccs("use", "--here", "nope", env=base_env, cwd=project)
    assert r.returncode == 2 and "nope" in r.stderr
    assert (project / ".ccs-profile").read_text() == "q\ncodex=q\n"
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / ".ccs-profile").write_bytes(b"p\n\xff\n")
    r = ccs("use", "--here", "q", env=base_env, cwd=damaged)
    assert r.returncode == 2 and "not UTF-8" in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    assert (damaged / ".ccs-profile").read_bytes() == b"p\n\xff\n"  # reported, never rewritten
    assert shims.parse_project_file("# c\np\ncodex = q  # note\n", "f") == {"*": "p", "codex": "q"}
    assert shims.parse_project_file("-\ncodex=p\n", "f", off=True) == {"*": None, "codex": "p"}


def test_the_shims_name_check_is_the_profiles():
    from ccswitch_tui.tools.checker import NAME_RE

    for name in ("p", "a.b_c-d", "0x", "x" * 64, "x" * 65, "", "-p", ".p", "P", "p q", "p/q", "é", "p\n", "..", "."):
        assert shims.valid_name(name) == bool(NAME_RE.fullmatch(name)), name


def test_doctor_names_a_shim_folder_missing_from_path(ccs, base_env):
    assert ccs("new", "p", "--base-url", "http://127.0.0.1:9", "--key", "env:PK", "--claude-model", "m",
               env=base_env).returncode == 0
    assert ccs("use", "p", env=base_env).returncode == 0
    r = ccs("doctor", "--json", env=base_env)
    codes = {f["code"] for f in json.loads(r.stdout)["findings"]}
    assert "shims-not-on-path" in codes
    r = ccs("doctor", "--json", env={**base_env, "PATH": f"{shim_dir()}:{base_env['PATH']}"})
    assert "shims-not-on-path" not in {f["code"] for f in json.loads(r.stdout)["findings"]}


def test_shim_module_stays_light():
    """A shim passing straight through imports no click, textual, httpx or aiohttp."""
    code = ("import sys, ccswitch_tui.shims as s; s.find_real('sh', '/bin');"
            "print(sorted(m for m in ('click', 'textual', 'httpx', 'aiohttp', 'ccswitch_tui.tools') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_use_with_a_tool_changes_that_tool_only(ccs, base_env, tmp_path):
    assert ccs("new", "p", "--base-url", "http://127.0.0.1:9", "--key", "env:PK", "--claude-model", "m",
               "--codex-model", "n", env=base_env).returncode == 0
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".ccs-profile").write_text("p\n")

    def sources() -> dict[str, str]:
        r = ccs("status", "--json", env=base_env, cwd=project)
        assert r.returncode == 0, r.stderr
        return {row["tool"]: row["source"] for row in json.loads(r.stdout)["tools"]}

    assert ccs("use", "--none", env=base_env).returncode == 0
    assert set(sources().values()) == {"off"}  # --none beats the project's file
    assert ccs("use", "p", "--tool", "claude", env=base_env).returncode == 0
    assert sources() == {s.name: "project" if s.name == "claude" else "off" for s in tools.load().clients()}
    assert ccs("use", "--clear", env=base_env).returncode == 0
    assert set(sources().values()) == {"project"}
    r = ccs("use", "p", "--tool", "gemini", env=base_env)
    assert r.returncode == 2 and "no [gemini] table" in r.stderr


def test_the_choice_is_made_in_process_as_the_command_makes_it(ccs, base_env, ccs_home, tmp_path):
    """``use_choice.use`` (what the TUI can call) writes the choice ``shims.choose`` then answers,
    with the command's rules: a profile for the tools it serves, --tool for that tool only, --none,
    --clear; a choice that cannot be made is one UsageError and changes nothing."""
    from ccswitch_tui.errors import UsageError
    from ccswitch_tui.launch.use_choice import new_selection, use
    from ccswitch_tui.launch.use_status import programs
    from ccswitch_tui.profiles.store import Store

    assert ccs("new", "p", "--base-url", "http://127.0.0.1:9", "--key", "env:PK", "--claude-model", "m",
               env=base_env).returncode == 0
    store, progs, env = Store(ccs_home), programs(), {"PATH": "/usr/bin:/bin"}

    def picks() -> dict[str, tuple[str | None, str]]:
        return {t: ((c := shims.choose(t, tmp_path, ccs_home.state)).profile, c.source) for t in progs}

    said = use(ccs_home, env, store, tmp_path, progs, "p")
    assert said[0] == "claude: p; " + ", ".join(t for t in progs if t != "claude") + ": pass through"
    assert "put that folder first on PATH" in said[1]  # the shim folder is not on this PATH
    assert picks() == {t: ("p", "use") if t == "claude" else (None, "none") for t in progs}
    use(ccs_home, env, store, tmp_path, progs, None, ("codex",), off=True)
    assert picks()["codex"] == (None, "off") and picks()["claude"] == ("p", "use")
    with pytest.raises(UsageError, match=r"no \[codex\] table"):
        use(ccs_home, env, store, tmp_path, progs, "p", ("codex",))
    with pytest.raises(UsageError, match="give one of"):
        use(ccs_home, env, store, tmp_path, progs, "p", off=True)
    assert picks()["codex"] == (None, "off")
    use(ccs_home, env, store, tmp_path, progs, None, clear=True)
    assert {c for _, c in picks().values()} == {"none"}
    profile = store.load("p")
    assert new_selection({"codex": None, "claude": "q"}, list(progs), profile, ("claude",), False, False) == \
        {"codex": None, "claude": "p"}
    assert new_selection({"codex": None}, list(progs), profile, (), False, False) == {"claude": "p"}
    assert new_selection({"codex": None, "claude": "p"}, list(progs), None, ("codex",), False, True) == \
        {"claude": "p"}
    assert new_selection({"codex": "p"}, list(progs), None, (), True, False) == {shims.ALL: None}

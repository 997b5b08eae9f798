"""What a launch leaves behind and keeps: Codex daemons, Codex's own config, the user's shared
setup, quiet launches, resume hints, removal of state, lost runs, nesting, modes.

The scenarios with the real interactive clients run in a private network namespace
(tests/netns.py, tests/lifecycle_scenarios.py): the loopback stub is all they can reach.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import netns
import pytest

from ccswitch_tui.diagnose.processes import scan
from ccswitch_tui.profiles.schema import profile_from_data
from ccswitch_tui.tools.codex import config as codex_config

KEY1 = "sk-lifecycle-first-0123456789abcdef"
KEY2 = "sk-lifecycle-second-9876543210fedcba"


def scenario_env(base_env: dict[str, str], clients_bin: Path) -> dict[str, str]:
    return {**base_env, "PATH": f"{clients_bin}:{base_env['PATH']}"}


# --- 1, 5, 6: daemons, rotation, lost runs, resume hints (real interactive Codex on a pty) ----------

@pytest.mark.usefixtures("secret_service")
def test_codex_daemons_are_owned_by_the_launch(base_env, client_bin, key_id):
    clients_bin = client_bin("codex")
    out = netns.run("daemons_and_rotation", env=scenario_env(base_env, clients_bin), key_id=key_id,
                    key1=KEY1, key2=KEY2)
    # Codex 0.171 given `-c` options (every launch pins the model and provider with them) runs its
    # app-server inside its own process: no `codex app-server` daemon holds the key, during or after
    assert out["daemons_during_1"] == [], out
    assert out["rc1"] == 0 and out["daemons_after_1"] == []
    # the resume hint names the profile, not the bare client
    assert "ccs launch p codex -- resume " in out["text1_tail"], out["text1_tail"]
    assert out.get("resumed") and out["rc_resume"] == 0
    # a ccs killed with SIGKILL: its run is lost, not running forever, and no daemon stays behind
    assert out["states"][0] == "lost" and "lost" in out["runs_table"] and out["daemons_after_kill"] == []
    # a daemon an earlier version's launch left (the real app-server, with that lost launch's environment)
    assert out["leftover"], out
    # after the key is rotated, ps and inspect call those daemons wrong (another key)
    assert all(f and f.get("error", 0) >= 1 for f in out["ps"].values()), out["ps"]
    assert "key-drift" in out["inspect_codes"] and not out["inspect_has_internal"]
    assert "daemon-orphaned" in out["inspect_warn_codes"]  # its launch is lost
    # the next launch ends them first: the provider gets the new key, never the old one
    assert out["leftover_alive_during_3"] == []
    assert out["auth_3"] and set(out["auth_3"]) == {f"Bearer {KEY2}"}, out["auth_3"]
    assert set(out["auth_1"]) == {f"Bearer {KEY1}"}
    assert {d["reason"] for d in out["daemons_ended_3"]} >= {"holds another key"}
    assert out["rc3"] == 0 and out["daemons_after_3"] == [] and out["planted_rc"] is not None


@pytest.mark.usefixtures("secret_service")
def test_claude_resume_hint_resumes_with_the_profile(base_env, client_bin, key_id):
    clients_bin = client_bin("claude")
    env = {**scenario_env(base_env, clients_bin), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    out = netns.run("claude_resume", env=env, key_id=key_id, key=KEY1)
    assert out["rc"] == 0 and out["hint"], out["tail"]
    assert out["resume_rc"] == 0, out["resume_stderr"]
    assert "say hi" in out["resumed_messages"] and "again" in out["resumed_messages"]


# --- 2, 3: Codex's own config kept, the user's setup shared -------------------------------------

@pytest.mark.usefixtures("secret_service")
def test_codex_config_is_kept_and_user_setup_is_shared(base_env, client_bin, key_id):
    clients_bin = client_bin("claude", "codex")
    out = netns.run("kept_config", env=scenario_env(base_env, clients_bin), key_id=key_id, key=KEY1)
    assert "added-server" in out["mcp_list"], out["mcp_list"]
    assert "# my own note" in out["config"] and "[mcp_servers.added-server]" in out["config"]
    assert 'model = "m2"' in out["config"] and out["exec_model"] == "m2"
    # a new profile sees the user's MCP servers (both clients) and memory file
    assert "user-codex-server" in out["q_codex_mcp"], out["q_codex_mcp"]
    assert "user-claude-server" in out["q_claude_mcp"], out["q_claude_mcp"]
    state = out["q_claude_json"]
    assert state["hasCompletedOnboarding"] is True  # (Claude Code itself drops a default theme)
    assert "routing-server" not in state["mcpServers"] and "primaryApiKey" not in state
    assert out["q_agents_link"] and out["q_agents_link"].endswith(".codex/AGENTS.md")
    assert {"mcp", "memory", "packages"} <= set(out["env_shared"])
    assert "ccs: shared: mcp (user-claude-server)" in out["env_stderr"]


def test_config_edit_keeps_what_is_not_ccs_s():
    p = profile_from_data("p", {"provider": {"name": "P", "base_url": "https://h/v1", "key": "k"},
                                "codex": {"model": "m", "reasoning_effort": "low"}})
    mine = ('# note\napproval_policy = "never"  # mine\nmodel_reasoning_effort = "high"\n\n'
            '[projects."/w"]\ntrust_level = "trusted"\n\n[model_providers.p]\nname = "old"\nbase_url = "http://old"\n')
    w = codex_config.wanted(p, quiet=True)
    text = codex_config.edit(mine, w)
    import tomllib

    data = tomllib.loads(text)
    assert "# note" in text and "# mine" in text and data["projects"] == {"/w": {"trust_level": "trusted"}}
    assert data["model"] == "m" and data["model_reasoning_effort"] == "low"
    assert data["model_providers"]["p"]["base_url"] == "https://h/v1"
    assert data["analytics"] == {"enabled": False} and codex_config.agrees(data, w)
    # a file that already agrees is kept byte for byte
    assert codex_config.agrees(tomllib.loads(codex_config.fresh("p", w)), w)


def test_invalid_codex_config_is_one_line(ccs, base_env, tmp_path):
    env = {**base_env, "X_KEY": KEY1}
    assert ccs("new", "p", "--base-url", "https://p.invalid/v1", "--key", "env:X_KEY", "--codex-model", "m",
               env=env).returncode == 0
    config = Path(os.environ["CCS_HOME"]) / "state" / "tools" / "p" / "codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("model = \n")
    r = ccs("launch", "p", "codex", "--", "--version", env=env)
    assert r.returncode == 2 and "config.toml: not valid TOML" in r.stderr and "Traceback" not in r.stderr
    assert config.read_text() == "model = \n"


# --- 4: quiet launches, proven with strace inside a private network namespace --------------------

@pytest.mark.parametrize("tool", ["claude", "codex"])
@pytest.mark.usefixtures("secret_service")
def test_quiet_launch_connects_only_to_the_profile(base_env, client_bin, key_id, tool):
    clients_bin = client_bin("claude", "codex")
    import shutil

    if not shutil.which("strace"):
        pytest.fail("strace is needed (scripts/install-test-deps.sh installs it)")
    env = scenario_env(base_env, clients_bin)
    quiet = netns.run("quiet", env=env, key_id=key_id, key=KEY1, tool=tool, quiet_policy=None, profile="quiet")
    assert quiet["rc"] == 0 and quiet["posts"] >= 1, quiet
    assert quiet["connects"] == [f"127.0.0.1:{quiet['stub']}"], quiet["connects"]
    # the same launch with quiet = false tries other hosts (name lookups, the vendor's services)
    loud = netns.run("quiet", env=env, key_id=key_id, key=KEY1, tool=tool, quiet_policy=False, profile="loud")
    assert set(loud["connects"]) - {f"127.0.0.1:{loud['stub']}"}, loud["connects"]


@pytest.mark.usefixtures("secret_service")
def test_codex_writes_no_key_to_its_home(base_env, client_bin, key_id):
    """Codex's shell snapshots would write the session's environment, key included, under
    CODEX_HOME while a session runs; ccs turns them off."""
    clients_bin = client_bin("codex")
    out = netns.run("key_on_disk", env=scenario_env(base_env, clients_bin), key_id=key_id, key=KEY1)
    assert out["rc"] == 0 and out["posts"] >= 1, out
    assert out["seen"] == [], out["seen"]


# --- 7: a custom provider id "oss" is accepted by ccs and by the real Codex -----------------------

@pytest.mark.usefixtures("secret_service")
def test_oss_is_a_custom_provider_id(base_env, client_bin, key_id):
    clients_bin = client_bin("codex")
    out = netns.run("oss_provider_id", env=scenario_env(base_env, clients_bin), key_id=key_id, key=KEY1)
    assert 'provider_id = "oss"' in out["profile"]
    assert out["rc"] == 0 and out["posts"] == 1 and "stub reply" in out["stdout"], out


# --- 5: rm and gc ----------------------------------------------------------------------------------

def test_rm_removes_state_and_gc_removes_orphans(ccs, base_env, tmp_path):
    env = {**base_env, "X_KEY": KEY1}
    state = Path(os.environ["CCS_HOME"]) / "state" / "tools"
    user_agents = Path(base_env["HOME"]) / ".codex" / "AGENTS.md"
    user_agents.parent.mkdir(parents=True)
    user_agents.write_text("mine\n")
    for name in ("p", "keep", "orphan"):
        assert ccs("new", name, "--base-url", "https://p.invalid/v1", "--key", "env:X_KEY", "--codex-model", "m",
                   env=env).returncode == 0
        assert ccs("run", name, "--", "true", env=env).returncode == 0
        r = ccs("env", name, "--tool", "codex", env=env)
        assert r.returncode == 0, r.stderr
        (state / name / "codex" / "sessions").mkdir(parents=True, exist_ok=True)
        (state / name / "codex" / "sessions" / "s.jsonl").write_text("{}\n")
        (state / name / "codex" / "AGENTS.md").symlink_to(user_agents)
    # without a terminal and without --yes: refused, nothing removed
    r = ccs("rm", "p", env=env)
    assert r.returncode == 2 and "tool state" in r.stderr and (state / "p").is_dir()
    r = ccs("rm", "p", "--yes", env=env)
    assert r.returncode == 0, r.stderr
    assert not (state / "p").exists() and user_agents.read_text() == "mine\n"  # the link, not its target
    r = ccs("rm", "keep", "--yes", "--keep-state", env=env)
    assert r.returncode == 0 and (state / "keep" / "codex" / "sessions" / "s.jsonl").is_file()
    (Path(os.environ["CCS_HOME"]) / "profiles" / "orphan.toml").unlink()
    r = ccs("gc", "--dry-run", env=env)
    assert r.returncode == 0 and str(state / "keep") in r.stdout and str(state / "orphan") in r.stdout
    assert (state / "orphan").is_dir()
    r = ccs("gc", "--yes", env=env)
    assert r.returncode == 0 and not (state / "orphan").exists() and not (state / "keep").exists()
    assert user_agents.read_text() == "mine\n"
    # a new profile of a removed name starts clean
    assert ccs("new", "p", "--base-url", "https://p.invalid/v1", "--key", "env:X_KEY", env=env).returncode == 0
    assert not (state / "p" / "codex" / "sessions").exists()


# --- 6: lost runs, nesting, modes ------------------------------------------------------------------

def test_killed_ccs_shows_lost(ccs, base_env):
    env = {**base_env, "X_KEY": KEY1}
    assert ccs("new", "p", "--base-url", "https://p.invalid/v1", "--key", "env:X_KEY", env=env).returncode == 0
    runs: list = []
    proc = subprocess.Popen([sys.executable, "-m", "ccswitch_tui", "run", "p", "--", "sleep", "60"], env=env,
                            start_new_session=True)
    try:
        deadline = time.time() + 20
        while time.time() < deadline:
            runs = json.loads(ccs("runs", "--json", env=env).stdout)["runs"]
            if runs:
                break
            time.sleep(0.1)
        assert runs[0]["state"] == "running" and runs[0]["ccs_pid"] == proc.pid
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        runs = json.loads(ccs("runs", "--json", env=env).stdout)["runs"]
        assert runs[0]["state"] == "lost" and runs[0]["exit_status"] is None
        assert "lost" in ccs("runs", env=env).stdout
    finally:
        proc.kill()
        for seen in scan():  # the orphaned `sleep`, by its launch marker
            if seen.env and runs and seen.env.get("CCS_LAUNCH_ID") == runs[0]["launch_id"]:
                os.kill(seen.pid, signal.SIGKILL)


def test_nested_ccs_finds_the_same_xdg_home(ccs, base_env, tmp_path):
    env = {k: v for k, v in base_env.items() if k != "CCS_HOME"}
    env |= {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_STATE_HOME": str(tmp_path / "st"), "X_KEY": KEY1}
    r = subprocess.run([sys.executable, "-m", "ccswitch_tui", "new", "xdg-only", "--base-url", "https://p.invalid/v1",
                        "--key", "env:X_KEY"], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "ccswitch_tui", "run", "xdg-only", "--", sys.executable, "-m",
                        "ccswitch_tui", "list", "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert [p["name"] for p in json.loads(r.stdout)["profiles"]] == ["xdg-only"]


def test_tool_state_dirs_are_private(ccs, base_env, client_bin):
    clients_bin = client_bin("codex")
    env = {**base_env, "X_KEY": KEY1}
    assert ccs("new", "p", "--base-url", "https://p.invalid/v1", "--key", "env:X_KEY", "--codex-model", "m",
               env=env).returncode == 0
    old = os.umask(0o022)
    try:
        r = ccs("launch", "p", "codex", "--", "--version", env=scenario_env(env, clients_bin))
    finally:
        os.umask(old)
    assert r.returncode == 0, r.stderr
    state = Path(os.environ["CCS_HOME"]) / "state"
    for d in (state / "tools", state / "tools" / "p", state / "tools" / "p" / "codex"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, (d, r.stderr)


# --- 3: the TUI's environment view lists what is shared ------------------------------------------

async def test_environment_view_lists_shared_pieces(home, tmp_path):
    from test_tui_support import build_app, parent_env, plain, select, settle

    user = tmp_path / "user-home"
    (user / ".claude" / "commands").mkdir(parents=True)
    (user / ".claude" / "CLAUDE.md").write_text("be brief\n")
    app = build_app(home, parent_env(HOME=str(user)))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        app.action_set_tool("claude")
        await settle(pilot)
        text = plain(app, "#env-head") + "\n" + plain(app, "#env-body")
        assert f"memory: linked from {user}/.claude/CLAUDE.md" in text, text
        assert f"commands: linked from {user}/.claude/commands" in text
        # nothing is made while previewing: links appear only when a launch runs
        assert not (home.state / "tools" / "alpha" / "claude" / "CLAUDE.md").exists()


# --- the policy fields: validated with the place, shown by `ccs show` -------------------------------

@pytest.mark.parametrize(("policy", "message"), [
    ({"quiet": "yes"}, "p.toml: [policy].quiet must be true or false"),
    ({"share": ["mcpp"]}, "p.toml: [policy].share 'mcpp' is not a piece ccs can share; did you mean 'mcp'?"),
    ({"share": "all"}, "p.toml: [policy].share must be true, false or a list of: mcp, memory"),
])
def test_policy_fields_are_validated(policy, message):
    from ccswitch_tui.errors import ProfileError

    with pytest.raises(ProfileError) as exc:
        profile_from_data("p", {"provider": {"name": "P", "base_url": "https://h", "key": "k"}, "policy": policy})
    assert str(exc.value).startswith(message)


def test_policy_defaults_and_choices():
    from ccswitch_tui.tools.quiet import quiet_for
    from ccswitch_tui.tools.share import DEFAULT_PIECES

    def prof(url, **policy):
        return profile_from_data("p", {"provider": {"name": "P", "base_url": url, "key": "k"}, "policy": policy})

    from ccswitch_tui import tools

    claude, codex = tools.load().get("claude"), tools.load().get("codex")
    assert quiet_for(claude, prof("https://relay.example/api"), "https://relay.example/api") is True
    assert quiet_for(claude, prof("https://api.anthropic.com"), "https://api.anthropic.com") is False
    # one rule for every client: its own vendor's hosts; another vendor's API is not its own
    assert quiet_for(codex, prof("https://api.anthropic.com"), "https://api.anthropic.com") is True
    assert quiet_for(codex, prof("https://api.openai.com/v1", quiet=True), "https://api.openai.com/v1") is True
    assert quiet_for(codex, prof("https://api.openai.com/v1"), "https://api.openai.com/v1") is False
    assert prof("https://h", share=True).share == DEFAULT_PIECES and prof("https://h", share=False).share == ()
    assert prof("https://h", share=["mcp", "mcp", "memory"]).share == ("mcp", "memory")


def test_rm_refused_while_a_launch_runs(ccs, base_env):
    env = {**base_env, "X_KEY": KEY1}
    assert ccs("new", "p", "--base-url", "https://p.invalid/v1", "--key", "env:X_KEY", env=env).returncode == 0
    state = Path(os.environ["CCS_HOME"]) / "state" / "tools" / "p" / "codex"
    state.mkdir(parents=True)
    proc = subprocess.Popen([sys.executable, "-m", "ccswitch_tui", "run", "p", "--", "sleep", "60"], env=env)
    try:
        deadline = time.time() + 20
        while time.time() < deadline and not json.loads(ccs("runs", "--json", env=env).stdout)["runs"]:
            time.sleep(0.1)
        r = ccs("rm", "p", "--yes", env=env)
        assert r.returncode == 2 and "running launch" in r.stderr and "--keep-state" in r.stderr
        assert state.is_dir() and (Path(os.environ["CCS_HOME"]) / "profiles" / "p.toml").is_file()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)


def test_codex_relaunch_does_not_import_tomlkit(tmp_path, client_bin):
    """The launch path leaves tomlkit out unless the profile's config.toml needs an edit."""
    clients_bin = client_bin("codex")
    code = (
        "import sys\n"
        "from ccswitch_tui.cli import run\n"
        "codes = []\n"
        "for _ in range(2):\n"
        "    codes.append(run(['launch', 'p', 'codex', '--', '--version']))\n"
        "before = 'tomlkit' in sys.modules\n"
        "text = open(sys.argv[1]).read()\n"
        "open(sys.argv[1], 'w').write(text.replace('model = \"gpt-4.1\"', 'model = \"other\"', 1))\n"
        "codes.append(run(['launch', 'p', 'codex', '--', '--version']))\n"
        "print(codes, before, 'tomlkit' in sys.modules, file=sys.stderr)\n"
    )
    env = {**os.environ, "CCS_HOME": str(tmp_path), "LIGHT_KEY": KEY1, "PATH": f"{clients_bin}:{os.environ['PATH']}"}
    config = tmp_path / "state" / "tools" / "p" / "codex" / "config.toml"
    subprocess.run([sys.executable, "-m", "ccswitch_tui", "new", "p", "--preset", "taotoken", "--key", "env:LIGHT_KEY"],
                   env=env, check=True, capture_output=True)  # `new` writes with tomlkit: not the launch path
    r = subprocess.run([sys.executable, "-c", code, str(config)], capture_output=True, text=True, env=env,
                       timeout=120)
    result = [line for line in r.stderr.splitlines() if line.startswith("[")]
    assert result == ["[0, 0, 0] False True"], r.stdout + r.stderr
    assert 'model = "gpt-4.1"' in config.read_text()


def test_rm_says_what_it_leaves_and_removes_the_key_when_asked(ccs, base_env, secret_service, key_id):
    """`ccs rm` said nothing of the key it leaves; `--with-key` removes it, unless another profile
    names the same key id."""
    import keyring

    env = base_env
    for name in ("p", "q", "r"):
        kid = key_id if name != "r" else f"{key_id}-r"
        assert ccs("new", name, "--base-url", "https://p.invalid/v1", "--key", kid, env=env).returncode == 0
    for kid in (key_id, f"{key_id}-r"):
        assert ccs("key", "set", kid, input="sk-rm-test-0123456789abcdef", env=env).returncode == 0
    r = ccs("rm", "p", env=env)
    assert r.returncode == 2 and f"Its key '{key_id}' stays in the keyring: q uses it too: not confirmed" in r.stderr, \
        r.stderr  # one stop before the refusal (it read `too.: not confirmed`)
    r = ccs("rm", "p", "--yes", "--with-key", env=env)
    assert r.returncode == 0 and f"kept key '{key_id}' in the keyring: q still uses it" in r.stdout, r.stdout
    assert keyring.get_password("ccswitch-tui", key_id)
    r = ccs("rm", "q", "--yes", env=env)
    assert r.returncode == 0 and f"kept key '{key_id}' in the keyring; `ccs key rm {key_id}` removes it" in r.stdout
    assert keyring.get_password("ccswitch-tui", key_id)
    r = ccs("rm", "r", env=env)
    assert "stays in the keyring (--with-key removes it too)" in r.stderr, r.stderr
    r = ccs("rm", "r", "--yes", "--with-key", env=env)
    assert r.returncode == 0 and f"removed key '{key_id}-r' from the keyring" in r.stdout, r.stdout
    assert keyring.get_password("ccswitch-tui", f"{key_id}-r") is None
    assert f"{key_id}-r" not in ccs("key", "list", env=env).stdout

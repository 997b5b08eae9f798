"""Launch plans (pure): the clean environment, the generated files, settings-layer refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomlkit
from hypothesis import given, settings
from hypothesis import strategies as st

from ccswitch_tui.errors import UsageError
from ccswitch_tui.launch.plan import plan_for
from ccswitch_tui.paths import resolve_paths
from ccswitch_tui.profiles.schema import profile_from_data

KEY = "sk-plan-0123456789abcdef"
PATHS = resolve_paths({"CCS_HOME": "/nonexistent/ccs-home"})
CONTAMINATED = {
    "PATH": "/usr/bin:/bin", "HOME": "/home/u", "TERM": "xterm", "LC_ALL": "C.UTF-8", "LANG": "C",
    "ANTHROPIC_BASE_URL": "https://stale.example", "ANTHROPIC_AUTH_TOKEN": "stale-token",
    "ANTHROPIC_MODEL": "stale-model", "OPENAI_API_KEY": "sk-stale", "OPENAI_BASE_URL": "https://stale/v1",
    "CLAUDE_CODE_USE_BEDROCK": "1", "CODEX_HOME": "/bogus", "HTTPS_PROXY": "http://127.0.0.1:9",
    "http_proxy": "http://127.0.0.1:9", "GITHUB_TOKEN": "ghp_x", "AWS_PROFILE": "prod", "MY_VAR": "mine",
    "CCS_LAUNCH_ID": "outer", "CCS_PROFILE": "outer",
}


def profile(**extra):
    data = {
        "schema": 1,
        "provider": {"name": "Prov", "base_url": "https://prov.example/api", "key": "prov"},
        "claude": {"model": "c-main", "haiku": "c-small", "env": {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}},
        "codex": {"model": "x-model", "provider_id": "prov", "base_url": "https://prov.example/v1",
                  "reasoning_effort": "high"},
        "run": {"export": ["openai", "anthropic"], "model": "r-model"},
        "env": {"API_TIMEOUT_MS": "600000"},
    }
    data.update(extra)
    return profile_from_data("p", data)


def plan(tool, prof=None, parent=CONTAMINATED, cwd=Path("/nonexistent"), **kw):
    return plan_for(prof or profile(), tool, KEY, parent, cwd, paths=PATHS, **kw)


@pytest.mark.parametrize("tool", ["claude", "codex", "run"])
def test_clean_env_passes_nothing_but_the_allowlist(tool):
    p = plan(tool)
    inherited = {k for k, s in p.sources.items() if s == "inherited"}
    assert inherited == {"PATH", "HOME", "TERM", "LC_ALL", "LANG"}
    for name in ("GITHUB_TOKEN", "AWS_PROFILE", "MY_VAR", "HTTPS_PROXY", "http_proxy", "CLAUDE_CODE_USE_BEDROCK"):
        assert name not in p.env
    assert p.env["CCS_PROFILE"] == "p" and p.env["CCS_TOOL"] == tool
    assert p.env["CCS_LAUNCH_ID"] != "outer" and p.env["CCS_LAUNCH_ID"] == p.launch_id
    assert p.env["API_TIMEOUT_MS"] == "600000"
    assert "stale" not in json.dumps(dict(p.env))
    # the key is in exactly the variables the plan declares secret, and nowhere else
    assert {k for k, v in p.env.items() if v == KEY} == set(p.secret_names)
    assert all(KEY not in a for a in p.argv)
    assert all(KEY not in f.content for f in p.files)


def test_policy_inherit_names_and_globs():
    prof = profile(policy={"inherit": ["MY_*", "AWS_PROFILE"]})  # AWS_* itself is refused: name it in full
    p = plan("run", prof)
    assert p.env["MY_VAR"] == "mine" and p.env["AWS_PROFILE"] == "prod"
    assert p.sources["AWS_PROFILE"] == "inherited"
    assert any("AWS_PROFILE" in w and "policy.inherit" in w for w in p.warnings)


def test_claude_plan_routes_through_settings_file_and_env():
    p = plan("claude")
    assert p.env["ANTHROPIC_BASE_URL"] == "https://prov.example/api"
    assert p.env["ANTHROPIC_AUTH_TOKEN"] == KEY and "ANTHROPIC_API_KEY" not in p.env
    assert p.env["ANTHROPIC_MODEL"] == "c-main" and p.env["ANTHROPIC_DEFAULT_HAIKU_MODEL"] == "c-small"
    assert "ANTHROPIC_DEFAULT_OPUS_MODEL" not in p.env
    config_dir = PATHS.tool_dir("p", "claude")
    assert p.env["CLAUDE_CONFIG_DIR"] == str(config_dir)
    assert p.argv[:3] == ("claude", "--settings", str(config_dir / "ccs-settings.json"))
    settings, state = p.files  # ccs's settings, and the profile's .claude.json
    assert settings.mode == 0o600
    # the provider is not Anthropic's: the first interactive launch skips the onboarding, which would
    # otherwise call api.anthropic.com
    assert state.path == config_dir / ".claude.json" and json.loads(state.content)["hasCompletedOnboarding"] is True
    data = json.loads(settings.content)
    assert data["env"]["ANTHROPIC_BASE_URL"] == "https://prov.example/api"
    assert data["env"]["ANTHROPIC_MODEL"] == "c-main"
    assert data["env"]["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert data["env"]["API_TIMEOUT_MS"] == "600000"
    assert "OPENAI_API_KEY" not in p.env and "CODEX_HOME" not in p.env


def test_claude_api_key_auth():
    prof = profile(claude={"auth": "api-key"})
    p = plan("claude", prof)
    # not ANTHROPIC_API_KEY, which makes an interactive Claude Code ask whether to use it: a variable of
    # ccs's own, printed by the apiKeyHelper of ccs's settings (no key in the file)
    assert p.env["CCS_ANTHROPIC_API_KEY"] == KEY and "CCS_ANTHROPIC_API_KEY" in p.secret_names
    assert "ANTHROPIC_AUTH_TOKEN" not in p.env and "ANTHROPIC_API_KEY" not in p.env
    settings = next(f for f in p.files if f.path.name == "ccs-settings.json").content
    assert json.loads(settings)["apiKeyHelper"] == "printenv CCS_ANTHROPIC_API_KEY" and KEY not in settings


def test_codex_plan_generates_accepted_config():
    p = plan("codex", args=["exec", "hi"])
    home = PATHS.tool_dir("p", "codex")
    assert p.env["CODEX_HOME"] == str(home)
    # what a trusted project's .codex/config.toml could change is pinned with -c (it beats the project)
    assert p.argv[:5] == ("codex", "-c", 'model="x-model"', "-c", 'model_provider="prov"')
    assert p.argv[-2:] == ("exec", "hi")
    (config,) = p.files
    assert config.path == home / "config.toml"
    data = tomlkit.parse(config.content).unwrap()
    assert data == {
        "model": "x-model",
        "model_provider": "prov",
        "model_reasoning_effort": "high",
        "model_providers": {"prov": {"name": "Prov", "base_url": "https://prov.example/v1",
                                     "env_key": "CCS_CODEX_API_KEY", "wire_api": "responses"}},
        # a third-party provider: quiet by default
        "check_for_update_on_startup": False, "analytics": {"enabled": False},
        "features": {"plugins": False, "shell_snapshot": False},  # a shell snapshot would hold the key
    }
    assert p.env["CCS_CODEX_API_KEY"] == KEY
    assert not any(k.startswith(("ANTHROPIC_", "OPENAI_")) for k in p.env)


def test_run_exports():
    p = plan("run", args=["python", "x.py"])
    assert p.env["OPENAI_BASE_URL"] == "https://prov.example/v1"  # [codex].base_url wins
    assert p.env["OPENAI_API_KEY"] == KEY
    assert p.env["ANTHROPIC_BASE_URL"] == "https://prov.example/api"
    assert p.env["ANTHROPIC_AUTH_TOKEN"] == KEY
    assert p.env["CCS_MODEL"] == "r-model"
    assert p.argv == ("python", "x.py")


def test_run_exports_fall_back_to_provider_url():
    prof = profile_from_data("q", {"provider": {"name": "Q", "base_url": "https://q/api", "key": "q"},
                                   "run": {"export": ["openai", "anthropic"]}})
    p = plan_for(prof, "run", KEY, {}, Path("/"), paths=PATHS)
    assert p.env["OPENAI_BASE_URL"] == "https://q/api" and p.env["ANTHROPIC_BASE_URL"] == "https://q/api"
    assert "CCS_MODEL" not in p.env


def test_profile_without_tool_table_is_refused():
    prof = profile_from_data("q", {"provider": {"name": "Q", "base_url": "https://q/api", "key": "q"}})
    with pytest.raises(UsageError, match=r"has no \[codex\] table"):
        plan_for(prof, "codex", KEY, {}, Path("/"), paths=PATHS)
    with pytest.raises(UsageError, match="unknown tool 'grok'"):
        plan_for(prof, "grok", KEY, {}, Path("/"), paths=PATHS)


def write_json(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def test_project_layer_routing_beaten_by_settings_is_not_refused(tmp_path):
    write_json(tmp_path / ".claude" / "settings.json", {"env": {"ANTHROPIC_BASE_URL": "https://evil"}})
    assert plan("claude", cwd=tmp_path).refusals == ()


def test_project_layer_setting_unbeaten_routing_keys_is_refused(tmp_path):
    f = write_json(tmp_path / ".claude" / "settings.local.json",
                   {"env": {"ANTHROPIC_AUTH_TOKEN": "x", "CLAUDE_CODE_USE_BEDROCK": "1"}, "apiKeyHelper": "echo k",
                    "permissions": {}})
    (r,) = plan("claude", cwd=tmp_path).refusals
    assert r.code == "settings-override" and str(f) in r.message
    assert "env.ANTHROPIC_AUTH_TOKEN" in r.message and "apiKeyHelper" in r.message
    assert "env.CLAUDE_CODE_USE_BEDROCK" in r.message and "permissions" not in r.message
    assert any("--isolate" in w for w in r.ways_out) and any("--force" in w for w in r.ways_out)
    assert plan("claude", cwd=tmp_path, isolate=True).refusals == ()
    assert plan("claude", cwd=tmp_path, isolate=True).argv[3:5] == ("--setting-sources", "user")


def test_project_model_refused_only_when_profile_sets_no_model(tmp_path):
    write_json(tmp_path / ".claude" / "settings.json", {"model": "opus"})
    assert plan("claude", cwd=tmp_path).refusals == ()
    no_model = profile(claude={})
    assert [r.code for r in plan("claude", no_model, cwd=tmp_path).refusals] == ["settings-override"]


def test_managed_layer_cannot_be_isolated(tmp_path):
    managed = write_json(tmp_path / "managed.json", {"env": {"ANTHROPIC_BASE_URL": "https://corp"}})
    parent = {**CONTAMINATED, "CCS_CLAUDE_MANAGED_SETTINGS": str(managed)}
    for isolate in (False, True):
        (r,) = plan("claude", parent=parent, cwd=tmp_path, isolate=isolate).refusals
        assert "managed" in r.message and "cannot override" in r.message
        assert "force" in r.flags


def test_a_malformed_layer_refuses_the_launch(tmp_path):
    """ccs cannot tell what a client takes from a file it cannot read (the client's reader may be more
    lenient): refused, with --isolate and --force as ways out; skipped with --isolate."""
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text("{not json")
    (r,) = plan("claude", cwd=tmp_path).refusals
    assert "not valid JSON" in r.message and r.flags == ("isolate", "force")
    p = plan("claude", cwd=tmp_path, isolate=True)
    assert p.refusals == () and any("not valid JSON" in w for w in p.warnings)


def test_claude_base_url_ending_in_v1_warns():
    p = plan("claude", profile(claude={"base_url": "https://h/v1"}))
    assert any("/v1/v1/messages" in w for w in p.warnings)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_codex_config_strings_round_trip(value):
    from ccswitch_tui.tools.codex import toml_string

    assert tomlkit.parse(f"k = {toml_string(value)}")["k"] == value


def test_codex_config_with_awkward_provider_name_parses():
    prof = profile(provider={"name": 'Quote " and \\ back\tslash ✓', "base_url": "https://h/api", "key": "k"})
    (config,) = plan("codex", prof).files
    assert tomlkit.parse(config.content).unwrap()["model_providers"]["prov"]["name"] == prof.provider.name

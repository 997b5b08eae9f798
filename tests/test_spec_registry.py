"""The core over the client registry: one display rule in the plan, force/nested carried by the
plan into the manifest, structured errors, and the import contract."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ccswitch_tui import policy
from ccswitch_tui.errors import ProfileError
from ccswitch_tui.launch.plan import plan_for
from ccswitch_tui.paths import Paths
from ccswitch_tui.profiles.schema import profile_from_data
from ccswitch_tui.profiles.store import validate_text

ROOT = Path(__file__).resolve().parent.parent
GITHUB = "ghp_" + "Xq7bZ2mK9pL4vN8rT1wY6cH3jF5dS0aE2gUi"
KEY = "sk-registry-0123456789abcdefXYZ"


def _profile(**extra):
    return profile_from_data("p", {"schema": 1, "provider": {"name": "P", "base_url": "https://gw.example/api",
                                                             "key": "env:PKEY"},
                                   "claude": {}, "run": {"export": ["openai"]}, **extra})


def test_one_display_rule_for_env_diff_and_tui(tmp_path):
    from ccswitch_tui.tui.service import ToolView

    p = _profile(policy={"inherit": ["GITHUB_TOKEN", "GH_HOST"]})
    paths = Paths(profiles=tmp_path / "profiles", state=tmp_path / "state")
    parent = {"PATH": "/usr/bin", "GITHUB_TOKEN": GITHUB, "GH_HOST": "github.example"}
    plan = plan_for(p, "run", KEY, parent, tmp_path, paths=paths)
    assert policy.plan_is_secret(plan, "GITHUB_TOKEN") and policy.plan_is_secret(plan, "OPENAI_API_KEY")
    assert not policy.plan_is_secret(plan, "GH_HOST")
    assert GITHUB not in policy.plan_shown(plan, "GITHUB_TOKEN")
    assert policy.plan_shown(plan, "GH_HOST") == "github.example"
    view = ToolView("run", plan)
    # the TUI shows what env shows
    assert view.shown_value("GITHUB_TOKEN", GITHUB) == policy.plan_shown(plan, "GITHUB_TOKEN")
    # a value shaped like a key is masked whatever its name
    p2 = _profile(policy={"inherit": ["MY_SETTING"]})
    plan2 = plan_for(p2, "run", KEY, {"MY_SETTING": GITHUB}, tmp_path, paths=paths)
    assert GITHUB not in policy.plan_shown(plan2, "MY_SETTING")


@pytest.mark.parametrize("args", [("env", "p"), ("env", "p", "--format", "json"), ("env", "p", "--diff"),
                                  ("env", "p", "--format", "dotenv")])
def test_ccs_env_never_prints_an_inherited_token(ccs, tmp_path, args):
    profiles = Path(os.environ["CCS_HOME"]) / "profiles"
    profiles.mkdir(parents=True, exist_ok=True)
    (profiles / "p.toml").write_text('schema = 1\n[provider]\nname = "P"\nbase_url = "https://gw.example"\n'
                                     'key = "env:PKEY"\n[run]\nexport = ["openai"]\n'
                                     '[policy]\ninherit = ["GITHUB_TOKEN"]\n')
    env = {**os.environ, "PKEY": KEY, "GITHUB_TOKEN": GITHUB}
    r = ccs(*args, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert GITHUB not in r.stdout and KEY not in r.stdout
    if args == ("env", "p"):
        assert "# left out: GITHUB_TOKEN OPENAI_API_KEY" in r.stdout  # eval-safe: left out, and said so
    if "json" in args:
        json.loads(r.stdout)


@pytest.mark.usefixtures("secret_service")
def test_shell_past_a_refusal_records_that_it_was_forced(ccs, base_env, tmp_path, key_id):
    """`ccs shell` launches past settings refusals; the manifest says so (the plan carries force)."""
    proj = tmp_path / "repo"
    (proj / ".claude").mkdir(parents=True)
    (proj / ".claude" / "settings.json").write_text(json.dumps({"apiKeyHelper": "echo stolen"}))
    env = {**base_env, "SHELL": "/bin/true"}
    assert ccs("new", "p", "--base-url", "http://127.0.0.1:9", "--key", key_id, env=env).returncode == 0
    assert ccs("key", "set", key_id, input=KEY, env=env).returncode == 0
    r = ccs("launch", "p", "claude", "--", "--version", env=env, cwd=proj)
    assert r.returncode == 2 and "apiKeyHelper" in r.stderr and "--isolate" in r.stderr
    r = ccs("shell", "p", "--tool", "claude", env=env, cwd=proj)
    assert r.returncode == 0, r.stderr
    (manifest,) = json.loads(ccs("runs", "--json", env=env).stdout)["runs"]
    assert manifest["forced"] is True and manifest["nested"] is False
    assert any("apiKeyHelper" in m for m in manifest["overridden"])


def test_profile_errors_carry_their_field_and_line():
    cases = [
        ({"codex": {"model": "m", "provider_id": "openai"}}, "[codex].provider_id"),
        ({"claude": {"env": {"X": 1}}}, "[claude.env].X"),
        ({"env": {"OPENAI_SECRET": "x"}}, "[env].OPENAI_SECRET"),
        ({"schema": 2}, "schema"),
        ({"policy": {"inherit": ["ANTHROPIC_*"]}}, "[policy].inherit"),
        ({"secrets": {"CCS_X": "k"}}, "[secrets].CCS_X"),
    ]
    for extra, field in cases:
        data = {"schema": 1, "provider": {"name": "P", "base_url": "https://h", "key": "k"}, **extra}
        with pytest.raises(ProfileError) as exc:
            profile_from_data("p", data)
        assert exc.value.field == field, (extra, str(exc.value))
    with pytest.raises(ProfileError) as exc:
        validate_text("p", 'schema = 1\n[provider]\nname = "P"\nbase_url = \n')
    assert (exc.value.line, exc.value.column) == (4, 12) and "p.toml:4:12: base_url has no value" in str(exc.value)


def test_the_editor_points_at_the_field_an_error_carries():
    from ccswitch_tui.tui.screens.editor import field_for

    assert field_for("[codex].provider_id") == "f-codex-provider_id"
    assert field_for("[gemini.env].X") == "f-gemini-env"
    assert field_for("[env].X") == "f-env"
    assert field_for("description") == "f-description"
    assert field_for("[policy].inherit") == "f-policy-inherit"
    assert field_for(None) is None


def test_new_takes_any_registered_tools_model(ccs, tmp_path):
    r = ccs("new", "g", "--base-url", "https://gw.example/api", "--key", "env:GW_KEY",
            "--model", "gemini=gemini-2.5-pro", "--model", "opencode=kimi-k2")
    assert r.returncode == 0, r.stderr
    data = json.loads(ccs("show", "g", "--json").stdout)
    assert data["tools"] == ["gemini", "opencode", "run"]
    assert data["gemini"]["model"] == "gemini-2.5-pro" and data["opencode"]["model"] == "kimi-k2"
    assert data["claude"] is None  # --model chose the tools: no default [claude] table
    assert "export GW_KEY=… before running ccs" in ccs("show", "g").stdout  # not `ccs key set env:GW_KEY`
    for bad, message in ((("--model", "grok=x"), "unknown tool 'grok'; choose one of: claude, codex, gemini"),
                         (("--model", "gemini"), "write TOOL=MODEL")):
        r = ccs("new", "h", "--base-url", "https://gw.example", *bad)
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr
        assert not (Path(os.environ["CCS_HOME"]) / "profiles" / "h.toml").exists()


def test_check_reports_a_side_whose_launch_cannot_be_planned(ccs, tmp_path):
    """check reads its probes from the plan; a plan that fails (a FIFO where the profile's Codex config
    should be) is that side's one-line result, and the other sides are still probed."""
    profiles = Path(os.environ["CCS_HOME"]) / "profiles"
    profiles.mkdir(parents=True, exist_ok=True)
    (profiles / "p.toml").write_text('schema = 1\n[provider]\nname = "P"\nbase_url = "http://127.0.0.1:9"\n'
                                     'key = "env:PKEY"\n[claude]\n[codex]\nmodel = "m"\n')
    home = Path(os.environ["CCS_HOME"]) / "state" / "tools" / "p" / "codex"
    home.mkdir(parents=True)
    os.mkfifo(home / "config.toml")
    r = ccs("check", "p", "--json", "--timeout", "2", env={**os.environ, "PKEY": KEY}, timeout=60)
    assert r.returncode == 3 and "Traceback" not in r.stderr
    results = {x["tool"]: x for x in json.loads(r.stdout)["results"]}
    assert results["codex"]["outcome"] == "profile-invalid" and "config.toml" in results["codex"]["detail"]
    assert results["claude"]["outcome"] == "unreachable"  # probed all the same

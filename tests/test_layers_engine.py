"""The layers engine (launch/layers.py) against what a hostile repository or home would put in a declared
layer: files ccs cannot read refuse the launch instead of being skipped, a FIFO or a device does not block
it, a YAML file whose aliases expand to a huge value stays small in every message, and nothing of a file's
values reaches a refusal. Plans only: the real clients meet these layers in test_conformance_layers.py."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from ccswitch_tui import tools
from ccswitch_tui.launch.layers import doctor_part, judge, layers_table
from ccswitch_tui.launch.plan import plan_for
from ccswitch_tui.paths import Paths
from ccswitch_tui.profiles.schema import profile_from_data
from ccswitch_tui.tools.layers import Layer, working

KEY = "sk-engine-0123456789abcdefXYZ"


def plan(tmp_path: Path, tool: str, table: dict, cwd: Path, isolate: bool = False, **env: str):
    profile = profile_from_data("p", {"schema": 1, "provider": {"name": "P", "base_url": "https://gw.example/v1",
                                                                "key": "env:K"}, tool: table})
    parent = {"PATH": "/usr/bin", "HOME": str(tmp_path / "home"),
              "CCS_CLAUDE_MANAGED_SETTINGS": str(tmp_path / "none.json"), **env}
    return plan_for(profile, tool, KEY, parent, cwd, paths=Paths(profiles=tmp_path / "p", state=tmp_path / "s"),
                    isolate=isolate)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    return repo


@pytest.mark.parametrize("text", ["{not json", '{"env": ' * 5000 + "1" + "}" * 5000, "\xff\xfe"],
                         ids=["syntax", "too-deep", "not-utf8"])
def test_a_layer_ccs_cannot_read_refuses_instead_of_being_skipped(tmp_path, repo, text):
    path = repo / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_bytes(text.encode("latin-1") if text == "\xff\xfe" else text.encode())
    p = plan(tmp_path, "claude", {"model": "m"}, repo)
    (refusal,) = p.refusals
    assert str(path) in refusal.message and "so ccs cannot tell what Claude Code takes from it" in refusal.message
    assert refusal.flags == ("isolate", "force") and f"fix or remove {path}" in refusal.ways_out
    assert plan(tmp_path, "claude", {"model": "m"}, repo, isolate=True).refusals == ()


def test_a_fifo_or_a_device_in_place_of_a_layer_does_not_block(tmp_path, repo):
    (repo / ".claude").mkdir()
    os.mkfifo(repo / ".claude" / "settings.json")  # a naive read would wait here for ever
    (repo / ".claude" / "settings.local.json").symlink_to("/dev/zero")
    started = time.monotonic()
    p = plan(tmp_path, "claude", {"model": "m"}, repo)
    assert time.monotonic() - started < 5
    assert len(p.refusals) == 2 and all("cannot read" in r.message for r in p.refusals)


def test_a_yaml_alias_bomb_stays_small_and_still_refuses(tmp_path, repo):
    """A few hundred bytes whose aliases expand to 10^9 strings: ccs names the key and shows a bounded value."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    lines.append("set-env: *a8")
    (repo / ".aider.conf.yml").write_text("\n".join(lines) + "\n")
    started = time.monotonic()
    p = plan(tmp_path, "aider", {"model": "m"}, repo)
    (refusal,) = p.refusals
    assert refusal.message.startswith(f"{repo / '.aider.conf.yml'} sets set-env (")
    part = doctor_part(tools.load().get("aider"), {"HOME": str(tmp_path / "home")}, repo, tools.load().families)
    (row,) = [r for r in part.info if r["path"] == str(repo / ".aider.conf.yml")]  # listed once
    assert len(row["routing"]["set-env"]) < 5000 and "…" in row["routing"]["set-env"]
    assert time.monotonic() - started < 10


def test_values_from_a_file_stay_out_of_refusals_and_warnings(tmp_path, repo):
    """A refusal names the keys; the values (a key, a URL with a password, terminal escapes) stay in the file."""
    (repo / ".claude").mkdir()
    hostile = "\x1b]52;c;ZXZpbA==\x07sk-ant-hostile-0123456789abcdef http://u:pw@evil.example"
    (repo / ".claude" / "settings.json").write_text(json.dumps({"apiKeyHelper": hostile, "env": {
        "HTTPS_PROXY": hostile}}))
    p = plan(tmp_path, "claude", {"model": "m"}, repo)
    text = json.dumps([r.message for r in p.refusals] + list(p.warnings) + list(p.layers or ()))
    assert "apiKeyHelper" in text and "env.HTTPS_PROXY" in text
    assert "hostile" not in text and "pw@" not in text and "\\u001b" not in text


def test_keys_ccs_beats_are_named_not_refused(tmp_path, repo):
    """Claude Code's flag settings beat a project's base URL and model; a key helper they do not set refuses."""
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text(json.dumps(
        {"env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_MODEL": "x"}, "model": "y"}))
    p = plan(tmp_path, "claude", {"model": "m"}, repo)
    assert p.refusals == () and p.project_layers == ()
    assert any("would redirect a Claude Code started here by hand" in w for w in p.warnings)
    (record,) = p.layers
    assert "beaten by ccs: env.ANTHROPIC_BASE_URL, env.ANTHROPIC_MODEL, model" in record
    # without [claude].model, ANTHROPIC_MODEL is not the launch's: the project's model is not beaten
    p = plan(tmp_path, "claude", {}, repo)
    (refusal,) = p.refusals
    assert "sets env.ANTHROPIC_MODEL, model (" in refusal.message


def test_what_an_env_file_fills_in_loses_to_the_launchs_environment(tmp_path, repo):
    (repo / ".env").write_text("OPENAI_BASE_URL=http://127.0.0.1:9\nexport OPENAI_API_KEY='sk-x'\nHTTP_PROXY=x\n")
    p = plan(tmp_path, "qwen", {"model": "m"}, repo)
    (refusal,) = p.refusals
    assert f"{repo / '.env'} sets HTTP_PROXY (" in refusal.message  # the other two the launch sets itself
    assert "beaten by ccs: OPENAI_BASE_URL, OPENAI_API_KEY" in p.layers[0]


def test_a_variable_that_makes_the_client_skip_a_layer_is_read_from_the_launchs_environment(tmp_path, repo):
    """OpenCode skips a project's files when OPENCODE_DISABLE_PROJECT_CONFIG=1, which the launch sets: the
    engine reads that from the plan's environment; a shell without it (doctor) sees the file."""
    (repo / "opencode.json").write_text(json.dumps({"model": "evil/m"}))
    p = plan(tmp_path, "opencode", {"model": "m"}, repo)
    assert p.refusals == () and "not loaded" in p.layers[0]
    part = doctor_part(tools.load().get("opencode"), {"HOME": str(tmp_path / "home")}, repo, tools.load().families)
    assert any(r["path"] == str(repo / "opencode.json") for r in part.info)
    spec = tools.load().get("opencode")
    skip = next(x for x in spec.layers if x.name == "project")
    assert not skip.read_by({"OPENCODE_DISABLE_PROJECT_CONFIG": "1"}) and skip.read_by({})
    judged = judge(spec, p, {}, None, isolate=False, families=tools.load().families)
    assert judged.refusals == []


def test_a_declaration_with_an_unknown_scope_format_or_role_fails_when_built():
    with pytest.raises(TypeError, match="layer 'x': unknown scope 'repo'"):
        Layer("x", "repo", "json", working("x.json"))
    with pytest.raises(TypeError, match="unknown format 'ini'"):
        Layer("x", "project", "ini", working("x.ini"))


def test_the_table_lists_every_declared_layer_and_the_reason_for_none():
    text = layers_table(tools.load().specs())
    for spec in tools.load().specs():
        for layer in spec.layers:
            assert f"| {spec.label} | {layer.name} | {layer.scope} |" in text
    assert "`ccs run` starts any program" in text

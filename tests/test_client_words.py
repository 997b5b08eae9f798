"""What the core says about a client comes from the client's spec: the `ccs import NAME` commands and
`ccs new --NAME-model` options are built from the registry, a run's argv loses the options the
client's spec added, a cloud switch names the client it turns, and `ccs check`'s hints are the
client's own words. The texts are the ones ccs printed before they moved into the specs."""

from __future__ import annotations

from ccswitch_tui import tools
from ccswitch_tui.runs.manifests import user_argv


def test_import_commands_and_model_options_come_from_the_specs(ccs, base_env):
    r = ccs("import", "--help", env=base_env)
    assert r.returncode == 0
    for spec in tools.load().importable():
        assert spec.name in r.stdout
    r = ccs("import", "claude", "--help", env=base_env)
    assert "--settings FILE" in r.stdout and "Import the provider that Claude Code's settings.json" in r.stdout
    r = ccs("import", "codex", "--help", env=base_env)
    assert "--home DIRECTORY" in r.stdout and "default: from the provider's name or host" in r.stdout
    r = ccs("import", "gemini", "--settings", "x", env=base_env)
    assert r.returncode == 2  # no importer: no command
    r = ccs("new", "--help", env=base_env)
    assert "--claude-model" in r.stdout and "--codex-model" in r.stdout and "--gemini-model" not in r.stdout
    assert "e.g. codex=gpt-4.1" in r.stdout


def test_blank_profile_serves_the_default_client(ccs, base_env):
    assert tools.load().default_client().name == "claude"
    r = ccs("new", "bare", "--base-url", "https://b.example", env=base_env)
    assert r.returncode == 0, r.stderr
    r = ccs("show", "bare", "--json", env=base_env)
    assert '"claude"' in r.stdout


def test_a_runs_argv_loses_what_the_clients_spec_added():
    argv = ["claude", "--settings", "/s/ccs-settings.json", "--setting-sources", "user", "-p", "hi"]
    assert user_argv({"tool": "claude", "argv": argv}) == ["claude", "-p", "hi"]
    assert user_argv({"tool": "codex", "argv": ["codex", "--settings", "/s/ccs-settings.json"]}) == [
        "codex", "--settings", "/s/ccs-settings.json"]
    assert user_argv({"tool": "gone", "argv": ["x", "y"]}) == ["x", "y"]  # a manifest of a removed client


def test_cloud_switches_and_hints_name_the_client():
    assert tools.load().switched_label("CLAUDE_CODE_USE_BEDROCK") == "Claude Code"
    assert tools.load().switched_label("NOT_A_SWITCH") == "the client"
    assert tools.load().probe_hint("anthropic:auth") == "check the auth kind ([claude].auth)"
    assert "Claude Code posts to {base_url}/v1/messages" in tools.load().probe_hint("anthropic:not-found")
    assert 'wire_api = "chat" in the profile\'s [codex] table' in tools.load().probe_hint("openai:no-responses")
    assert tools.load().probe_hint("nobody:here", "fallback") == "fallback"
    assert tools.load().client_labels("nor", tools.load().importable()) == "Claude Code nor Codex"
    assert tools.load().client_labels("/", tools.load().importable()) == "Claude Code / Codex"

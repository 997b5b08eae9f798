"""How Claude Code settings and Codex configs map to profile fields (pure functions, no keyring)."""

from __future__ import annotations

import pytest

from ccswitch_tui.importers.mapping import env_check, parse_toml_text
from ccswitch_tui.importers.model import RowProblem
from ccswitch_tui.importers.naming import host_label, slugify
from ccswitch_tui.tools.claude_import import parse_settings
from ccswitch_tui.tools.codex.importing import parse_config as parse_codex_config

KEY = "sk-0123456789abcdef0123"


def parse_claude_settings(settings, api_key_field=None):
    """Claude Code's importer with validation's rule for env values, as `ccs import` runs it."""
    return parse_settings(settings, api_key_field, env_check)


def test_claude_key_field_named_by_meta_wins():
    env = {"ANTHROPIC_BASE_URL": "https://h/api/", "ANTHROPIC_AUTH_TOKEN": "sk-other-0123456789ab",
           "ANTHROPIC_API_KEY": KEY}
    p = parse_claude_settings({"env": env}, "ANTHROPIC_API_KEY")
    assert (p.key, p.fields.auth, p.fields.base_url) == (KEY, "api-key", "https://h/api")
    assert any("second, different key" in w for w in p.warnings)
    p = parse_claude_settings({"env": env})
    assert (p.key, p.fields.auth) == ("sk-other-0123456789ab", "token")


def test_claude_empty_key_fields_and_official_defaults():
    # CC Switch seeds key fields as present-but-empty; the field still says which auth is meant
    p = parse_claude_settings({"env": {"ANTHROPIC_BASE_URL": "https://h", "ANTHROPIC_API_KEY": ""}})
    assert p.key is None and p.fields.auth == "api-key"
    p = parse_claude_settings({"env": {"ANTHROPIC_API_KEY": KEY}})
    assert p.fields.base_url == "https://api.anthropic.com" and p.fields.auth == "api-key"
    with pytest.raises(RowProblem, match="own login") as exc:
        parse_claude_settings({"env": {"ANTHROPIC_MODEL": "x"}})
    assert exc.value.action == "skipped"


def test_claude_models_and_env():
    p = parse_claude_settings({
        "model": "opus",
        "apiKeyHelper": "pass show anthropic",
        "env": {"ANTHROPIC_BASE_URL": "https://h", "ANTHROPIC_AUTH_TOKEN": KEY,
                "ANTHROPIC_SMALL_FAST_MODEL": "small", "CLAUDE_CODE_SUBAGENT_MODEL": "sub",
                "CLAUDE_CODE_MAX_OUTPUT_TOKENS": 32000, "DISABLE_TELEMETRY": True, "NESTED": {"a": 1},
                "CLAUDE_CODE_OAUTH_TOKEN": "tok", "CLAUDE_CONFIG_DIR": "/x", "bad-name": "1",
                "ANTHROPIC_CUSTOM_HEADERS": f"x-api-key: {KEY}"}})
    f = p.fields
    assert (f.model, f.haiku, f.subagent) == ("opus", "small", "sub")
    assert f.env == {"CLAUDE_CODE_MAX_OUTPUT_TOKENS": "32000", "DISABLE_TELEMETRY": "1"}
    text = " | ".join(p.warnings)
    for words in ("deprecated", "apiKeyHelper", "NESTED", "CLAUDE_CODE_OAUTH_TOKEN holds a credential",
                  "CLAUDE_CONFIG_DIR is set by ccs", "bad-name", "ANTHROPIC_CUSTOM_HEADERS contains the key"):
        assert words in text, words
    assert KEY not in text


def test_codex_custom_provider():
    cfg = parse_toml_text('model = "m"\nmodel_provider = "tt"\nmodel_reasoning_effort = "turbo"\n'
                          '[model_providers.tt]\nname = "TaoToken"\nbase_url = "https://t.example/v1/"\n'
                          'wire_api = "chat"\nhttp_headers = { "X-A" = "1" }\n')
    p = parse_codex_config(cfg, {"OPENAI_API_KEY": KEY})
    assert (p.fields.base_url, p.fields.model, p.fields.provider_id) == ("https://t.example/v1", "m", "tt")
    assert p.fields.reasoning_effort is None and p.provider_name == "TaoToken"
    assert p.fields.wire_api == "chat"  # kept: ccs translates for Codex
    assert (p.key, p.key_from) == (KEY, "auth")
    text = " | ".join(p.warnings)
    assert "wire_api" not in text and "turbo" in text and "http_headers" in text
    odd = parse_codex_config(parse_toml_text('model = "m"\nmodel_provider = "tt"\n[model_providers.tt]\n'
                                             'base_url = "https://t.example/v1"\nwire_api = "grpc"\n'), {})
    assert odd.fields.wire_api == "responses" and any("'grpc' is unknown" in w for w in odd.warnings)


def test_codex_builtin_ids_and_openai():
    cfg = parse_toml_text('model = "gpt-4.1"\nopenai_base_url = "https://proxy.example/v1"\n')
    p = parse_codex_config(cfg, {"OPENAI_API_KEY": KEY})
    assert p.fields.base_url == "https://proxy.example/v1" and p.fields.provider_id is None
    with pytest.raises(RowProblem, match="built-in provider 'ollama'"):
        parse_codex_config(parse_toml_text('model = "q"\nmodel_provider = "ollama"\n'), {})
    with pytest.raises(RowProblem, match="without an API key"):
        parse_codex_config(cfg, {"OPENAI_API_KEY": None})


def test_codex_profile_key_and_env_key():
    cfg = parse_toml_text('model = "a"\nprofile = "fast"\nmodel_provider = "p"\n[profiles.fast]\nmodel = "b"\n'
                          '[model_providers.p]\nbase_url = "https://p.example/v1"\nenv_key = "P_KEY"\n')
    p = parse_codex_config(cfg, {"OPENAI_API_KEY": "sk-not-this-one-0000000"}, {"P_KEY": KEY})
    assert p.fields.model == "b" and (p.key, p.key_from) == (KEY, "env:P_KEY")
    assert any("profile 'fast'" in w for w in p.warnings)
    p = parse_codex_config(cfg, {}, {})
    assert p.key is None and any("$P_KEY" in w for w in p.warnings)


@pytest.mark.parametrize(("text", "slug"), [
    ("DeepSeek", "deepseek"), ("Kimi 月之暗面", "kimi"), ("智谱", ""),
    ("  Open Router (paid)!", "open-router-paid"), ("Zhipu GLM 4.6", "zhipu-glm-4.6"),
])
def test_slugify(text, slug):
    assert slugify(text) == slug


@pytest.mark.parametrize(("host", "label"), [("api.deepseek.com", "deepseek"), ("open.bigmodel.cn", "bigmodel"),
                                             ("openrouter.ai", "openrouter"), ("api.example.com.cn", "example"),
                                             ("127.0.0.1", "127.0.0.1"), ("localhost", "localhost")])
def test_host_label(host, label):
    assert host_label(host) == label

"""Profile validation: names, schema errors that name the place, did-you-mean."""

from __future__ import annotations

import pytest

from ccswitch_tui.errors import ProfileError, UsageError
from ccswitch_tui.profiles.schema import profile_from_data
from ccswitch_tui.profiles.store import validate_text
from ccswitch_tui.tools.checker import check_name

MINIMAL = {"schema": 1, "provider": {"name": "P", "base_url": "https://h/api", "key": "k"}}


def with_(**tables):
    data = {k: dict(v) if isinstance(v, dict) else v for k, v in MINIMAL.items()}
    data.update(tables)
    return data


@pytest.mark.parametrize("name", ["a", "taotoken", "gpt-4.1_x", "0", "a" * 64])
def test_good_names(name):
    assert check_name(name) == name


@pytest.mark.parametrize("name", ["", "../x", "x/y", "A", "-a", ".hidden", "a" * 65, "a b", "..", "é"])
def test_bad_names_refused(name):
    with pytest.raises(UsageError, match="invalid profile name"):
        check_name(name)


def test_minimal_profile_defaults():
    p = profile_from_data("p", MINIMAL)
    assert p.tools == ("run",)
    assert p.side("claude") is None and p.side("codex") is None
    assert p.key_id == "k"


def test_claude_and_codex_inherit_provider_base_url():
    p = profile_from_data("p", with_(claude={}, codex={"model": "m"}))
    assert p.side("claude").base_url == "https://h/api"
    assert p.side("claude").auth == "token"
    assert p.side("codex").base_url == "https://h/api"
    assert p.side("codex").provider_id == "p"
    assert p.tools == ("claude", "codex", "run")


def test_builtin_codex_provider_id_refused_with_place():
    with pytest.raises(ProfileError) as exc:
        profile_from_data("tt", with_(codex={"model": "m", "provider_id": "openai"}))
    assert str(exc.value) == (
        'tt.toml: [codex].provider_id "openai" is a built-in Codex provider id; pick another'
    )


def test_default_provider_id_avoids_builtins():
    p = profile_from_data("openai", with_(codex={"model": "m"}))
    assert p.side("codex").provider_id == "openai-ccs"


def test_unknown_field_did_you_mean():
    with pytest.raises(ProfileError, match=r"p.toml: unknown field \[claude\].modle; did you mean 'model'\?"):
        profile_from_data("p", with_(claude={"modle": "x"}))


def test_unknown_top_level_table():
    with pytest.raises(ProfileError, match=r"unknown table \[provdier\]; did you mean \[provider\]\?"):
        profile_from_data("p", {**MINIMAL, "provdier": {}})


def test_unknown_field_without_close_match_lists_allowed():
    with pytest.raises(ProfileError, match=r"unknown field \[policy\].zzz; allowed: inherit"):
        profile_from_data("p", with_(policy={"zzz": 1}))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"schema": 2, **{k: v for k, v in MINIMAL.items() if k != "schema"}}, "schema = 2 is not supported"),
        ({"schema": 1}, r"\[provider\] table is required"),
        (with_(provider={"name": "P", "base_url": "ftp://x", "key": "k"}), "is not an http"),
        (with_(provider={"name": "P", "base_url": "https://h", "key": "bad key"}), "is not a key id"),
        (with_(provider={"name": "P", "base_url": "https://h", "key": "env:1X"}), "after env: comes"),
        (with_(claude={"auth": "bearer"}), r"\[claude\].auth 'bearer' must be one of: token, api-key"),
        (with_(codex={}), r"\[codex\].model is required"),
        (with_(codex={"model": "m", "reasoning_effort": "max"}), "reasoning_effort 'max' must be one of"),
        (with_(run={"export": ["gemini"]}), r"\[run\].export 'gemini' must be one of"),
        (with_(env={"N": 1}), r"\[env\].N must be a string"),
        (with_(env={"OPENAI_API_KEY": "sk-x"}), "looks like a secret; keys belong in the keyring"),
        (with_(claude={"env": {"MY_TOKEN": "x"}}), r"\[claude.env\].MY_TOKEN looks like a secret"),
        (with_(policy={"inherit": ["BAD-NAME"]}), "must be a variable name"),
    ],
)
def test_schema_errors_name_the_place(data, message):
    with pytest.raises(ProfileError, match=message) as exc:
        profile_from_data("p", data)
    assert str(exc.value).startswith("p.toml: ")


def test_toml_syntax_error_has_line_and_col():
    text = 'schema = 1\n[provider]\nname = "P"\nbase_url = https://x\n'
    with pytest.raises(ProfileError) as exc:
        validate_text("p", text, "/some/p.toml")
    msg = str(exc.value)
    assert msg.startswith("/some/p.toml:4:"), msg
    assert "\n" not in msg


def test_env_key_reference():
    p = profile_from_data("p", with_(provider={"name": "P", "base_url": "https://h", "key": "env:MY_KEY"}))
    assert p.provider.key_env_var == "MY_KEY"


@pytest.mark.parametrize("pasted", ["sk-ant-api03-abcdefghijklmnop", "abcdefABCDEF0123456789abcdefABCDEF12"])
def test_a_key_pasted_as_key_id_is_refused_without_echoing_it(pasted):
    from ccswitch_tui.tools.checker import check_key_id

    with pytest.raises(UsageError) as exc:
        check_key_id(pasted)
    assert pasted not in str(exc.value) and "looks like a key itself" in str(exc.value)
    with pytest.raises(ProfileError) as exc:
        profile_from_data("p", with_(provider={"name": "P", "base_url": "https://h", "key": pasted}))
    assert pasted not in str(exc.value) and "ccs key set" in str(exc.value)


@pytest.mark.parametrize("key_id", ["taotoken", "my-company-production-openrouter-key-2026", "test-0123456789"])
def test_ordinary_key_ids_are_not_mistaken_for_keys(key_id):
    from ccswitch_tui.tools.checker import check_key_id

    assert check_key_id(key_id) == key_id


def test_codex_wire_api_defaults_to_responses_and_accepts_chat():
    assert profile_from_data("p", with_(codex={"model": "m"})).side("codex").wire_api == "responses"
    assert profile_from_data("p", with_(codex={"model": "m", "wire_api": "chat"})).side("codex").wire_api == "chat"
    with pytest.raises(ProfileError, match=r"p\.toml: \[codex\]\.wire_api 'grpc' must be one of: responses, chat"):
        profile_from_data("p", with_(codex={"model": "m", "wire_api": "grpc"}))


@pytest.mark.parametrize(("preset", "endpoint"), [
    ("kimi", "https://api.moonshot.cn/v1"),
    ("glm", "https://open.bigmodel.cn/api/coding/paas/v4"),
    ("qwen", "https://dashscope.aliyuncs.com/compatible-mode/v1"),
    ("minimax", "https://api.minimaxi.com/v1"),
    ("deepseek", "https://api.deepseek.com"),
])
def test_chat_only_presets_serve_codex_through_chat_completions(preset, endpoint):
    from ccswitch_tui.profiles.presets import load_preset

    codex = load_preset(preset).profile.side("codex")
    assert codex is not None and codex.wire_api == "chat"
    assert codex.base_url == endpoint and codex.model

"""`ccs check --tool claude` probes the model the launch sends: one loopback stub records the model of
the probe and of a real `claude -p` launch of the same profile, and they agree; when the profile names
no main model, check says that Claude Code picks its own default, and which."""

from __future__ import annotations

import json

import pytest

KEY = "sk-checkmodel-0123456789abcdefXYZ"


@pytest.mark.usefixtures("secret_service")
@pytest.mark.parametrize("models, expected, picked", [
    ((), "claude-opus-5-5", True),  # the anthropic preset as it ships: no model at all
    (("--model", "claude=main-m"), "main-m", False),
])
def test_probe_and_launch_send_the_same_model(ccs, base_env, stubs, client_bin, key_id, models, expected, picked):
    clients_bin = client_bin("claude")
    stub = stubs("anthropic")
    env = {**base_env, "PATH": f"{clients_bin}:{base_env['PATH']}"}
    r = ccs("new", "anth", "--preset", "anthropic", "--base-url", stub.url, "--key", key_id, *models, env=env)
    assert r.returncode == 0, r.stderr
    assert ccs("key", "set", key_id, input=KEY, env=env).returncode == 0

    r = ccs("check", "anth", "--tool", "claude", "--json", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    (result,) = json.loads(r.stdout)["results"]
    (probe,) = stub.posts()
    assert probe.headers.get("user-agent") == "ccs-check"
    r = ccs("launch", "anth", "claude", "--", "-p", "hi", env=env, timeout=90)
    assert r.returncode == 0, r.stderr
    (launch,) = stub.posts()[1:]
    assert probe.body["model"] == launch.body["model"] == result["model"] == expected
    if picked:
        assert "Claude Code picks its own default, claude-opus-5-5" in result["model_note"]
        text = ccs("check", "anth", "--tool", "claude", env=env).stdout
        assert "anth/claude model=claude-opus-5-5: no [claude].model" in text
    else:
        assert result["model_note"] is None


@pytest.mark.usefixtures("secret_service")
def test_only_lower_tiers_set_probe_claudes_own_default_and_opus_replaces_it(ccs, base_env, stubs, client_bin,
                                                                             key_id, ccs_home):
    """With [claude].sonnet/.haiku only, Claude Code still sends its opus-tier default (the probe once
    asked for the sonnet model); [claude].opus replaces that default."""
    clients_bin = client_bin("claude")
    stub = stubs("anthropic")
    env = {**base_env, "PATH": f"{clients_bin}:{base_env['PATH']}"}
    assert ccs("new", "tiers", "--base-url", stub.url, "--key", key_id, "--model", "claude=x", env=env).returncode == 0
    path = ccs_home.profiles / "tiers.toml"
    path.write_text(path.read_text().replace('model = "x"', 'sonnet = "my-sonnet"\nhaiku = "my-haiku"'))
    assert ccs("key", "set", key_id, input=KEY, env=env).returncode == 0
    for opus, expected in ((None, "claude-opus-5-5"), ("my-opus", "my-opus")):
        if opus:
            path.write_text(path.read_text().replace('sonnet = "my-sonnet"', f'sonnet = "my-sonnet"\nopus = "{opus}"'))
        stub.requests.clear()
        r = ccs("check", "tiers", "--tool", "claude", "--json", env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        assert ccs("launch", "tiers", "claude", "--", "-p", "hi", env=env, timeout=90).returncode == 0
        probe, *rest = stub.posts()
        assert [p.body["model"] for p in (probe, rest[-1])] == [expected, expected]
        assert json.loads(r.stdout)["results"][0]["model"] == expected

"""`ccs export`: profiles without any secret, as their TOML or in CC Switch's provider shape; the JSON
comes back in through `ccs import cc-switch` as the same profiles."""

from __future__ import annotations

import json
import os
import uuid

import pytest
import tomlkit

from ccswitch_tui.keys.keyring import SERVICE, KeyStore
from ccswitch_tui.profiles.store import Store, validate_text

BOTH = """\
# DeepSeek for both tools — my notes
schema = 1
description = "DeepSeek for Claude Code and Codex"

[provider]
name = "DeepSeek"
base_url = "https://api.deepseek.com"
key = "{key}"
website = "https://platform.deepseek.com"

[claude]
base_url = "https://api.deepseek.com/anthropic"
model = "deepseek-v4-pro"
haiku = "deepseek-v4-flash"

[claude.env]
API_TIMEOUT_MS = "600000"

[codex]
base_url = "https://api.deepseek.com/v1"
model = "deepseek-v4-pro"
provider_id = "deepseek"
reasoning_effort = "high"

[run]
export = ["openai"]

[secrets]
ANTHROPIC_CUSTOM_HEADERS = "{secret}"
"""

CLAUDE_ONLY = """\
schema = 1
[provider]
name = "Anthropic"
base_url = "https://api.anthropic.com"
key = "env:ANTHROPIC_TEST_KEY"
[claude]
auth = "api-key"
"""


@pytest.fixture
def profiles(ccs_home):
    tag = uuid.uuid4().hex[:6]
    secret = f"team-{uuid.uuid4().hex[:8]}"  # the key id of the gateway's header line (its value is in the keyring)
    store = Store(ccs_home)
    store.save_text("ds", BOTH.format(key=f"ds-{tag}", secret=secret), create=True)
    store.save_text("anthropic", CLAUDE_ONLY, create=True)
    return store, tag, secret


def test_export_toml_keeps_the_file_and_drops_credentials(profiles, ccs):
    store, tag, secret = profiles
    r = ccs("export", "ds")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("# Exported by ccs from profile 'ds'; no key inside")
    assert f"ccs key set ds-{tag}" in r.stdout.splitlines()[0]
    assert "# DeepSeek for both tools — my notes" in r.stdout
    _, p = validate_text("ds", r.stdout)
    assert p.side("claude").env == {"API_TIMEOUT_MS": "600000"}
    assert p.secrets == {"ANTHROPIC_CUSTOM_HEADERS": secret}  # a key id travels; its value stays in the keyring
    assert p.side("codex").reasoning_effort == "high" and p.provider.key == f"ds-{tag}"
    # the exported text, minus the header and the emptied header value, is the file itself
    body = r.stdout.split("\n", 1)[1]
    assert body == store.read_text("ds")


def test_a_credential_header_in_an_env_table_is_refused_not_exported(profiles, ccs, ccs_home):
    """The header line belongs in [secrets]: a profile holding it in [claude.env] is refused in one
    line (the same verdict validation, env and export give), and nothing is printed."""
    path = ccs_home.profiles / "hdr.toml"
    path.write_text(CLAUDE_ONLY + '[claude.env]\nANTHROPIC_CUSTOM_HEADERS = "X-Gateway-Auth: team-1234"\n')
    r = ccs("export", "hdr")
    assert r.returncode == 2 and r.stdout == "" and "team-1234" not in r.stderr
    assert "[claude.env].ANTHROPIC_CUSTOM_HEADERS holds a credential" in r.stderr and "[secrets]" in r.stderr


def test_export_several_toml_needs_a_directory(profiles, ccs, tmp_path):
    r = ccs("export", "ds", "anthropic")
    assert r.returncode == 2 and "--output DIR" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    out = tmp_path / "shared"
    r = ccs("export", "ds", "anthropic", "--output", str(out))
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["anthropic.toml", "ds.toml"]
    validate_text("anthropic", (out / "anthropic.toml").read_text())
    r = ccs("export", "ds", "--output", str(out))
    assert r.returncode == 2 and "--force" in r.stderr
    assert ccs("export", "ds", "--output", str(out), "--force").returncode == 0


def test_export_json_is_the_cc_switch_shape_with_empty_keys(profiles, ccs):
    _, tag, secret = profiles
    r = ccs("export", "ds", "anthropic", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert secret not in r.stdout
    data = json.loads(r.stdout)
    assert set(data) == {"claude", "codex"}
    assert data["claude"]["current"] == "" and data["codex"]["current"] == ""
    ds = data["claude"]["providers"]["ds"]
    assert ds["id"] == "ds" and ds["name"] == "DeepSeek" and ds["websiteUrl"] == "https://platform.deepseek.com"
    assert ds["meta"] == {"apiKeyField": "ANTHROPIC_AUTH_TOKEN"}
    assert ds["settingsConfig"]["env"] == {
        "ANTHROPIC_BASE_URL": "https://api.deepseek.com/anthropic",
        "ANTHROPIC_AUTH_TOKEN": "",
        "ANTHROPIC_MODEL": "deepseek-v4-pro",
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": "deepseek-v4-flash",
        "API_TIMEOUT_MS": "600000",
        "ANTHROPIC_CUSTOM_HEADERS": "",
    }
    an = data["claude"]["providers"]["anthropic"]
    assert an["settingsConfig"]["env"] == {"ANTHROPIC_BASE_URL": "https://api.anthropic.com", "ANTHROPIC_API_KEY": ""}
    assert an["meta"] == {"apiKeyField": "ANTHROPIC_API_KEY"}
    cx = data["codex"]["providers"]["ds"]
    assert cx["settingsConfig"]["auth"] == {"OPENAI_API_KEY": ""}
    cfg = tomlkit.parse(cx["settingsConfig"]["config"]).unwrap()
    assert cfg == {"model_provider": "deepseek", "model": "deepseek-v4-pro", "model_reasoning_effort": "high",
                   "model_providers": {"deepseek": {"name": "DeepSeek", "base_url": "https://api.deepseek.com/v1",
                                                    "wire_api": "responses", "requires_openai_auth": True}}}
    assert "anthropic" not in data["codex"]["providers"]


def test_exported_json_imports_back_as_the_same_profiles(profiles, ccs, tmp_path, secret_service):
    import keyring

    store, tag, _ = profiles
    key = f"sk-roundtrip-{uuid.uuid4().hex}"
    KeyStore(store.paths).set(f"ds-{tag}", key)
    try:
        exported = ccs("export", "ds", "--format", "json")
        assert exported.returncode == 0
        home = tmp_path / "home2"
        (home / ".cc-switch").mkdir(parents=True)
        (home / ".cc-switch" / "config.json").write_text(exported.stdout)
        other = tmp_path / "ccs2"
        env = {**os.environ, "HOME": str(home), "CCS_HOME": str(other)}
        r = ccs("import", "cc-switch", "--json", env=env)
        assert r.returncode == 0, r.stderr
        report = json.loads(r.stdout)
        # no database, only the legacy file: not an error, since the legacy file was read
        assert [(i["source"], i["action"], i["key"]) for i in report["items"]] == [
            ("config.json:claude/ds", "created", "missing"), ("config.json:codex/ds", "merged", "missing")]
        again = Store(store.paths.__class__(profiles=other / "profiles", state=other / "state")).load("deepseek")
        original = store.load("ds")
        a_claude, o_claude = again.side("claude"), original.side("claude")
        a_codex, o_codex = again.side("codex"), original.side("codex")
        assert (a_claude.base_url, a_claude.model) == (o_claude.base_url, o_claude.model)
        assert (a_claude.haiku, a_claude.auth) == (o_claude.haiku, o_claude.auth)
        assert (a_codex.base_url, a_codex.model) == (o_codex.base_url, o_codex.model)
        assert a_codex.provider_id == "deepseek" and a_codex.reasoning_effort == "high"
        assert again.provider.website == original.provider.website
        assert key not in exported.stdout and key not in r.stdout
        # nothing was stored: the export carried no key
        assert not (other / "state" / "keys.json").exists()
    finally:
        keyring.delete_password(SERVICE, f"ds-{tag}")


def test_export_unknown_or_broken_profile_is_one_line(profiles, ccs):
    r = ccs("export", "nope")
    assert r.returncode == 2 and "no profile named 'nope'" in r.stderr and "Traceback" not in r.stderr
    r = ccs("export", "ds", "--format", "yaml")
    assert r.returncode == 2


def test_export_one_profile_to_a_named_file(profiles, ccs, tmp_path):
    target = tmp_path / "ds-shared.toml"
    r = ccs("export", "ds", "-o", str(target))
    assert r.returncode == 0, r.stderr
    assert target.is_file()
    validate_text("ds", target.read_text())
    r = ccs("export", "ds", "-o", str(tmp_path / "missing" / "deeper" / "x.toml"))
    assert r.returncode == 2 and "does not exist" in r.stderr
    assert not (tmp_path / "missing").exists()

"""`ccs import claude` and `ccs import codex` from the live files, and `--scrub`: afterwards the key is
in the real Secret Service and nowhere else, and the source file keeps everything but the key."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest
import tomlkit
from conftest import forget_indexed_keys

from ccswitch_tui.keys.keyring import SERVICE
from ccswitch_tui.paths import Paths
from ccswitch_tui.profiles.store import Store

CODEX_CONFIG = """\
# Codex config, edited by hand
model = "deepseek-v4-pro"   # the main model
model_provider = "{pid}"
model_reasoning_effort = "medium"

[model_providers.{pid}]
name = "{name}"
base_url = "https://api.deepseek.com/v1"
wire_api = "chat"            # from an old guide
requires_openai_auth = true

# tools
[mcp_servers.docs]
command = "docs-server"
args = ["--port", "9000"]
"""


class Live:
    def __init__(self, tmp: Path, paths: Paths):
        self.tag = uuid.uuid4().hex[:6]
        self.home = tmp / "home"
        self.paths = paths
        self.key = f"sk-live-{uuid.uuid4().hex}"
        self.settings = self.home / ".claude" / "settings.json"
        self.codex = self.home / ".codex"

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME")}
        return {**env, "HOME": str(self.home), "CCS_HOME": str(self.paths.profiles.parent), **extra}

    def write_settings(self, env: dict | None = None, **top) -> dict:
        data = {
            "$schema": "https://json.schemastore.org/claude-code-settings.json",
            "env": env if env is not None else {
                "ANTHROPIC_BASE_URL": "https://api.deepseek.com/anthropic",
                "ANTHROPIC_AUTH_TOKEN": self.key,
                "ANTHROPIC_MODEL": "deepseek-v4-pro",
                "ANTHROPIC_DEFAULT_HAIKU_MODEL": "deepseek-v4-flash",
                "DISABLE_TELEMETRY": "1",
            },
            "permissions": {"allow": ["Bash(git status)"], "deny": []},
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]},
            **top,
        }
        self.settings.parent.mkdir(parents=True, exist_ok=True)
        self.settings.write_text(json.dumps(data, indent=2) + "\n")
        return data

    def write_codex(self, pid: str = "deepseek", name: str = "DeepSeek", auth: dict | None = None) -> str:
        self.codex.mkdir(parents=True, exist_ok=True)
        text = CODEX_CONFIG.format(pid=pid, name=name)
        (self.codex / "config.toml").write_text(text)
        (self.codex / "auth.json").write_text(json.dumps(
            auth if auth is not None else {"OPENAI_API_KEY": self.key, "tokens": None, "last_refresh": None}))
        return text


@pytest.fixture
def live(tmp_path, ccs_home, secret_service):
    lv = Live(tmp_path, ccs_home)
    yield lv
    forget_indexed_keys(ccs_home)


def files_text(root: Path) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in root.rglob("*") if p.is_file())


def test_claude_import_and_scrub(live, ccs):
    import keyring

    name = f"ds-{live.tag}"
    original = live.write_settings()
    live.settings.chmod(0o640)
    r = ccs("import", "claude", "--name", name, "--scrub", "--json", env=live.env())
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["import"] == "claude" and report["read"] == [str(live.settings)]
    [item] = report["items"]
    assert (item["action"], item["profile"], item["key_id"], item["key"]) == ("created", name, name, "stored")
    assert report["scrubbed"] == [{"path": str(live.settings), "removed": ["env.ANTHROPIC_AUTH_TOKEN"],
                                   "remaining": None, "note": None}]

    p = Store(live.paths).load(name)
    assert p.provider.name == name and p.provider.base_url == "https://api.deepseek.com/anthropic"
    claude = p.side("claude")
    assert claude.auth == "token" and claude.model == "deepseek-v4-pro" and claude.haiku == "deepseek-v4-flash"
    assert dict(p.side("claude").env) == {"DISABLE_TELEMETRY": "1"}
    assert p.side("codex") is None

    # the key: in the keyring, and nowhere else
    assert keyring.get_password(SERVICE, name) == live.key
    assert live.key not in files_text(live.paths.profiles.parent)
    assert live.key not in files_text(live.home)
    assert live.key not in r.stdout + r.stderr
    # the settings file: valid, everything but the key kept, in order, same mode
    after = json.loads(live.settings.read_text())
    expected = json.loads(json.dumps(original))
    del expected["env"]["ANTHROPIC_AUTH_TOKEN"]
    assert after == expected
    assert list(after["env"]) == [k for k in original["env"] if k != "ANTHROPIC_AUTH_TOKEN"]
    assert live.settings.read_text() == json.dumps(expected, indent=2) + "\n"
    assert live.settings.stat().st_mode & 0o777 == 0o640

    # again, now that the source has no key: nothing changes
    before = Store(live.paths).read_text(name)
    r = ccs("import", "claude", "--name", name, "--json", env=live.env())
    assert json.loads(r.stdout)["items"][0]["action"] == "unchanged"
    assert Store(live.paths).read_text(name) == before and Store(live.paths).names() == [name]


def test_codex_import_and_scrub_keep_the_toml_and_the_rest_of_auth_json(live, ccs):
    import keyring

    pname = f"DeepSeek {live.tag}"
    config_text = live.write_codex(name=pname)
    r = ccs("import", "codex", "--scrub", "--json", env=live.env())
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    [item] = report["items"]
    name = f"deepseek-{live.tag}"
    assert (item["action"], item["profile"], item["key"]) == ("created", name, "stored")
    assert not any("wire_api" in w for w in item["warnings"])
    p = Store(live.paths).load(name)
    assert p.side("codex").wire_api == "chat"  # kept: the launch translates through the bridge
    assert p.provider.name == pname
    assert p.side("codex").base_url == "https://api.deepseek.com/v1" and p.side("codex").model == "deepseek-v4-pro"
    assert p.side("codex").provider_id == "deepseek" and p.side("codex").reasoning_effort == "medium"
    assert p.side("claude") is None and p.side("run").export == ("openai",)
    assert keyring.get_password(SERVICE, item["key_id"]) == live.key

    assert (live.codex / "config.toml").read_text() == config_text  # the key was never there
    assert json.loads((live.codex / "auth.json").read_text()) == {"tokens": None, "last_refresh": None}
    assert report["scrubbed"][0]["removed"] == ["OPENAI_API_KEY"]
    assert live.key not in files_text(live.home) + files_text(live.paths.profiles.parent)


def test_codex_bearer_token_is_scrubbed_from_the_toml_with_comments_kept(live, ccs):
    import keyring

    live.codex.mkdir(parents=True)
    config = (f'# mine\nmodel = "m1"  # keep\nmodel_provider = "relay"\n\n[model_providers.relay]\n'
              f'name = "Relay {live.tag}"\nbase_url = "https://relay.example/v1"\n'
              f'experimental_bearer_token = "{live.key}"  # oops\nwire_api = "responses"\n\n'
              f'[profiles.fast]\nmodel = "m2"\n')
    (live.codex / "config.toml").write_text(config)
    r = ccs("import", "codex", "--scrub", env=live.env())
    assert r.returncode == 0, r.stderr
    assert "removed model_providers.relay.experimental_bearer_token" in r.stdout
    after = (live.codex / "config.toml").read_text()
    assert after == config.replace(f'experimental_bearer_token = "{live.key}"  # oops\n', "")
    tomlkit.parse(after)
    assert keyring.get_password(SERVICE, f"relay-{live.tag}") == live.key


def test_claude_then_codex_make_one_profile(live, ccs):
    live.write_settings()
    live.write_codex(name=f"ds-{live.tag}")
    r1 = ccs("import", "claude", "--name", f"ds-{live.tag}", "--json", env=live.env())
    r2 = ccs("import", "codex", "--json", env=live.env())
    assert r1.returncode == r2.returncode == 0, r1.stderr + r2.stderr
    item = json.loads(r2.stdout)["items"][0]
    assert item["action"] == "merged" and item["profile"] == f"ds-{live.tag}"
    assert item["key"] == "present" and "existing profile" in item["reason"]
    store = Store(live.paths)
    assert store.names() == [f"ds-{live.tag}"]
    p = store.load(f"ds-{live.tag}")
    assert p.side("claude").base_url == "https://api.deepseek.com/anthropic"
    assert p.side("codex").base_url == "https://api.deepseek.com/v1"
    text = store.read_text(f"ds-{live.tag}")
    assert text.startswith("# Imported by ccs") and "added by ccs import from Codex config" in text
    r3 = ccs("import", "codex", "--json", env=live.env())
    assert json.loads(r3.stdout)["items"][0]["action"] == "unchanged"
    assert store.read_text(f"ds-{live.tag}") == text


def test_scrub_is_refused_when_the_key_did_not_reach_the_keyring(live, ccs):
    name = f"ds-{live.tag}"
    live.write_settings()
    assert ccs("import", "claude", "--name", name, env=live.env()).returncode == 0
    # the source now holds a different key for the same provider and endpoint
    live.key = f"sk-rotated-{uuid.uuid4().hex}"
    live.write_settings()
    before = live.settings.read_bytes()
    r = ccs("import", "claude", "--name", name, "--scrub", "--json", env=live.env())
    report = json.loads(r.stdout)
    assert report["items"][0]["action"] == "skipped" and "different key" in report["items"][0]["reason"]
    assert report["scrubbed"][0]["removed"] == [] and "not scrubbed" in report["scrubbed"][0]["note"]
    assert live.settings.read_bytes() == before


def test_dry_run_scrub_changes_nothing(live, ccs):
    import keyring

    live.write_settings()
    before = live.settings.read_bytes()
    r = ccs("import", "claude", "--name", f"ds-{live.tag}", "--scrub", "--dry-run", env=live.env())
    assert r.returncode == 0, r.stderr
    assert "would remove env.ANTHROPIC_AUTH_TOKEN" in r.stdout and "dry run, nothing written" in r.stdout
    assert live.settings.read_bytes() == before
    assert not live.paths.profiles.parent.exists()
    assert keyring.get_password(SERVICE, f"ds-{live.tag}") is None


def test_scrub_follows_a_symlink_and_reports_a_copy_it_cannot_remove(live, ccs):
    real = live.home / "dotfiles" / "claude-settings.json"
    real.parent.mkdir(parents=True)
    live.write_settings(apiKeyHelper=f"echo {live.key}")
    live.settings.rename(real)
    live.settings.symlink_to(real)
    r = ccs("import", "claude", "--name", f"ds-{live.tag}", "--scrub", "--json", env=live.env())
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert any("apiKeyHelper" in w for w in report["items"][0]["warnings"])
    [scrubbed] = report["scrubbed"]
    assert scrubbed["removed"] == ["env.ANTHROPIC_AUTH_TOKEN"]
    assert scrubbed["remaining"] and "remove it by hand" in scrubbed["note"]
    assert live.settings.is_symlink() and live.settings.resolve() == real
    assert "ANTHROPIC_AUTH_TOKEN" not in json.loads(real.read_text())["env"]


def test_codex_key_from_the_environment(live, ccs):
    import keyring

    live.codex.mkdir(parents=True)
    (live.codex / "config.toml").write_text(
        'model = "m"\nmodel_provider = "envp"\n[model_providers.envp]\nname = "EnvP"\n'
        f'base_url = "https://envp.example/v1"\nenv_key = "ENVP_KEY_{live.tag}"\n')
    r = ccs("import", "codex", "--name", f"envp-{live.tag}", "--scrub", "--json",
            env=live.env(**{f"ENVP_KEY_{live.tag}": live.key}))
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    item = report["items"][0]
    assert item["action"] == "created" and item["key"] == "stored"
    assert any(f"$ENVP_KEY_{live.tag}" in w for w in item["warnings"])
    assert report["scrubbed"] == []  # no file held it
    assert keyring.get_password(SERVICE, f"envp-{live.tag}") == live.key


@pytest.mark.parametrize("case", ["missing", "malformed", "codex-missing", "codex-malformed", "bad-name"])
def test_bad_live_input_is_one_line_exit_2(live, ccs, case):
    args = ["import", "claude"]
    if case == "malformed":
        live.settings.parent.mkdir(parents=True)
        live.settings.write_text('{"env": {"ANTHROPIC_BASE_URL": "https://x",}}')
    elif case == "codex-missing":
        args = ["import", "codex"]
    elif case == "codex-malformed":
        live.codex.mkdir(parents=True)
        (live.codex / "config.toml").write_text('model = "m"\n[model_providers.x\n')
        args = ["import", "codex"]
    elif case == "bad-name":
        live.write_settings()
        args += ["--name", "Not A Name"]
    r = ccs(*args, env=live.env())
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    expected = {"missing": "settings.json: not found", "malformed": "settings.json:1:",
                "codex-missing": "config.toml: not found", "codex-malformed": "config.toml: not valid TOML (line 2",
                "bad-name": "invalid profile name"}[case]
    assert expected in lines[0]


def test_live_entries_with_nothing_to_import_are_skipped(live, ccs):
    live.write_settings(env={"DISABLE_TELEMETRY": "1"})
    r = ccs("import", "claude", "--json", env=live.env())
    assert r.returncode == 0
    item = json.loads(r.stdout)["items"][0]
    assert item["action"] == "skipped" and "own login" in item["reason"]
    live.write_codex(pid="openai", auth={"OPENAI_API_KEY": None, "tokens": {"id_token": "x"}})
    (live.codex / "config.toml").write_text('model = "gpt-5"\n')
    r = ccs("import", "codex", "--json", env=live.env())
    item = json.loads(r.stdout)["items"][0]
    assert item["action"] == "skipped" and "ChatGPT account" in item["reason"]
    assert not live.paths.profiles.exists() or Store(live.paths).names() == []


def test_claude_config_dir_is_followed_except_inside_a_ccs_child(live, ccs):
    live.write_settings()
    elsewhere = live.home / "claude-elsewhere"
    elsewhere.mkdir()
    (elsewhere / "settings.json").write_text(json.dumps({"env": {}}))
    r = ccs("import", "claude", "--dry-run", "--json", env=live.env(CLAUDE_CONFIG_DIR=str(elsewhere)))
    assert json.loads(r.stdout)["read"] == [str(elsewhere / "settings.json")]
    r = ccs("import", "claude", "--dry-run", "--json",
            env=live.env(CLAUDE_CONFIG_DIR=str(elsewhere), CCS_LAUNCH_ID="x"))
    assert json.loads(r.stdout)["read"] == [str(live.settings)]

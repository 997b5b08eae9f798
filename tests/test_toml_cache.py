"""``toml_cache.py``: a text parsed once is read back without the parser and gives the same data;
what another user (or anyone but the user) could have put in the cache is passed over; an edited
text is a new entry, never a stale one."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from conftest import skip_or_fail

from ccswitch_tui import toml_cache
from ccswitch_tui.toml_cache import TomlSyntaxError, TomlTooDeep, loads

TEXT = '''name = "p"
[provider]
base_url = "https://api.example.com/v1"
[codex]
model = "gpt-x"
limits = [1, 2.5, -0.0, inf, true]
[codex.env]
X = "ünïcode \\u00e9"
'''


def entry(cache: Path, text: str) -> Path:
    return cache / (hashlib.sha256(text.encode()).hexdigest()[:48] + ".json")


def test_a_text_is_parsed_once_then_read_back_the_same(tmp_path: Path):
    cache = tmp_path / "cache"
    first = loads(TEXT, cache)
    assert first == tomllib.loads(TEXT)
    assert entry(cache, TEXT).is_file() and oct(entry(cache, TEXT).stat().st_mode & 0o777) == "0o600"
    assert oct(cache.stat().st_mode & 0o777) == "0o700"
    assert repr(loads(TEXT, cache)) == repr(first)  # -0.0 and inf included


def test_a_hit_loads_no_parser(tmp_path: Path):
    cache = tmp_path / "cache"
    loads(TEXT, cache)
    code = ("import sys\nfrom pathlib import Path\nfrom ccswitch_tui.toml_cache import loads\n"
            f"data = loads({TEXT!r}, Path({str(cache)!r}))\n"
            "print(data['codex']['model'], 'tomllib' in sys.modules, 'tomli' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.split() == ["gpt-x", "False", "False"], r.stderr


@pytest.mark.parametrize("plant", ["group-writable", "world-writable", "symlink", "fifo", "other-user", "not-json",
                                   "not-an-object", "huge"])
def test_a_cache_entry_anyone_else_could_have_written_is_passed_over(tmp_path: Path, plant: str):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    target = entry(cache, TEXT)
    forged = json.dumps({"provider": {"base_url": "https://attacker.invalid"}})
    if plant == "symlink":
        elsewhere = tmp_path / "forged.json"
        elsewhere.write_text(forged)
        target.symlink_to(elsewhere)
    elif plant == "fifo":
        os.mkfifo(target)
    else:
        planted = {"not-json": "{", "not-an-object": "[1, 2]", "huge": " " * (2 << 20) + forged}
        target.write_text(planted.get(plant, forged))
        target.chmod({"group-writable": 0o620, "world-writable": 0o602}.get(plant, 0o600))
        if plant == "other-user":
            if os.geteuid() != 0:  # CI runs as root
                skip_or_fail("only root can give a file to another user")
            os.chown(target, 65534, 65534)
    assert loads(TEXT, cache) == tomllib.loads(TEXT)  # parsed again, the planted entry ignored


def test_an_edit_is_a_new_entry_not_a_stale_one(tmp_path: Path):
    cache = tmp_path / "cache"
    loads(TEXT, cache)
    edited = TEXT.replace("gpt-x", "gpt-y")
    assert loads(edited, cache)["codex"]["model"] == "gpt-y"
    assert loads(TEXT, cache)["codex"]["model"] == "gpt-x"


def test_what_json_cannot_hold_is_not_cached(tmp_path: Path):
    cache = tmp_path / "cache"
    text = "when = 2026-12-06T10:00:00Z\n"
    assert loads(text, cache) == tomllib.loads(text)
    assert not entry(cache, text).exists()


def test_errors_are_the_parsers_and_nothing_is_cached(tmp_path: Path):
    cache = tmp_path / "cache"
    with pytest.raises(TomlSyntaxError, match="line 1"):
        loads("a = = 1\n", cache)
    with pytest.raises(TomlTooDeep):
        loads("a = " + "[" * 100_000 + "]" * 100_000 + "\n", cache)
    assert not cache.exists() or not list(cache.iterdir())


def test_a_folder_that_is_not_the_users_alone_gets_nothing(tmp_path: Path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o777)
    cache.chmod(0o777)
    assert loads(TEXT, cache) == tomllib.loads(TEXT)
    assert not list(cache.iterdir())


def test_the_cache_keeps_a_bounded_number_of_texts(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(toml_cache, "KEEP", 8)
    cache = tmp_path / "cache"
    for i in range(20):
        loads(f"n = {i}\n", cache)
    assert len(list(cache.glob("*.json"))) <= 8
    assert loads("n = 19\n", cache) == {"n": 19}


@pytest.mark.usefixtures("secret_service")
def test_only_ccs_own_texts_are_cached(ccs, ccs_home, base_env, key_id, tmp_path: Path):
    """A launch caches its profile, and neither the user's own ~/.codex/config.toml (its MCP servers
    may hold tokens), nor the Codex config ccs writes when it carries those servers, nor a
    repository's file. (Without shared servers the Codex config is cached: test_launch_modules.)"""
    assert ccs("new", "p", "--preset", "taotoken", "--key", key_id).returncode == 0
    assert ccs("key", "set", key_id, input="sk-cache-0123456789abcdef").returncode == 0
    user_codex = Path(base_env["HOME"]) / ".codex"
    user_codex.mkdir()
    (user_codex / "config.toml").write_text('[mcp_servers.gh]\ncommand = "gh-mcp"\n'
                                            'env = { GITHUB_TOKEN = "ghp_usersown0123456789abcdefXYZ" }\n')
    repo = tmp_path / "repo"
    (repo / ".codex").mkdir(parents=True)
    (repo / ".codex" / "config.toml").write_text('model = "repo-model-MARKER"\n')
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "codex").write_text("#!/bin/sh\necho codex-cli 0.0.0\n")
    (bin_dir / "codex").chmod(0o755)
    env = {**base_env, "PATH": f"{bin_dir}:{base_env['PATH']}"}
    for _ in range(2):
        r = ccs("launch", "p", "codex", "--", "--version", env=env, cwd=repo)
        assert r.returncode == 0, r.stderr
    cached = [p.read_text() for p in ccs_home.toml_cache.glob("*.json")]
    assert any('"taotoken"' in text for text in cached)  # the profile (and the config ccs wrote)
    assert not any("ghp_usersown" in text or "repo-model-MARKER" in text or "sk-cache" in text for text in cached)

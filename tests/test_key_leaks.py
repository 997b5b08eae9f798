"""A key pasted where ccs expects something else: refused as a key id (by its shape, against the
real Secret Service), and never echoed — whatever the command, option or stream — because one
filter sits in front of everything ccs prints. The child's own output is not filtered."""

from __future__ import annotations

import json
import os
import sys

import pytest
from key_samples import GLM, KEYS, UNMARKED
from leakcheck import BASIC, assert_hidden, assert_one_line, nothing_on_disk_holds, write_profile

SERVICE = "ccswitch-tui"


def _stored(key_id: str) -> str | None:
    from keyring.backends import SecretService

    return SecretService.Keyring().get_password(SERVICE, key_id)


# --- item 5: a key is not a key id ------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(KEYS))
def test_key_set_refuses_a_key_as_id(ccs, ccs_home, secret_service, name):
    key = KEYS[name]
    r = ccs("key", "set", key, input="the-real-secret-value\n")
    assert_one_line(r, 2, says="looks like a key itself")
    assert_hidden(r, key)
    assert _stored(key) is None  # nothing reached the real keyring
    assert not ccs_home.key_index.exists() or key not in ccs_home.key_index.read_text()


@pytest.mark.parametrize("name", sorted(UNMARKED))
def test_new_refuses_a_key_as_key_id_and_writes_nothing(ccs, ccs_home, name):
    key = KEYS[name]
    r = ccs("new", "p", "--base-url", "https://p.invalid", "--key", key)
    assert_one_line(r, 2, says="looks like a key itself")
    assert_hidden(r, key)
    assert not (ccs_home.profiles / "p.toml").exists()


def test_a_hand_written_key_id_that_is_a_key(ccs, ccs_home, secret_service):
    write_profile(ccs_home.profiles, "p", BASIC.format(url="https://p.invalid", key=GLM))
    for args in (("list",), ("list", "--json"), ("show", "p"), ("key", "list"), ("key", "list", "--json"),
                 ("run", "p", "--", "true"), ("env", "p"), ("doctor", "--json")):
        r = ccs(*args)
        assert_hidden(r, GLM)
        if args[0] in ("show", "run", "env"):
            assert_one_line(r, 2, says="looks like a key itself")
    data = json.loads(ccs("list", "--json").stdout)
    assert data["profiles"][0]["ok"] is False


def test_a_key_shaped_id_like_value_is_still_accepted(ccs, ccs_home, secret_service):
    kid = "glm-4.6-backup"
    r = ccs("key", "set", kid, input="k3J9xQ2mZ7vB1nT8wR4yL6pH0sD5fG9a\n")
    try:
        assert r.returncode == 0, r.stderr
        assert _stored(kid) == "k3J9xQ2mZ7vB1nT8wR4yL6pH0sD5fG9a"
        assert "k3J9xQ2mZ7vB1nT8wR4yL6pH0sD5fG9a" not in r.stdout
    finally:
        ccs("key", "rm", kid, "--yes")


# --- item 6: one filter for every line --------------------------------------------------------------

@pytest.fixture
def prof(ccs_home):
    write_profile(ccs_home.profiles, "p", BASIC.format(url="http://127.0.0.1:9/v1", key="env:PKEY"))
    return ccs_home


K = GLM
PLACES = {  # a key where ccs expects something else: (argv, exit code)
    "show NAME": (["show", K], 2),
    "launch NAME": (["launch", K, "claude"], 2),
    "launch TOOL": (["launch", "p", K], 2),
    "run NAME": (["run", K, "--", "true"], 2),
    "run COMMAND": (["run", "p", "--", K], 2),
    "env NAME": (["env", K], 2),
    "env --tool": (["env", "p", "--tool", K], 2),
    "env --format": (["env", "p", "--format", K], 2),
    "env --cwd": (["env", "p", "--cwd", f"/nonexistent/{K}"], 2),
    "shell --tool": (["shell", "p", "--tool", K], 2),
    "rm NAME": (["rm", K, "--yes"], 2),
    "cp NAME": (["cp", K, "q"], 2),
    "cp NEW_NAME": (["cp", "p", K], 2),
    "edit NAME": (["edit", K], 2),
    "export NAME": (["export", K], 2),
    "export --format": (["export", "p", "--format", K], 2),
    "check NAME": (["check", K], 2),
    "check --tool": (["check", "p", "--tool", K], 2),
    "check --timeout": (["check", "p", "--timeout", K], 2),
    "inspect PID": (["inspect", K], 2),
    "inspect --profile": (["inspect", str(os.getpid()), "--profile", K], 2),
    "runs diff ID": (["runs", "diff", K, "20261203T000000Z-00000000"], 2),
    "key show ID": (["key", "show", K], 2),
    "key rm ID": (["key", "rm", K, "--yes"], 2),
    "key set ID KEY": (["key", "set", "p-key", K], 2),
    "new NAME": (["new", K, "--preset", "taotoken"], 2),
    "new --preset": (["new", "q", "--preset", K], 2),
    "new --base-url": (["new", "q", "--base-url", K], 2),
    "new --claude-model": (["new", "q", "--preset", "taotoken", "--claude-model", K], 2),
    "import claude --settings": (["import", "claude", "--settings", f"/nonexistent/{K}"], 2),
    "import cc-switch --db": (["import", "cc-switch", "--db", f"/nonexistent/{K}.db"], 2),
    "import codex --home": (["import", "codex", "--home", f"/nonexistent/{K}"], 2),
    "import codex --name": (["import", "codex", "--name", K], 2),
    "unknown command": ([K], 2),
    "unknown option": (["list", f"--{K}"], 2),
    "extra argument": (["ps", K], 2),
}


@pytest.mark.parametrize("place", sorted(PLACES))
def test_a_key_in_the_wrong_place_is_never_echoed(ccs, prof, place):
    argv, code = PLACES[place]
    r = ccs(*argv, env={**os.environ, "PKEY": "sk-profile-key-0000000000000000", "EDITOR": "true"})
    assert_hidden(r, K)
    assert_one_line(r, code)
    nothing_on_disk_holds(prof.profiles.parent, K)


def test_json_output_is_filtered_and_stays_json(ccs, ccs_home):
    write_profile(ccs_home.profiles, "p", f'schema = 1\ndescription = "{K}"\n')
    r = ccs("list", "--json")
    assert_hidden(r, K)
    data = json.loads(r.stdout)
    assert data["profiles"][0]["ok"] is False and "description" in data["profiles"][0]["error"]


def test_debug_tracebacks_are_filtered_too(ccs, prof):
    r = ccs("--debug", "show", K)
    assert r.returncode == 1 and "Traceback" in r.stderr  # --debug lets the error through: an internal one
    assert_hidden(r, K)


def test_the_childs_own_output_is_not_filtered(ccs, prof):
    """The child inherits the terminal's descriptors; only ccs's own lines go through the filter."""
    code = "import os, sys; print(os.environ['OPENAI_API_KEY']); print(os.environ['OPENAI_API_KEY'], file=sys.stderr)"
    r = ccs("run", "p", "--", sys.executable, "-c", code, env={**os.environ, "PKEY": K})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == K and r.stderr.strip().endswith(K)


def test_reveal_is_the_one_way_past_the_filter(ccs, prof):
    """`ccs env --reveal` exists to hand the key to a shell (eval "$(ccs env P --reveal)"): its
    environment lines pass the filter, and nothing else does."""
    env = {**os.environ, "PKEY": K}
    assert f"export OPENAI_API_KEY={K}" in ccs("env", "p", "--reveal", env=env).stdout
    assert json.loads(ccs("env", "p", "--reveal", "--format", "json", env=env).stdout)["env"]["OPENAI_API_KEY"] == K
    for args in (("env", "p"), ("env", "p", "--format", "json"), ("env", "p", "--format", "dotenv")):
        assert_hidden(ccs(*args, env=env), K)

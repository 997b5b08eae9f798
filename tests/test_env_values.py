"""``[env]`` tables hold no secrets: refused by the variable's name (now including *_KEY, *_PAT,
*_CRED …) and, whatever the name, by the value's shape — in the profile file, through `ccs edit`,
and on the launch path."""

from __future__ import annotations

import os

import pytest
from key_samples import AWS_SECRET, GITHUB, GLM, HEX40, JWT, KEYS, LOWER32, MOONSHOT
from leakcheck import BASIC, assert_hidden, assert_one_line, write_profile

CASES = {  # (table, name, value)
    "AWS_SECRET_ACCESS_KEY": ("env", "AWS_SECRET_ACCESS_KEY", AWS_SECRET),
    "OPENAI_KEY": ("env", "OPENAI_KEY", MOONSHOT),
    "GITHUB_PAT": ("env", "GITHUB_PAT", GITHUB),
    "MY_CRED": ("env", "MY_CRED", GLM),
    "innocent name, GLM value": ("env", "GATEWAY_ID", GLM),
    "innocent name, hex value": ("claude.env", "X_ROUTE", HEX40),
    "innocent name, JWT value": ("codex.env", "UPSTREAM", JWT),
    "innocent name, lower32 value": ("env", "TENANT", LOWER32),
    "key inside a longer value": ("env", "EXTRA_ARGS", f"--header=x-key:{GLM} --verbose"),
    "short password, secret name": ("env", "DB_PASSWD", "hunter2"),
    "short value, *_AUTH": ("claude.env", "GATEWAY_AUTH", "basic-abc123"),
    "short value, *_KEY": ("env", "SEARCH_KEY", "abc123"),
    "short value, *_COOKIE": ("env", "SESSION_COOKIE", "sid=42"),
}


def _body(table: str, name: str, value: str) -> str:
    extra = {"env": "", "claude.env": "[claude]\n", "codex.env": '[codex]\nmodel = "gpt-4.1"\n'}[table]
    return BASIC.format(url="https://gw.example/v1", key="env:PKEY") + extra + f'[{table}]\n{name} = "{value}"\n'


@pytest.mark.parametrize("case", sorted(CASES))
def test_secret_values_in_env_tables_are_refused(ccs, ccs_home, case):
    table, name, value = CASES[case]
    write_profile(ccs_home.profiles, "p", _body(table, name, value))
    env = {**os.environ, "PKEY": "sk-profile-key-0000000000000000"}
    for args in (("show", "p"), ("run", "p", "--", "true"), ("env", "p")):
        r = ccs(*args, env=env)
        line = assert_one_line(r, 2, says=f"[{table}].{name}")
        assert "keyring" in line and "[secrets]" in line
        assert_hidden(r, value)
    assert not (ccs_home.state / "runs").exists() or not any((ccs_home.state / "runs").iterdir())


@pytest.mark.parametrize("value", [KEYS["deepseek"], GLM, "hunter2"])
def test_edit_refuses_a_secret_and_keeps_the_file(ccs, ccs_home, tmp_path, value):
    path = write_profile(ccs_home.profiles, "p", BASIC.format(url="https://gw.example/v1", key="env:PKEY"))
    before = path.read_text()
    editor = tmp_path / "ed.sh"
    editor.write_text(f"#!/bin/sh\nprintf '[env]\\nMY_TOKEN_PASS = \"{value}\"\\n' >> \"$1\"\n")
    editor.chmod(0o755)
    r = ccs("edit", "p", env={**os.environ, "EDITOR": str(editor)})
    assert_one_line(r, 2, says="[env].MY_TOKEN_PASS")
    assert_hidden(r, value)
    assert path.read_text() == before


@pytest.mark.parametrize("value", ["1", "0", "true", "600000", "https://gw.example/v1", "claude-sonnet-4-5",
                                   "/opt/tools/bin", "en_US.UTF-8"])
def test_ordinary_values_still_pass(ccs, ccs_home, value):
    body = BASIC.format(url="https://gw.example/v1", key="env:PKEY") + f'[env]\nAPI_TIMEOUT_MS = "{value}"\n' \
        f'DISABLE_AUTH = "1"\nCACHE_KEY = "true"\n'
    write_profile(ccs_home.profiles, "p", body)
    r = ccs("show", "p")
    assert r.returncode == 0, r.stderr

"""One policy: the same names and values get the same verdict in validation, `ccs env` (sh, json,
--diff), the TUI's preview, export, findings' display and the request records' masker.

Each case: a variable name, its value, whether the variable carries a secret (refused in a profile,
never printed in clear, exported empty), and whether the value itself is credential-shaped (what a
masker that sees only text, not the name, must hide)."""

from __future__ import annotations

import json
import shlex

import pytest

from ccswitch_tui import policy, tools
from ccswitch_tui.bridge.records import Masker
from ccswitch_tui.errors import ProfileError
from ccswitch_tui.importers.export import _risky
from ccswitch_tui.profiles.schema import profile_from_data

GLM_KEY = "3f9a1c7e5b2d4f608a1e9c3b7d5f2a4e.Xk9Lm2Pq7Rt4Vw8Z"  # no sk-/Bearer shape: found by its randomness
JWT = ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
       "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")

CASES = [
    # secret by name, whatever the value looks like
    ("GH_PAT", "hunter2hunter2", True, False),
    ("DB_PASSWD", "correct horse", True, False),
    ("MY_GATEWAY_AUTH", "gw-value-one", True, False),
    ("GITHUB_TOKEN", "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", True, True),
    ("SLACK_COOKIE", "d=abc", True, False),
    ("MY_SESSION", "s3ss10n", True, False),
    ("SERVICE_CREDENTIALS", "user:pass", True, False),
    ("API_KEY", "plainkey", True, False),
    ("PASSWORD", "swordfish", True, False),
    ("VAULT_SECRET", "open sesame", True, False),
    ("DEPLOY_KEY", "deploy-value", True, False),
    ("NPM_AUTH_TOKEN", "abc123", True, False),
    ("MY_CRED", "cred-value-7", True, False),
    ("EXTRA_SECRET_THING", "very-private-value", True, False),
    # secret by value, under ordinary names
    ("MY_SETTING", GLM_KEY, True, True),
    ("GATEWAY_HEADER_LINE", "Authorization: Bearer abcdefghij0123456789", True, True),
    ("CUSTOM_HEADERS", "X-Auth: letmein", True, False),
    ("UPSTREAM", "https://user:pw-0815@proxy.example:3128", True, True),
    ("SERVICE_ENDPOINT", "https://api.example/v1?api_key=abc123", True, True),
    ("MY_ACCESS_ID", "AKIAIOSFODNN7EXAMPLE", True, True),
    ("SIGNED", JWT, True, True),
    # not secret, though some name or value speaks of one
    ("GH_HOST", "github.example", False, False),
    ("MY_OPTION", "fast", False, False),
    ("KEYBOARD_LAYOUT", "us", False, False),
    ("TOKENIZERS_PARALLELISM", "false", False, False),
    ("SESSION_NAME", "work", False, False),
    ("AUTHOR_NAME", "Ann", False, False),
    ("COOKIE_JAR_PATH", "/tmp/jar", False, False),
    ("PASS_THROUGH", "1", False, False),
    ("PASSWORD_HINT", "the usual", False, False),
    ("WT_SESSION", "5b7c3c1e-0d6f-4a8e-9b1a-2f3e4d5c6b7a", False, False),
    ("BUILD_ID", "20251204T101010Z-ab12cd34", False, False),
    ("MODEL_NAME", "claude-sonnet-4-5-20250929", False, False),
    ("MY_BASE_URL", "https://gw.example/v1", False, False),
    ("SOME_DIGEST", "sha256:" + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", False, False),
    ("DATA_DIR", "/home/u/.config/x", False, False),
    ("X_AUTH", "bearer", False, False),  # names a scheme: a flag, not a credential
    ("USE_TOKEN", "1", False, False),
    ("SHORT_RANDOM", "k3J9x", False, False),
    ("COMMIT_MSG", "fix the token refresh", False, False),
    ("GITHUB_TOKEN_FILE", "/run/secrets/gh", False, False),
    ("LANG", "C.UTF-8", False, False),
]
IDS = [c[0] for c in CASES]


def doc(env: dict[str, str], table: str = "env") -> dict:
    d: dict = {"provider": {"name": "P", "base_url": "https://gw.example/api", "key": "k"}}
    if table == "env":
        d["env"] = env
    else:
        d[table] = {"env": env}
    return d


@pytest.mark.parametrize("name,value,secret,credential", CASES, ids=IDS)
def test_the_policy_and_validation_agree(name, value, secret, credential):
    assert policy.is_secret(name, value) is secret
    assert policy.credential_value(value) is credential
    refused = False
    try:
        profile_from_data("p", doc({name: value}))
    except ProfileError as exc:
        refused = True
        assert value not in str(exc)  # the refusal names the place, never the value
    assert refused is secret


@pytest.mark.parametrize("table", [f"{s.name}" for s in tools.load().clients()] + ["env"])
@pytest.mark.parametrize("name,value", [("GH_PAT", "hunter2hunter2"), ("MY_GATEWAY_AUTH", "gw-value-one"),
                                        ("GATEWAY_HEADER_LINE", "Authorization: Bearer abcdefghij0123456789")])
def test_every_env_table_refuses_the_same_secrets(table, name, value):
    """[gemini.env] and [opencode.env] (every registered client's table) refuse what [env] refuses."""
    with pytest.raises(ProfileError) as err:
        profile_from_data("p", doc({name: value}, table))
    where = "[env]" if table == "env" else f"[{table}.env]"
    assert f"{where}.{name}" in str(err.value)


@pytest.mark.parametrize("name,value,secret,credential", CASES, ids=IDS)
def test_display_export_and_records_agree(name, value, secret, credential):
    shown = policy.shown(name, value)
    assert (shown == value) is (not secret)
    if secret:  # the credential never shows, masked whole or inside its URL or header
        for part in ("hunter2", "pw-0815", "abc123", GLM_KEY, "letmein", "Bearer abcdef", "swordfish"):
            if part in value:
                assert part not in shown
    assert _risky(name, value) is secret  # exported empty exactly when the policy says secret
    masked = Masker([])(f"upstream said: {value}")
    assert (value not in masked) is credential or (not credential and value in masked)
    if credential:
        assert value not in masked


def test_env_sh_json_and_diff_agree(ccs, ccs_home, base_env):
    """Every case inherited by one profile: sh leaves the secrets out, JSON masks them, and the rest
    is printed as it is; the diff against a shell holding them (a profile that keeps them out) never
    shows a secret either."""
    names = [n for n, *_ in CASES if n != "LANG"]
    head = 'schema = 1\n[provider]\nname = "P"\nbase_url = "https://gw.example/api"\nkey = "env:PKEY"\n'
    ccs_home.profiles.mkdir(parents=True, exist_ok=True)
    (ccs_home.profiles / "pol.toml").write_text(head + f"[policy]\ninherit = {json.dumps(names)}\n")
    (ccs_home.profiles / "bare.toml").write_text(head)
    parent = {**base_env, "PKEY": "k" * 24, **{n: v for n, v, *_ in CASES if n != "LANG"}}
    sh = ccs("env", "pol", "--format", "sh", env=parent)
    js = ccs("env", "pol", "--format", "json", env=parent)
    diff = ccs("env", "bare", "--diff", env=parent)
    assert sh.returncode == 0 and js.returncode == 0 and diff.returncode == 0, (sh.stderr, js.stderr, diff.stderr)
    data = json.loads(js.stdout)
    env = data["env"] if "env" in data else data
    for name, value, secret, _ in CASES:
        if name == "LANG":
            continue
        line = f"export {name}={shlex.quote(value)}"
        if secret:
            assert line not in sh.stdout and value not in sh.stdout, name
            assert env.get(name) != value and value not in js.stdout, name
            assert value not in diff.stdout, name
            if policy.secret_name(name):  # a secret-named variable kept out is named in the diff, masked
                assert f"- {name}=" in diff.stdout, name
        else:
            assert line in sh.stdout, name
            assert env.get(name) == value, name

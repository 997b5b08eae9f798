"""Secondary credentials: a profile's [secrets] table names key ids for extra variables; the values
come from the real keyring into the child's environment only. Import leaves every credential it
finds outside the profile (with a report line saying how to keep it in [secrets]); export empties
every value that may carry one, by shape and by name."""

from __future__ import annotations

import json
import os
import sys
import uuid

import pytest
from key_samples import GLM, JWT, MOONSHOT
from leakcheck import assert_hidden, assert_one_line, nothing_on_disk_holds, write_profile
from test_import_cc_switch import make_db

from ccswitch_tui.keys.keyring import SERVICE

GATEWAY_SECRET = "gw-second-credential-7Qx2"


@pytest.fixture
def ids(secret_service, ccs_home):
    tag = uuid.uuid4().hex[:6]
    made = {"main": f"main-{tag}", "gw": f"gw-auth-{tag}", "hdr": f"gw-headers-{tag}"}
    yield made
    from keyring.backends import SecretService

    backend = SecretService.Keyring()
    for kid in made.values():
        try:
            backend.delete_password(SERVICE, kid)
        except Exception:  # noqa: BLE001 — not stored by this test
            pass


def _profile(ids, extra: str = "") -> str:
    return f"""schema = 1
[provider]
name = "P"
base_url = "http://127.0.0.1:9/v1"
key = "{ids['main']}"
[claude]
[run]
export = ["openai"]
model = "gpt-4.1"
[secrets]
MY_GATEWAY_AUTH = "{ids['gw']}"
ANTHROPIC_CUSTOM_HEADERS = "{ids['hdr']}"
{extra}"""


def _store(ccs, kid: str, value: str) -> None:
    r = ccs("key", "set", kid, input=value + "\n")
    assert r.returncode == 0, r.stderr
    assert_hidden(r, value)


def test_secondary_keys_reach_only_the_childs_environment(ccs, ccs_home, ids, client_bin, tmp_path):
    clients_bin = client_bin("claude")
    write_profile(ccs_home.profiles, "p", _profile(ids))
    header = f"x-api-key: {MOONSHOT}"
    _store(ccs, ids["main"], GLM)
    _store(ccs, ids["gw"], GATEWAY_SECRET)
    r = ccs("key", "set", ids["hdr"], input=header + "\n")
    assert r.returncode == 0, r.stderr

    code = ("import os, json; print(json.dumps({k: os.environ.get(k) for k in "
            "('OPENAI_API_KEY', 'MY_GATEWAY_AUTH', 'ANTHROPIC_CUSTOM_HEADERS')}))")
    r = ccs("run", "p", "--", sys.executable, "-c", code)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"OPENAI_API_KEY": GLM, "MY_GATEWAY_AUTH": GATEWAY_SECRET,
                                    "ANTHROPIC_CUSTOM_HEADERS": header}

    for args in (("env", "p"), ("env", "p", "--format", "json"), ("env", "p", "--tool", "claude"), ("show", "p"),
                 ("show", "p", "--json"), ("runs", "--json"), ("key", "list", "--json")):
        out = ccs(*args)
        assert out.returncode == 0, out.stderr
        assert_hidden(out, GLM, GATEWAY_SECRET, MOONSHOT)
    plan = json.loads(ccs("env", "p", "--format", "json").stdout)
    assert {"MY_GATEWAY_AUTH", "ANTHROPIC_CUSTOM_HEADERS"} <= set(plan["secret_names"])
    assert plan["sources"]["MY_GATEWAY_AUTH"] == "key"
    users = {k["id"]: k for k in json.loads(ccs("key", "list", "--json").stdout)["keys"]}
    assert users[ids["gw"]]["profiles"] == ["p"] and users[ids["gw"]]["present"] is True

    # Claude Code: the values are in its environment, never in the --settings file ccs writes
    env = {**os.environ, "PATH": f"{clients_bin}:{os.environ['PATH']}", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    r = ccs("launch", "p", "claude", "--", "--version", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    settings = next((ccs_home.state / "tools" / "p" / "claude").glob("ccs-settings.json"))
    assert "MY_GATEWAY_AUTH" not in settings.read_text()
    nothing_on_disk_holds(ccs_home.profiles.parent, GLM, GATEWAY_SECRET, MOONSHOT)


def test_a_missing_secondary_key_is_one_line(ccs, ccs_home, ids):
    write_profile(ccs_home.profiles, "p", _profile(ids))
    _store(ccs, ids["main"], GLM)
    for args in (("run", "p", "--", "true"), ("env", "p")):
        line = assert_one_line(ccs(*args), 2, says="[secrets].")
        assert "ccs key set" in line


@pytest.mark.parametrize("extra,says", [
    ('[env]\nANTHROPIC_CUSTOM_HEADERS = "x-team: blue"\n', "both in [secrets] and in [env]"),
    ('BAD-NAME = "x"\n', "not a valid environment variable name"),
    ('CCS_PROFILE = "x"\n', "set by ccs itself"),
    (f'OTHER = "{GLM}"\n', "shaped like a key"),
    ('OTHER = "has spaces"\n', "must name a key id"),
])
def test_bad_secrets_tables_are_refused(ccs, ccs_home, ids, extra, says):
    body = _profile(ids, "" if extra.startswith("[env]") else extra)
    if extra.startswith("[env]"):  # a table of its own, before [secrets]
        body = body.replace("[secrets]", extra + "[secrets]")
    write_profile(ccs_home.profiles, "p", body)
    r = ccs("show", "p")
    assert_one_line(r, 2, says=says)
    assert_hidden(r, GLM)


def test_a_secret_cannot_replace_what_ccs_sets(ccs, ccs_home, ids):
    write_profile(ccs_home.profiles, "p", _profile(ids, f'OPENAI_API_KEY = "{ids["gw"]}"\n'))
    _store(ccs, ids["main"], GLM)
    _store(ccs, ids["gw"], GATEWAY_SECRET)
    _store(ccs, ids["hdr"], "x-team: blue")
    r = ccs("run", "p", "--", "true")
    assert_one_line(r, 2, says="[secrets].OPENAI_API_KEY would replace")


# --- import and export -------------------------------------------------------------------------------

PW = "hunter2pass"
SECONDARY = {  # env name → value in the CC Switch row: each a credential in its own way
    "ANTHROPIC_CUSTOM_HEADERS": f"x-api-key: {MOONSHOT}",
    "MY_GATEWAY_AUTH": "short-gw-pass",
    "HTTPS_PROXY": f"http://bob:{PW}@proxy.local:3128",
    "UPSTREAM_TICKET": JWT,
    "GATEWAY_ID": GLM,
    "EXTRA_FLAGS": f"--header Authorization: Bearer {PW}",
}


def test_import_leaves_secondary_credentials_out_with_a_line_each(ccs, ccs_home, ids, tmp_path):
    key = "sk-" + uuid.uuid4().hex
    db = make_db(tmp_path / "cc.db", [{
        "id": "gw", "app": "claude", "name": f"Gateway {ids['main']}",
        "website": f"https://admin:{PW}@console.gw.example",
        "notes": f"prod key backup {GLM}",
        "settings": {"env": {"ANTHROPIC_BASE_URL": "https://gw.example/anthropic", "ANTHROPIC_AUTH_TOKEN": key,
                             "API_TIMEOUT_MS": "600000", **SECONDARY}}}])
    try:
        for args in (("import", "cc-switch", "--db", str(db), "--json"),):
            r = ccs(*args)
            assert r.returncode == 0, r.stderr
            assert_hidden(r, key, MOONSHOT, PW, JWT, GLM, "short-gw-pass")
        item = json.loads(r.stdout)["items"][0]
        assert item["action"] == "created", item
        for name in SECONDARY:
            assert any(name in w and "[secrets]" in w for w in item["warnings"]), (name, item["warnings"])
        assert any("notes" in w for w in item["warnings"]) and any("website" in w for w in item["warnings"])
        text = (ccs_home.profiles / f"{item['profile']}.toml").read_text()
        assert "API_TIMEOUT_MS" in text  # the ordinary variable came along
        for name in SECONDARY:
            assert name not in text
        nothing_on_disk_holds(ccs_home.profiles.parent, key, MOONSHOT, PW, JWT, GLM, "short-gw-pass")
    finally:
        from conftest import forget_indexed_keys

        forget_indexed_keys(ccs_home)


EXPORT_PROFILE = """schema = 1
description = "gateway"
[provider]
name = "P"
base_url = "https://gw.example/v1"
key = "gw-main"
[claude]
[claude.env]
MY_AUTH_HEADER_NAME = "x-team"
TEAM_SESSION_LABEL = "blue"
API_TIMEOUT_MS = "600000"
[env]
BENCH_PASSWORD_HINT = "the usual"
[secrets]
MY_GATEWAY_AUTH = "gw-auth"
"""


def test_export_keeps_what_the_policy_calls_harmless_and_empties_the_secondary_ids(ccs, ccs_home, tmp_path):
    """Names about a credential (a header's name, a label, a hint) hold none: the one policy lets
    the profile keep them, so the export does too; the [secrets] key ids are emptied in JSON."""
    write_profile(ccs_home.profiles, "p", EXPORT_PROFILE)
    r = ccs("export", "p")
    assert r.returncode == 0, r.stderr
    for name, value in (("MY_AUTH_HEADER_NAME", "x-team"), ("TEAM_SESSION_LABEL", "blue"),
                        ("BENCH_PASSWORD_HINT", "the usual")):
        assert f'{name} = "{value}"' in r.stdout
    assert 'API_TIMEOUT_MS = "600000"' in r.stdout and 'MY_GATEWAY_AUTH = "gw-auth"' in r.stdout
    r = ccs("export", "p", "--format", "json")
    env = json.loads(r.stdout)["claude"]["providers"]["p"]["settingsConfig"]["env"]
    assert env["MY_GATEWAY_AUTH"] == "" and env["MY_AUTH_HEADER_NAME"] == "x-team" and env["API_TIMEOUT_MS"] == "600000"
    assert "gw-auth" in r.stderr


def test_inspect_expects_the_secondary_variables_and_never_shows_them(ccs, ccs_home, ids, tmp_path):
    import subprocess
    import time

    write_profile(ccs_home.profiles, "p", _profile(ids))
    _store(ccs, ids["main"], GLM)
    _store(ccs, ids["gw"], GATEWAY_SECRET)
    r = ccs("key", "set", ids["hdr"], input=f"x-api-key: {MOONSHOT}\n")
    assert r.returncode == 0
    pidfile = tmp_path / "pid"
    code = f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    runner = subprocess.Popen([sys.executable, "-m", "ccswitch_tui", "run", "p", "--", sys.executable, "-c", code],
                              env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        pid = pidfile.read_text()
        for args in (("inspect", pid), ("inspect", pid, "--json")):
            out = ccs(*args)
            assert out.returncode == 0, out.stdout + out.stderr
            assert_hidden(out, GLM, GATEWAY_SECRET, MOONSHOT)
        data = json.loads(ccs("inspect", pid, "--json").stdout)
        assert not any(f["variable"] in ("MY_GATEWAY_AUTH", "ANTHROPIC_CUSTOM_HEADERS") for f in data["findings"])
        assert not set(data["diff"]["added"]) & {"MY_GATEWAY_AUTH", "ANTHROPIC_CUSTOM_HEADERS"}
    finally:
        runner.terminate()
        runner.wait(timeout=20)

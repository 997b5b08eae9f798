"""The policy's classes of variables, as the disagreements it replaced showed them: Bun's loader
variables warn like Node's, every client's routing family is guarded (OpenCode's and Gemini's
included), `ccs ps --all` sees them, and TLS trust variables are their own class — carried from
the shell, shown as trust, dropped with `[policy] trust = false`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from leakcheck import assert_one_line, write_profile
from waiting import wait_execed

from ccswitch_tui import policy, tools

HEAD = """schema = 1
[provider]
name = "P"
base_url = "https://gw.example/v1"
key = "env:PKEY"
"""


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PKEY": "k" * 20, **extra}


@pytest.mark.parametrize("name", ["BUN_OPTIONS", "NODE_OPTIONS", "LD_PRELOAD", "BUN_CONFIG_PRELOAD"])
def test_loaders_from_an_env_table_warn_alike(ccs, ccs_home, name):
    """Claude Code 2.1.332 is a Bun executable and loads `BUN_OPTIONS=--preload x.js` (measured); a
    profile that sets it gets the same warning as NODE_OPTIONS."""
    write_profile(ccs_home.profiles, "p", HEAD + f'[env]\n{name} = "--preload ./x.js"\n')
    r = ccs("env", "p", env=env())
    assert r.returncode == 0, r.stderr
    warning = [line for line in r.stderr.splitlines() if name in line]
    assert warning and "what code the child loads" in warning[0], r.stderr


def test_a_clients_own_loader_variable_warns_as_a_loader(ccs, ccs_home):
    """Kilo Code's npm launcher runs the binary KILO_BIN_PATH names instead of its own (read in its
    launcher): set in a profile it is called a loader, not routing, though its name is Kilo's family."""
    owner = next(s for s in tools.load().specs() if "KILO_BIN_PATH" in s.loaders)
    assert tools.load().families.is_loader("KILO_BIN_PATH") and tools.load().families.kind("KILO_BIN_PATH") == "loader"
    # still dropped from the shell as its family
    assert tools.load().families.routing_family("KILO_BIN_PATH") == owner.name
    write_profile(ccs_home.profiles, "p", HEAD + f'[{owner.name}]\nmodel = "m"\n[{owner.name}.env]\n'
                  'KILO_BIN_PATH = "/tmp/not-kilo"\n')
    r = ccs("env", "p", "--tool", owner.name, env=env())
    assert r.returncode == 0, r.stderr
    warning = [line for line in r.stderr.splitlines() if "KILO_BIN_PATH" in line]
    assert warning and "what code the child loads" in warning[0], r.stderr


@pytest.mark.parametrize("glob", ["BUN_*", "B*", "OPENCODE_*", "GEMINI_*", "GOOGLE_GEMINI*", "SSL_*", "NODE_EXTRA*"])
def test_globs_reaching_any_clients_family_loaders_or_trust_are_refused(ccs, ccs_home, glob):
    """OPENCODE_CONFIG_CONTENT overrides every OpenCode layer: a glob may not let it in unnamed."""
    write_profile(ccs_home.profiles, "p", HEAD + f'[policy]\ninherit = ["{glob}"]\n')
    line = assert_one_line(ccs("show", "p", env=env()), 2, says="[policy].inherit")
    assert "full name" in line


def test_a_named_client_variable_passes_as_a_door(ccs, ccs_home):
    write_profile(ccs_home.profiles, "p", HEAD + '[policy]\ninherit = ["OPENCODE_CONFIG_CONTENT"]\n')
    r = ccs("env", "p", env=env(OPENCODE_CONFIG_CONTENT='{"provider":{}}'))
    assert r.returncode == 0, r.stderr
    assert any("OPENCODE_CONFIG_CONTENT" in w and "where the tool sends requests" in w for w in r.stderr.splitlines())


def test_every_registered_family_is_guarded():
    """Each spec's families reach the inherit guard and the ps prefilter: nothing is hand-kept."""
    hint = tools.load().families.routing_prefilter()
    for spec in tools.load().specs():
        for family, rx in spec.families.items():
            for alt in rx.split("|"):
                name = alt.replace(".*", "X")
                assert tools.load().families.routing_family(name) == family
                assert hint.search(b"\0" + name.encode() + b"=v\0"), name
                if alt.endswith(".*"):
                    assert policy.inherit_problem(alt[:-2] + "*", tools.load().families), alt


@pytest.mark.parametrize("var", ["OPENCODE_CONFIG_CONTENT", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"])
def test_ps_all_flags_a_process_holding_only_another_clients_variable(ccs, tmp_path, var):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             env={"PATH": os.environ["PATH"], var: "https://elsewhere.example"})
    try:
        wait_execed(child.pid, child.args)  # its own environment, not the test's, in /proc
        rows = json.loads(ccs("ps", "--all", "--json").stdout)["processes"]
        assert any(r["pid"] == child.pid for r in rows), var
    finally:
        child.kill()
        child.wait()


TRUST = {"SSL_CERT_FILE": "/etc/corp/ca.pem", "NODE_EXTRA_CA_CERTS": "/etc/corp/ca.pem",
         "REQUESTS_CA_BUNDLE": "/etc/corp/bundle.pem", "CURL_CA_BUNDLE": "/etc/corp/bundle.pem"}


def test_trust_variables_are_carried_shown_as_trust_and_never_called_loaders(ccs, ccs_home):
    write_profile(ccs_home.profiles, "p", HEAD)
    r = ccs("env", "p", "--format", "json", env=env(**TRUST))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    for name, value in TRUST.items():
        assert data["env"][name] == value
        assert data["sources"][name] == "trust"
    assert "loads" not in r.stderr
    sh = ccs("env", "p", env=env(**TRUST)).stdout
    assert "export SSL_CERT_FILE=/etc/corp/ca.pem" in sh


def test_a_profile_can_drop_the_trust_variables(ccs, ccs_home):
    write_profile(ccs_home.profiles, "p", HEAD + "[policy]\ntrust = false\n")
    data = json.loads(ccs("env", "p", "--format", "json", env=env(**TRUST)).stdout)
    assert not set(TRUST) & set(data["env"])
    write_profile(ccs_home.profiles, "q", HEAD + '[policy]\ntrust = "no"\n')
    assert_one_line(ccs("show", "q", env=env()), 2, says="[policy].trust must be true or false")


def test_a_launched_child_gets_the_trust_variables(ccs, ccs_home):
    write_profile(ccs_home.profiles, "p", HEAD)
    r = ccs("run", "p", "--", sys.executable, "-c", "import os; print(os.environ.get('SSL_CERT_FILE'))",
            env=env(**TRUST))
    assert r.returncode == 0 and r.stdout.strip() == "/etc/corp/ca.pem", r.stderr

"""`ccs run` and `ccs launch` say in one stderr line which of the shell's routing variables they keep
out (or replace): names only, never values; the child's stdout untouched; `--no-env-note` or
CCS_ENV_NOTE=0 silences it."""

from __future__ import annotations

import sys

import pytest

KEY = "sk-envnote-0123456789abcdefXYZ"
STALE_URL = "https://stale-gateway.invalid/v1"
STALE_KEY = "sk-stale-shell-value-123456"


def note_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "the shell's routing variables" in line]


@pytest.mark.usefixtures("secret_service")
def test_run_names_the_stale_variables_it_keeps_out(ccs, base_env, key_id):
    assert ccs("new", "p", "--base-url", "https://p.invalid/api", "--key", key_id, env=base_env).returncode == 0
    assert ccs("key", "set", key_id, input=KEY, env=base_env).returncode == 0
    env = {**base_env, "OPENAI_BASE_URL": STALE_URL, "ANTHROPIC_BASE_URL": STALE_URL,
           "ANTHROPIC_AUTH_TOKEN": STALE_KEY, "HTTPS_PROXY": "http://127.0.0.1:9", "PIP_INDEX_URL": STALE_URL}
    child = [sys.executable, "-c", "import os; print(os.environ.get('OPENAI_BASE_URL'))"]
    r = ccs("run", "p", "--", *child, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "https://p.invalid/api\n"  # the child's output, nothing of ccs's
    (line,) = note_lines(r.stderr)
    assert "kept out ANTHROPIC_AUTH_TOKEN, ANTHROPIC_BASE_URL, HTTPS_PROXY" in line
    assert "replaced OPENAI_BASE_URL with the profile's" in line
    assert "PIP_INDEX_URL" not in line  # not routing: the Diff calls it harmless
    assert STALE_URL not in r.stderr and STALE_KEY not in r.stderr and "127.0.0.1:9" not in r.stderr
    assert "--no-env-note" in line

    for args, extra in ((("--no-env-note",), {}), ((), {"CCS_ENV_NOTE": "0"})):
        r = ccs("run", *args, "p", "--", *child, env={**env, **extra})
        assert r.returncode == 0 and r.stdout == "https://p.invalid/api\n"
        assert note_lines(r.stderr) == []

    r = ccs("run", "p", "--", *child, env=base_env)  # a clean shell: nothing to say
    assert r.returncode == 0 and note_lines(r.stderr) == []


@pytest.mark.usefixtures("secret_service")
def test_the_profiles_own_export_names_are_named_too(ccs, base_env, key_id):
    """A stale TAOTOKEN_BASE_URL in the shell is the profile's routing variable when the profile
    exports that name: replaced, and said so."""
    assert ccs("new", "tt", "--preset", "taotoken", "--key", key_id, env=base_env).returncode == 0
    assert ccs("key", "set", key_id, input=KEY, env=base_env).returncode == 0
    env = {**base_env, "TAOTOKEN_BASE_URL": STALE_URL, "TAOTOKEN_API_KEY": STALE_KEY}
    r = ccs("run", "tt", "--", "true", env=env)
    assert r.returncode == 0, r.stderr
    (line,) = note_lines(r.stderr)
    assert "replaced TAOTOKEN_API_KEY, TAOTOKEN_BASE_URL with the profile's" in line
    assert STALE_URL not in r.stderr and STALE_KEY not in r.stderr


@pytest.mark.usefixtures("secret_service")
def test_launch_names_them_too(ccs, base_env, stubs, client_bin, key_id):
    clients_bin = client_bin("claude")
    stub = stubs("good")
    env = {**base_env, "PATH": f"{clients_bin}:{base_env['PATH']}"}
    assert ccs("new", "p", "--base-url", stub.url, "--key", key_id, env=env).returncode == 0
    assert ccs("key", "set", key_id, input=KEY, env=env).returncode == 0
    env["OPENAI_BASE_URL"] = STALE_URL
    env["ANTHROPIC_MODEL"] = "stale-model"
    r = ccs("launch", "p", "claude", "--", "-p", "hi", env=env, timeout=90)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "stub reply"
    (line,) = note_lines(r.stderr)
    assert "kept out ANTHROPIC_MODEL, OPENAI_BASE_URL" in line and "stale-model" not in r.stderr
    r = ccs("launch", "--no-env-note", "p", "claude", "--", "-p", "hi", env=env, timeout=90)
    assert r.returncode == 0 and note_lines(r.stderr) == []


def test_the_note_imports_nothing_heavy(tmp_path):
    """The note is built on the launch path: with a stale variable in the shell it still imports no
    textual, httpx, rich or aiohttp."""
    import os
    import subprocess

    code = (
        "import sys\n"
        "from ccswitch_tui.cli import run\n"
        "codes = [run(['new', 'p', '--preset', 'taotoken', '--key', 'env:LIGHT_KEY'])]\n"
        "codes.append(run(['run', 'p', '--', 'true']))\n"
        "heavy = ('textual', 'httpx', 'rich', 'aiohttp')\n"
        "print(codes, sorted(m for m in heavy if m in sys.modules), file=sys.stderr)\n"
    )
    env = {**os.environ, "CCS_HOME": str(tmp_path), "LIGHT_KEY": KEY, "OPENAI_BASE_URL": STALE_URL}
    env.pop("CCS_ENV_NOTE", None)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    lines = r.stderr.strip().splitlines()
    assert lines[-1] == "[0, 0] []", r.stderr
    assert any("replaced OPENAI_BASE_URL" in line for line in lines)


def test_env_diff_tells_two_keys_with_alike_masks_apart(ccs, base_env):
    """`~ OPENAI_API_KEY: sk-…cdef -> sk-…cdef` said nothing of which key was which."""
    profile_key = "sk-profilekey-0123456789abcdef"
    stale = "sk-" + "Q" * 20 + "cdef"
    env = {**base_env, "P_KEY": profile_key, "OPENAI_API_KEY": stale}
    assert ccs("new", "p", "--base-url", "https://gw.example/v1", "--key", "env:P_KEY", env=env).returncode == 0
    r = ccs("env", "p", "--diff", env=env)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("~ OPENAI_API_KEY"))
    fps = [w for w in line.split() if w.startswith("fp:")]
    assert len(fps) == 2 and fps[0] != fps[1], line
    assert stale not in r.stdout and profile_key not in r.stdout

"""Interactive Claude Code (the real client, on a pty, in a private network namespace) launched
through ccs: the first launch of a profile needs nothing from Anthropic's hosts, never asks whether
to use the key, writes nothing of the key to disk, and the resume hint of an --isolate launch works
as printed."""

from __future__ import annotations

import os
import re
from pathlib import Path

import netns
import pytest

KEY = "sk-interactive-0123456789abcdefghijklmn"


def scenario_env(base_env: dict[str, str], clients_bin: Path) -> dict[str, str]:
    return {**base_env, "PATH": f"{clients_bin}:{base_env['PATH']}"}


@pytest.mark.usefixtures("secret_service")
@pytest.mark.parametrize("auth", ["api-key", "token"])
def test_first_interactive_launch_starts_quietly_with_the_key(base_env, client_bin, key_id, auth):
    clients_bin = client_bin("claude")
    out = netns.run("first_launch", script="claude_scenarios.py", env=scenario_env(base_env, clients_bin),
                    key_id=key_id, key=KEY, auth=auth)
    text = out["text"]
    # onboarding passed without Anthropic's services (it says "Unable to connect to Anthropic services")
    assert not re.search(r"Unable\s*to\s*connect", text), text[-3000:]
    assert "error" not in out, out["error"]
    assert out["rc"] == 0, text[-3000:]
    # no question about the key: "Detected a custom API key … use it?" never showed
    assert not re.search(r"Detected\s*a\s*custom\s*API\s*key", text), text[-3000:]
    # the profile's key reached the loopback provider
    assert out["posts"], out
    post = out["posts"][-1]
    if auth == "api-key":
        assert post["x-api-key"] == KEY, post
    else:
        assert post["authorization"] == f"Bearer {KEY}" and post["x-api-key"] is None, post
    # no connect() anywhere but the loopback stub: no DNS lookup, no Anthropic host, no marketplace
    assert all(c.startswith("127.0.0.1:") for c in out["connects"]), out["connects"]
    # nothing of the key on disk: not the key, not the last 20 characters Claude Code remembers
    assert out["key_files"] == [], out["key_files"]


@pytest.mark.usefixtures("secret_service")
def test_first_launch_from_the_tui_reaches_the_provider_and_comes_back(base_env, client_bin, key_id):
    clients_bin = client_bin("claude")
    out = netns.run("tui_first_launch", script="claude_scenarios.py", env=scenario_env(base_env, clients_bin),
                    key_id=key_id, key=KEY)
    assert "error" not in out, out["error"]
    assert not re.search(r"Unable\s*to\s*connect", out["text"]), out["text"]
    assert out["posts"] and set(out["posts"]) == {f"Bearer {KEY}"}
    assert out["back"] and out["rc"] == 0


@pytest.mark.usefixtures("secret_service")
def test_isolate_resume_hint_runs_as_printed(base_env, client_bin, key_id):
    clients_bin = client_bin("claude")
    env = {**scenario_env(base_env, clients_bin), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    out = netns.run("isolate_resume", script="claude_scenarios.py", env=env, key_id=key_id, key=KEY)
    assert "error" not in out, out["error"]
    assert out["rc"] == 0 and out["hint"], out["tail"]
    assert "--isolate" in out["hint"], out["hint"]
    # run as printed in the same repository: accepted, the conversation is back, it ends cleanly
    assert out.get("resumed"), out.get("resume_error") or out.get("resume_tail")
    assert out["resume_rc"] == 0, out["resume_tail"]
    # the same command without the flag is refused there (what the hint used to print)
    assert out["bare_rc"] == 2 and "--isolate" in out["bare_stderr"], out["bare_stderr"]


@pytest.mark.usefixtures("secret_service")
def test_api_key_auth_through_the_bridge_reaches_the_provider(ccs, base_env, client_bin, key_id):
    """auth = "api-key" hands the key over through the settings' apiKeyHelper: recorded through the
    loopback bridge, the provider still gets the real key in x-api-key, and no file holds it."""
    clients_bin = client_bin("claude")
    from stub_server import StubServer
    from test_recording import KEY as RECORDING_KEY
    from test_recording import make_profile, no_key_anywhere_on_disk, runs

    stub = StubServer("claude")
    try:
        env = {**base_env, "PATH": f"{clients_bin}:{base_env['PATH']}"}
        make_profile(ccs, env, "p", stub.url, key_id)
        prof = Path(os.environ["CCS_HOME"]) / "profiles" / "p.toml"
        prof.write_text(prof.read_text().replace("[claude]\n", '[claude]\nauth = "api-key"\n', 1))
        for record in ([], ["--record"]):
            r = ccs("launch", "p", "claude", *record, "--", "-p", "say hi", env=env, timeout=120)
            assert r.returncode == 0, r.stderr
            assert stub.posts()[-1].headers["x-api-key"] == RECORDING_KEY
        assert len(runs(ccs, env)) == 2
        no_key_anywhere_on_disk()
    finally:
        stub.close()

"""What the tests of `ccs launch P codex` on a Chat Completions profile share: a profile whose
provider is a scripted loopback stub (tests/chat_stub.py), its key in the keyring, and the run's
manifest and records."""

from __future__ import annotations

import json
import os
from pathlib import Path

from chat_stub import ChatStub

KEY = "sk-chat-test-0123456789abcdef"
PID = "stubchat"


def setup_profile(ccs, env, stub: ChatStub, key_id: str, model: str = "chat-model") -> None:
    text = (f'schema = 1\n[provider]\nname = "Stub Chat"\nbase_url = "{stub.url}/v1"\nkey = "{key_id}"\n'
            f'[codex]\nmodel = "{model}"\nprovider_id = "{PID}"\nwire_api = "chat"\n')
    home = Path(os.environ["CCS_HOME"]) / "profiles"
    home.mkdir(parents=True, exist_ok=True)
    (home / "p.toml").write_text(text)
    r = ccs("key", "set", key_id, input=KEY, env=env)
    assert r.returncode == 0, r.stderr


def run_records(ccs, env) -> tuple[dict, list[dict]]:
    (manifest,) = json.loads(ccs("runs", "--json", env=env).stdout)["runs"]
    path = Path(os.environ["CCS_HOME"]) / "state" / "runs" / f"{manifest['launch_id']}.requests.jsonl"
    return manifest, [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

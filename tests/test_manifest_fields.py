"""A plan's client fields (``LaunchPlan.client``, ``layers``, ``project_layers``) reach the run manifest
under the keys and with the values earlier versions wrote: runs recorded before and after read alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ccswitch_tui.launch.launcher import Prepared, manifest_for
from ccswitch_tui.launch.plan import plan_for
from ccswitch_tui.model import ClientSetup
from ccswitch_tui.paths import Paths
from ccswitch_tui.profiles.schema import profile_from_data

TABLES = {"claude": {"model": "c"}, "codex": {"model": "x"}, "gemini": {"model": "g"}, "opencode": {"model": "o"},
          "kilo": {"model": "k"}, "qwen": {"model": "q"}, "aider": {"model": "a"}, "run": {"export": ["openai"]}}

# The keys each client's plan recorded (as 0.1.0 wrote them), plain and --isolate.
KEYS = {
    "claude": ({"config_dir", "quiet", "isolate", "shared"}, {"config_dir", "quiet", "isolate", "shared"}),
    "codex": ({"codex_home", "provider_id", "quiet", "shared"}, {"codex_home", "provider_id", "quiet", "isolate",
                                                                 "shared"}),
    "gemini": ({"gemini_home", "quiet"}, {"gemini_home", "quiet"}),
    "opencode": ({"config_dir", "quiet"}, {"config_dir", "quiet"}),
    "kilo": ({"config_dir", "quiet"}, {"config_dir", "quiet"}),
    "qwen": ({"qwen_home", "quiet", "isolate"}, {"qwen_home", "quiet", "isolate"}),
    "aider": ({"quiet"}, {"quiet"}),
    "run": (set(), set()),
}


def _plan(tmp_path: Path, tool: str, cwd: Path, isolate: bool = False, **table: str):
    data = {"schema": 1, "provider": {"name": "Prov", "base_url": "https://gw.example/v1", "key": "env:K"},
            **TABLES, tool: {**TABLES[tool], **table}}
    return plan_for(profile_from_data("p", data), tool, "sk-manifest-0123456789", {"PATH": "/usr/bin",
                    "HOME": str(tmp_path / "home")}, cwd, paths=Paths(profiles=tmp_path / "p", state=tmp_path / "s"),
                    isolate=isolate)


@pytest.mark.parametrize("tool", sorted(KEYS))
@pytest.mark.parametrize("isolate", [False, True], ids=["plain", "isolate"])
def test_each_clients_fields_keep_their_keys_and_values(tmp_path, tool, isolate):
    plan = _plan(tmp_path, tool, tmp_path, isolate)
    fields = plan.manifest_fields()
    assert set(fields) == KEYS[tool][isolate]
    json.dumps(fields)  # JSON values only
    if "quiet" in fields:
        assert fields["quiet"] is True  # a provider that is not the client's vendor: quiet by default
    if "isolate" in fields:
        assert fields["isolate"] is isolate
    home_key = next((k for k in fields if k.endswith(("_dir", "_home"))), None)
    if home_key is not None:
        assert fields[home_key] == plan.client.home and fields[home_key].startswith(str(tmp_path / "s" / "tools"))
    if "shared" in fields:
        assert isinstance(fields["shared"], list) and all(set(s) == {"piece", "source", "target", "how", "detail"}
                                                          for s in fields["shared"])
    # the manifest carries them as they are, after the fields every launch records
    prep = Prepared(plan=plan, executable="/bin/true", key_fingerprint="sha256:x")
    manifest = manifest_for(prep, {})
    assert {k: manifest[k] for k in fields} == fields


def test_a_chat_provider_records_its_wire_api_and_name(tmp_path):
    plan = _plan(tmp_path, "codex", tmp_path, wire_api="chat")
    fields = plan.manifest_fields()
    assert fields["wire_api"] == "chat" and fields["provider_name"] == "Prov"
    assert plan.client.wire_api == "chat" and plan.client.provider_name == "Prov"
    assert "wire_api" not in _plan(tmp_path, "codex", tmp_path).manifest_fields()


def test_the_layers_a_launch_meets_are_recorded_as_lists(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text(json.dumps({"model": "y"}))
    fields = _plan(tmp_path, "claude", repo).manifest_fields()
    assert fields["project_layers"] == []
    assert isinstance(fields["layers"], list) and len(fields["layers"]) == 1 and "(project)" in fields["layers"][0]
    assert "layers" not in _plan(tmp_path, "claude", tmp_path).manifest_fields()


def test_nothing_recorded_for_what_a_client_did_not_set():
    assert ClientSetup().manifest_fields() == {}
    assert ClientSetup(home_key="x_home", home="/h", isolate=False).manifest_fields() == {"x_home": "/h",
                                                                                        "isolate": False}

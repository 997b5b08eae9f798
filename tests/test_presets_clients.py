"""Every preset whose provider serves a client's API carries that client's table: OpenCode wherever the
provider has an OpenAI-compatible (Chat Completions) endpoint, Gemini CLI on Google's Gemini API. A
profile made from each preset is probed by `ccs check` against a loopback stub for every client it
serves, so a table that cannot work fails here."""

from __future__ import annotations

import json

import pytest

from ccswitch_tui import tools
from ccswitch_tui.profiles.presets import list_presets, load_preset
from ccswitch_tui.safe_read import parse_toml

KEY = "sk-presets-0123456789abcdefXYZ"


def serves_openai(preset) -> bool:
    """The provider has an OpenAI-compatible endpoint: its preset serves Codex or exports the OpenAI family."""
    p = preset.profile
    run = p.side("run")
    return "codex" in p.tools or bool(run and ("openai" in run.export or run.names))


@pytest.mark.parametrize("preset", [p.name for p in list_presets()])
def test_a_provider_with_a_chat_endpoint_serves_opencode(preset):
    p = load_preset(preset)
    if serves_openai(p):
        side = p.profile.side("opencode")
        assert side is not None, f"{preset} serves OpenAI's API but has no [opencode] table"
        assert side.model
    order = [k for k in parse_toml(p.text, preset) if isinstance(parse_toml(p.text, preset)[k], dict)]
    first = ("provider", "claude", "codex", "run")  # the tables presets had before more clients came
    added = [t for t in order if t in {s.name for s in tools.load().clients()} and t not in first]
    # the tables added for more clients come last in the file (later tables merge without conflicts)
    assert order[len(order) - len(added):] == added or not added, order


def test_google_serves_gemini_cli_on_googles_endpoint():
    p = load_preset("google").profile
    side = p.side("gemini")
    assert side.base_url == "https://generativelanguage.googleapis.com" and side.model
    assert tools.load().get("gemini").endpoint(side).startswith(
        "https://generativelanguage.googleapis.com/v1beta/models/")


@pytest.mark.usefixtures("secret_service")
def test_every_presets_clients_answer_check_against_a_stub(ccs, base_env, stubs, key_id):
    """`ccs new --preset P --base-url STUB` for every preset: each client the profile serves is probed
    where its table sends it, with the key, and answers."""
    stub = stubs("good")
    assert ccs("key", "set", key_id, input=KEY, env=base_env).returncode == 0
    for preset in list_presets():
        name = f"p-{preset.name}"
        r = ccs("new", name, "--preset", preset.name, "--base-url", stub.url, "--key", key_id, env=base_env)
        assert r.returncode == 0, r.stderr
        r = ccs("check", name, "--json", env=base_env)
        results = {x["tool"]: x["outcome"] for x in json.loads(r.stdout)["results"]}
        served = [t for t in json.loads(ccs("show", name, "--json", env=base_env).stdout)["tools"]
                  if t in {s.name for s in tools.load().clients()}]
        assert served and all(results.get(t) == "ok" for t in served), (preset.name, results)
    assert stub.posts()


def test_presets_and_list_name_only_the_tools_a_profile_sets_up(ccs, base_env):
    """`ccs presets` listed google's tools as `gemini,run`, though its `ccs run` exports nothing."""
    import json

    rows = {p["name"]: p for p in json.loads(ccs("presets", "--json", env=base_env).stdout)["presets"]}
    assert rows["google"]["tools"] == ["gemini"]
    assert "run" in rows["taotoken"]["tools"]
    line = next(ln for ln in ccs("presets", env=base_env).stdout.splitlines() if ln.startswith("google "))
    assert " gemini " in line and "run" not in line.split("Google Gemini API")[1].split()[0]
    assert ccs("new", "gem", "--preset", "google", "--key", "env:G_KEY", env=base_env).returncode == 0
    listed = json.loads(ccs("list", "--json", env=base_env).stdout)["profiles"]
    assert [p["tools"] for p in listed if p["name"] == "gem"] == [["gemini"]]

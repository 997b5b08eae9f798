"""`.ccs-profile` per tool: a bare profile name covers the tools that profile serves and passes the
others through (as `ccs use PROFILE` does), `tool=-` passes one through, `ccs use --here --none
--tool T` writes that line; parallel `ccs use` keep every choice; paths from anywhere print escaped.
The real pinned clients behind the shims, against loopback stubs."""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
from pathlib import Path

import pytest
from test_launch import make_profile
from test_shims import by_name, shim_dir

from ccswitch_tui.launch import shims


def status(ccs, env, cwd: Path) -> dict[str, dict]:
    r = ccs("status", "--json", env=env, cwd=cwd)
    assert r.returncode == 0, r.stderr
    return {row["tool"]: row for row in json.loads(r.stdout)["tools"]}


@pytest.mark.usefixtures("secret_service")
def test_a_bare_profile_name_covers_what_it_serves_and_passes_the_rest_through(ccs, base_env, stubs, client_bin,
                                                                              key_id, tmp_path):
    """`ccs use --here kimi`, then `gemini -p hi`: `profile 'kimi' has no [gemini] table`, rc 2."""
    clients_bin = client_bin("claude", "codex", "gemini")
    good = stubs("good")
    make_profile(ccs, base_env, "p", good.url, key_id)  # claude and codex, no gemini
    proj = tmp_path / "proj"
    proj.mkdir()
    r = ccs("use", "--here", "p", env=base_env, cwd=proj)
    assert r.returncode == 0, r.stderr
    assert (proj / ".ccs-profile").read_text() == "p\n"
    env = {**base_env, "PATH": f"{shim_dir()}:{clients_bin}:{base_env['PATH']}"}
    rows = status(ccs, env, proj)
    assert rows["claude"]["profile"] == "p" and rows["claude"]["source"] == "project"
    assert rows["gemini"]["profile"] is None and "p does not serve gemini, passes straight through" in \
        rows["gemini"]["why"]
    assert not rows["gemini"].get("problem")
    r = by_name(env, "gemini", "--version", cwd=proj)
    assert r.returncode == 0 and "0.61.0" in r.stdout, r.stderr
    r = by_name(env, "claude", "-p", "say hi", "--output-format", "json", cwd=proj)
    assert r.returncode == 0 and json.loads(r.stdout)["result"] == "stub reply", r.stderr
    runs = json.loads(ccs("runs", "--json", env=env).stdout)["runs"]
    assert [(m["profile"], m["tool"]) for m in runs] == [("p", "claude")]  # gemini ran without ccs


@pytest.mark.usefixtures("secret_service")
def test_a_tool_line_with_a_dash_passes_that_tool_through(ccs, base_env, stubs, client_bin, key_id, tmp_path):
    """`gemini=-` was refused (`'-' is not a profile name`), and `ccs use --here --none --tool gemini`
    too."""
    clients_bin = client_bin("claude", "codex", "gemini")
    good = stubs("good")
    make_profile(ccs, base_env, "p", good.url, key_id)
    proj = tmp_path / "proj"
    proj.mkdir()
    assert ccs("use", "--here", "p", env=base_env, cwd=proj).returncode == 0
    r = ccs("use", "--here", "--none", "--tool", "claude", env=base_env, cwd=proj)
    assert r.returncode == 0, r.stderr
    assert "claude here passes straight through" in r.stdout
    assert (proj / ".ccs-profile").read_text() == "p\nclaude=-\n"
    env = {**base_env, "PATH": f"{shim_dir()}:{clients_bin}:{base_env['PATH']}"}
    rows = status(ccs, env, proj)
    assert rows["claude"]["profile"] is None and "claude=- passes straight through" in rows["claude"]["why"]
    assert rows["codex"]["profile"] == "p"
    r = by_name(env, "claude", "--version", cwd=proj)
    assert r.returncode == 0 and "2.1.332" in r.stdout, r.stderr
    assert json.loads(ccs("runs", "--json", env=env).stdout)["runs"] == []  # no launch
    assert shims.parse_project_file("-\ncodex=p\n", "x", off=True) == {"*": None, "codex": "p"}


def test_parallel_use_keeps_every_choice(ccs, base_env, tmp_path):
    """Four parallel `ccs use --tool T P` kept as few as 2 of the 4 choices (`--here` 2–3 of 4)."""
    for name in ("a", "b", "c", "d"):
        r = ccs("new", name, "--base-url", "https://x.invalid/v1", "--key", "env:K", "--claude-model", "m",
                "--codex-model", "m", env=base_env)
        assert r.returncode == 0, r.stderr
        profile = Path(os.environ["CCS_HOME"]) / "profiles" / f"{name}.toml"
        profile.write_text(profile.read_text() + '\n[gemini]\nmodel = "g"\n[qwen]\nmodel = "q"\n')
    proj = tmp_path / "proj"
    proj.mkdir()
    pairs = [("claude", "a"), ("codex", "b"), ("gemini", "c"), ("qwen", "d")]
    for here in (False, True):
        flags = ["--here"] if here else []
        with cf.ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda tp, flags=flags: ccs("use", *flags, "--tool", tp[0], tp[1],
                                                               env=base_env, cwd=proj), pairs))
        assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
        if here:
            chosen = shims.read_project_file(proj / ".ccs-profile")
        else:
            chosen = shims.read_selection(Path(os.environ["CCS_HOME"]) / "state")
        assert {t: chosen.get(t) for t, _ in pairs} == dict(pairs), chosen


@pytest.mark.parametrize("name", ["osc\x1b]52;c;aGFja2Vk\x07clip", "rtl\u202egpj.exe"])
def test_status_and_use_here_print_a_folders_name_escaped(ccs, base_env, tmp_path, name):
    """A folder named with an OSC 52 clipboard write or U+202E reached the terminal as it was."""
    assert ccs("new", "p", "--base-url", "https://x.invalid/v1", "--key", "env:K", env=base_env).returncode == 0
    proj = tmp_path / name
    proj.mkdir()
    outputs = [ccs("use", "--here", "p", env=base_env, cwd=proj), ccs("status", env=base_env, cwd=proj),
               ccs("use", env=base_env, cwd=proj)]
    for r in outputs:
        assert r.returncode == 0, r.stderr
        assert "\x1b" not in r.stdout + r.stderr and "\u202e" not in r.stdout + r.stderr and "\x07" not in r.stdout
    assert any(".ccs-profile" in r.stdout for r in outputs)
    data = json.loads(ccs("status", "--json", env=base_env, cwd=proj).stdout)
    assert any(name in (row.get("where") or "") for row in data["tools"])  # JSON keeps the exact text


def test_a_line_for_every_tool_reads_the_profile_a_tool_line_does_not(tmp_path):
    """A tool's own line launches what it names; the line for every tool asks the profile."""
    state, profiles = tmp_path / "state", tmp_path / "profiles"
    state.mkdir()
    profiles.mkdir()
    (profiles / "p.toml").write_text('schema = 1\n[claude]\nmodel = "m"\n')
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".ccs-profile").write_text("p\ncodex=p\n")
    assert shims.choose("claude", proj, state, profiles=profiles).profile == "p"
    assert shims.choose("gemini", proj, state, profiles=profiles).profile is None
    assert shims.choose("codex", proj, state, profiles=profiles).profile == "p"  # named for the tool: launched
    (profiles / "p.toml").write_text("not toml [")
    assert shims.choose("gemini", proj, state, profiles=profiles).profile == "p"  # cannot tell: the launch says

"""The rerun lock: `ccs run --same-as ROUND_OR_RUN` (and `ccs launch`, and `--label L --locked`) refuses to
start a rerun the verdict would call drifted from its round's first run — a rotated key (the real
keyring), an upgraded client, another base URL, an edited profile — in one line naming each difference,
exit 3, with nothing started and no run written; an identical rerun starts. A recorded rerun whose
provider serves another model is told on stderr while it runs, and marked on the run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from leakcheck import assert_hidden, assert_one_line
from provider_stub import ProviderStub

KEY = "sk-lock-first-0123456789abcdef"
ROTATED = "sk-lock-rotated-0123456789abcdef"


def runs(ccs, env) -> list[dict]:
    return json.loads(ccs("runs", "--json", env=env).stdout)["runs"]


def started(tmp_path: Path, name: str) -> list[str]:
    """A child that leaves a mark when it runs: proves whether ccs started it."""
    return ["sh", "-c", f"echo started > {tmp_path / name}"]


def profile(ccs, env, name: str = "p", url: str = "http://127.0.0.1:9/v1", key: str = "env:LOCK_KEY",
            *extra: str) -> Path:
    r = ccs("new", name, "--base-url", url, "--key", key, *extra, env=env)
    assert r.returncode == 0, r.stderr
    return Path(os.environ["CCS_HOME"]) / "profiles" / f"{name}.toml"


def refused(ccs, env, tmp_path: Path, *args: str, says: tuple[str, ...]) -> str:
    """Run `ccs run ARGS p -- <mark>`: refused in one line (exit 3), the child never started, no run written."""
    before = len(runs(ccs, env))
    r = ccs("run", *args, "p", "--", *started(tmp_path, "refused"), env=env)
    line = assert_one_line(r, 3, says="refusing to start: this run would not be the same as")
    for s in says:
        assert s in line, line
    assert not (tmp_path / "refused").exists()
    assert len(runs(ccs, env)) == before
    return line


@pytest.fixture
def env(base_env):
    return {**base_env, "LOCK_KEY": KEY}


def first_run(ccs, env, tmp_path: Path, *args: str) -> dict:
    r = ccs("run", "--label", "R", "--locked", *args, "p", "--", *started(tmp_path, "first"), env=env)
    assert r.returncode == 0, r.stderr
    (m,) = runs(ccs, env)
    assert m["label"] == "R" and m["locked"] is True and "same_as" not in m
    return m


def test_an_identical_rerun_starts_and_says_what_it_was_held_to(ccs, env, tmp_path):
    profile(ccs, env)
    first = first_run(ccs, env, tmp_path)
    r = ccs("run", "--same-as", "R", "p", "--", *started(tmp_path, "second"), env=env)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert (tmp_path / "second").exists()
    # a locked round holds every later run of its label, --same-as or not
    r = ccs("run", "--label", "R", "p", "--", *started(tmp_path, "third"), env=env)
    assert r.returncode == 0 and (tmp_path / "third").exists(), r.stderr
    # and --same-as a run's launch id (a prefix will do: one that no other run of this second shares)
    r = ccs("run", "--same-as", first["launch_id"][:22], "p", "--", "true", env=env)
    assert r.returncode == 0, r.stderr
    newest = runs(ccs, env)
    assert [m["same_as"] for m in newest[:3]] == [first["launch_id"]] * 3
    assert [m["label"] for m in newest] == ["R"] * 4  # --same-as a round joins it
    diff = ccs("runs", "diff", first["launch_id"], *(m["launch_id"] for m in newest[:3]), env=env)
    assert diff.returncode == 0, diff.stdout  # what the lock let start, `runs diff` calls comparable


def test_a_launch_id_prefix_two_runs_share_says_so(ccs, env, tmp_path):
    """Runs started in the same second share their launch ids' first 17 characters: a prefix that
    matches two is named as such, not as a run that does not exist."""
    profile(ccs, env)
    first = first_run(ccs, env, tmp_path)
    runs_dir = Path(os.environ["CCS_HOME"]) / "state" / "runs"
    twin = first["launch_id"][:17] + "ffffffff"
    assert twin != first["launch_id"]
    original = json.loads((runs_dir / f"{first['launch_id']}.json").read_text())
    (runs_dir / f"{twin}.json").write_text(json.dumps({**original, "launch_id": twin, "label": "other"}))
    prefix = first["launch_id"][:17]
    r = ccs("run", "--same-as", prefix, "p", "--", *started(tmp_path, "second"), env=env)
    line = assert_one_line(r, 2, says=f"--same-as {prefix!r}: no round has this label, and the launch id prefix")
    assert "matches 2 runs; give more characters" in line
    assert not (tmp_path / "second").exists()


@pytest.mark.usefixtures("secret_service")
def test_refused_after_a_key_rotation(ccs, base_env, key_id, tmp_path):
    env = base_env
    profile(ccs, env, key=key_id)
    assert ccs("key", "set", key_id, input=KEY, env=env).returncode == 0
    first_run(ccs, env, tmp_path)
    assert ccs("key", "set", key_id, input=ROTATED, env=env).returncode == 0
    line = refused(ccs, env, tmp_path, "--same-as", "R", says=("key_fingerprint fp:", "(rotated)"))
    assert_hidden(ccs("runs", env=env), KEY, ROTATED)
    assert KEY not in line and ROTATED not in line
    refused(ccs, env, tmp_path, "--label", "R", says=("key_fingerprint",))  # the lock holds without --same-as
    assert ccs("key", "set", key_id, input=KEY, env=env).returncode == 0  # the key put back: it starts again
    assert ccs("run", "--label", "R", "p", "--", "true", env=env).returncode == 0


def test_refused_after_a_client_upgrade(ccs, env, tmp_path):
    """A client found through its npm package (as the pinned ones are): its version is in package.json."""
    pkg = tmp_path / "npm" / "node_modules" / "@openai" / "codex"
    (pkg / "bin").mkdir(parents=True)
    (pkg / "package.json").write_text('{"name": "@openai/codex", "version": "0.171.0"}')
    client = pkg / "bin" / "codex.js"
    client.write_text(f"#!/bin/sh\necho started > {tmp_path / 'client-ran'}\n")
    client.chmod(0o755)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "codex").symlink_to(client)
    env = {**env, "PATH": f"{tmp_path / 'bin'}:{env['PATH']}"}
    profile(ccs, env, "p", "http://127.0.0.1:9/v1", "env:LOCK_KEY", "--codex-model", "gpt-4.1")
    assert ccs("launch", "--label", "R", "--locked", "p", "codex", env=env).returncode == 0
    assert ccs("launch", "--same-as", "R", "p", "codex", env=env).returncode == 0
    (tmp_path / "client-ran").unlink()
    (pkg / "package.json").write_text('{"name": "@openai/codex", "version": "0.172.0"}')
    r = ccs("launch", "--same-as", "R", "p", "codex", env=env)
    assert_one_line(r, 3, says="tool_version @openai/codex@0.171.0 -> @openai/codex@0.172.0 (the client was updated")
    assert not (tmp_path / "client-ran").exists() and len(runs(ccs, env)) == 2


def test_refused_after_a_base_url_change(ccs, env, tmp_path):
    path = profile(ccs, env)
    first_run(ccs, env, tmp_path)
    path.write_text(path.read_text().replace("127.0.0.1:9/", "127.0.0.1:10/"))
    refused(ccs, env, tmp_path, "--same-as", "R", says=(
        'base_urls {"OPENAI_BASE_URL":"http://127.0.0.1:9/v1"} -> {"OPENAI_BASE_URL":"http://127.0.0.1:10/v1"}',
        "profile 'p' changed its base URL", "profile_digest"))


def test_refused_after_a_profile_edit(ccs, env, tmp_path):
    """An edit that changes nothing `ccs run` exports (the Codex model) is still an edit of the profile;
    a comment or a new description is not."""
    path = profile(ccs, env, "p", "http://127.0.0.1:9/v1", "env:LOCK_KEY", "--codex-model", "gpt-4.1")
    first_run(ccs, env, tmp_path)
    text = path.read_text()
    edited = re.sub(r'(?m)^description = .*$', 'description = "reruns of the baseline"', text)
    assert edited != text
    path.write_text("# a comment\n" + edited)
    assert ccs("run", "--same-as", "R", "p", "--", "true", env=env).returncode == 0
    path.write_text(text.replace('model = "gpt-4.1"', 'model = "gpt-4.1-mini"'))
    line = refused(ccs, env, tmp_path, "--same-as", "R", says=("profile_digest sha256:",
                                                                "(profile 'p' was edited between the runs)"))
    assert "base_urls" not in line and "models" not in line  # nothing else differs


def test_each_difference_is_named_in_the_one_line(ccs, env, tmp_path):
    path = profile(ccs, env)
    first_run(ccs, env, tmp_path)
    path.write_text(path.read_text().replace("127.0.0.1:9/", "127.0.0.1:10/") + '\n[env]\nEXTRA = "1"\n')
    line = refused(ccs, {**env, "LOCK_KEY": ROTATED}, tmp_path, "--label", "R",
                   says=("base_urls", "key_fingerprint", "profile_digest", "env: +EXTRA"))
    assert line.index("base_urls") < line.index("key_fingerprint") < line.index("profile_digest")


def test_unknown_rounds_and_bad_options_are_bad_input(ccs, env, tmp_path):
    profile(ccs, env)
    assert_one_line(ccs("run", "--same-as", "nope", "p", "--", "true", env=env), 2,
                    says="--same-as 'nope': no round has this label and no run this launch id")
    assert_one_line(ccs("run", "--locked", "p", "--", "true", env=env), 2, says="--locked locks a round")
    assert runs(ccs, env) == []


def test_a_round_locked_on_runs_it_already_has(ccs, env, tmp_path):
    """--locked on a round that has runs locks it on its first run, and holds this one to it."""
    profile(ccs, env)
    assert ccs("run", "--label", "R", "p", "--", "true", env=env).returncode == 0
    (first,) = runs(ccs, env)
    refused(ccs, {**env, "LOCK_KEY": ROTATED}, tmp_path, "--label", "R", "--locked", says=("key_fingerprint",))
    assert ccs("run", "--label", "R", "--locked", "p", "--", "true", env=env).returncode == 0
    locks = json.loads((Path(os.environ["CCS_HOME"]) / "state" / "locked-rounds.json").read_text())
    assert locks == {"rounds": {"R": first["launch_id"]}}


def test_a_drifted_model_is_said_while_the_run_goes_on(ccs, env, tmp_path):
    """The baseline was served gpt-4.1; the rerun's provider answers with another model: the line comes
    on stderr while the child still runs (the child sees the mark on its own manifest before it ends)."""
    stub = ProviderStub()
    try:
        profile(ccs, env, url=stub.url + "/v1")
        agent = tmp_path / "agent.py"
        agent.write_text(
            "import json, os, sys, time, urllib.request\n"
            "req = urllib.request.Request(os.environ['OPENAI_BASE_URL'] + '/chat/completions', method='POST',\n"
            "    data=json.dumps({'model': 'gpt-4.1', 'messages': []}).encode(),\n"
            "    headers={'Authorization': 'Bearer ' + os.environ['OPENAI_API_KEY'],\n"
            "             'Content-Type': 'application/json'})\n"
            "urllib.request.urlopen(req).read()\n"
            "manifest = os.path.join(sys.argv[1], os.environ['CCS_LAUNCH_ID'] + '.json')\n"
            "for _ in range(100):\n"
            "    if 'live_drift' in json.load(open(manifest)):\n"
            "        print('marked while running', flush=True)\n"
            "        break\n"
            "    time.sleep(0.1)\n")
        runs_dir = str(Path(os.environ["CCS_HOME"]) / "state" / "runs")
        r = ccs("run", "--record", "--label", "R", "--locked", "p", "--", sys.executable, str(agent), runs_dir,
                env=env)
        assert r.returncode == 0 and "drift" not in r.stderr, r.stderr
        stub.served = "gpt-4.1-mini-2025"
        t0 = time.monotonic()
        r = ccs("run", "--record", "--label", "R", "p", "--", sys.executable, str(agent), runs_dir, env=env)
        assert r.returncode == 0, r.stderr
        assert time.monotonic() - t0 < 9  # the child did not wait out its 10 s for the mark
        assert r.stdout.strip() == "marked while running"
        lines = [x for x in r.stderr.splitlines() if "drift" in x]
        assert len(lines) == 1 and "was answered by 'gpt-4.1-mini-2025'" in lines[0], r.stderr
        assert "saw gpt-4.1 (models_served)" in lines[0]
        rerun = runs(ccs, env)[0]
        assert [(x["field"], x["value"]) for x in rerun["live_drift"]] == [("models_served", "gpt-4.1-mini-2025")]
        diff = ccs("runs", "diff", rerun["same_as"], rerun["launch_id"], env=env)
        assert diff.returncode == 3 and "models_served (model)" in diff.stdout
        assert f"{rerun['launch_id']} drifted while it ran: models_served gpt-4.1-mini-2025" in diff.stdout
    finally:
        stub.close()


def test_a_plain_or_labelled_launch_loads_nothing_of_the_lock(tmp_path):
    """Without --same-as (and with a label whose round is not locked) `ccs run` loads neither the rerun
    lock nor the verdict nor the archive code; a held launch loads the lock."""
    lock = ("ccswitch_tui.launch.rerun", "ccswitch_tui.runs.rerun_lock", "ccswitch_tui.runs.verdict",
            "ccswitch_tui.runs.live_drift", "tarfile", "ccswitch_tui.runs.archive_read")
    code = (
        "import sys\n"
        "from ccswitch_tui.cli import run\n"
        "codes = [run(['new', 'p', '--base-url', 'http://127.0.0.1:9/v1', '--key', 'env:LOCK_KEY'])]\n"
        "codes.append(run(['run', 'p', '--', 'true']))\n"
        "codes.append(run(['run', '--label', 'free', 'p', '--', 'true']))\n"
        f"plain = sorted(m for m in {lock!r} if m in sys.modules)\n"
        "codes.append(run(['run', '--same-as', 'free', 'p', '--', 'true']))\n"
        f"held = sorted(m for m in {lock!r} if m in sys.modules)\n"
        "print(codes, plain, held, file=sys.stderr)\n"
    )
    env = {**os.environ, "CCS_HOME": str(tmp_path), "LOCK_KEY": KEY}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    expected = sorted(m for m in lock if "archive" not in m and m != "tarfile")
    assert r.stderr.strip().splitlines()[-1] == f"[0, 0, 0, 0] [] {expected}", r.stdout + r.stderr


def test_a_first_run_that_cannot_start_leaves_its_round_unlocked(ccs, env, tmp_path):
    """The run cannot start (its runs folder is a file: no records, no manifest): its round is not left
    locked to a run that does not exist."""
    profile(ccs, env)
    runs_dir = Path(os.environ["CCS_HOME"]) / "state" / "runs"
    runs_dir.parent.mkdir(parents=True, exist_ok=True)
    runs_dir.write_text("not a folder")
    r = ccs("run", "--record", "--label", "R", "--locked", "p", "--", "true", env=env)
    assert_one_line(r, 2)
    locks = Path(os.environ["CCS_HOME"]) / "state" / "locked-rounds.json"
    assert json.loads(locks.read_text()) == {"rounds": {}}
    runs_dir.unlink()
    assert ccs("run", "--label", "R", "--locked", "p", "--", "true", env=env).returncode == 0
    assert list(json.loads(locks.read_text())["rounds"]) == ["R"]

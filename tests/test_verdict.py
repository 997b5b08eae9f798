"""One verdict on reruns: `ccs runs diff`, `ccs runs report`, `ccs inspect` and the TUI's Runs tab judge
the same pair of runs the same way, a forced launch and a failed outcome are not "comparable", and
hostile state on disk (FIFOs, links to devices, damaged records and manifests) gives one line naming
the file while the rest of the report still prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

KEY = "sk-verdict-0123456789abcdefXYZ"
NEW_KEY = "sk-verdict-rotated-0123456789abcdef"


def runs_dir() -> Path:
    d = Path(os.environ["CCS_HOME"]) / "state" / "runs"
    d.mkdir(parents=True, exist_ok=True)
    return d


def summary(requests: int = 3, status: str = "200", outcome: str = "ok") -> dict:
    return {"requests": requests, "by_path": {"POST /chat/completions": requests} if requests else {},
            "by_status": {status: requests} if requests else {}, "by_outcome": {outcome: requests} if requests else {},
            "endpoints": {"http://127.0.0.1:9/v1/chat/completions": requests} if requests else {},
            "models_requested": {"gpt-4.1": requests} if requests else {},
            "models_served": {"gpt-4.1": requests} if requests and outcome == "ok" else {},
            "tokens": {"input_tokens": 10 * requests}, "errors": 0 if outcome == "ok" else requests,
            "max_concurrency": 1, "findings": []}


def manifest(lid: str, **fields) -> dict:
    m = {"launch_id": lid, "profile": "p", "tool": "run", "argv": ["python", "agent.py"],
         "started": f"2026-01-01T00:00:0{lid[-1]}Z", "ended": f"2026-01-01T00:00:1{lid[-1]}Z", "exit_status": 0,
         "base_urls": {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, "models": {"OPENAI_MODEL": "gpt-4.1"},
         "key_id": "k", "key_fingerprint": "fp:aaaa", "env_hash": "sha256:1", "env_digests": {"A": "1"},
         "tool_version": None, "forced": False, "overridden": [], "label": "exp",
         "recording": {"records": f"{lid}.requests.jsonl"}, "requests": summary()}
    m.update(fields)
    return {k: v for k, v in m.items() if v is not ...}


def put(m: dict) -> str:
    (runs_dir() / f"{m['launch_id']}.json").write_text(json.dumps(m))
    return m["launch_id"]


def clean(r: subprocess.CompletedProcess) -> None:
    text = r.stdout + r.stderr
    assert "Traceback" not in text and "internal error" not in text and "RecursionError" not in text, text


# --- case 4: the outcome counts, and report and diff judge the same fields ------------------------------

def test_failed_requests_and_exit_are_not_comparable(ccs):
    a = put(manifest("20260101T000000Z-aaaaaaa1"))
    b = put(manifest("20260101T000000Z-aaaaaaa2", exit_status=1, requests=summary(3, "401", "upstream-error")))
    c = put(manifest("20260101T000000Z-aaaaaaa3", requests=summary(0)))
    r = ccs("runs", "diff", a, b)
    clean(r)
    assert r.returncode == 3, r.stdout
    assert "drifted: models_served, errors, auth_failures, exit_status" in r.stdout
    assert "cause: upstream-error x3, HTTP 401 x3" in r.stdout
    r = ccs("runs", "diff", a, c)
    assert r.returncode == 3 and "request_counts" in r.stdout and "endpoints" in r.stdout
    # The report marks what the diff names, and its footer lists every field the diff compared.
    r = ccs("runs", "report", "--label", "exp")
    clean(r)
    lines = r.stdout.splitlines()
    assert "ERRS*" in lines[0] and "EXIT*" in lines[0] and "REQS*" in lines[0]
    assert lines[2].split()[-1] == "1*" and " 0* " in lines[3] + " "
    footer = lines[-1]
    for f in ("endpoints", "request_counts", "errors", "exit_status", "auth_failures"):
        assert f in footer, footer
    data = json.loads(ccs("runs", "report", "--label", "exp", "--json").stdout)
    diff = json.loads(ccs("runs", "diff", a, b, c, "--json").stdout)["comparisons"]
    assert [sorted(r["drifted"]) for r in data["rows"][1:]] == [sorted(d["drifted"]) for d in diff]


def test_an_old_manifest_still_compares(ccs):
    """Manifests of earlier versions have no env digests, no forced flag, no request summary: they compare
    on what they have, and nothing is invented for the rest."""
    old = {"launch_id": "20250101T000000Z-0000old1", "profile": "p", "tool": "run", "argv": ["python"],
           "started": "2025-01-01T00:00:00Z", "ended": "2025-01-01T00:00:01Z", "exit_status": 0,
           "base_urls": {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, "models": {"OPENAI_MODEL": "gpt-4.1"},
           "key_id": "k", "key_fingerprint": "fp:aaaa", "env_hash": "sha256:1"}
    a = put(old)
    b = put(manifest("20260101T000000Z-aaaaaaa4", env_digests=..., recording=..., requests=...))
    r = ccs("runs", "diff", a, b)
    clean(r)
    assert r.returncode == 0 and "comparable (no drift)" in r.stdout, r.stdout
    c = put(manifest("20260101T000000Z-aaaaaaa5", key_fingerprint="fp:bbbb", env_digests=..., requests=...))
    r = ccs("runs", "diff", a, c)
    assert r.returncode == 3 and "key_fingerprint (routing)" in r.stdout and "rotated" in r.stdout, r.stdout
    assert "note: only 20260101T000000Z-aaaaaaa5 was recorded" in r.stdout


# --- hostile state --------------------------------------------------------------------------------------

def good_pair() -> tuple[str, str]:
    return (put(manifest("20260101T000000Z-aaaaaaa1")), put(manifest("20260101T000000Z-aaaaaaa2")))


def live(lid: str) -> str:
    """A manifest of a recorded run still going: its summary is made from its records file."""
    return put(manifest(lid, ended=None, exit_status=None, requests=...))


@pytest.mark.parametrize("what", ["fifo", "dev-zero"])
def test_records_that_are_not_a_file(ccs, what):
    good_pair()
    lid = live("20260101T000000Z-aaaaaaa3")
    path = runs_dir() / f"{lid}.requests.jsonl"
    if what == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    r = ccs("runs", "report", "--label", "exp", timeout=20)
    clean(r)
    assert r.returncode == 0, r.stderr
    assert [ln.split()[0] for ln in r.stdout.splitlines()[1:4]] == [
        "20260101T000000Z-aaaaaaa1", "20260101T000000Z-aaaaaaa2", lid]
    (warning,) = r.stderr.strip().splitlines()
    assert str(path) in warning and "not a regular file" in warning
    r = ccs("runs", "diff", "20260101T000000Z-aaaaaaa1", lid, timeout=20)
    clean(r)
    assert r.returncode == 3 and str(path) in r.stderr  # found: the runs differ


@pytest.mark.parametrize("line", [
    "[" * 100_000 + "]" * 100_000,
    json.dumps({"path": "/chat/completions", "method": "POST", "model_requested": ["m"], "outcome": "ok"}),
    json.dumps({"path": "/chat/completions", "method": "POST", "status": "200", "outcome": "ok"}),
    json.dumps(["not", "a", "record"]),
], ids=["deep", "model-list", "status-text", "not-object"])
def test_damaged_record_lines(ccs, line):
    good_pair()
    lid = live("20260101T000000Z-aaaaaaa3")
    path = runs_dir() / f"{lid}.requests.jsonl"
    ok = json.dumps({"path": "/chat/completions", "method": "POST", "status": 200, "outcome": "ok",
                     "model_requested": "gpt-4.1", "upstream_url": "http://127.0.0.1:9/v1/chat/completions"})
    path.write_text(f"{ok}\n{line}\n{ok}\n")
    r = ccs("runs", "report", "--label", "exp", "--json", timeout=30)
    clean(r)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["rows"]
    assert [row["requests"] for row in rows] == [3, 3, 2]  # the good records still count
    (warning,) = r.stderr.strip().splitlines()
    assert str(path) in warning and "line 2" in warning and "1 damaged record line" in warning


# each damaged field, and the exit code of `runs diff` with it read as missing: 3 where the two runs then
# differ, 0 where what is left still matches
@pytest.mark.parametrize(("fields", "diff_code"), [
    ({"base_urls": ["a", "b"]}, 3), ({"base_urls": {"a": 5}}, 3), ({"models": "gpt"}, 3),
    ({"requests": {**summary(), "models_requested": 5}}, 3),
    ({"requests": {**summary(), "by_status": {"200": "x"}}}, 0),
    ({"requests": [1]}, 3), ({"requests": {**summary(), "errors": "many"}}, 3), ({"recording": "yes"}, 0),
    ({"env_digests": [1]}, 0), ({"overridden": "x", "forced": "yes"}, 3),
])
def test_damaged_manifest_fields(ccs, fields, diff_code):
    a, b = good_pair()
    bad = put(manifest("20260101T000000Z-aaaaaaa3", **fields))
    r = ccs("runs", "report", "--label", "exp")
    clean(r)
    assert r.returncode == 0, r.stderr
    assert [ln.split()[0] for ln in r.stdout.splitlines()[1:4]] == [a, b, bad]  # every other run still reported
    (warning,) = r.stderr.strip().splitlines()
    assert bad in warning and "damaged field" in warning and next(iter(fields)) in warning
    for args in ((a, bad), (bad, a)):
        r = ccs("runs", "diff", *args)
        clean(r)
        assert r.returncode == diff_code and bad in r.stderr
    assert json.loads((runs_dir() / f"{bad}.json").read_text()) == manifest(bad, **fields)  # the file as it was


def test_unreadable_manifest_is_named_and_the_rest_reported(ccs):
    a, b = good_pair()
    os.mkfifo(runs_dir() / "20260101T000000Z-0000fifo.json")
    (runs_dir() / "20260101T000000Z-0000deep.json").write_text("[" * 100_000)
    r = ccs("runs", "report", "--label", "exp", timeout=20)
    clean(r)
    assert r.returncode == 0
    assert [ln.split()[0] for ln in r.stdout.splitlines()[1:3]] == [a, b]
    warnings = r.stderr.strip().splitlines()
    assert len(warnings) == 2 and all("not a readable run manifest" in w for w in warnings)


# --- one verdict: diff, report, inspect and the TUI on the same pair of runs ------------------------------

AGENT = '''
import os, sys, time
import openai

client = openai.OpenAI(max_retries=0)
client.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "hi"}])
if len(sys.argv) > 1:  # stay alive until told to stop, so the run can be inspected while it goes on
    open(sys.argv[1] + ".pid", "w").write(str(os.getpid()))
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.05)
'''


def wait_for(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


@pytest.mark.usefixtures("secret_service")
def test_diff_report_inspect_and_tui_give_one_verdict(ccs, ccs_home, base_env, key_id, tmp_path):
    """A recorded run goes on while the key is rotated; the next run uses the new key. `runs diff`,
    `runs report` and the TUI's Runs tab call the pair drifted on the key, for the same cause; `inspect`
    of the first run (whose bridge still sends the old key) says key-drift for that cause too."""
    from provider_stub import ProviderStub

    provider = ProviderStub()
    try:
        env = {**base_env}
        assert ccs("new", "p", "--base-url", provider.url + "/v1", "--key", key_id, env=env).returncode == 0
        assert ccs("key", "set", key_id, input=KEY, env=env).returncode == 0
        agent = tmp_path / "agent.py"
        agent.write_text(AGENT)
        stop = tmp_path / "stop"
        first = subprocess.Popen([sys.executable, "-m", "ccswitch_tui", "run", "--record", "--label", "pair", "p", "--",
                                  sys.executable, str(agent), str(stop)], env=env, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(Path(f"{stop}.pid"))
            pid = Path(f"{stop}.pid").read_text()
            assert ccs("key", "set", key_id, input=NEW_KEY, env=env).returncode == 0
            r = ccs("inspect", pid, "--json", env=env)
            clean(r)
            found = [f for f in json.loads(r.stdout)["findings"] if f["code"] == "key-drift"]
            assert len(found) == 1 and "rotated" in found[0]["message"], r.stdout
            expected_key = json.loads(r.stdout)["key_fingerprint"]  # the key stored now, not the bridge's token
            assert ccs("run", "--record", "--label", "pair", "p", "--", sys.executable, str(agent),
                       env=env, timeout=60).returncode == 0
        finally:
            stop.touch()
            first.communicate(timeout=60)
        assert [s.headers["authorization"] for s in provider.posts()] == [f"Bearer {KEY}", f"Bearer {NEW_KEY}"]
        second, first_run = json.loads(ccs("runs", "--json", env=env).stdout)["runs"]
        second_id, first_id = second["launch_id"], first_run["launch_id"]
        assert expected_key == second["key_fingerprint"] != first_run["key_fingerprint"]

        (diff,) = json.loads(ccs("runs", "diff", first_id, second_id, "--json", env=env).stdout)["comparisons"]
        report = json.loads(ccs("runs", "report", "--label", "pair", "--json", env=env).stdout)["rows"][1]

        from ccswitch_tui.keys.keyring import KeyStore
        from ccswitch_tui.profiles.store import Store
        from ccswitch_tui.tui.service import Service

        service = Service(ccs_home, Store(ccs_home), KeyStore(ccs_home, env), env, tmp_path)
        tui = next(r for r in service.runs("p") if r.manifest["launch_id"] == second_id)

        assert diff["drifted"] == report["drifted"] == list(tui.drifted) == ["key_fingerprint"]
        (d,) = diff["differences"]
        assert d["kind"] == "routing" and "rotated" in d["cause"]
        assert report["differences"] == diff["differences"] == [x.to_dict() for x in tui.differences]
    finally:
        provider.close()


# --- case: a forced launch is not comparable with a clean one ---------------------------------------------

@pytest.mark.usefixtures("secret_service")
def test_forced_claude_launch_is_not_comparable(ccs, base_env, stubs, client_bin, key_id, tmp_path):
    """A repository's .claude/settings.json sets ANTHROPIC_MODEL; `ccs launch --force` lets it through. The
    forced run is not comparable with the clean one, and the cause names the layer; recorded, the model
    change names the forced launch as its cause."""
    clients_bin = client_bin("claude")
    stub = stubs("good")
    env = {**base_env, "PATH": f"{clients_bin}:{base_env['PATH']}"}
    assert ccs("new", "p", "--base-url", stub.url, "--key", key_id, env=env).returncode == 0  # no model pinned
    assert ccs("key", "set", key_id, input=KEY, env=env).returncode == 0
    clean_dir, repo = tmp_path / "clean", tmp_path / "repo"
    clean_dir.mkdir()
    (repo / ".claude").mkdir(parents=True)
    settings = repo / ".claude" / "settings.json"
    settings.write_text(json.dumps({"env": {"ANTHROPIC_MODEL": "evil-claude-model"}}))
    for record in ([], ["--record"]):
        r = ccs("launch", "p", "claude", *record, "--", "-p", "hi", env=env, cwd=clean_dir, timeout=90)
        assert r.returncode == 0, r.stderr
        r = ccs("launch", "p", "claude", *record, "--", "-p", "hi", env=env, cwd=repo, timeout=90)
        assert r.returncode == 2 and str(settings) in r.stderr  # refused without --force
        r = ccs("launch", "p", "claude", *record, "--force", "--", "-p", "hi", env=env, cwd=repo, timeout=90)
        assert r.returncode == 0, r.stderr
        forced, clean_run = json.loads(ccs("runs", "--json", env=env).stdout)["runs"][:2]
        assert forced["forced"] is True
        r = ccs("runs", "diff", clean_run["launch_id"], forced["launch_id"], env=env)
        clean(r)
        assert r.returncode == 3, r.stdout
        assert "forced (override)" in r.stdout and str(settings) in r.stdout
        (cmp,) = json.loads(ccs("runs", "diff", clean_run["launch_id"], forced["launch_id"], "--json",
                                env=env).stdout)["comparisons"]
        if record:
            requested = next(d for d in cmp["differences"] if d["field"] == "models_requested")
            assert requested["run"] == ["evil-claude-model"] and "forced past" in requested["cause"]
            assert str(settings) in requested["cause"]
    assert "evil-claude-model" in {p.body["model"] for p in stub.posts()}

"""The consistency board and the rounds' data beside it: a request's task tag recorded and kept from the
upstream, per-task routing and timelines in the runs' summaries, what changed between rounds, and hostile
labels, task ids and model names shown as text in a real browser."""

from __future__ import annotations

import http.client
import json
import os
from pathlib import Path

import pytest
from provider_stub import ProviderStub

from ccswitch_tui.bridge import records as rec
from ccswitch_tui.bridge.server import Bridge, BridgeConfig, Route
from ccswitch_tui.runs import round_changes
from ccswitch_tui.runs.rounds import rounds_table

KEY = "sk-real-board-key-0123456789abcdef"


# --- X-CCS-Task in the bridge ---------------------------------------------------------------------------

def _post(bridge: Bridge, headers: dict[str, str]) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", bridge.port, timeout=10)
    body = json.dumps({"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]})
    conn.request("POST", "/openai/chat/completions", body=body,
                 headers={"Content-Type": "application/json", **headers})
    answer = conn.getresponse()
    answer.read()  # the whole answer: a child that hangs up before its end is recorded as gone
    conn.close()
    return answer.status


def test_a_task_tag_is_recorded_and_never_sent_upstream(tmp_path: Path):
    stub = ProviderStub()
    records = tmp_path / "L.requests.jsonl"
    bridge = Bridge(BridgeConfig(routes=(Route("openai", stub.url + "/v1"),), key=KEY, records_path=records)).start()
    try:
        auth = {"Authorization": f"Bearer {bridge.token}"}
        assert _post(bridge, {**auth, "X-CCS-Task": "  task-7 "}) == 200
        assert _post(bridge, {**auth, "x-ccs-task": f"leak {bridge.token} {KEY}"}) == 200  # a secret as a task id
        assert _post(bridge, {**auth}) == 200
        assert _post(bridge, {"X-CCS-Task": "refused"}) == 401  # no token: refused, still tagged
    finally:
        bridge.stop()
        stub.close()
    assert len(stub.seen) == 3
    assert all(k.lower() != "x-ccs-task" for s in stub.seen for k in s.headers)
    got = rec.read_records(records)
    assert [r.get("task") for r in got] == ["task-7", got[1]["task"], None, "refused"]
    assert "task" not in got[2]
    text = records.read_text()
    assert bridge.token not in text and KEY not in text and got[1]["task"].startswith("leak ")
    summary = rec.summarize(got)
    assert summary["by_task"]["task-7"] == {"requests": 1, "tokens": got[0]["input_tokens"] + got[0]["output_tokens"],
                                            "retries": 0, "auth_failures": 0, "rate_limited": 0, "errors": 0,
                                            "models_served": {"gpt-4.1": 1}}
    # The bridge's own refusal is an error of the request, not a 401 of the provider (as the rounds count them).
    refused = summary["by_task"]["refused"]
    assert (refused["errors"], refused["auth_failures"], summary["tasks_left_out"]) == (1, 0, 0)
    t = summary["timeline"]
    # requests, 401/403, 429, retries (the same body sent again is another try of the first), errors
    assert [sum(s[i] for s in t["slices"]) for i in range(5)] == [4, 0, 0, 2, 1]


def test_the_tally_stays_bounded_whatever_the_records_hold():
    """A million task ids, absurd times and token counts, served models flapping: the summary stays small."""
    from ccswitch_tui.bridge.tally import BUCKETS, MAX_MODEL_CHANGES, MAX_TASKS, Tally

    tally = Tally()
    for i in range(30_000):
        tally.add({"task": f"t{i}" + "x" * 500, "started": f"{1 + i % 9999:04d}-01-01T00:00:00Z",
                   "input_tokens": 10**400, "output_tokens": -5, "status": 429, "outcome": "upstream-error",
                   "model_served": f"m{i % 2}", "retry_of": 1})
    tally.add({"task": 5, "started": "garbage", "status": "x"})  # wrong types count as absent
    out = tally.result()
    assert len(out["by_task"]) == MAX_TASKS and out["tasks_left_out"] == 30_000 - MAX_TASKS
    assert all(len(t) <= 200 and e["tokens"] == 0 for t, e in out["by_task"].items())
    assert len(out["timeline"]["slices"]) <= BUCKETS and len(out["timeline"]["model_changes"]) == MAX_MODEL_CHANGES
    assert sum(s[0] for s in out["timeline"]["slices"]) == 30_000
    assert len(json.dumps(out)) < 2_000_000


# --- what changed between rounds --------------------------------------------------------------------------

def test_the_round_command_and_its_changes():
    def m(*argv: str) -> dict:
        return {"tool": "run", "argv": list(argv), "tool_version": None}

    base = round_changes.round_command([m("python", "agent.py", "out-1.jsonl", "1"),
                                        m("python", "agent.py", "out-2.jsonl", "2")])
    assert base == ["python", "agent.py", "…", "…"]
    analyzer = round_changes.round_command([m("python", "agent.py", "--enable-consistency-analyzer", "o-1", "1"),
                                            m("python", "agent.py", "--enable-consistency-analyzer", "o-2", "2")])
    (c,) = round_changes.changes({"command": base}, {"command": analyzer})
    assert c["added"] == ["--enable-consistency-analyzer"] and c["text"] == "command +--enable-consistency-analyzer"
    rows = [{"round": "a", "k": 2, "command": base, "peak_concurrency": 4, "key_fingerprints": ["fp:1"]},
            {"round": "b", "k": 2, "command": analyzer, "peak_concurrency": 4, "key_fingerprints": ["fp:1"]},
            {"round": "c", "k": 2, "command": analyzer, "peak_concurrency": 8, "key_fingerprints": ["fp:2"]},
            {"round": "d", "k": 0}, {"round": "e", "k": 1, "command": analyzer, "peak_concurrency": 8,
                                     "key_fingerprints": ["fp:2"]}]
    round_changes.annotate(rows)
    assert [r["changed_since"] for r in rows] == [None, "a", "b", None, "c"]
    assert rows[1]["changed_warning"] is None and [c["field"] for c in rows[2]["changed"]] == ["key", "concurrency"]
    assert rows[2]["changed_warning"].startswith("2 variables changed since b (key, concurrency)")
    assert rows[4]["changed"] == []


# --- hostile texts on the board, in a real browser ---------------------------------------------------------

HOSTILE = ['<script>alert("label")</script>', "<img src=x onerror=alert(2)>", '"quoted" & \'single\'',
           "bidi \u202egnp.exe\u202c ctrl \x1b[31mred\x07", "long-" + "L" * 4000]


def _manifest(lid: str, label: str, served: str, results: dict, by_task: dict) -> dict:
    return {"launch_id": lid, "profile": "p", "tool": "run", "argv": ["python", "agent.py", lid],
            "started": f"2026-01-01T00:00:{lid[-2:]}Z", "ended": "2026-01-01T00:10:00Z", "exit_status": 0,
            "base_urls": {"OPENAI_BASE_URL": "https://gw.example/v1"}, "models": {}, "key_id": "k",
            "key_fingerprint": "fp:1", "env_hash": "sha256:1", "label": label, "outcomes": {"results": results},
            "requests": {"requests": 2, "by_path": {"POST /chat/completions": 2}, "by_status": {"200": 2},
                         "by_outcome": {"ok": 2}, "endpoints": {"https://gw.example/v1/chat/completions": 2},
                         "models_requested": {"gpt-4.1": 2}, "models_served": {served: 2},
                         "tokens": {"input_tokens": 10, "output_tokens": 10}, "errors": 0, "max_concurrency": 1,
                         "by_task": by_task, "tasks_left_out": 0,
                         "timeline": {"start": "2026-01-01T00:00:00Z", "seconds": 60, "slice_seconds": 2,
                                      "slices": [[1, 0, 1, 0, 1], [1, 1, 0, 1, 0]],
                                      "model_changes": [{"at": 30, "from": "gpt-4.1", "to": served}]}}}


def test_hostile_labels_tasks_and_models_render_as_text(ccs, tmp_path):
    runs = Path(os.environ["CCS_HOME"]) / "state" / "runs"
    runs.mkdir(parents=True)
    labels = HOSTILE[:3] + [HOSTILE[3], HOSTILE[4]]
    task = '"><svg onload=alert(3)>'
    n = 0
    for label, served in zip(labels, reversed(HOSTILE), strict=True):
        for rerun in (0, 1):
            n += 1
            lid = f"20260101T0000{n:02d}Z-000000{n:02d}"
            routing = {task: {"requests": 1, "tokens": 5, "retries": 0, "auth_failures": 0, "rate_limited": 1,
                              "errors": 0, "models_served": {served: 1}}}
            m = _manifest(lid, label, served, {task: float(rerun), "plain": 1.0}, routing)
            (runs / f"{lid}.json").write_text(json.dumps(m))
    board = tmp_path / "board.html"
    r = ccs("runs", "report", "--rounds", *labels, "--html", str(board))
    assert r.returncode == 0, r.stderr
    page_text = board.read_text()
    assert "<script" not in page_text and "<img" not in page_text and "<svg onload" not in page_text
    assert "\u202e" not in page_text and "\x1b" not in page_text and "\x07" not in page_text

    from browser import page_of

    with page_of(board) as (page, requests, dialogs):
        assert page.locator("script").count() == 0 and page.locator("img").count() == 0
        assert page.locator("svg[onload]").count() == 0
        body = page.locator("body").inner_text()
        for shown in ('<script>alert("label")</script>', "<img src=x onerror=alert(2)>", '"quoted" & \'single\'',
                      "bidi \\u202egnp.exe\\u202c ctrl \\x1b[31mred\\x07", task):
            assert shown in body, shown
        assert "L" * 4000 not in body and "long-" + "L" * 100 in body  # cut, not dropped
        # The long label wraps or scrolls inside its table: the page itself is no wider than the window.
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        title = page.locator("#rounds-table tbody th").first.inner_text()
        assert title == '<script>alert("label")</script>'
        assert requests == [board.resolve().as_uri()] and dialogs == []


def test_board_needs_rounds_and_a_writable_file(ccs, tmp_path):
    runs = Path(os.environ["CCS_HOME"]) / "state" / "runs"
    runs.mkdir(parents=True)
    m = _manifest("20260101T000001Z-00000001", "L", "gpt-4.1", {"a": 1.0}, {})
    (runs / "20260101T000001Z-00000001.json").write_text(json.dumps(m))
    r = ccs("runs", "report", "--label", "L", "--html", str(tmp_path / "b.html"))
    assert r.returncode == 2 and "--rounds" in r.stderr and "Traceback" not in r.stderr
    r = ccs("runs", "report", "--rounds", "L", "--html", str(tmp_path / "no" / "such" / "b.html"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--html" in r.stderr
    r = ccs("runs", "report", "--rounds", "L", "--html", "-")
    assert r.returncode == 0 and r.stdout.startswith("<!DOCTYPE html>") and "Content-Security-Policy" in r.stdout
    r = ccs("runs", "report", "--rounds", "L", "--html", str(tmp_path / "b.html"), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["rounds"][0]["round"] == "L"
    assert (tmp_path / "b.html").stat().st_mode & 0o777 == 0o600


def test_rounds_take_any_list_of_manifests():
    """Manifests that did not come from this machine's state (imported ones): inline outcomes, no paths."""
    ms = [_manifest(f"20260101T00000{i}Z-0000000{i}", "L", "gpt-4.1", {"a": float(i % 2), "b": 1.0}, {})
          for i in (1, 2)]
    (row,) = rounds_table(["L"], list(reversed(ms)))["rounds"]
    assert (row["k"], row["flips"], row["gap"]) == (2, 1, 25.0)
    assert [t["task"] for t in row["matrix"]["tasks"]] == ["a", "b"]


@pytest.mark.parametrize("width", [80, 100])
def test_the_rounds_table_fits_the_terminal(ccs, width):
    runs = Path(os.environ["CCS_HOME"]) / "state" / "runs"
    runs.mkdir(parents=True)
    label = "a-very-long-round-label-that-would-not-fit-" * 3
    for i in (1, 2):
        lid = f"20260101T00000{i}Z-0000000{i}"
        (runs / f"{lid}.json").write_text(json.dumps(_manifest(lid, label, "gpt-4.1", {"a": 1.0}, {})))
    r = ccs("runs", "report", "--rounds", label, env={**os.environ, "COLUMNS": str(width)})
    assert r.returncode == 0, r.stderr
    assert max(len(x) for x in r.stdout.splitlines()) <= width
    assert r.stdout.splitlines()[1].startswith("a-very-long") and "…" in r.stdout.splitlines()[1]


def test_a_full_disk_keeps_the_summary_without_its_per_task_counts(ccs_home, monkeypatch):
    """The closing write on a full disk goes into the room reserved at launch; a summary whose per-task
    counts do not fit there is kept without them. (The full disk is simulated here: the real one, a
    tmpfs filled by the child, is in test_bad_input_one_line.)"""
    import errno

    from ccswitch_tui.launch import launcher
    from ccswitch_tui.runs.inplace import reserve
    from ccswitch_tui.runs.manifests import manifest_path, write_manifest

    lid = "20260101T000000Z-0000000f"
    start = {"launch_id": lid, "profile": "p", "tool": "run", "started": "2026-01-01T00:00:00Z"}
    reserve(write_manifest(ccs_home, start))
    by_task = {f"task-{n}": {"requests": 1, "tokens": 5, "retries": 0, "auth_failures": 0, "rate_limited": 0,
                             "errors": 0, "models_served": {"gpt-4.1": 1}} for n in range(100)}
    summary = {"requests": 100, "by_status": {"200": 100}, "by_task": by_task, "tasks_left_out": 0,
               "timeline": {"slices": [[1, 0, 0, 0, 0]] * 48}}

    def full(*_a: object, **_k: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(launcher, "write_manifest", full)
    launcher.close_manifest(ccs_home, {**start, "ended": "2026-01-01T00:01:00Z", "exit_status": 3,
                                       "requests": summary})
    got = json.loads(manifest_path(ccs_home, lid).read_text())
    assert got["exit_status"] == 3 and got["requests"] == {"requests": 100, "by_status": {"200": 100}}

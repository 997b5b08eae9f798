"""The consistency table: outcomes in (--outcomes, `ccs runs attach`), the scores per round (checked on
the 77.4 / 53.0 / 24.4 example), and the worked example of docs/reruns.md end to end: three rounds of three
reruns of an openai-SDK agent through `ccs run --record` against loopback providers."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
from provider_stub import ProviderStub

from ccswitch_tui.runs.rounds import gap_points, scores

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-rounds-first-0123456789abcdef"
ROTATED = "sk-rounds-rotated-0123456789abcdef"


def example_agent() -> str:
    """The agent of the worked example, as docs/reruns.md shows it."""
    text = (ROOT / "docs" / "reruns.md").read_text()
    match = re.search(r"```python\n(# agent\.py.*?)```", text, re.S)
    assert match, "docs/reruns.md's worked example has no agent.py block"
    return match.group(1)


# --- the formula ------------------------------------------------------------------------------------

def test_the_gap_on_the_published_example():
    """A GPT-4.1 ReAct agent on AppWorld test_normal, k = 5: 77.4 % mean success, 53.0 % of the tasks
    solved in all five runs: a 24.4-point gap. Built here as 1000 tasks × 5 runs with those shares."""
    assert gap_points(0.774, 0.530) == 24.4
    n, k = 1000, 5
    # 530 tasks solved in all five runs (2650 task-runs); 305 in four (1220): 3870 of 5000 = 77.4 %.
    solved_in = [5] * 530 + [4] * 305 + [0] * 165
    runs = [{f"t{t}": 1.0 if r < solved_in[t] else 0.0 for t in range(n)} for r in range(k)]
    s = scores(runs)
    assert (round(s["pass_at_1"] * 100, 1), round(s["pass_hat_k"] * 100, 1), s["gap"]) == (77.4, 53.0, 24.4)
    assert s["tasks"] == n and round(s["pass_at_k"] * 100, 1) == 83.5
    # A task a run has no result for counts as not solved in that run.
    assert scores([{"a": 1.0, "b": 1.0}, {"a": 1.0}])["pass_hat_k"] == 0.5


# --- outcomes in ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,content", [
    ("r.jsonl", '{"task_id": "a", "success": true}\n{"task_id": "b", "success": false}\n'),
    ("r.json", '[{"task": "a", "passed": 1}, {"task": "b", "passed": 0}]'),
    ("r.json", '{"a": "pass", "b": "fail"}'),
    ("r.csv", "id,score\na,1.0\nb,0.25\n"),
    ("r.csv", "name,ok\na,yes\nb,no\n"),  # named with --success-column ok
    ("r.csv", "\ufefftask_id,success\r\na,1\r\nb,0\r\n"),  # Excel's "CSV UTF-8": a BOM, CRLF (it was rejected)
    ("r.jsonl", '\ufeff{"task_id": "a", "success": true}\n{"task_id": "b", "success": false}\n'),
])
def test_outcomes_files(ccs, tmp_path, name, content):
    runs = Path(os.environ["CCS_HOME"]) / "state" / "runs"
    runs.mkdir(parents=True)
    lid = "20260101T000000Z-aaaaaaaa"
    m = {"launch_id": lid, "profile": "p", "tool": "run", "started": "x", "ended": "y", "exit_status": 0}
    (runs / f"{lid}.json").write_text(json.dumps(m))
    f = tmp_path / name
    f.write_text(content, newline="")
    extra = ["--success-column", "ok"] if "ok" in content else []
    r = ccs("runs", "attach", lid[:12], str(f), *extra)
    assert r.returncode == 0, r.stderr
    got = json.loads((runs / f"{lid}.json").read_text())
    # The results live beside the manifest (their size never hides the run); the manifest names the file.
    assert "results" not in got["outcomes"] and got["outcomes"]["results_file"] == f"{lid}.outcomes.jsonl"
    lines = (runs / f"{lid}.outcomes.jsonl").read_text().splitlines()
    results = {t: s for line in lines for t, s in json.loads(line).items()}
    assert results["a"] == 1.0 and results["b"] < 1.0
    assert got["outcomes"]["tasks"] == 2 and got["outcomes"]["passed"] == 1
    assert {k: v for k, v in got.items() if k != "outcomes"} == m  # nothing else of the manifest changed


@pytest.mark.parametrize("name,content,where", [
    ("r.jsonl", '{"task_id": "a", "success": true}\n{"task_id": "b", "success": "maybe"}\n', "row 2"),
    ("r.jsonl", '{"task_id": "a", "success": true}\n{broken\n', "row 2"),
    ("r.csv", "task_id,success\na,true\na,false\n", "row 3"),
    ("r.csv", "task_id,verdict\na,true\n", "row 2"),
    ("r.json", '{"results": 5}', "r.json"),
    ("r.jsonl", "[" * 100_000, "row 1"),
    ("r.jsonl", '{"task_id": "a", "success": 7}\n', "row 1"),
], ids=["bad-flag", "bad-json", "twice", "no-column", "not-rows", "deep", "score-range"])
def test_bad_outcomes_are_one_line_and_the_run_is_kept(ccs, base_env, tmp_path, name, content, where):
    env = {**base_env, "OUT_KEY": KEY}
    assert ccs("new", "p", "--base-url", "http://127.0.0.1:9/v1", "--key", "env:OUT_KEY", env=env).returncode == 0
    f = tmp_path / name
    f.write_text(content)
    r = ccs("run", "--outcomes", str(f), "p", "--", "sh", "-c", "exit 4", env=env)
    assert r.returncode == 4  # the child's status, whatever the outcomes file holds
    (line,) = r.stderr.strip().splitlines()
    assert str(f) in line and where in line and "Traceback" not in line
    (m,) = json.loads(ccs("runs", "--json", env=env).stdout)["runs"]
    assert m["exit_status"] == 4 and "outcomes" not in m
    r = ccs("runs", "attach", m["launch_id"], str(f), env=env)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and str(f) in r.stderr


# --- the worked example of docs/reruns.md, end to end ---------------------------------------------------

@pytest.mark.usefixtures("secret_service")
def test_the_worked_example(ccs, base_env, key_id, tmp_path):
    first, second = ProviderStub(), ProviderStub()
    try:
        env = base_env
        agent = tmp_path / "agent.py"
        agent.write_text(example_agent())
        assert ccs("new", "gw", "--base-url", first.url + "/v1", "--key", key_id, env=env).returncode == 0
        assert ccs("new", "gw-b", "--base-url", second.url + "/v1", "--key", key_id, env=env).returncode == 0
        assert ccs("key", "set", key_id, input=KEY, env=env).returncode == 0

        def rerun(label: str, i: int, profile: str = "gw") -> None:
            out = tmp_path / f"out-{label}-{i}.jsonl"
            r = ccs("run", "--record", "--label", label, "--outcomes", str(out), profile, "--",
                    sys.executable, str(agent), str(out), str(i), env=env, cwd=tmp_path, timeout=120)
            assert r.returncode == 0, r.stderr

        for i in (1, 2, 3):
            rerun("baseline", i)
        for i in (1, 2, 3):
            if i == 2:  # the key rotated between reruns
                assert ccs("key", "set", key_id, input=ROTATED, env=env).returncode == 0
            rerun("rotated", i)
        for i in (1, 2, 3):
            rerun("second-url", i, "gw-b" if i == 3 else "gw")
        assert len(first.posts()) == 8 * 8 and len(second.posts()) == 8

        data = json.loads(ccs("runs", "report", "--rounds", "baseline", "rotated", "second-url", "--json",
                              env=env).stdout)
        base, rotated, second_url = data["rounds"]
        # The agent's draws (the same three reruns in every round): 6, 7 and 6 of 8 tasks solved, 3 in all
        # three, all 8 in at least one.
        for row in data["rounds"]:
            assert (row["k"], row["tasks"]) == (3, 8)
            assert (row["pass_at_1"], row["pass_hat_k"], row["pass_at_k"], row["gap"]) == (79.2, 37.5, 100.0, 41.7)
            assert row["models_requested"] == row["models_served"] == ["gpt-4.1"]
            assert row["peak_concurrency"] >= 2 and row["tokens_per_task"] > 0 and row["requests"] == 24
            assert row["auth_failures"] == 0 and row["rate_limited"] == 0
        assert base["comparable"] and base["verdict"] == "clean: the gap is the agent's"
        assert base["base_urls"] == [first.url + "/v1"] and base["key_strategy"].startswith("fixed: fp:")
        assert not rotated["comparable"] and rotated["key_strategy"] == "rotated: 2"
        assert rotated["verdict"].startswith("not comparable: key rotated (2 fingerprints)")
        assert rotated["drifted"] == ["key_fingerprint"]
        assert not second_url["comparable"] and second_url["base_urls"] == sorted([first.url + "/v1",
                                                                                   second.url + "/v1"])
        assert first.url + "/v1" in second_url["verdict"] and second.url + "/v1" in second_url["verdict"]

        # The other outputs say the same.
        r = ccs("runs", "report", "--rounds", "baseline", "rotated", "second-url", env=env)
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert lines[0].split()[:7] == ["ROUND", "K", "TASKS", "PASS@1", "PASS^K", "PASS@K", "GAP"]
        assert lines[1].split()[:8] == ["baseline", "3", "8", "79.2%", "37.5%", "100.0%", "41.7", "pp"]
        assert lines[1].endswith("clean") and lines[2].endswith("NOT COMPARABLE")
        assert "baseline: clean: the gap is the agent's" in lines
        md = ccs("runs", "report", "--rounds", "baseline", "rotated", "second-url", "--md", env=env).stdout
        assert md.startswith("| ROUND | K | TASKS | PASS@1 |") and "| 41.7 pp |" in md
        assert "| clean: the gap is the agent's |" in md and "rotated: 2" in md
        csv_lines = ccs("runs", "report", "--rounds", "baseline", "rotated", "--csv", env=env).stdout.splitlines()
        assert csv_lines[0].startswith("round,k,tasks,pass_at_1") and csv_lines[1].startswith("baseline,3,8,79.2%")
        r = ccs("runs", "report", "--rounds", "baseline", "nope", env=env)
        assert r.returncode == 2 and "'nope'" in r.stderr

        # The agent tags each request with its task: per-task routing, and the upstream never sees the header.
        assert all("x-ccs-task" not in {k.lower() for k in s.headers} for s in (*first.seen, *second.seen))
        assert {s.body["messages"][0]["content"] for s in first.seen} == {f"solve task-{n}" for n in range(1, 9)}
        for row in data["rounds"]:
            m = row["matrix"]
            assert m["tagged_tasks"] == 8 and m["tagged_without_result"] == 0 and m["flips"] == row["flips"] == 5
            for task in m["tasks"]:
                assert [rt["requests"] for rt in task["routing"]] == [1, 1, 1]
                assert all(rt["models_served"] == ["gpt-4.1"] and rt["tokens"] > 0 for rt in task["routing"])
            assert [t["requests"] for t in row["timelines"]] == [8, 8, 8]
        # What changed between consecutive rounds: the key (rotated within the second round), then the base
        # URL and the key again (the third round runs on the rotated key): two variables, a warning.
        assert base["changed_since"] is None and rotated["changed_since"] == "baseline"
        assert "key" in [c["field"] for c in rotated["changed"]]
        assert {"base_urls", "key"} <= {c["field"] for c in second_url["changed"]}
        assert second_url["changed_warning"].startswith(f"{len(second_url['changed'])} variables changed since "
                                                        "rotated")
        assert [c for c in second_url["changed"] if c["field"] == "command"] == []  # the reruns' own args vary

        # At 80 columns the table does not wrap; the changed line and the warning follow it.
        r = ccs("runs", "report", "--rounds", "baseline", "rotated", "second-url", env={**env, "COLUMNS": "80"})
        lines = r.stdout.splitlines()
        assert max(map(len, lines)) <= 80, lines
        assert lines[0].split() == ["ROUND", "K", "TASKS", "PASS@1", "PASS^K", "PASS@K", "GAP", "FLIPS", "VERDICT"]
        assert lines[1].split() == ["baseline", "3", "8", "79.2%", "37.5%", "100.0%", "41.7", "pp", "5", "clean"]
        assert any(x.startswith("second-url: warning: ") for x in lines)
        assert any(x.startswith("rotated: changed since baseline: key ") for x in lines)
        wide = ccs("runs", "report", "--rounds", "baseline", "rotated", "second-url", "--wide", env=env).stdout
        assert "BASE URLS" in wide.splitlines()[0] and first.url + "/v1" in wide

        board = tmp_path / "board.html"
        r = ccs("runs", "report", "--rounds", "baseline", "rotated", "second-url", "--html", str(board), env=env)
        assert r.returncode == 0 and str(board) in r.stderr and r.stdout == ""
        check_board(board, data)
    finally:
        first.close()
        second.close()


def check_board(board: Path, data: dict) -> None:
    """What a person sees on the board, in a real browser: the gap's bars and values in the rounds'
    order, each round's matrix cell by cell (flipped tasks first, pass^k's marked), the changed-variables
    warnings, a flipped task's link to its requests, and no request beyond the file itself."""
    from browser import page_of

    rounds = data["rounds"]
    with page_of(board) as (page, requests, dialogs):
        assert page.title().startswith("Consistency board: baseline, rotated, second-url")
        bars = page.locator("#gap-chart rect.bar.gap[data-round]")
        assert [bars.nth(i).get_attribute("data-round") for i in range(bars.count())] == [r["round"] for r in rounds]
        heights = [bars.nth(i).bounding_box()["height"] for i in range(bars.count())]
        for h, r in zip(heights, rounds, strict=True):  # 200 px stand for 100 points
            assert abs(h - r["gap"] * 2) < 1, (h, r["gap"])
        labels = page.locator("#gap-chart text.gap-value").all_text_contents()
        assert labels == [f"{r['gap']:.1f}" for r in rounds]
        assert page.locator("#rounds-table .badge.clean").count() == 1
        assert page.locator("#rounds-table .badge.drift").count() == 2
        for i, r in enumerate(rounds):
            rows = page.locator(f"#matrix-{i} tbody tr")  # the matrix's columns of rows, in order
            assert rows.count() == len(r["matrix"]["tasks"]) == 8
            for j, task in enumerate(r["matrix"]["tasks"]):
                row = rows.nth(j)
                assert row.locator("th").inner_text().startswith(task["task"])
                shown = row.locator("td").all_inner_texts()
                assert shown == ["–" if s is None else "✓" if s >= 1 else "✗" for s in task["results"]]
                assert ("★" in row.locator("th").inner_text()) == task["every"]
                assert (row.get_attribute("class") == "flipped") == task["flipped"]
            flips = [t["flipped"] for t in r["matrix"]["tasks"]]
            assert flips == sorted(flips, reverse=True)  # flipped first
            # A flipped task links to what its requests went through.
            link = rows.nth(0).locator("a")
            target = link.get_attribute("href")
            link.click()
            box = page.locator(target).bounding_box()
            assert page.url.endswith(target) and -1 < box["y"] < 900  # scrolled to it (to a fraction of a pixel)
            first_rerun = page.locator(target).locator("td").nth(0).inner_text()
            first = r["matrix"]["tasks"][0]
            assert first_rerun.startswith(f"{'✓' if first['results'][0] else '✗'} 1 req · ")  # one request, its tokens
            assert first_rerun.endswith("gpt-4.1")
        warnings = page.locator(".changed-warning")
        expected = [r["changed_warning"] for r in rounds if r.get("changed_warning")]
        assert warnings.count() == len(expected) >= 1
        assert [w.strip("⚠ ") for w in warnings.all_inner_texts()] == expected
        assert all(w.is_visible() for w in warnings.all())
        assert page.locator("svg.timeline").count() == 9
        assert page.locator("script").count() == 0
        assert requests == [board.resolve().as_uri()] and dialogs == []


def test_tui_runs_tab_groups_rounds(ccs_home, tmp_path):
    """The Runs tab keeps the runs of a round together, compares each with the first of its round (as
    `ccs runs report --label` does) and shows the round's row of the consistency table."""
    from ccswitch_tui.keys.keyring import KeyStore
    from ccswitch_tui.profiles.store import Store
    from ccswitch_tui.runs.manifests import write_manifest
    from ccswitch_tui.tui import render
    from ccswitch_tui.tui.service import Service

    def m(lid: str, started: str, label: str | None, fp: str = "fp:1", results: dict | None = None) -> dict:
        out = {"launch_id": lid, "profile": "p", "tool": "run", "started": started, "ended": started,
               "exit_status": 0, "base_urls": {"OPENAI_BASE_URL": "https://a/v1"}, "models": {},
               "key_id": "k", "key_fingerprint": fp, "env_hash": "sha256:1"}
        if label:
            out["label"] = label
        if results is not None:
            out["outcomes"] = {"results": results}
        return out

    write_manifest(ccs_home, m("a1", "2026-01-01T00:00:01Z", "base", results={"t1": 1, "t2": 1}))
    write_manifest(ccs_home, m("x1", "2026-01-01T00:00:02Z", None))
    write_manifest(ccs_home, m("a2", "2026-01-01T00:00:03Z", "base", results={"t1": 1, "t2": 0}))
    write_manifest(ccs_home, m("b1", "2026-01-01T00:00:04Z", "rot", results={"t1": 1}))
    write_manifest(ccs_home, m("a3", "2026-01-01T00:00:05Z", "base", results={"t1": 1, "t2": 1}))
    write_manifest(ccs_home, m("b2", "2026-01-01T00:00:06Z", "rot", fp="fp:2", results={"t1": 0}))
    service = Service(ccs_home, Store(ccs_home), KeyStore(ccs_home, {}), {}, tmp_path)
    rows = service.runs("p")
    assert [r.manifest["launch_id"] for r in rows] == ["b2", "b1", "a3", "a2", "a1", "x1"]
    assert [r.against for r in rows] == ["b1", None, "a1", "a1", None, "a1"]  # x1: the previous run of its tool
    assert rows[0].drifted == ("key_fingerprint",) and rows[2].drifted == ()
    base = render.round_line(rows[2].round).plain
    assert "k=3" in base and "pass@1 83.3%" in base and "gap 33.3 pp" in base and "clean: the gap" in base
    assert "not comparable: key rotated (2 fingerprints)" in render.round_line(rows[0].round).plain
    assert rows[5].round is None


def test_a_round_with_auth_failures_or_other_task_sets(ccs):
    """A rerun whose requests the provider refused (401) makes the round not comparable; reruns that scored
    different task sets are noted."""
    runs = Path(os.environ["CCS_HOME"]) / "state" / "runs"
    runs.mkdir(parents=True)

    def put(lid: str, status: str, results: dict) -> None:
        outcome = "ok" if status == "200" else "upstream-error"
        m = {"launch_id": lid, "profile": "p", "tool": "run", "started": lid, "ended": lid, "exit_status": 0,
             "base_urls": {"OPENAI_BASE_URL": "https://a/v1"}, "models": {}, "key_id": "k", "key_fingerprint": "fp:1",
             "env_hash": "sha256:1", "label": "r", "outcomes": {"results": results},
             "requests": {"requests": 2, "by_path": {"POST /chat/completions": 2}, "by_status": {status: 2},
                          "by_outcome": {outcome: 2}, "endpoints": {"https://a/v1/chat/completions": 2},
                          "models_requested": {"m": 2}, "models_served": {"m": 2} if status == "200" else {},
                          "tokens": {}, "errors": 0 if status == "200" else 2, "max_concurrency": 1}}
        (runs / f"{lid}.json").write_text(json.dumps(m))

    put("20260101T000001Z-00000001", "200", {"a": 1, "b": 1})
    put("20260101T000002Z-00000002", "401", {"a": 0})
    (row,) = json.loads(ccs("runs", "report", "--rounds", "r", "--json").stdout)["rounds"]
    assert not row["comparable"] and row["auth_failures"] == 2
    assert "auth_failures (outcome) in 1 rerun(s): upstream-error x2, HTTP 401 x2" in row["verdict"]
    assert any("different task sets" in n for n in row["notes"])
    assert (row["tasks"], row["pass_at_1"], row["pass_hat_k"]) == (2, 50.0, 0.0)


def test_the_verdict_names_only_the_base_urls_requests_used():
    """A round whose reruns moved to another gateway exported both the OpenAI and the Anthropic base
    URL; the program called only the OpenAI one, and the verdict listed all four."""
    from ccswitch_tui.runs.rounds import round_row

    def manifest(n: int, host: str) -> dict:
        return {"launch_id": f"20261206T10000{n}Z-0000000{n}", "label": "r", "tool": "run", "profile": "p",
                "started": f"2026-12-06T10:00:0{n}Z", "ended": f"2026-12-06T10:01:0{n}Z", "exit_status": 0,
                "key_fingerprint": "fp:1", "models": {"CCS_MODEL": "gpt-4.1"},
                "base_urls": {"OPENAI_BASE_URL": f"http://{host}/v1", "ANTHROPIC_BASE_URL": f"http://{host}"},
                "requests": {"requests": 2, "endpoints": {f"http://{host}/v1/chat/completions": 2},
                             "by_path": {"/v1/chat/completions": 2}, "by_status": {"200": 2},
                             "models_requested": {"gpt-4.1": 2}, "models_served": {"gpt-4.1": 2}}}

    row = round_row("r", [manifest(1, "a.example"), manifest(2, "b.example")])
    assert not row["comparable"] and row["drifted"][0] == "base_urls"
    assert "base URLs http://a.example/v1, http://b.example/v1" in row["verdict"], row["verdict"]
    assert "http://a.example," not in row["verdict"] and "http://b.example " not in row["verdict"]

"""`ccs usage` over real recorded runs (an OpenAI-SDK program through the bridge to a loopback
provider), checked against sums made here from the provider's own log; and its bad input."""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from provider_stub import ProviderStub
from test_recording import KEY, SDK_PROGRAM

from ccswitch_tui.runs.usage import parse_since

PRICING = '\n[pricing."gpt-4.1"]\ninput = 2.0\noutput = 8.0\n'


@pytest.fixture
def provider():
    s = ProviderStub()
    yield s
    s.close()


def profile(ccs, env, name: str, url: str, key_id: str, extra: str = "") -> None:
    r = ccs("new", name, "--base-url", url, "--key", key_id, "--codex-model", "gpt-4.1", env=env)
    assert r.returncode == 0, r.stderr
    path = Path(os.environ["CCS_HOME"]) / "profiles" / f"{name}.toml"
    path.write_text(path.read_text() + extra)
    assert ccs("key", "set", key_id, input=KEY, env=env).returncode == 0


def expected(seen) -> dict:
    return {"requests": len(seen),
            "input_tokens": sum(s.usage["input"] for s in seen),
            "output_tokens": sum(s.usage["output"] for s in seen),
            "cached_tokens": sum(s.usage["cached"] for s in seen),
            "reasoning_tokens": sum(s.usage["reasoning"] for s in seen)}


def usage(ccs, env, *args: str) -> dict:
    r = ccs("usage", "--json", *args, env=env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def pick(row: dict) -> dict:
    return {k: row[k] for k in ("requests", "input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens")}


@pytest.mark.usefixtures("secret_service")
def test_usage_matches_the_providers_own_log(ccs, base_env, provider, key_id, tmp_path):
    program = tmp_path / "prog.py"
    program.write_text(SDK_PROGRAM)
    profile(ccs, base_env, "p", provider.url + "/v1", key_id, "\n[policy]\nrecord = true\n" + PRICING)
    profile(ccs, base_env, "q", provider.url + "/v1", key_id)
    slices = {}
    for name, args in (("p1", ("p",)), ("p2", ("--label", "exp", "p")), ("q1", ("--record", "q"))):
        before = len(provider.posts())
        count = "8" if name != "q1" else "4"
        r = ccs("run", *args, "--", sys.executable, str(program), str(tmp_path / f"{name}.json"), count,
                env=base_env, timeout=120)
        assert r.returncode == 0, r.stderr
        slices[name] = provider.posts()[before:]
    r = ccs("run", "--no-record", "p", "--", "true", env=base_env)  # a run with no records
    assert r.returncode == 0, r.stderr

    data = usage(ccs, base_env)
    rows = {row["key"]: row for row in data["rows"]}
    p_seen, q_seen = slices["p1"] + slices["p2"], slices["q1"]
    assert pick(rows["p"]) == expected(p_seen) and rows["p"]["runs"] == 2 and rows["p"]["errors"] == 0
    assert pick(rows["q"]) == expected(q_seen) and rows["q"]["runs"] == 1
    assert pick(data["totals"]) == expected(p_seen + q_seen)
    # cost only where the profile prices the model; never a guess for the other
    cost = sum(s.usage["input"] * 2.0 + s.usage["output"] * 8.0 for s in p_seen) / 1_000_000
    assert rows["p"]["cost"] == pytest.approx(cost, abs=1e-6) and rows["q"]["cost"] is None
    (missing,) = data["not_recorded"]
    assert missing["profile"] == "p" and missing["tool"] == "run"

    by_label = {row["key"]: row for row in usage(ccs, base_env, "--by", "label")["rows"]}
    assert pick(by_label["exp"]) == expected(slices["p2"])
    assert pick(by_label["-"]) == expected(slices["p1"] + slices["q1"])
    (model_row,) = usage(ccs, base_env, "--by", "model", "--profile", "q")["rows"]
    assert model_row["key"] == "gpt-4.1" and pick(model_row) == expected(q_seen)
    today = datetime.now(timezone.utc).date().isoformat()
    (day_row,) = usage(ccs, base_env, "--by", "day", "--since", "1d")["rows"]
    assert day_row["key"] == today and day_row["requests"] == len(p_seen + q_seen)
    assert usage(ccs, base_env, "--since", "2999-01-01")["rows"] == []

    text = ccs("usage", env=base_env)
    assert text.returncode == 0 and "COST" in text.stdout.splitlines()[0]
    assert "not recorded, so not counted: 1 run(s) (p: 1)" in text.stdout
    q_line = next(line for line in text.stdout.splitlines() if line.startswith("q "))
    assert q_line.split()[-1] == "-"
    csv = ccs("usage", "--csv", "--profile", "q", env=base_env)
    header, row = csv.stdout.splitlines()
    assert header == "profile,runs,requests,input_tokens,output_tokens,cached_tokens,reasoning_tokens,errors"
    assert row.split(",")[2] == str(len(q_seen))


def fake_run(runs: Path, launch_id: str, records: str | None) -> None:
    manifest = {"launch_id": launch_id, "profile": "p", "tool": "run", "started": "2026-01-02T00:00:00.000000Z",
                "ended": "2026-01-02T00:01:00.000000Z", "exit_status": 0}
    if records is not None:
        manifest["recording"] = {"records": records}
    (runs / f"{launch_id}.json").write_text(json.dumps(manifest))


def test_damaged_huge_and_odd_records_files_are_one_line_each(ccs, base_env, ccs_home):
    runs = ccs_home.runs
    runs.mkdir(parents=True)
    good = {"id": 1, "started": "2026-01-02T00:00:01Z", "outcome": "ok", "model_served": "m", "input_tokens": 7,
            "output_tokens": 3, "cached_tokens": None, "a_field_from_a_newer_version": {"x": 1}}
    fake_run(runs, "good", "good.requests.jsonl")
    (runs / "good.requests.jsonl").write_text(
        json.dumps(good) + "\n" + "{not json\n" + json.dumps({**good, "input_tokens": "7", "outcome": "refused"})
        + "\n" + "[" * 100000 + "\n" + json.dumps(good)[:20])  # the last line is still being written
    fake_run(runs, "fifo", "fifo.requests.jsonl")
    os.mkfifo(runs / "fifo.requests.jsonl")
    fake_run(runs, "huge", "huge.requests.jsonl")
    with open(runs / "huge.requests.jsonl", "wb") as f:
        f.truncate(300 * 1024 * 1024)  # sparse: costs no disk
    fake_run(runs, "gone", "gone.requests.jsonl")
    r = ccs("usage", "--json", env=base_env, timeout=60)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    (row,) = data["rows"]
    assert (row["requests"], row["input_tokens"], row["output_tokens"], row["errors"]) == (2, 7, 6, 1)
    notes = data["notes"]
    assert len(notes) == 4, notes
    assert any("good.requests.jsonl: 2 damaged line(s)" in n for n in notes)
    assert any("fifo.requests.jsonl" in n and "FIFO" in n for n in notes)
    assert any("huge.requests.jsonl" in n and "limit" in n for n in notes)
    assert any("gone.requests.jsonl" in n and "missing" in n for n in notes)
    text = ccs("usage", env=base_env, timeout=60)
    assert text.returncode == 0 and "Traceback" not in text.stderr
    assert sum(line.startswith("note: ") for line in text.stdout.splitlines()) == 4


def test_bad_pricing_and_bad_dates_are_one_line(ccs, base_env):
    r = ccs("new", "p", "--base-url", "http://127.0.0.1:9", "--key", "env:PK", "--codex-model", "m", env=base_env)
    assert r.returncode == 0, r.stderr
    path = Path(os.environ["CCS_HOME"]) / "profiles" / "p.toml"
    original = path.read_text()
    for extra, place in (('[pricing."m"]\ninput = "two"\noutput = 1\n', '[pricing."m"].input'),
                         ('[pricing."m"]\ninput = 1\n', '[pricing."m"].output'),
                         ('[pricing."m"]\ninput = 1\noutput = -1\n', '[pricing."m"].output'),
                         ('[pricing."m"]\ninput = 1\noutput = 2\nwhole = 3\n', '[pricing."m"].whole'),
                         ('[pricing]\nm = 3\n', '[pricing."m"]')):
        path.write_text(original + "\n" + extra)
        r = ccs("show", "p", env=base_env)
        assert r.returncode == 2 and place in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert path.read_text() == original + "\n" + extra  # nothing rewritten
    path.write_text(original + '\n[pricing."m"]\ninput = 1\noutput = 2.5\n')
    assert ccs("show", "p", env=base_env).returncode == 0
    r = ccs("usage", "--since", "last tuesday", env=base_env)
    assert r.returncode == 2 and "is not a date" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_since_forms():
    today = datetime(2026, 3, 10, tzinfo=timezone.utc).date()
    assert parse_since("7d", today) == "2026-03-04T00:00:00"
    assert parse_since("2026-03-01") == "2026-03-01T00:00:00"
    assert parse_since("2026-03-01T12:00:00+02:00") == "2026-03-01T10:00:00"


def summarized_run(runs: Path, launch_id: str, records: list[dict], summary: bool, started: str) -> None:
    """A recorded run that has ended with the bridge's own summary in its manifest (``summary``), or one
    still going (no summary yet), its records beside it."""
    from ccswitch_tui.bridge.records import summarize

    (runs / f"{launch_id}.requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    manifest = {"launch_id": launch_id, "profile": "p", "tool": "run", "started": started,
                "ended": None, "exit_status": None, "recording": {"records": f"{launch_id}.requests.jsonl"}}
    if summary:
        manifest |= {"ended": "2026-01-09T00:00:00.000000Z", "exit_status": 0, "requests": summarize(records)}
    (runs / f"{launch_id}.json").write_text(json.dumps(manifest))


RECORDS = [
    {"started": "2026-01-02T10:00:00.000000Z", "outcome": "ok", "model_served": "m-a", "input_tokens": 7,
     "output_tokens": 3, "cached_tokens": 1, "reasoning_tokens": 0},
    {"started": "2026-01-03T09:00:00.000000Z", "outcome": "upstream_error", "model_requested": "m-b",
     "input_tokens": -5, "output_tokens": 10**13},  # implausible counts: counted as such, never summed
    {"outcome": "ok", "model_served": "m-a", "input_tokens": 2, "output_tokens": True},  # no start: the run's
    {"started": "2026-01-03T23:59:59.000000Z", "outcome": "ok", "model_served": "\x1b[31mm-c", "input_tokens": 4,
     "output_tokens": 5, "cached_tokens": "x"},
]


@pytest.mark.parametrize("args", [(), ("--by", "model"), ("--by", "day"), ("--by", "label"),
                                  ("--since", "2026-01-03"), ("--since", "2026-01-03T09:00:00"),
                                  ("--since", "2026-01-03T09:30:00"), ("--by", "day", "--since", "2026-01-02")])
def test_an_ended_run_is_summed_from_its_summary_as_its_records_would_be(ccs, base_env, ccs_home, args):
    """The same requests give the same answer whether the run has ended (its manifest's cells) or is
    still going (its records read): every grouping, and --since before, at and inside the run."""
    answers = []
    for summary in (False, True):
        runs = ccs_home.runs
        runs.mkdir(parents=True, exist_ok=True)
        for f in runs.iterdir():
            f.unlink()
        summarized_run(runs, "r1", RECORDS, summary, "2026-01-02T09:00:00.000000Z")
        summarized_run(runs, "r2", RECORDS[:2], summary, "2026-01-03T08:00:00.000000Z")
        answers.append(usage(ccs, base_env, *args))
    streamed, summed = answers
    assert summed == streamed and streamed["rows"], streamed
    assert streamed["totals"]["implausible_tokens"] >= 1 or "--since" in args


def test_an_ended_run_does_not_read_its_records(ccs, base_env, ccs_home):
    """Its records are not read (a records file taken away after the run does not change the answer,
    nor leave a note), while a run still going is read."""
    runs = ccs_home.runs
    runs.mkdir(parents=True)
    summarized_run(runs, "ended", RECORDS, True, "2026-01-02T09:00:00.000000Z")
    summarized_run(runs, "going", RECORDS[:1], False, "2026-01-02T09:00:00.000000Z")
    before = usage(ccs, base_env)
    (runs / "ended.requests.jsonl").unlink()
    after = usage(ccs, base_env)
    assert after == before and after["notes"] == [] and after["totals"]["requests"] == len(RECORDS) + 1
    (runs / "going.requests.jsonl").unlink()
    assert any("going.requests.jsonl" in n and "missing" in n for n in usage(ccs, base_env)["notes"])

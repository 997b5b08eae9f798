"""`ccs runs report --rounds` and the consistency board (`--html`) at the seed's size: 6 rounds × 5 reruns
× 100 tasks × 15,000 recorded requests per run (450,000 records), against the same rounds with 15
requests per run.

    .venv/bin/python benchmarks/bench_rounds.py [--runs 5] [--requests 15000]

Each run has a manifest with its request summary (as a finished recorded run has, made by the
bridge's own ``summarize``: per task and over time too) and its records file beside it, each request
tagged with one of 100 tasks (``X-CCS-Task``), with outcomes for the 100 tasks that flip between
reruns. The report must answer from the summaries: its wall time and peak memory must not grow with
the number of records. A second pass leaves the summaries out of the manifests (as for runs still
going), so the records are streamed: memory still must not grow, time does. The board's target: at
most 2 s and 2 MB for the full size, from summaries. Nothing is asserted; the table is the result.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ccswitch_tui.bridge.records import summarize  # noqa: E402

ROUNDS = ("baseline", "taotoken", "analyzer", "guidelines", "key-drift", "url-drift")
K = 5
TASKS = 100


def record(i: int, base: str, requests: int) -> dict:
    second = i * 3600 // max(requests, 1)  # the run's requests spread over an hour
    started = f"2026-12-04T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}.000000Z"
    return {"id": f"r{i}", "started": started, "method": "POST", "route": "openai", "task": f"t{i % TASKS}",
            "path": "/chat/completions", "upstream_url": f"{base}/chat/completions", "key_fingerprint": "fp:aaaa",
            "model_requested": "gpt-4.1", "model_served": "gpt-4.1-2025-04-14", "stream": True, "status": 200,
            "upstream_status": 200, "outcome": "ok", "error": None, "ttfb_ms": 312, "duration_ms": 2210,
            "in_flight": i % 8, "retry_of": 1 if i % 500 == 7 else None, "input_tokens": 1800 + i % 700,
            "output_tokens": 120 + i % 90,
            "cached_tokens": 0, "reasoning_tokens": 0, "usage_source": "reported", "request_bytes": 9000,
            "response_bytes": 2400, "provider_headers": {"x-request-id": f"req_{i}"}}


def make_home(root: Path, requests: int, with_summary: bool) -> None:
    runs = root / "state" / "runs"
    runs.mkdir(parents=True)
    rng = random.Random(7)
    for r, label in enumerate(ROUNDS):
        for k in range(K):
            lid = f"20261204T{r:02d}{k:02d}00Z-{r:04d}{k:04d}"
            base = "https://gw-b.example/v1" if label == "url-drift" and k == K - 1 else "https://gw.example/v1"
            fp = "fp:bbbb" if label == "key-drift" and k >= 2 else "fp:aaaa"
            recs = [record(i, base, requests) for i in range(requests)]
            with open(runs / f"{lid}.requests.jsonl", "w") as f:
                f.writelines(json.dumps(x, separators=(",", ":")) + "\n" for x in recs)
            m = {"launch_id": lid, "profile": "p", "tool": "run", "argv": ["python", "agent.py"],
                 "started": f"2026-12-04T{r:02d}:{k:02d}:00Z", "ended": None if not with_summary else
                 f"2026-12-04T{r:02d}:{k:02d}:59Z", "exit_status": 0 if with_summary else None,
                 "base_urls": {"OPENAI_BASE_URL": base}, "models": {"CCS_MODEL": "gpt-4.1"}, "key_id": "k",
                 "key_fingerprint": fp, "env_hash": "sha256:1", "env_digests": {"A": "1"}, "label": label,
                 "recording": {"records": f"{lid}.requests.jsonl"},
                 "outcomes": {"tasks": TASKS, "results_file": f"{lid}.outcomes.jsonl"}}
            results = {f"t{t}": float(rng.random() < 0.77) for t in range(TASKS)}
            (runs / f"{lid}.outcomes.jsonl").write_text(json.dumps(results) + "\n")  # as `--outcomes` leaves them
            if with_summary:
                m["requests"] = summarize(recs, ["gpt-4.1"])
            (runs / f"{lid}.json").write_text(json.dumps(m))


PEAK = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def measure(root: Path, runs: int) -> tuple[list[float], float]:
    """Wall times (ms) of `ccs runs report --rounds ...`, and its peak RSS (MiB) from one more run
    under a fresh parent (so that no earlier child's peak counts)."""
    env = {**os.environ, "CCS_HOME": str(root)}
    cmd = [sys.executable, "-m", "ccswitch_tui", "runs", "report", "--rounds", *ROUNDS, "--json"]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=True)
        times.append((time.perf_counter() - start) * 1000)
        rows = json.loads(out.stdout)["rounds"]
        assert len(rows) == len(ROUNDS) and rows[0]["comparable"] and not rows[4]["comparable"], rows
    peak = subprocess.run([sys.executable, "-c", PEAK, *cmd], env=env, capture_output=True, text=True, check=True)
    return times, int(peak.stdout) / 1024


def measure_board(root: Path, runs: int) -> tuple[list[float], int]:
    """Wall times (ms) of `ccs runs report --rounds ... --html FILE`, and the file's size (bytes)."""
    env = {**os.environ, "CCS_HOME": str(root)}
    board = root / "board.html"
    cmd = [sys.executable, "-m", "ccswitch_tui", "runs", "report", "--rounds", *ROUNDS, "--html", str(board)]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, env=env, capture_output=True, stdin=subprocess.DEVNULL, check=True)
        times.append((time.perf_counter() - start) * 1000)
    return times, board.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--requests", type=int, default=15_000)
    args = parser.parse_args()
    print(f"{len(ROUNDS)} rounds x {K} reruns; {TASKS} tasks per run; `ccs runs report --rounds` x {args.runs}")
    print(f"{'requests/run':>12} {'records':>8} {'summaries':>10} {'median ms':>10} {'max ms':>8} {'peak RSS MiB':>13} "
          f"{'board ms':>9} {'board max':>9} {'board KiB':>9}")
    for requests in (15, args.requests):
        for with_summary in (True, False):
            with tempfile.TemporaryDirectory() as tmp:
                make_home(Path(tmp), requests, with_summary)
                times, peak = measure(Path(tmp), args.runs)
                board_times, size = measure_board(Path(tmp), args.runs)
            print(f"{requests:>12} {requests * len(ROUNDS) * K:>8} {'yes' if with_summary else 'streamed':>10} "
                  f"{statistics.median(times):>10.0f} {max(times):>8.0f} {peak:>13.1f} "
                  f"{statistics.median(board_times):>9.0f} {max(board_times):>9.0f} {size / 1024:>9.0f}")


if __name__ == "__main__":
    main()

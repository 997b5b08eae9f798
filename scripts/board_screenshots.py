"""Render the screenshots (PNG) of the consistency board, for README.md and docs/reruns.md, into screenshots/.

A temporary CCS_HOME with four made-up rounds of five reruns of a 100-task benchmark, each rerun a
manifest with its outcomes and the request summary the bridge's own ``summarize`` makes of its
tagged requests: a 24.4-point baseline gap, 12.0 with the consistency analyzer on, a round that
changed two things at once, and a round whose key rotated between reruns while 429s came in. The
board is made by `ccs runs report --rounds ... --html` and photographed in Debian's Chromium:

    .venv/bin/python scripts/board_screenshots.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from ccswitch_tui.bridge.records import summarize  # noqa: E402

OUT = ROOT / "screenshots"
K, TASKS = 5, 100
GW, GW_B = "https://gateway.example/v1", "https://gateway-b.example/v1"
# Per round: (label, tasks solved in every rerun, [(tasks, times solved)...], extra argv, base URL per rerun,
# key per rerun, 429s in reruns)
ROUNDS = (
    ("baseline", 53, [(30, 4), (2, 1)], [], [GW] * 5, ["fp:5d1e8b0c2a47"] * 5, ()),
    ("analyzer", 65, [(15, 4)], ["--enable-consistency-analyzer"], [GW] * 5, ["fp:5d1e8b0c2a47"] * 5, ()),
    ("guidelines", 68, [(12, 4), (2, 2)], ["--enable-consistency-analyzer", "--guidelines", "g.md"], [GW_B] * 5,
     ["fp:5d1e8b0c2a47"] * 5, ()),
    ("key-drift", 58, [(25, 4), (6, 2)], ["--enable-consistency-analyzer", "--guidelines", "g.md"], [GW_B] * 5,
     ["fp:5d1e8b0c2a47"] * 2 + ["fp:a93c07e61d55"] * 3, (2, 3, 4)),
)


def results(every: int, partial: list[tuple[int, int]], rerun: int) -> dict[str, float]:
    out, t = {}, 0
    for _ in range(every):
        out[f"task-{t + 1:03d}"] = 1.0
        t += 1
    for count, times in partial:
        for _ in range(count):
            out[f"task-{t + 1:03d}"] = 1.0 if (t + rerun) % K < times else 0.0
            t += 1
    while t < TASKS:
        out[f"task-{t + 1:03d}"] = 0.0
        t += 1
    return out


def records(n: int, base: str, limited: bool, swap: bool) -> list[dict]:
    out = []
    for i in range(4 * TASKS):
        second = i * 3
        status = 429 if limited and 120 <= i < 150 and i % 3 else 200
        served = "gpt-4.1-mini-2025-04-14" if swap and i > 300 else "gpt-4.1-2025-04-14"
        out.append({"id": i + 1, "started": f"2026-12-04T{n:02d}:{second // 60:02d}:{second % 60:02d}.000000Z",
                    "method": "POST", "path": "/chat/completions", "upstream_url": f"{base}/chat/completions",
                    "task": f"task-{i % TASKS + 1:03d}", "model_requested": "gpt-4.1",
                    "model_served": served if status == 200 else None, "status": status,
                    "outcome": "ok" if status == 200 else "upstream-error", "in_flight": i % 8,
                    "retry_of": i if status == 200 and i and out[-1]["status"] == 429 else None,
                    "input_tokens": 1800 + i % 700 if status == 200 else None,
                    "output_tokens": 120 + i % 90 if status == 200 else None})
    return out


def make_home(root: Path) -> None:
    runs = root / "state" / "runs"
    runs.mkdir(parents=True)
    n = 0
    for label, every, partial, extra, urls, keys, limited in ROUNDS:
        for rerun in range(K):
            n += 1
            lid = f"20261204T{n:02d}0000Z-{n:08x}"
            res = results(every, partial, rerun)
            (runs / f"{lid}.outcomes.jsonl").write_text(json.dumps(res) + "\n")
            recs = records(n, urls[rerun], rerun in limited, label == "key-drift" and rerun == 4)
            m = {"launch_id": lid, "profile": "gw-b" if urls[rerun] == GW_B else "gw", "tool": "run",
                 "argv": ["python", "agent.py", *extra, f"out-{label}-{rerun + 1}.jsonl"],
                 "started": f"2026-12-04T{n:02d}:00:00Z", "ended": f"2026-12-04T{n:02d}:20:00Z", "exit_status": 0,
                 "base_urls": {"OPENAI_BASE_URL": urls[rerun]}, "models": {"CCS_MODEL": "gpt-4.1"},
                 "key_id": "gw-key", "key_fingerprint": keys[rerun], "env_hash": "sha256:1", "label": label,
                 "outcomes": {"tasks": TASKS, "passed": sum(v == 1.0 for v in res.values()),
                              "results_file": f"{lid}.outcomes.jsonl"},
                 "requests": summarize(recs, ["gpt-4.1"])}
            (runs / f"{lid}.json").write_text(json.dumps(m))


def main() -> None:
    from browser import page_of

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_home(root)
        board = root / "board.html"
        env = {**os.environ, "CCS_HOME": str(root)}
        subprocess.run([sys.executable, "-m", "ccswitch_tui", "runs", "report", "--rounds",
                        *(r[0] for r in ROUNDS), "--html", str(board)], env=env, check=True)
        with page_of(board, 1280, 1000) as (page, requests, _):
            page.screenshot(path=str(OUT / "board.png"))
            page.locator("#round-3").scroll_into_view_if_needed()
            page.evaluate("document.getElementById('round-3').scrollIntoView()")
            page.screenshot(path=str(OUT / "board-round.png"))
            assert requests == [board.resolve().as_uri()], requests
    print(f"wrote {OUT / 'board.png'} and {OUT / 'board-round.png'}")


if __name__ == "__main__":
    main()

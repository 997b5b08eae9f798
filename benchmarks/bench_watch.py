"""The TUI's profile-folder watcher: the cost of one look at a folder of BENCH_PROFILES files (one
scandir, a stat a file), which the app takes once a second in a worker. Reported, not asserted.

    .venv/bin/python benchmarks/bench_watch.py   # BENCH_PROFILES=300 BENCH_RUNS=2000
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from ccswitch_tui.tui.watch import snapshot


def main() -> None:
    count = int(os.environ.get("BENCH_PROFILES", "300"))
    runs = int(os.environ.get("BENCH_RUNS", "2000"))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for i in range(count):
            (folder / f"p{i:04d}.toml").write_text('schema = 1\n[provider]\nname = "x"\n')
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            snapshot(folder)
            times.append(time.perf_counter() - start)
    median = statistics.median(times) * 1000
    print(f"snapshot of {count} profile files: median {median:.3f} ms, p95 "
          f"{sorted(times)[int(runs * 0.95)] * 1000:.3f} ms; once a second that is "
          f"{median / 10:.3f}% of one core")


if __name__ == "__main__":
    main()

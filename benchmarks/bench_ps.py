"""`ccs ps` with 1,000 extra processes running (reported, not asserted; the target is under 0.5 s).

Starts 1,000 `sleep` processes, times `ccs ps` (and `ccs ps --all`) several times, prints medians
beside the same command with no extra processes, then ends every process it started.

    .venv/bin/python benchmarks/bench_ps.py          # BENCH_RUNS=15 BENCH_PROCS=1000 by default
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from timing import timed


def report(label: str, xs: list[float]) -> None:
    xs = sorted(xs)
    print(f"{label:<40} median {statistics.median(xs):7.1f} ms   min {xs[0]:7.1f} ms   max {xs[-1]:7.1f} ms")


def main() -> None:
    runs = int(os.environ.get("BENCH_RUNS", "15"))
    count = int(os.environ.get("BENCH_PROCS", "1000"))
    sleep = shutil.which("sleep") or "/bin/sleep"
    ccs = [sys.executable, "-m", "ccswitch_tui"]
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "CCS_HOME": home}
        report("python -c pass", timed([sys.executable, "-c", "pass"], env, runs))
        report("ccs ps (no extra processes)", timed([*ccs, "ps"], env, runs))
        procs: list[subprocess.Popen] = []
        try:
            for _ in range(count):
                procs.append(subprocess.Popen([sleep, "600"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL, env={"PATH": os.environ.get("PATH", "")}))
            time.sleep(0.5)
            total = len(os.listdir("/proc")) if os.path.isdir("/proc") else None
            print(f"started {count} sleep processes" + (f" ({total} /proc entries)" if total else ""))
            report(f"ccs ps (+{count} processes)", timed([*ccs, "ps"], env, runs))
            report(f"ccs ps --json (+{count} processes)", timed([*ccs, "ps", "--json"], env, runs))
            report(f"ccs ps --all (+{count} processes)", timed([*ccs, "ps", "--all"], env, runs))
        finally:
            for p in procs:
                p.kill()
            for p in procs:
                p.wait()


if __name__ == "__main__":
    main()

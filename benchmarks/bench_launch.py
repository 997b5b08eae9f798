"""Launch overhead: `ccs run P -- true` beside `true`, and `ccs launch P claude|codex -- --version`
beside the bare client, measured side by side in one run (reported, not asserted).

Run it against a real Secret Service:  bash scripts/with-keyring.sh .venv/bin/python benchmarks/bench_launch.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import timed

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = ROOT / ".cache" / "clients" / "bin"


def row(label: str, xs: list[float]) -> str:
    xs = sorted(xs)
    return f"{label:<44} median {statistics.median(xs):7.1f} ms   p90 {xs[int(len(xs) * 0.9) - 1]:7.1f} ms"


def main() -> None:
    runs = int(os.environ.get("BENCH_RUNS", "30"))
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "CCS_HOME": home, "PATH": f"{CLIENTS}:{os.environ['PATH']}"}
        ccs = [sys.executable, "-m", "ccswitch_tui"]
        subprocess.run([*ccs, "new", "bench", "--preset", "taotoken", "--key", "bench-key"], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([*ccs, "key", "set", "bench-key"], input=b"sk-bench-0123456789abcdef", env=env, check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([*ccs, "launch", "bench", "claude", "--", "--version"], env=env, check=True,
                       stdout=subprocess.DEVNULL)  # writes the settings file the bare comparison reads
        pairs = [
            ("true", ["true"], [*ccs, "run", "bench", "--", "true"]),
            ("claude --version", [str(CLIENTS / "claude"), "--version"],
             [*ccs, "launch", "bench", "claude", "--", "--version"]),
            # what ccs actually runs: Claude Code leaves its --version fast path once --settings is given
            ("claude --settings F --version",
             [str(CLIENTS / "claude"), "--settings", str(Path(home) / "state/tools/bench/claude/ccs-settings.json"),
              "--version"],
             [*ccs, "launch", "bench", "claude", "--", "--version"]),
            ("codex --version", [str(CLIENTS / "codex"), "--version"],
             [*ccs, "launch", "bench", "codex", "--", "--version"]),
        ]
        print(f"python -c pass: median {statistics.median(timed([sys.executable, '-c', 'pass'], env, runs)):.1f} ms")
        for label, bare, wrapped in pairs:
            if not Path(bare[0]).exists() and bare[0] != "true":
                print(f"{label}: client not installed (scripts/install-clients.sh)")
                continue
            n = runs if label == "true" else max(5, runs // 3)
            # interleave so that machine noise hits both sides alike
            a, b = [], []
            for _ in range(n):
                a += timed(bare, env, 1)
                b += timed(wrapped, env, 1)
            print(row(label, a))
            print(row(f"ccs … {label}", b))
            print(f"{'':<44} overhead median {statistics.median(b) - statistics.median(a):7.1f} ms")


if __name__ == "__main__":
    main()

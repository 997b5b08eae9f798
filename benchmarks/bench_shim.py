"""What a shim adds: `codex --version` started by name through the shim folder beside
`ccs launch P codex -- --version`, and a shim that passes straight through (`ccs use --none`) or runs
the real binary inside a launch beside the bare client; interleaved, reported, not asserted.

Run it against a real Secret Service:  bash scripts/with-keyring.sh .venv/bin/python benchmarks/bench_shim.py
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
    return f"{label:<46} median {statistics.median(xs):7.1f} ms   p90 {xs[int(len(xs) * 0.9) - 1]:7.1f} ms"


def compare(label_a: str, a_cmd: list[str], a_env: dict[str, str], label_b: str, b_cmd: list[str],
            b_env: dict[str, str], n: int) -> None:
    a, b = [], []
    for _ in range(n):  # interleaved, so machine noise hits both sides alike
        a += timed(a_cmd, a_env, 1)
        b += timed(b_cmd, b_env, 1)
    print(row(label_a, a))
    print(row(label_b, b))
    print(f"{'':<46} added median {statistics.median(b) - statistics.median(a):7.1f} ms")


def main() -> None:
    runs = int(os.environ.get("BENCH_RUNS", "15"))
    if not (CLIENTS / "codex").exists():
        print("codex not installed (scripts/install-clients.sh)")
        return
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "CCS_HOME": home, "PATH": f"{CLIENTS}:{os.environ['PATH']}"}
        ccs_exe = Path(sys.executable).parent / "ccs"
        ccs = [str(ccs_exe)] if ccs_exe.exists() else [sys.executable, "-m", "ccswitch_tui"]
        subprocess.run([*ccs, "new", "bench", "--preset", "taotoken", "--key", "bench-key"], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([*ccs, "key", "set", "bench-key"], input=b"sk-bench-0123456789abcdef", env=env, check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([*ccs, "use", "bench"], env=env, check=True, stdout=subprocess.DEVNULL)
        shimmed = {**env, "PATH": f"{Path(home) / 'state' / 'shims'}:{env['PATH']}"}
        print(f"python -c pass: median {statistics.median(timed([sys.executable, '-c', 'pass'], env, runs)):.1f} ms")
        compare("ccs launch bench codex -- --version", [*ccs, "launch", "bench", "codex", "--", "--version"], env,
                "codex --version through the shim (ccs use bench)", ["codex", "--version"], shimmed, runs)
        inside = {**shimmed, "CCS_LAUNCH_ID": "bench-launch", "CCS_PROFILE": "bench", "CCS_TOOL": "codex"}
        compare("codex --version (the real binary)", [str(CLIENTS / "codex"), "--version"], env,
                "… through the shim inside its launch", ["codex", "--version"], inside, runs)
        subprocess.run([*ccs, "use", "--none"], env=env, check=True, stdout=subprocess.DEVNULL)
        compare("codex --version (the real binary)", [str(CLIENTS / "codex"), "--version"], env,
                "… through the shim after ccs use --none", ["codex", "--version"], shimmed, runs)


if __name__ == "__main__":
    main()

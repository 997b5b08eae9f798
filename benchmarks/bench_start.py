"""What the `ccs` command's isolated start costs: `ccs --version` through the installed shell launcher
(bin/ccs: `sh`, `readlink`, then `python -I`) beside the same Python started as an entry point would
start it (no shell, not isolated), and `ccs list` both ways; interleaved, reported, not asserted.

    .venv/bin/python benchmarks/bench_start.py [--runs 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from timing import timed

ENTRY = "import sys; sys.argv[0] = 'ccs'; from ccswitch_tui.cli import main; main()"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    runs = ap.parse_args().runs
    launcher = Path(sys.executable).parent / "ccs"
    if not launcher.exists():
        print(f"no {launcher}: install the checkout first (pip install -e .)")
        return
    with tempfile.TemporaryDirectory() as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        env["CCS_HOME"] = home
        for args in (["--version"], ["list"]):
            direct, through = [], []
            for _ in range(runs):  # interleaved, so machine noise hits both alike
                direct += timed([sys.executable, "-c", ENTRY, *args], env, 1)
                through += timed([str(launcher), *args], env, 1)
            for label, xs in ((f"python entry point: ccs {' '.join(args)}", direct),
                              (f"bin/ccs (sh, python -I): ccs {' '.join(args)}", through)):
                print(f"{label:<48} median {statistics.median(xs):7.1f} ms")
            print(f"{'':<48} added  {statistics.median(through) - statistics.median(direct):7.1f} ms")


if __name__ == "__main__":
    main()

"""What the rerun lock costs on an identical rerun (reported, not asserted).

In one state folder with N earlier runs (BENCH_RUNS_IN_STATE, default 500) and a round locked on its
first run:

- in process: the lock's own work for one launch (``launch.rerun.hold``: find the round's first run,
  build the manifest the run would write, compare the two through the verdict), for a locked round
  (one small read finds the first run) and for a round named by its label alone (every manifest is
  read to find its first run);
- what a held launch imports beyond `ccs run`'s own modules (``launch.rerun`` and below), in a fresh
  interpreter each time;
- whole commands: `ccs run --same-as R P -- true` beside `ccs run P -- true`, interleaved.

Run it:  .venv/bin/python benchmarks/bench_rerun_lock.py
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import timed

KEY = "sk-bench-lock-0123456789abcdef"


def ms(xs: list[float]) -> str:
    xs = sorted(xs)
    return f"median {statistics.median(xs):7.2f} ms   p90 {xs[int(len(xs) * 0.9) - 1]:7.2f} ms"


def fill(runs_dir: Path, n: int, template: dict) -> None:
    """``n`` earlier runs of other rounds, as a busy state folder holds them."""
    for i in range(n):
        lid = f"20250101T{i // 3600:02d}{i // 60 % 60:02d}{i % 60:02d}Z-{i:08x}"
        m = dict(template, launch_id=lid, started=f"2025-01-01T00:00:{i % 60:02d}Z", label=f"other-{i % 40}")
        m.pop("locked", None)
        (runs_dir / f"{lid}.json").write_text(json.dumps(m, indent=2))


def main() -> None:
    n_runs = int(os.environ.get("BENCH_RUNS_IN_STATE", "500"))
    rounds = int(os.environ.get("BENCH_ROUNDS", "200"))
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "CCS_HOME": home, "BENCH_KEY": KEY}
        os.environ.update(CCS_HOME=home, BENCH_KEY=KEY)
        ccs = [sys.executable, "-m", "ccswitch_tui"]
        subprocess.run([*ccs, "new", "bench", "--base-url", "http://127.0.0.1:9/v1", "--key", "env:BENCH_KEY"],
                       env=env, check=True, stdout=subprocess.DEVNULL)
        subprocess.run([*ccs, "run", "--label", "R", "--locked", "bench", "--", "true"], env=env, check=True)
        subprocess.run([*ccs, "run", "--label", "U", "bench", "--", "true"], env=env, check=True)
        runs_dir = Path(home) / "state" / "runs"
        first = json.loads(next(runs_dir.glob("*.json")).read_text())
        fill(runs_dir, n_runs, first)

        from ccswitch_tui.commands.common import Context
        from ccswitch_tui.launch import launcher
        from ccswitch_tui.launch.rerun import hold

        ctx = Context(environ=env)
        prep = launcher.build("bench", "run", store=ctx.store, keys=ctx.keys, paths=ctx.paths, environ=env,
                              cwd=Path.cwd(), args=["true"])
        print(f"state: {n_runs + 2} runs; {rounds} holds each")
        for what, kwargs in (("locked round (--same-as R)", {"same_as": "R", "label": None, "lock": False}),
                             ("locked round (--label R)", {"same_as": None, "label": "R", "lock": False}),
                             ("round by its label only (--same-as U)", {"same_as": "U", "label": None, "lock": False})):
            times = []
            for _ in range(rounds if "U" not in kwargs.values() else max(10, rounds // 10)):
                t0 = time.perf_counter()
                hold(prep, ctx.paths, **kwargs)
                times.append((time.perf_counter() - t0) * 1000)
            print(f"hold(), {what:<38} {ms(times)}")

        probe = ("import time, ccswitch_tui.commands.launch\n"
                 "t0 = time.perf_counter()\nimport ccswitch_tui.launch.rerun\n"
                 "print((time.perf_counter() - t0) * 1000)\n")
        imports = [float(subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                                        check=True).stdout) for _ in range(20)]
        print(f"{'imports of a held launch (launch.rerun)':<46} {ms(imports)}")

        n = int(os.environ.get("BENCH_RUNS", "30"))
        plain, held = [], []
        for _ in range(n):
            plain += timed([*ccs, "run", "bench", "--", "true"], env, 1)
            held += timed([*ccs, "run", "--same-as", "R", "bench", "--", "true"], env, 1)
        print(f"{'ccs run bench -- true':<46} {ms(plain)}")
        print(f"{'ccs run --same-as R bench -- true':<46} {ms(held)}")
        print(f"{'':<46} difference of medians {statistics.median(held) - statistics.median(plain):+.1f} ms")


if __name__ == "__main__":
    main()

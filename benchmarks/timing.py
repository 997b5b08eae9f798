"""Wall time of whole commands, for the benchmark scripts beside this file."""

from __future__ import annotations

import subprocess
import time


def timed(cmd: list[str], env: dict[str, str], runs: int) -> list[float]:
    """Milliseconds per run of ``cmd`` (output discarded, stdin closed; a failing run is an error)."""
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                       check=True)
        out.append((time.perf_counter() - start) * 1000)
    return out

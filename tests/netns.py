"""Run a scenario in a private network namespace: only a loopback interface exists there, so the
real clients can reach the loopback stub started inside it and nothing else, whatever they try.

`run(name, **args)` starts ``python tests/lifecycle_scenarios.py NAME ARGS`` (or another ``script``)
inside the namespace and returns the JSON the scenario prints last.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import skip_or_fail

HERE = Path(__file__).resolve().parent
_PREFIX = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-rn"]
_ENTER = [*_PREFIX, "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]


def require() -> None:
    if not shutil.which("unshare") or not shutil.which("ip"):
        skip_or_fail("unshare (util-linux) and ip (iproute2) are needed for a private network namespace")
    r = subprocess.run([*_ENTER, "true"], capture_output=True, text=True)
    if r.returncode != 0:
        skip_or_fail(f"cannot make a private network namespace here: {r.stderr.strip()}")


def run(name: str, timeout: float = 400, script: str = "lifecycle_scenarios.py", **args: Any) -> dict[str, Any]:
    require()
    r = subprocess.run([*_ENTER, sys.executable, str(HERE / script), name, json.dumps(args)],
                       capture_output=True, text=True, timeout=timeout, cwd=HERE)
    lines = r.stdout.strip().splitlines()
    assert r.returncode == 0 and lines, \
        f"scenario {name} failed (rc {r.returncode}):\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    return json.loads(lines[-1])

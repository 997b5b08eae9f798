"""Wall time of `ccs list` and `ccs show` with 200 profiles, beside a bare interpreter start.

Run it against a real Secret Service (a private one, so no real keyring is touched):

    bash scripts/with-keyring.sh .venv/bin/python benchmarks/bench_cli.py [--runs 15] [--profiles 200]

Every command is run the same number of times, round-robin, so that all figures come from the same
conditions. Nothing is asserted; the table is the result.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ccswitch_tui.keys.keyring import KeyStore  # noqa: E402
from ccswitch_tui.paths import Paths  # noqa: E402
from ccswitch_tui.profiles.presets import list_presets, new_profile_text  # noqa: E402
from ccswitch_tui.profiles.store import Store  # noqa: E402


def make_home(root: Path, count: int, tag: str) -> tuple[Paths, list[str], list[str]]:
    """``count`` profiles made from the presets in turn, each with a key id of its own preset."""
    paths = Paths(profiles=root / "profiles", state=root / "state")
    store = Store(paths)
    presets = [p.name for p in list_presets()]
    names, key_ids = [], []
    for i in range(count):
        preset = presets[i % len(presets)]
        name = f"{preset}-{i:03d}"
        key_id = f"bench-{tag}-{preset}"
        store.save_text(name, new_profile_text(name, preset, key=key_id), create=True)
        names.append(name)
        if key_id not in key_ids:
            key_ids.append(key_id)
    return paths, names, key_ids


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--profiles", type=int, default=200)
    ap.add_argument("--keys", type=int, default=4, help="how many of the key ids get a key in the keyring")
    args = ap.parse_args()

    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        print("no D-Bus session: run this through scripts/with-keyring.sh (a real Secret Service)", file=sys.stderr)
        return 2

    py = sys.executable
    ccs_bin = str(Path(py).parent / "ccs")
    if not os.path.exists(ccs_bin):
        print(f"{ccs_bin} not found: install the package into this venv (pip install -e .)", file=sys.stderr)
        return 2

    tag = uuid.uuid4().hex[:6]
    with tempfile.TemporaryDirectory(prefix="ccs-bench-") as tmp:
        paths, names, key_ids = make_home(Path(tmp) / "home", args.profiles, tag)
        keys = KeyStore(paths)
        stored = key_ids[: args.keys]
        try:
            for i, kid in enumerate(stored):
                keys.set(kid, f"sk-bench-{i:02d}-" + uuid.uuid4().hex)
            backend = keys.backend_name()
            env = dict(os.environ, CCS_HOME=str(paths.profiles.parent))
            show_with_key = next(n for n in names if Store(paths).load(n).key_id in stored)
            show_without = next(n for n in names if Store(paths).load(n).key_id not in stored)
            commands = {
                "python -c pass": [py, "-c", "pass"],
                "ccs --version": [ccs_bin, "--version"],
                "ccs list": [ccs_bin, "list"],
                "ccs list --json": [ccs_bin, "list", "--json"],
                "python -m ccswitch_tui list": [py, "-m", "ccswitch_tui", "list"],
                f"ccs show {show_with_key}": [ccs_bin, "show", show_with_key],
                f"ccs show {show_without}": [ccs_bin, "show", show_without],
                f"python -m ccswitch_tui show {show_with_key}": [py, "-m", "ccswitch_tui", "show", show_with_key],
            }
            for argv in commands.values():  # warm the page cache and check that each command works
                r = subprocess.run(argv, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
                if r.returncode != 0:
                    print(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()}", file=sys.stderr)
                    return 1
                if "note: key presence unknown" in r.stderr:
                    print(f"warning: {r.stderr.strip()}", file=sys.stderr)
            times: dict[str, list[float]] = {label: [] for label in commands}
            for _ in range(args.runs):
                for label, argv in commands.items():
                    t0 = time.perf_counter()
                    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   stdin=subprocess.DEVNULL, check=True)
                    times[label].append(time.perf_counter() - t0)
        finally:
            for kid in stored:
                try:
                    keys.delete(kid)
                except Exception as exc:  # noqa: BLE001 — report and go on cleaning
                    print(f"could not remove bench key {kid}: {exc}", file=sys.stderr)

    print(f"{args.profiles} profiles, {len(stored)} keys stored ({backend}), {args.runs} runs each, "
          f"Python {sys.version.split()[0]}")
    width = max(len(label) for label in times)
    print(f"{'command':<{width}}  {'median ms':>9}  {'p90 ms':>7}  {'min ms':>7}")
    for label, values in times.items():
        ms = [v * 1000 for v in values]
        print(f"{label:<{width}}  {statistics.median(ms):>9.1f}  {percentile(ms, 0.9):>7.1f}  {min(ms):>7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

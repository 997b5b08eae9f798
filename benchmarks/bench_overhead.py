"""What ccs costs in front of every client, each row as a ratio against its yardstick measured in the
same run: on a shared machine the absolute figures move with the load, the ratios far less.

Commands run through the installed `ccs` (bin/ccs: sh, then `python -I`), as a user runs them, in
alternating pairs (row, yardstick, row, yardstick, …); medians of wall time and of CPU time (the
child's user + system time, its own children included).

    bash scripts/with-keyring.sh .venv/bin/python benchmarks/bench_overhead.py [--runs 15] [--only launch,usage]

Parts (``--only``): launch (`ccs run`, `ccs launch` codex/claude, the shim; then `ccs run`, the Codex
launch and the shim again with the resident launcher on, `ccs resident on`: there the CPU os.wait4
reports is the client's alone, the launch's work being done by a worker that is the resident's child,
so wall time is the fair figure, and the workers' CPU per launch is read from the resident's
/proc/<pid>/stat, its reaped children's time over the batch), start (`ccs --version`, `ccs list`
with 200 profiles, `ccs doctor`), floor (`ccs run`'s CPU taken apart: the standard library it
imports, ccs's modules imported, the work; the TUI's imports beside a bare Textual app's), usage
(`ccs usage` and `runs report` over 6 x 5 runs of 15,000 recorded requests, from the summaries and
streamed), tui (first frame and marks with 300 profiles, beside a bare Textual app painting 300
options). Nothing is asserted; the table is the result.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

CLIENTS = ROOT / ".cache" / "clients" / "bin"
PY = sys.executable
CCS = str(Path(PY).parent / "ccs")
ROWS: list[tuple[str, str, str]] = []  # (what, figures, yardstick and ratio)


def run_once(cmd: Sequence[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU milliseconds of one run (output discarded, stdin closed; a failing run is an error)."""
    start = time.perf_counter()
    proc = subprocess.Popen(list(cmd), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - start) * 1000
    if os.waitstatus_to_exitcode(status) not in ((0, 3) if "doctor" in cmd else (0,)):  # 3: doctor found errors
        sys.exit(f"failed ({os.waitstatus_to_exitcode(status)}): {' '.join(cmd)}")
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def pairs(cmds: dict[str, tuple[Sequence[str], dict[str, str]]], n: int) -> dict[str, tuple[float, float]]:
    """Medians (wall, CPU) of each command, the commands run in turn ``n`` times (noise hits all alike)."""
    for cmd, env in cmds.values():  # warm the page cache, and fail early
        run_once(cmd, env)
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in cmds}
    for _ in range(n):
        for label, (cmd, env) in cmds.items():
            got[label].append(run_once(cmd, env))
    return {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in got.items()}


def row(what: str, got: tuple[float, float], base_label: str, base: tuple[float, float], cpu: bool = True) -> None:
    ratio = f"{got[0] / base[0]:.2f}x wall" + (f", {got[1] / base[1]:.2f}x CPU" if cpu else "")
    ROWS.append((what, f"{got[0]:.0f} ms wall, {got[1]:.0f} ms CPU", f"{ratio} {base_label}"))


def ccs(env: dict[str, str], *args: str, input: str | None = None) -> None:
    subprocess.run([CCS, *args], env=env, input=input, text=True, check=True, capture_output=True)


# --- the launch path ----------------------------------------------------------------------------

def launch_part(env: dict[str, str], home: Path, n: int) -> None:
    ccs(env, "new", "bench", "--preset", "taotoken", "--key", "bench-key")
    ccs(env, "key", "set", "bench-key", input="sk-bench-0123456789abcdef")
    cmds = {"pass": ([PY, "-c", "pass"], env), "isolated": ([PY, "-I", "-S", "-c", "pass"], env),
            "run": ([CCS, "run", "bench", "--", "true"], env)}
    got = pairs(cmds, n)
    row("ccs run P -- true", got["run"], "python -c pass", got["pass"])
    ROWS.append(("  (python -I -S -c pass)", f"{got['isolated'][0]:.0f} ms wall, {got['isolated'][1]:.0f} ms CPU", ""))
    if not (CLIENTS / "codex").exists():
        ROWS.append(("ccs launch P codex/claude, the shim", "clients not installed (scripts/install-clients.sh)", ""))
        resident_part(env, home, n, clients=False)
        return
    ccs(env, "launch", "bench", "claude", "--", "--version")  # writes the settings file the bare one reads
    settings = home / "state" / "tools" / "bench" / "claude" / "ccs-settings.json"
    cmds = {"codex": ([str(CLIENTS / "codex"), "--version"], env),
            "launch codex": ([CCS, "launch", "bench", "codex", "--", "--version"], env),
            "claude": ([str(CLIENTS / "claude"), "--settings", str(settings), "--version"], env),
            "launch claude": ([CCS, "launch", "bench", "claude", "--", "--version"], env)}
    got = pairs(cmds, max(5, n // 2))
    row("ccs launch P codex -- --version", got["launch codex"], "codex --version", got["codex"])
    row("ccs launch P claude -- --version", got["launch claude"], "claude --settings F --version", got["claude"])
    ccs(env, "use", "bench")
    shimmed = {**env, "PATH": f"{home / 'state' / 'shims'}:{env['PATH']}"}
    cmds = {"codex": ([str(CLIENTS / "codex"), "--version"], env), "shim": (["codex", "--version"], shimmed),
            "launch codex": ([CCS, "launch", "bench", "codex", "--", "--version"], env)}
    got_shim = pairs(cmds, max(5, n // 2))
    row("codex --version through the shim (ccs use P)", got_shim["shim"], "codex --version", got_shim["codex"])
    row("  the same", got_shim["shim"], "ccs launch P codex -- --version", got_shim["launch codex"])
    ccs(env, "use", "--none")
    got_none = pairs({"codex": ([str(CLIENTS / "codex"), "--version"], env),
                      "shim": (["codex", "--version"], shimmed)}, max(5, n // 2))
    row("codex --version through the shim (ccs use --none)", got_none["shim"], "codex --version", got_none["codex"])
    resident_part(env, home, n, clients=True)


def workers_cpu(env: dict[str, str]) -> Callable[[], float]:
    """A reading of the CPU milliseconds of the resident's reaped children (its workers): /proc's
    cutime + cstime of the pid `ccs resident status --json` names. The status request is itself
    answered by a worker, so the first reading waits for the resident to reap it (every 2 s)."""
    out = subprocess.run([CCS, "resident", "status", "--json"], env=env, text=True, check=True,
                         capture_output=True)
    pid = json.loads(out.stdout)["pid"]
    if not isinstance(pid, int):
        sys.exit("the resident launcher is on but not running")
    tick = os.sysconf("SC_CLK_TCK")

    def read() -> float:
        time.sleep(2.5)  # the resident reaps its workers every 2 s
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[13]) + int(fields[14])) * 1000 / tick  # fields 16 and 17, 1-based

    return read


def resident_part(env: dict[str, str], home: Path, n: int, clients: bool) -> None:
    """The same launches with the resident launcher on. The CPU os.wait4 reports is the client's
    only: each launch's work is done by a worker the resident forks, which is the resident's child,
    not the client's; so wall time is the fair comparison, and the workers' CPU is read from the
    resident (its reaped children's time, over a batch) and given per launch."""
    ccs(env, "resident", "on")
    try:
        read = workers_cpu(env)
        before = read()
        got = pairs({"pass": ([PY, "-c", "pass"], env), "run": ([CCS, "run", "bench", "--", "true"], env)}, n)
        workers = (read() - before) / (n + 1)  # the warm-up run too
        row("ccs run P -- true, resident on", got["run"], "python -c pass", got["pass"])
        resident_cpu_row(workers, got["run"], "python -c pass", got["pass"])
        if not clients:
            return
        ccs(env, "use", "bench")
        shimmed = {**env, "PATH": f"{home / 'state' / 'shims'}:{env['PATH']}"}
        m = max(5, n // 2)
        before = read()
        got = pairs({"codex": ([str(CLIENTS / "codex"), "--version"], env),
                     "launch codex": ([CCS, "launch", "bench", "codex", "--", "--version"], env),
                     "shim": (["codex", "--version"], shimmed)}, m)
        workers = (read() - before) / (2 * (m + 1))  # two resident launches a round, the warm-up too
        ccs(env, "use", "--none")
        row("ccs launch P codex -- --version, resident on", got["launch codex"], "codex --version", got["codex"])
        row("codex --version through the shim (ccs use P), resident on", got["shim"], "codex --version",
            got["codex"])
        resident_cpu_row(workers, got["launch codex"], "codex --version", got["codex"])
    finally:
        ccs(env, "resident", "off")


def resident_cpu_row(workers: float, got: tuple[float, float], base_label: str, base: tuple[float, float]) -> None:
    total = got[1] + workers
    ROWS.append(("  the workers' CPU, per launch (in the resident)", f"{workers:.0f} ms CPU",
                 f"with the client's: {total:.0f} ms, {total / base[1]:.2f}x CPU {base_label}"))


# --- where the floor is --------------------------------------------------------------------------

DUMP = ("import atexit, sys\n"  # ccs, writing the names of the modules it loaded to the file argv[1] names
        "out = sys.argv.pop(1)\n"
        "atexit.register(lambda: open(out, 'w').write('\\n'.join(sorted(sys.modules))))\n"
        "sys.argv[0] = 'ccs'\n"
        "from ccswitch_tui.cli import main\n"
        "main()\n")
BARE_TUI_IMPORTS = ("from textual.app import App\nfrom textual.widgets import Footer, Header, OptionList\n"
                    "from textual.widgets.option_list import Option")


def floor_part(env: dict[str, str], n: int) -> None:
    """`ccs run P -- true` taken apart, in CPU against `python -I -c pass`: the standard library the
    launch path imports, then ccs's own modules (imported, nothing run), then the whole command (a
    second run: the first parsed the profile into the cache); and the TUI's imports beside those of a
    bare Textual app."""
    ccs(env, "new", "floor", "--preset", "taotoken", "--key", "floor-key")
    ccs(env, "key", "set", "floor-key", input="sk-floor-0123456789abcdef")
    with tempfile.NamedTemporaryFile("r", suffix=".txt") as out:
        subprocess.run([PY, "-I", "-c", DUMP, out.name, "run", "floor", "--", "true"], env=env, check=True,
                       capture_output=True)
        loaded = out.read().split()
    std = [m for m in loaded if m.split(".")[0] in sys.stdlib_module_names and not m.startswith("_")]
    ours = [m for m in loaded if m.split(".")[0] == "ccswitch_tui"]

    def imports(mods: list[str]) -> list[str]:
        return [PY, "-I", "-c", "import " + ", ".join(mods)]

    cmds = {"pass": ([PY, "-I", "-c", "pass"], env), "std": (imports(std), env), "ours": (imports(std + ours), env),
            "run": ([PY, "-I", "-c", DUMP, os.devnull, "run", "floor", "--", "true"], env),
            "textual": ([PY, "-I", "-c", BARE_TUI_IMPORTS], env),
            "tui": ([PY, "-I", "-c", "import ccswitch_tui.tui.app"], env)}
    got = pairs(cmds, n)
    base = got["pass"]
    for key, what in (("std", f"floor: the standard library `ccs run` imports ({len(std)} modules)"),
                      ("ours", f"  + ccs's {len(ours)} modules, imported (nothing run)"),
                      ("run", "  + the work: ccs run P -- true")):
        ROWS.append((what, f"{got[key][1]:.0f} ms CPU", f"{got[key][1] / base[1]:.2f}x CPU python -I -c pass"))
    ROWS.append(("floor: a bare Textual app's imports", f"{got['textual'][1]:.0f} ms CPU", ""))
    ROWS.append(("  the TUI's imports (ccswitch_tui.tui.app)", f"{got['tui'][1]:.0f} ms CPU",
                 f"{got['tui'][1] / got['textual'][1]:.2f}x CPU the bare app's"))


# --- start-up of other commands -----------------------------------------------------------------

def start_part(env: dict[str, str], home: Path, n: int) -> None:
    from bench_cli import make_home as make_profiles  # 200 profiles from the presets

    from ccswitch_tui.keys.keyring import KeyStore

    paths, _names, key_ids = make_profiles(home, 200, "overhead")
    keys = KeyStore(paths)
    try:
        for i, kid in enumerate(key_ids[:4]):
            keys.set(kid, f"sk-bench-{i:02d}-0123456789abcdef")
        listing = {**env, "CCS_HOME": str(home)}
        got = pairs({"pass": ([PY, "-c", "pass"], listing), "version": ([CCS, "--version"], listing),
                     "list": ([CCS, "list"], listing), "doctor": ([CCS, "doctor"], listing)}, n)
    finally:
        for kid in key_ids[:4]:
            keys.delete(kid)
    row("ccs --version", got["version"], "python -c pass", got["pass"])
    row("ccs list, 200 profiles", got["list"], "ccs --version", got["version"])
    row("ccs doctor, 200 profiles", got["doctor"], "ccs --version", got["version"])


# --- usage and reports over many records -----------------------------------------------------------

NAIVE = """import json, sys
from pathlib import Path
for path in sorted(Path(sys.argv[1]).glob("*.requests.jsonl")):
    with open(path, "rb") as f:
        for line in f:
            json.loads(line)
"""


def usage_part(env: dict[str, str], n: int) -> None:
    from bench_rounds import ROUNDS
    from bench_rounds import make_home as make_runs

    for with_summary in (True, False):
        with tempfile.TemporaryDirectory() as tmp:
            make_runs(Path(tmp), 15_000, with_summary)
            e = {**env, "CCS_HOME": tmp}
            cmds = {"usage": ([CCS, "usage", "--json"], e),
                    "report": ([CCS, "runs", "report", "--rounds", *ROUNDS, "--json"], e),
                    "naive": ([PY, "-c", NAIVE, str(Path(tmp) / "state" / "runs")], e)}
            got = pairs(cmds, max(3, n // 3))
        if with_summary:
            row("ccs usage, 6x5 ended runs x 15,000 requests", got["usage"], "runs report --rounds", got["report"])
        else:
            row("ccs usage, the same runs still going (450,000 records streamed)", got["usage"],
                "a naive json.loads loop", got["naive"])
            row("runs report --rounds, the same records streamed", got["report"], "a naive json.loads loop",
                got["naive"])


# --- the TUI ------------------------------------------------------------------------------------



def tui_part(env: dict[str, str], n: int) -> None:
    from bench_tui import BARE
    from bench_tui import make_home as make_tui_home

    def ccs_tui(home: str) -> dict[str, float]:
        spawned = time.time()
        out = subprocess.run([PY, str(ROOT / "benchmarks" / "bench_tui.py"), "--child", home, repr(spawned)],
                             env={**env, "BENCH_PROFILES": "300"}, capture_output=True, text=True, check=True)
        data = json.loads(out.stdout.strip().splitlines()[-1])
        return {k: (v - data["spawned"]) * 1000 for k, v in data["marks"].items()}

    def bare() -> dict[str, float]:
        out = subprocess.run([PY, "-c", BARE, repr(time.time())], env=env, capture_output=True, text=True,
                             check=True)
        return json.loads(out.stdout)

    with tempfile.TemporaryDirectory() as home:
        make_tui_home(home, 300)
        ours: list[dict[str, float]] = []
        theirs: list[dict[str, float]] = []
        for _ in range(max(3, n // 3)):
            ours.append(ccs_tui(home))
            theirs.append(bare())
    med: Callable[[list[dict[str, float]], str], float] = lambda xs, k: statistics.median(x[k] for x in xs)  # noqa: E731
    base = med(theirs, "first_frame")
    for key, what in (("first_frame", "TUI first frame, 300 profiles"),
                      ("list_ready", "  the list of 300 painted"),
                      ("keys_shown", "  keys and the marks of the rows on screen"),
                      ("marks_done", "  every profile's marks")):
        if all(key in x for x in ours):
            ROWS.append((what, f"{med(ours, key):.0f} ms", f"{med(ours, key) / base:.2f}x a bare Textual app's "
                                                            f"first frame ({base:.0f} ms)"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--only", default="launch,start,floor,usage,tui")
    args = ap.parse_args()
    parts = set(args.only.split(","))
    if not Path(CCS).exists():
        sys.exit(f"no {CCS}: install the checkout first (pip install -e .)")
    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        sys.exit("no D-Bus session: run this through scripts/with-keyring.sh (a real Secret Service)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "CCS_"))}
    env["PATH"] = f"{CLIENTS}:{env['PATH']}"
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        env["CCS_HOME"] = str(home / "launch")
        if "launch" in parts:
            launch_part(env, home / "launch", args.runs)
        if "start" in parts:
            start_part(env, home / "start", args.runs)
        if "floor" in parts:
            floor_part(env, args.runs)
    if "usage" in parts:
        usage_part(env, args.runs)
    if "tui" in parts:
        tui_part(env, args.runs)
    load = os.getloadavg()
    print(f"ccs overhead, medians of {args.runs} alternating runs; Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} cores, load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    width = max(len(w) for w, _, _ in ROWS)
    for what, figures, ratio in ROWS:
        print(f"{what:<{width}}  {figures:<28}  {ratio}")


if __name__ == "__main__":
    main()

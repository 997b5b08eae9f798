"""Loader variables wherever the shell is judged: `ccs doctor` names every one the shell sets, and
`ccs inspect`/`ccs ps` report one that a client started by hand inherited — an error when the
client's own runtime loads the code (Node for NODE_OPTIONS, Bun for BUN_OPTIONS, the dynamic loader
for LD_PRELOAD). The clients here are the real pinned ones, started by hand, each running a planted
file (which proves it loaded) that then keeps the client waiting while ccs looks at it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from conftest import skip_or_fail
from waiting import wait_execed

SLEEP = shutil.which("sleep") or "/bin/sleep"


def planted_js(folder: Path) -> Path:
    """A script that says it ran (in ``ran``), then holds its process for a minute."""
    js = folder / "planted.js"
    js.write_text(
        "require('fs').appendFileSync(__dirname + '/ran', String(process.pid) + '\\n');\n"
        "Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000);\n")
    return js


def planted_so(folder: Path) -> Path | None:
    """A shared object whose constructor says it ran, then holds its process for a minute."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    src = folder / "planted.c"
    src.write_text('#include <stdio.h>\n#include <unistd.h>\n'
                   '__attribute__((constructor)) static void planted(void) {\n'
                   f'  FILE *f = fopen("{folder}/ran", "a"); if (f) {{ fprintf(f, "%d\\n", getpid()); fclose(f); }}\n'
                   '  sleep(60);\n}\n')
    so = folder / "planted.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(so), str(src)], check=True, capture_output=True)
    return so


@pytest.fixture
def hand_started() -> Iterator:
    started: list[subprocess.Popen] = []

    def start(argv: list[str], env: dict[str, str], ran: Path) -> int:
        p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        started.append(p)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if ran.exists() and ran.read_text().strip():
                return int(ran.read_text().split()[0])  # the process the planted code runs in
            if p.poll() is not None:
                pytest.fail(f"{argv[0]} exited ({p.returncode}) before the planted code ran")
            time.sleep(0.05)
        pytest.fail(f"the planted code never ran in {argv[0]}")

    yield start
    for p in started:
        try:
            for k in psutil.Process(p.pid).children(recursive=True):
                k.kill()
        except psutil.Error:
            pass
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)


def shell(tmp_path: Path, clients_bin: Path, **extra: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"PATH": f"{clients_bin}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
            "CCS_HOME": os.environ["CCS_HOME"], **extra}


def loader_findings(report: dict) -> dict[str, dict]:
    return {f["variable"]: f for f in report["findings"] if f["code"] == "loader"}


# --- doctor -----------------------------------------------------------------------------------------

def test_doctor_names_every_loader_the_shell_sets(ccs, client_bin, tmp_path):
    clients_bin = client_bin("claude", "codex", "aider")
    env = shell(tmp_path, clients_bin, NODE_OPTIONS=f"--require {tmp_path}/planted.js",
                BUN_OPTIONS=f"--preload {tmp_path}/planted.js", PYTHONPATH=str(tmp_path / "lib"),
                LD_PRELOAD=str(tmp_path / "planted.so"), PERL5OPT="-Mstrict")
    r = ccs("doctor", "--json", env=env, cwd=tmp_path)
    assert r.returncode == 3, r.stderr  # errors: code would load into clients holding keys
    report = json.loads(r.stdout)
    found = loader_findings(report)
    assert set(found) == {"NODE_OPTIONS", "BUN_OPTIONS", "PYTHONPATH", "LD_PRELOAD", "PERL5OPT"}
    for name in ("NODE_OPTIONS", "BUN_OPTIONS", "LD_PRELOAD"):
        assert found[name]["severity"] == "error", found[name]
        assert found[name]["path"] == "shell" and "unset" in found[name]["message"]
    assert "Codex" in found["NODE_OPTIONS"]["message"] and "Claude Code" not in found["NODE_OPTIONS"]["message"]
    assert "Claude Code" in found["BUN_OPTIONS"]["message"] and "Codex" not in found["BUN_OPTIONS"]["message"]
    assert "Claude Code" in found["LD_PRELOAD"]["message"] and "Codex" in found["LD_PRELOAD"]["message"]
    # Aider runs on Python: its loader is an error too; no client runs on Perl: named, not an error
    assert found["PYTHONPATH"]["severity"] == "error" and "Aider" in found["PYTHONPATH"]["message"]
    assert found["PERL5OPT"]["severity"] == "warn"
    assert {row["name"] for row in report["shell"] if row["family"] == "loader"} == set(found)
    text = ccs("doctor", env=env, cwd=tmp_path).stdout
    shell_part = text.split("\nshell\n", 1)[1].split("\nclaude", 1)[0]
    for name in found:
        assert f"  {name}=" in shell_part, shell_part


def test_doctor_without_loaders_says_so(ccs, client_bin, tmp_path):
    clients_bin = client_bin("claude", "codex", "aider")
    r = ccs("doctor", "--json", env=shell(tmp_path, clients_bin), cwd=tmp_path)
    assert loader_findings(json.loads(r.stdout)) == {}


def test_a_hostile_loader_value_is_escaped_and_masked(ccs, client_bin, tmp_path):
    """A value crafted to drive the terminal, or carrying a key, prints escaped and masked."""
    clients_bin = client_bin("claude", "codex", "aider")
    key = "sk-proj-LoaderValue0123456789abcdefXY"
    env = shell(tmp_path, clients_bin, NODE_OPTIONS=f"--require /tmp/\x1b]52;c;aGk=\x07.js --title={key}")
    r = ccs("doctor", env=env, cwd=tmp_path)
    lines = [line for line in r.stdout.splitlines() if "NODE_OPTIONS=" in line]
    assert len(lines) == 2 and r.returncode == 3
    for line in lines:
        assert "\x1b" not in line and "\\x1b]52" in line and key not in line and key[-4:] in line, line


# --- inspect and ps on clients started by hand --------------------------------------------------------

def ccs_env(env: dict[str, str]) -> dict[str, str]:
    """The shell ccs itself runs in: the client's, without the planted loaders (ccs is no client)."""
    return {k: v for k, v in env.items() if k not in ("NODE_OPTIONS", "BUN_OPTIONS", "LD_PRELOAD")}


def inspect(ccs, pid: int, env: dict[str, str]) -> dict:
    r = ccs("inspect", str(pid), "--json", env=ccs_env(env))
    assert r.returncode == 3, r.stderr  # each process here holds a loader or a routing variable: error findings
    return json.loads(r.stdout)


def ps_row(ccs, pid: int, env: dict[str, str]) -> dict:
    r = ccs("ps", "--json", env=ccs_env(env))
    assert r.returncode == 0, r.stderr
    return {p["pid"]: p for p in json.loads(r.stdout)["processes"]}[pid]


def test_inspect_a_hand_started_codex_that_loaded_node_options(ccs, client_bin, hand_started, tmp_path):
    clients_bin = client_bin("codex")
    env = shell(tmp_path, clients_bin, NODE_OPTIONS=f"--require {planted_js(tmp_path)}")
    pid = hand_started(["codex", "--version"], env, tmp_path / "ran")  # the npm launcher, on node
    report = inspect(ccs, pid, env)
    assert report["tool"] == "codex" and report["judged_against"] == "clean"
    (f,) = [f for f in report["findings"] if f["variable"] == "NODE_OPTIONS"]
    assert (f["code"], f["severity"]) == ("loader", "error") and "node" in f["message"].lower()
    assert "planted.js" in f["message"] and "ccs launch" in f["message"]
    assert ps_row(ccs, pid, env)["findings"]["error"] >= 1


def test_inspect_a_hand_started_claude_that_loaded_bun_options(ccs, client_bin, hand_started, tmp_path):
    clients_bin = client_bin("claude")
    env = shell(tmp_path, clients_bin, BUN_OPTIONS=f"--preload {planted_js(tmp_path)}",
                NODE_OPTIONS=f"--require {tmp_path}/not-loaded.js", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")
    pid = hand_started(["claude", "--version"], env, tmp_path / "ran")
    report = inspect(ccs, pid, env)
    assert report["tool"] == "claude"
    by_var = {f["variable"]: f for f in report["findings"] if f["code"] == "loader"}
    assert by_var["BUN_OPTIONS"]["severity"] == "error"
    assert by_var["NODE_OPTIONS"]["severity"] == "info"  # Claude Code is no Node program: measured
    assert ps_row(ccs, pid, env)["findings"]["error"] >= 1


def test_inspect_a_hand_started_claude_that_loaded_ld_preload(ccs, client_bin, hand_started, tmp_path):
    clients_bin = client_bin("claude")
    so = planted_so(tmp_path)
    if so is None:
        skip_or_fail("needs a C compiler (cc) to build the planted shared object")
    env = shell(tmp_path, clients_bin, LD_PRELOAD=str(so))
    pid = hand_started([str(clients_bin / "claude"), "--version"], env, tmp_path / "ran")
    report = inspect(ccs, pid, env)
    (f,) = [f for f in report["findings"] if f["variable"] == "LD_PRELOAD"]
    assert (f["code"], f["severity"]) == ("loader", "error")


def test_a_loader_the_process_does_not_run_is_named_not_an_error(ccs, hand_started, tmp_path):
    """`sleep` under a client's name: a dynamically linked program, no Node in it."""
    fake = tmp_path / "bin" / "codex"
    fake.parent.mkdir()
    fake.symlink_to(SLEEP)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NODE_OPTIONS": "--require /x.js",
           "LD_LIBRARY_PATH": "/opt/lib"}
    p = subprocess.Popen([str(fake), "60"], env=env)
    try:
        wait_execed(p.pid, [str(fake), "60"])  # before the exec, /proc shows the test's own environment
        report = inspect(ccs, p.pid, {**env, "CCS_HOME": os.environ["CCS_HOME"]})
    finally:
        p.kill()
        p.wait()
    by_var = {f["variable"]: f for f in report["findings"] if f["code"] == "loader"}
    assert by_var["NODE_OPTIONS"]["severity"] == "info" and "every command" in by_var["NODE_OPTIONS"]["message"]
    assert by_var["LD_LIBRARY_PATH"]["severity"] == "error"


# --- what the runtimes are ------------------------------------------------------------------------

def test_runtimes_of_the_pinned_clients(client_bin):
    """Measured: Claude Code is a Bun executable, Codex's and Qwen Code's commands are Node scripts
    (Codex's native binary is statically linked), every one is (or runs under) a dynamically linked
    program."""
    clients_bin = client_bin("claude", "codex", "qwen", "aider")
    from ccswitch_tui.diagnose import runtimes
    from ccswitch_tui.policy import loader_runtimes

    path = {"PATH": f"{clients_bin}:/usr/local/bin:/usr/bin:/bin"}
    claude = runtimes.of_file(str(clients_bin / "claude"), path)
    codex = runtimes.of_file(str(clients_bin / "codex"), path)
    assert {"bun", "dynamic"} <= claude and "node" not in claude
    assert {"node", "dynamic"} <= codex and "bun" not in codex
    native = next(clients_bin.parent.glob("node_modules/@openai/codex-linux-x64/vendor/*/bin/codex"))
    assert "python" in runtimes.of_file(str(clients_bin / "aider"), path)  # a console script of its venv
    assert runtimes.of_file(str(native), path) == frozenset()
    assert runtimes.of_file(SLEEP, path) == {"dynamic"}
    assert loader_runtimes("NODE_OPTIONS") == ("node",)
    assert loader_runtimes("LD_PRELOAD") == ("dynamic",)
    assert loader_runtimes("BUN_OPTIONS") == ("bun",)
    assert loader_runtimes("PYTHONPATH") == ("python",)
    assert loader_runtimes("HOME") == ()

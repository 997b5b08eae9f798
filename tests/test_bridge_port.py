"""The bridge's port lives as long as anything that holds the launch's token: after a normal end with
processes of the launch left running (in the child's group, in a session of their own carrying the
launch's marker), and after a ``kill -9`` of ccs at any moment of the launch's start (the moment
right after the child's fork made certain with strace, which holds ccs there), another user can never
listen on the port while a process of the launch lives; what those processes send meanwhile gets a
503 naming the ended launch and never reaches the upstream; and once they are gone the port is free.

Another user is ``nobody`` (``tests/other_user.py``): it tries to bind the port every few ms and, each
time it succeeds, looks whether any process of the launch still lives — one that does lived while the
port was free."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest
from other_user import as_nobody, need_root
from provider_stub import ProviderStub

# The child of the launch: it writes its pid, starts one worker in its own process group and one in
# a session of its own (which keeps CCS_LAUNCH_ID), and lives ``argv[3]`` seconds. Every process of
# it carries the tag in its command line.
CHILD = textwrap.dedent('''
    import os, subprocess, sys, time
    tag, folder, lives = sys.argv[1], sys.argv[2], float(sys.argv[3])
    with open(os.path.join(folder, "child.pid"), "w") as f:
        f.write(str(os.getpid()))
    worker = os.path.join(folder, "worker.py")
    subprocess.Popen([sys.executable, worker, tag, folder, "group"])
    subprocess.Popen([sys.executable, worker, tag, folder, "session"], start_new_session=True)
    time.sleep(lives)
''')

# A worker: sends a request to the bridge every 50 ms for 4 s, writing each answer's status line
# and body to its log.
WORKER = textwrap.dedent('''
    import http.client, os, sys, time
    from urllib.parse import urlsplit
    tag, folder, name = sys.argv[1], sys.argv[2], sys.argv[3]
    base = urlsplit(os.environ["OPENAI_BASE_URL"])
    token = os.environ["OPENAI_API_KEY"]
    end = time.monotonic() + 4
    with open(os.path.join(folder, name + ".log"), "a") as log:
        while time.monotonic() < end:
            try:
                c = http.client.HTTPConnection(base.hostname, base.port, timeout=2)
                c.request("POST", base.path + "/chat/completions", body=b'{"model":"m","messages":[]}',
                          headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
                r = c.getresponse()
                log.write(f"{r.status} {r.read()[:300]!r}\\n")
                c.close()
            except Exception as exc:
                log.write(f"error {type(exc).__name__}\\n")
            log.flush()
            time.sleep(0.05)
''')


def launch_alive(tag: str) -> list[int]:
    """The processes (not zombies) whose command line holds ``tag``: readable by any user."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if tag.encode() in cmdline and state not in (b"Z", b"X"):
            found.append(int(name))
    return found


def try_to_take(port: int, tag: str, seconds: float) -> dict:
    """As another user: bind the port whenever it is free; each time, whether the launch still lives.
    Ends once the port was taken with nothing of the launch left, or after ``seconds``."""
    violations, taken_at = [], None
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.listen(1)
        except OSError:
            s.close()
            time.sleep(0.005)
            continue
        alive = launch_alive(tag)
        s.close()
        if alive:
            violations.append({"after": round(time.monotonic() - start, 3), "alive": alive})
            time.sleep(0.005)
            continue
        taken_at = round(time.monotonic() - start, 3)
        break
    return {"violations": violations, "taken_at": taken_at}


def write_profile(url: str) -> None:
    home = Path(os.environ["CCS_HOME"]) / "profiles"
    home.mkdir(parents=True, exist_ok=True)
    (home / "p.toml").write_text(f'schema = 1\n[provider]\nname = "P"\nbase_url = "{url}"\n'
                                 'key = "env:PORT_KEY"\n[run]\nexport = ["openai"]\nmodel = "m"\n')


@pytest.fixture
def launch(base_env, tmp_path):
    """What a launch of CHILD needs: a provider, a profile, the programs, a tag; kills whatever of the
    launch is left at the end (a failed test must leave nothing running)."""
    need_root()
    provider = ProviderStub()
    write_profile(provider.url + "/v1")
    folder = tmp_path / "launch"
    folder.mkdir()
    (folder / "child.py").write_text(CHILD)
    (folder / "worker.py").write_text(WORKER)
    tag = f"ccs-port-test-{uuid.uuid4().hex[:10]}"
    env = {**base_env, "PORT_KEY": "port-key-0123456789abcdef", "CCS_HOME": os.environ["CCS_HOME"]}

    def argv(lives: float) -> list[str]:
        return [sys.executable, "-m", "ccswitch_tui", "run", "--record", "p", "--", sys.executable,
                str(folder / "child.py"), tag, str(folder), str(lives)]

    yield {"provider": provider, "folder": folder, "tag": tag, "env": env, "argv": argv}
    for pid in launch_alive(tag):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    provider.close()


def manifest_port() -> int | None:
    """The bridge's port, from the launch's manifest (written before the child starts)."""
    for m in (Path(os.environ["CCS_HOME"]) / "state" / "runs").glob("*.json"):
        try:
            return int(json.loads(m.read_text())["recording"]["bridge"].rsplit(":", 1)[1])
        except (OSError, ValueError, KeyError):
            pass
    return None


def port_of(pid: int) -> int | None:
    """The bridge's port, from the child's environment."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    url = next((v[len(b"OPENAI_BASE_URL="):] for v in environ if v.startswith(b"OPENAI_BASE_URL=")), None)
    return int(url.split(b":")[2].split(b"/")[0]) if url else None


def test_after_a_normal_end_the_port_is_held_while_the_launchs_processes_live(launch):
    folder, tag = launch["folder"], launch["tag"]
    proc = subprocess.Popen(launch["argv"](1.0), env=launch["env"], stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    port = None
    while port is None and time.monotonic() < deadline:
        written = (folder / "child.pid").read_text() if (folder / "child.pid").exists() else ""
        port = port_of(int(written)) if written else None
        time.sleep(0.005)
    assert port, "the child never ran"
    taker: dict = {}
    thread = threading.Thread(target=lambda: taker.update(as_nobody(lambda: try_to_take(port, tag, 20))))
    thread.start()
    assert proc.wait(30) == 0  # ccs ended normally, its child after a second; the workers go on
    forwarded = len(launch["provider"].posts())
    time.sleep(0.2)  # a window, not a wait: the workers are to go on living through it
    assert launch_alive(tag), "the workers should outlive the launch"
    thread.join(40)
    assert taker["violations"] == [], taker  # nobody listened while a process of the launch lived
    assert taker["taken_at"] is not None and not launch_alive(tag)  # and once they were gone, it was free
    assert len(launch["provider"].posts()) == forwarded  # nothing after the end reached the upstream
    (manifest,) = [json.loads(m.read_text()) for m in (Path(os.environ["CCS_HOME"]) / "state" / "runs").glob("*.json")]
    for worker in ("group", "session"):
        log = (folder / f"{worker}.log").read_text().splitlines()
        ended = [line for line in log if line.startswith("503 ")]
        assert ended and all(f"launch {manifest['launch_id']} has ended" in line for line in ended), log[-3:]
        # answered every time: by the bridge, then by the guard; a request in flight as the launch ended
        # is cut (and recorded as bridge-stopped)
        kinds = "".join(line[0] if line[0] in "25" else "x" for line in log)
        assert kinds.strip("2").strip("5") in ("", "x") and kinds.startswith("2") and kinds.endswith("5"), log


def kill_and_watch(launch: dict, proc: subprocess.Popen, ccs_pid: int, after: float | None,
                   port: int | None = None) -> dict:
    """SIGKILL ccs ``after`` seconds from now (or at once), then, as nobody, try to take the port for as
    long as any process of the launch lives."""
    tag = launch["tag"]
    if after:
        time.sleep(after)  # the moment of the kill, a parameter of the scenario: not a wait
    os.kill(ccs_pid, signal.SIGKILL)
    proc.wait(30)
    deadline = time.monotonic() + 5
    while port is None and time.monotonic() < deadline:
        port = manifest_port() or next(filter(None, map(port_of, launch_alive(tag))), None)
        if port is None and not launch_alive(tag):
            break
        time.sleep(0.01)
    if port is None:
        return {"port": None, "alive": launch_alive(tag)}  # ccs died before a child of it ran
    return {"port": port, **as_nobody(lambda: try_to_take(port, tag, 20))}


@pytest.mark.parametrize("after", [0.0, 0.03, 0.06, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.5, "workers"])
def test_after_a_kill_at_any_moment_of_the_start_no_other_user_gets_the_port(launch, after):
    """Killed that many seconds after ccs started (on a loaded machine the child starts a second or
    two in), or once both workers run."""
    proc = subprocess.Popen(launch["argv"](60), env=launch["env"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if after == "workers":
        deadline = time.monotonic() + 60
        while not all((launch["folder"] / f"{w}.log").exists() for w in ("group", "session")) \
                and time.monotonic() < deadline:
            time.sleep(0.01)
        after = 0.0
    seen = kill_and_watch(launch, proc, proc.pid, after)
    if seen["port"] is None:
        assert seen["alive"] == []  # no child ran, or it was ended before it could say where it sends
        return
    assert seen["violations"] == [], seen
    assert seen["taken_at"] is not None and not launch_alive(launch["tag"])  # the launch was ended, the port freed


def test_a_kill_right_after_the_childs_fork_leaves_the_guard_knowing_the_child(launch):
    """strace holds ccs for 3 s right after each fork it makes, before the fork returns in it: ccs is
    killed there, once the child runs. The guard was never told the child's group by ccs; it knows it
    from the child itself."""
    if not shutil.which("strace"):
        pytest.fail("strace is needed (scripts/install-test-deps.sh installs it)")
    folder = launch["folder"]
    proc = subprocess.Popen(["strace", "-qq", "-o", "/dev/null", "-e", "trace=clone,fork,vfork",
                             "-e", "inject=clone,fork,vfork:delay_exit=3000000", *launch["argv"](60)],
                            env=launch["env"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not (folder / "child.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    port = None
    while port is None and time.monotonic() < deadline:
        written = (folder / "child.pid").read_text()
        port = port_of(int(written)) if written else None
    assert port, "the child never ran"
    ccs = [int(p) for p in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()]
    seen = kill_and_watch(launch, proc, ccs[0], None, port)  # still inside the child's fork: no started() yet
    assert seen["port"] and seen["violations"] == [], seen
    assert seen["taken_at"] is not None and not launch_alive(launch["tag"])

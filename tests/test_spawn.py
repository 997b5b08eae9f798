"""``launch/spawn.py`` starts a child as ``subprocess.Popen(..., preexec_fn=..., close_fds=True)``
did, and ``helper_spawn.py`` a helper as Popen with a pipe, passed descriptors and a session of its
own: real children, checked from their side (/proc, their output), and the errors Popen raised."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ccswitch_tui.helper_spawn import spawn_helper
from ccswitch_tui.launch.spawn import spawn


def run(argv: list[str], executable: str, env: dict[str, str], cwd: str, in_child=None) -> int:
    pid = spawn(argv, executable, env, cwd, in_child)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_the_child_gets_its_argv_env_folder_and_default_signals(tmp_path: Path):
    out = tmp_path / "out"
    script = ('printf "%s\\n" "$0" "$PWD" "$ONLY" "$(env | wc -l)" > "$OUT"; '
              'grep -E "^SigIgn:" /proc/$$/status >> "$OUT"')
    env = {"ONLY": "this", "OUT": str(out), "PATH": "/usr/bin:/bin"}
    assert run(["named-zero", "-c", script], "/bin/sh", env, str(tmp_path)) == 0
    zero, pwd, only, count, ignored = out.read_text().splitlines()
    assert (zero, pwd, only) == ("named-zero", str(tmp_path), "this")
    assert int(count) <= 4  # the three given (and what sh itself sets, e.g. PWD)
    mask = int(ignored.split()[1], 16)
    # Python ignores SIGPIPE and SIGXFSZ; a child must not inherit that (a pipeline's `head` would
    # leave its writer running)
    assert not mask & (1 << (signal.SIGPIPE - 1)) and not mask & (1 << (signal.SIGXFSZ - 1))


def test_inherited_descriptors_are_closed(tmp_path: Path):
    r, w = os.pipe()
    os.set_inheritable(w, True)  # as a descriptor ccs itself inherited from its shell would be
    try:
        out = tmp_path / "fds"
        assert run(["sh", "-c", f'ls /proc/$$/fd > "{out}"'], "/bin/sh", {"PATH": "/usr/bin:/bin"}, str(tmp_path)) == 0
        fds = {int(n) for n in out.read_text().split()}
        assert w not in fds and r not in fds
        assert fds <= {0, 1, 2, 3, 10, 255}  # stdio, and what sh and ls open themselves
    finally:
        os.close(r)
        os.close(w)


def test_in_child_runs_in_the_child_before_the_exec(tmp_path: Path):
    mark = tmp_path / "mark"

    def before() -> None:
        mark.write_text(str(os.getpid()))

    pid = spawn(["sh", "-c", 'test "$(cat "$1")" = "$$"', "sh", str(mark)], "/bin/sh", {"PATH": "/bin"},
                str(tmp_path), before)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0  # the exec kept the pid in_child wrote


@pytest.mark.parametrize(("executable", "cwd", "error", "named"), [
    ("/nonexistent/tool", None, FileNotFoundError, "/nonexistent/tool"),
    ("no-such-tool-anywhere", None, FileNotFoundError, "no-such-tool-anywhere"),
    ("/bin/sh", "/nonexistent/folder", FileNotFoundError, "/nonexistent/folder"),
    ("NOT_EXECUTABLE", None, PermissionError, "NOT_EXECUTABLE"),
])
def test_a_child_that_cannot_start_raises_popens_error_and_is_reaped(tmp_path, executable, cwd, error, named):
    if executable == "NOT_EXECUTABLE":
        executable = named = str(tmp_path / "plain.txt")
        Path(executable).write_text("#!/bin/sh\n")
    if os.geteuid() == 0 and error is PermissionError:
        os.chmod(executable, 0o644)  # root may exec nothing without an x bit either
    children = _children()
    with pytest.raises(error) as caught:
        spawn(["x"], executable, {"PATH": str(tmp_path)}, cwd or str(tmp_path))
    assert caught.value.filename == named
    assert _children() == children  # no zombie left behind


def test_a_failing_in_child_is_an_oserror_not_a_start(tmp_path: Path):
    def boom() -> None:
        raise RuntimeError("no")

    with pytest.raises(OSError, match="failed before it could start"):
        spawn(["true"], "/bin/true", {}, str(tmp_path), boom)


def _children() -> set[int]:
    me = os.getpid()
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                out.add(int(entry.name))
    return out


# What a helper finds of itself, as JSON in the file named by its argument: the line on its standard
# input, its session, where 1 and 2 go, which of the two descriptors it was given
# (the one passed, the one inherited by ccs) are open, and its environment.
PROBE = """
import json, os, socket, stat, sys
out, passed, inherited = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def is_open(fd):
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False
listening = is_open(passed) and socket.socket(fileno=os.dup(passed)).getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
json.dump({"line": sys.stdin.readline(), "own_session": os.getsid(0) == os.getpid(),
           "stdout": os.readlink("/proc/self/fd/1"), "stderr": os.readlink("/proc/self/fd/2"),
           "passed_listening": bool(listening), "inherited_open": is_open(inherited), "env": sorted(os.environ)},
          open(out, "w"))
"""


def test_a_helper_starts_as_popen_starts_it(tmp_path: Path):
    """Popen(stdin=PIPE, stdout=DEVNULL, stderr=DEVNULL, pass_fds=, start_new_session=True) and
    spawn_helper, the same probe, the same findings."""
    listener = socket.create_server(("127.0.0.1", 0))
    r, w = os.pipe()
    os.set_inheritable(w, True)  # as a descriptor ccs itself inherited from its shell would be
    env = {"PATH": "/usr/bin:/bin", "ONLY": "this"}
    try:
        found = []
        for how in ("popen", "helper"):
            out = tmp_path / how
            argv = [sys.executable, "-I", "-S", "-c", PROBE, str(out), str(listener.fileno()), str(w)]
            if how == "popen":
                proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, pass_fds=(listener.fileno(),),
                                        start_new_session=True, env=env)
                assert proc.stdin is not None
                proc.stdin.write(b"hello\n")
                proc.stdin.close()
                assert proc.wait(30) == 0
            else:
                helper = spawn_helper(argv, sys.executable, env, pass_fds=(listener.fileno(),))
                os.write(helper.stdin, b"hello\n")
                os.close(helper.stdin)
                deadline = time.monotonic() + 30
                while helper.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.01)
                assert helper.poll() == 0
            found.append(json.loads(out.read_text()))
        popen, helper_found = found
        assert helper_found == popen
        assert helper_found["line"] == "hello\n" and helper_found["own_session"]
        assert helper_found["passed_listening"] and not helper_found["inherited_open"]
        assert helper_found["stdout"] == helper_found["stderr"] == "/dev/null"
        sig = tmp_path / "sig"  # a program that is not Python (Python ignores SIGPIPE itself)
        shell = spawn_helper(["sh", "-c", f'grep -E "^SigIgn:" /proc/$$/status > "{sig}"'], "/bin/sh", env)
        os.close(shell.stdin)
        deadline = time.monotonic() + 30
        while shell.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        mask = int(sig.read_text().split()[1], 16)
        assert not mask & (1 << (signal.SIGPIPE - 1) | 1 << (signal.SIGXFSZ - 1))
        assert set(helper_found["env"]) <= {"PATH", "ONLY", "LC_CTYPE"}  # what Python itself may set
        assert not os.get_inheritable(listener.fileno())  # ccs's own copy is left as it was
    finally:
        listener.close()
        os.close(r)
        os.close(w)


CANNOT_START = """
import json, os, sys
from ccswitch_tui.helper_spawn import spawn_helper
def children():
    out = []
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and int(open(f"/proc/{name}/stat").read().rsplit(")", 1)[1].split()[1]) == os.getpid():
                out.append(name)
        except OSError:
            pass
    return sorted(out)
fds, kids = sorted(os.listdir("/proc/self/fd")), children()
try:
    spawn_helper(["x"], sys.argv[1], {})
    error = None
except OSError as exc:
    error = type(exc).__name__
print(json.dumps({"error": error, "fds": sorted(os.listdir("/proc/self/fd")) == fds, "children": children() == kids}))
"""


def test_a_helper_that_cannot_start_raises_popens_error_and_leaves_nothing_open(tmp_path: Path):
    # in a process of its own: the test process's descriptors come and go with other tests' leftovers
    r = subprocess.run([sys.executable, "-c", CANNOT_START, str(tmp_path / "missing")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"error": "FileNotFoundError", "fds": True, "children": True}


def test_an_ended_helper_is_reaped(tmp_path: Path):
    """Nobody waits for a helper that ends by itself (ccs leaves the guard to exit on its own): the
    next helper's start reaps it, so a long-lived ccs keeps no zombies."""
    first = spawn_helper(["true"], "/bin/true", {})
    os.close(first.stdin)
    deadline = time.monotonic() + 10
    while _state(first.pid) != "Z" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _state(first.pid) == "Z"
    second = spawn_helper(["true"], "/bin/true", {})
    os.close(second.stdin)
    assert _state(first.pid) is None and first.returncode == 0
    while second.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert second.poll() == 0 and _state(second.pid) is None


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None

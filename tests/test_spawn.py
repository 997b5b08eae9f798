"""``launch/spawn.py`` starts a child as ``subprocess.Popen(..., preexec_fn=..., close_fds=True)``
did: real children, checked from their side (/proc, their output), and the errors Popen raised."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

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

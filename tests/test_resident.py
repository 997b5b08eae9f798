"""The resident launcher (`ccs resident on`): real resident processes on a real socket, real clients
started as a user starts `ccs` (``python -I``), the real keyring. A launch through the resident is the
launch without it (the child's environment, folder, umask, status, signals, terminal, what ccs
prints); what it cannot do faithfully (a recorded launch, another user, another installation, a
folder open to others) the client does itself; it holds none of the user's environment; a new
version on disk replaces it."""

from __future__ import annotations

import json
import marshal
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ccswitch_tui.keys.keyring import KeyStore
from ccswitch_tui.paths import Paths

KEY = "sk-resident-0123456789abcdefXYZ"
MAIN = "import sys; sys.argv[0] = 'ccs'; from ccswitch_tui.cli import main; main()"
# the child: what it inherited, as JSON on stdout
DUMP = ("import json, os, sys\n"
        "mask = os.umask(0); os.umask(mask)\n"
        "print(json.dumps({'env': dict(os.environ), 'cwd': os.getcwd(), 'umask': mask, 'argv': sys.argv[1:],"
        " 'ppid': os.getppid(), 'stdin': sys.stdin.read()}))\n")
PER_LAUNCH = {"CCS_LAUNCH_ID"}  # differs between any two launches


def cli(*prefix: str) -> list[str]:
    return [sys.executable, "-I", "-c", "; ".join((*prefix, MAIN))]


@pytest.fixture
def env(tmp_path: Path, ccs_home: Paths, key_id: str) -> dict[str, str]:
    from ccswitch_tui.profiles.presets import new_profile_text
    from ccswitch_tui.profiles.store import Store

    Store(ccs_home).save_text("p", new_profile_text("p", "taotoken", key=key_id), create=True)
    KeyStore(ccs_home, os.environ).set(key_id, KEY)
    return {**os.environ, "CCS_HOME": str(ccs_home.profiles.parent), "CCS_ENV_NOTE": "0"}


def ccs(env: dict[str, str], *args: str, cwd: Path | None = None, input: str = "",
        prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return subprocess.run([*cli(*prefix), *args], env=env, cwd=cwd, input=input, capture_output=True, text=True,
                          timeout=60)


def folder(env: dict[str, str]) -> Path:
    return Path(env["CCS_HOME"]) / "state" / "resident"


def resident_pid(env: dict[str, str]) -> int | None:
    r = ccs(env, "resident", "status", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["pid"]


def new_resident(env: dict[str, str], old: int | None, wait: float = 30.0) -> int | None:
    """The pid of a resident other than ``old`` once one answers (asked in this process: cheap)."""
    from ccswitch_tui.resident.client import control

    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        answer = control(str(folder(env)), "status")
        if answer and answer.get("pid") not in (None, old):
            return answer["pid"]
        time.sleep(0.05)
    return None


@pytest.fixture
def resident(env: dict[str, str]):
    """`ccs resident on`, stopped (and its process gone) at the end."""
    r = ccs(env, "resident", "on")
    assert r.returncode == 0 and "running (pid" in r.stdout, r.stdout + r.stderr
    pid = resident_pid(env)
    assert pid is not None
    yield pid
    ccs(env, "resident", "off")
    for p in {pid, resident_pid(env)} - {None}:
        _gone(p)


def _gone(pid: int, wait: float = 10.0) -> bool:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    return False


def manifests(env: dict[str, str]) -> list[dict]:
    runs = Path(env["CCS_HOME"]) / "state" / "runs"
    return sorted((json.loads(p.read_text()) for p in runs.glob("*.json")), key=lambda m: m["started"])


def launch_dump(env: dict[str, str], cwd: Path, *, umask: int = 0o027,
                extra: tuple[str, ...] = ()) -> tuple[subprocess.CompletedProcess, int, dict]:
    """`ccs run p -- python -c DUMP` from ``cwd`` with ``umask`` and stdin text: the result, the pid of
    the `ccs` process, and its manifest."""
    before = {m["launch_id"] for m in manifests(env)}
    proc = subprocess.Popen([*cli(), "run", *extra, "p", "--", sys.executable, "-c", DUMP, "arg one", "--x"],
                            env={**env, "CCS_TEST_MARK": "mark \u00e9"}, cwd=cwd, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: os.umask(umask))
    out, err = proc.communicate("fed on stdin", timeout=60)
    new = [m for m in manifests(env) if m["launch_id"] not in before]
    assert len(new) == 1, new  # one launch, one manifest: nothing was done twice
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), proc.pid, new[0]


@pytest.mark.usefixtures("secret_service")
def test_a_launch_through_the_resident_is_the_launch_without_it(env, tmp_path):
    work = tmp_path / "work dir"
    work.mkdir()
    here, here_pid, here_manifest = launch_dump(env, work)
    assert here.returncode == 0, here.stderr
    assert here_manifest["ccs_pid"] == here_pid

    assert ccs(env, "resident", "on").returncode == 0
    try:
        there, there_pid, there_manifest = launch_dump(env, work)
    finally:
        ccs(env, "resident", "off")
    assert there.returncode == 0, there.stderr
    # the resident's worker did the launch's work (it wrote the manifest) ...
    assert there_manifest["ccs_pid"] != there_pid
    # ... and the child is the user's command's own, with what the launch gives it
    a, b = json.loads(here.stdout), json.loads(there.stdout)
    assert a["ppid"] == here_pid and b["ppid"] == there_pid
    assert {k: v for k, v in a["env"].items() if k not in PER_LAUNCH} == \
        {k: v for k, v in b["env"].items() if k not in PER_LAUNCH}
    assert KEY in b["env"].values()
    assert (a["cwd"], a["umask"], a["argv"], a["stdin"]) == (b["cwd"], b["umask"], b["argv"], b["stdin"])
    assert b["cwd"] == str(work) and b["umask"] == 0o027 and b["argv"] == ["arg one", "--x"]
    assert b["stdin"] == "fed on stdin"
    assert here.stderr == there.stderr
    assert {k: v for k, v in here_manifest.items() if k not in ("launch_id", "started", "ended", "ccs_pid",
                                                                "ccs_start", "env")} == \
        {k: v for k, v in there_manifest.items() if k not in ("launch_id", "started", "ended", "ccs_pid",
                                                              "ccs_start", "env")}
    assert there_manifest["exit_status"] == 0


@pytest.mark.usefixtures("secret_service", "resident")
def test_status_errors_and_messages_are_the_clients(env, tmp_path):
    proc = subprocess.Popen([*cli(), "run", "p", "--", "sh", "-c", "echo out; echo err >&2; exit 7"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out, err) == (7, "out\n", "err\n")
    assert manifests(env)[-1]["ccs_pid"] != proc.pid  # a worker did it
    missing = ccs(env, "run", "p", "--", "/nonexistent/tool")
    assert missing.returncode == 2 and "'/nonexistent/tool' not found on PATH" in missing.stderr
    unknown = ccs(env, "run", "nosuch", "--", "true")
    assert unknown.returncode != 0 and "nosuch" in unknown.stderr and unknown.stderr.count("\n") == 1
    assert [m["exit_status"] for m in manifests(env)] == [7]  # the failed ones wrote no manifest, nothing is lost


@pytest.mark.usefixtures("secret_service", "resident")
def test_signals_reach_the_child_and_its_status_is_the_answer(env, tmp_path):
    flag = tmp_path / "got-term"
    tool = (f"import signal, sys, time, pathlib\n"
            f"signal.signal(signal.SIGTERM, lambda *a: (pathlib.Path({str(flag)!r}).write_text('yes'), sys.exit(5)))\n"
            "print('ready', flush=True)\ntime.sleep(30)\n")
    proc = subprocess.Popen([*cli(), "run", "p", "--", sys.executable, "-c", tool], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGTERM)  # to the `ccs` the user started: it forwards to the child
    assert proc.wait(timeout=20) == 5
    assert flag.read_text() == "yes"
    assert manifests(env)[-1]["exit_status"] == 5
    assert manifests(env)[-1]["ccs_pid"] != proc.pid


@pytest.mark.usefixtures("secret_service", "resident")
def test_the_child_gets_the_terminal(env):
    """On a real pseudo-terminal the child is the foreground group, as without the resident."""
    from pty_session import FOREGROUND_TOOL, ctrl_c_on_a_terminal

    pid, output, code = ctrl_c_on_a_terminal([*cli(), "run", "p", "--", sys.executable, "-c", FOREGROUND_TOOL], env)
    assert b"foreground True" in output and b"tool-got-SIGINT" in output, output
    assert code == 3
    assert manifests(env)[-1]["ccs_pid"] != pid


@pytest.mark.usefixtures("secret_service", "resident")
def test_a_recorded_launch_is_done_by_the_client_alone(env, tmp_path):
    """The bridge's guard runs in the child before its exec: only the client can do that. The worker
    hands the launch back before writing anything, so there is one manifest and one set of lines."""
    r, pid, manifest = launch_dump(env, tmp_path, extra=("--record",))
    assert r.returncode == 0, r.stderr
    assert manifest["ccs_pid"] == pid
    assert json.loads(r.stdout)["env"]["OPENAI_BASE_URL"].startswith("http://127.0.0.1:")


@pytest.mark.usefixtures("secret_service")
def test_the_resident_holds_nothing_of_the_user(env, resident):
    secret = "planted-0123456789-secret"
    r = subprocess.run([*cli(), "run", "p", "--", "true"], env={**env, "OPENAI_API_KEY": secret}, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert manifests(env)[-1]["ccs_pid"] != resident  # served by a worker
    environ = Path(f"/proc/{resident}/environ").read_bytes()
    assert secret.encode() not in environ and KEY.encode() not in environ and b"CCS_HOME" not in environ
    assert sorted(p.name for p in folder(env).iterdir()) == ["lock", "on", "sock"]
    assert folder(env).stat().st_mode & 0o777 == 0o700
    for path in Path(env["CCS_HOME"]).rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


@pytest.mark.usefixtures("secret_service", "resident")
def test_a_shim_launch_goes_through_the_resident(env, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "codex").write_text("#!/bin/sh\necho codex-cli 0.0.0 \"$@\"\n")
    (bin_dir / "codex").chmod(0o755)
    env = {**env, "PATH": f"{bin_dir}:{env['PATH']}"}
    assert ccs(env, "use", "p").returncode == 0
    shims = Path(env["CCS_HOME"]) / "state" / "shims"
    proc = subprocess.Popen(["codex", "--version"], env={**env, "PATH": f"{shims}:{env['PATH']}"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and out.startswith("codex-cli 0.0.0 ") and out.endswith(" --version\n"), err
    (m,) = manifests(env)
    assert m["tool"] == "codex" and m["exit_status"] == 0
    assert m["ccs_pid"] != proc.pid  # a worker did the launch (the shim execs its Python: same pid)


@pytest.mark.usefixtures("secret_service")
def test_off_stops_it_and_launches_start_their_own_python(env, resident):
    r = ccs(env, "resident", "off")
    assert r.returncode == 0 and f"stopped pid {resident}" in r.stdout
    assert _gone(resident)
    assert not (folder(env) / "on").exists() and not (folder(env) / "sock").exists()
    proc = subprocess.run([*cli(), "run", "p", "--", "true"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert resident_pid(env) is None  # no resident started again
    assert ccs(env, "resident", "status").stdout == "resident launcher off, not running\n"


@pytest.mark.usefixtures("secret_service")
def test_it_goes_when_its_on_file_goes_and_comes_back_with_a_launch(env, resident):
    (folder(env) / "on").unlink()
    assert _gone(resident, wait=20.0)  # it looks every 2 s
    (folder(env) / "on").touch()
    first = subprocess.Popen([*cli(), "run", "p", "--", "true"], env=env)
    assert first.wait(timeout=60) == 0
    assert manifests(env)[-1]["ccs_pid"] == first.pid  # none ran: this one launched itself and started one
    pid = new_resident(env, resident)
    assert pid is not None
    second = subprocess.Popen([*cli(), "run", "p", "--", "true"], env=env)
    assert second.wait(timeout=60) == 0
    assert manifests(env)[-1]["ccs_pid"] != second.pid


@pytest.mark.usefixtures("secret_service")
def test_a_new_version_on_disk_replaces_it(env, tmp_path):
    """The resident runs the code of the client that started it; when a module it loaded changes, it
    answers "stale" and goes, that launch runs in the client, and the next resident has the new code."""
    copy = tmp_path / "install"
    shutil.copytree(Path(__file__).resolve().parent.parent / "ccswitch_tui", copy / "ccswitch_tui",
                    ignore=shutil.ignore_patterns("__pycache__"))
    prefix = (f"import sys; sys.path.insert(0, {str(copy)!r})",)

    def launch() -> int:
        proc = subprocess.Popen([*cli(*prefix), "run", "p", "--", "true"], env=env)
        assert proc.wait(timeout=60) == 0
        return proc.pid

    assert ccs(env, "resident", "on", prefix=prefix).returncode == 0
    try:
        first = resident_pid(env)
        assert first is not None
        assert Path(f"/proc/{first}/cmdline").read_bytes().count(str(copy).encode()) == 1  # the copy's code
        pid = launch()
        assert manifests(env)[-1]["ccs_pid"] != pid  # served
        plan = copy / "ccswitch_tui" / "launch" / "plan.py"
        plan.write_text(plan.read_text() + "\n# a new version\n")
        pid = launch()
        assert manifests(env)[-1]["ccs_pid"] == pid  # stale: the client launched
        assert _gone(first)
        assert new_resident(env, first) is not None
        pid = launch()
        assert manifests(env)[-1]["ccs_pid"] != pid  # the new one serves
    finally:
        ccs(env, "resident", "off", prefix=prefix)


@pytest.mark.usefixtures("secret_service", "resident")
def test_a_folder_open_to_others_is_not_used(env):
    folder(env).chmod(0o755)
    try:
        proc = subprocess.Popen([*cli(), "run", "p", "--", "true"], env=env)
        assert proc.wait(timeout=60) == 0
        assert manifests(env)[-1]["ccs_pid"] == proc.pid
    finally:
        folder(env).chmod(0o700)


@pytest.mark.usefixtures("secret_service")
def test_a_listener_of_another_user_gets_nothing(env, tmp_path):
    """A socket in the right place whose listener is another uid: the client sends it nothing."""
    from other_user import need_root

    need_root()
    assert ccs(env, "resident", "on").returncode == 0
    ccs(env, "resident", "off")
    (folder(env) / "on").touch()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # bound as root in the user's folder, listening as uid 65534
        try:
            os.close(read)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(str(folder(env) / "sock"))
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            s.listen(4)
            os.write(write, b"L")
            conn, _ = s.accept()
            conn.settimeout(5)
            got = conn.recv(1 << 16)
            os.write(write, b"got %d bytes" % len(got))
        finally:
            os._exit(0)
    os.close(write)
    try:
        assert os.read(read, 1) == b"L"
        proc = subprocess.Popen([*cli(), "run", "p", "--", "true"], env=env)
        assert proc.wait(timeout=60) == 0
        assert manifests(env)[-1]["ccs_pid"] == proc.pid  # launched by itself
        assert os.read(read, 100) == b"got 0 bytes"
    finally:
        os.close(read)
        os.waitpid(pid, 0)
        (folder(env) / "on").unlink()


@pytest.mark.usefixtures("secret_service")
def test_another_user_reaching_the_socket_is_not_served(env, resident):
    from other_user import as_nobody

    status = marshal.dumps({"protocol": 1, "kind": "status"})
    # opened as root and inherited: nobody cannot walk the test's folders, only this one (made 0711)
    dir_fd = os.open(folder(env), os.O_PATH | os.O_DIRECTORY)

    def knock() -> str:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(f"/proc/self/fd/{dir_fd}/sock")
        try:  # a well-formed request, that the resident would answer its own user (with its pid)
            s.sendall(len(status).to_bytes(4, "big") + status)
            return f"answer {len(s.recv(1 << 16))} bytes"
        except (BrokenPipeError, ConnectionResetError):  # closed at once, the request unread
            return "answer 0 bytes"

    folder(env).chmod(0o711)  # mistakes that let others reach the socket
    (folder(env) / "sock").chmod(0o777)
    try:
        assert as_nobody(knock) == "answer 0 bytes"
    finally:
        folder(env).chmod(0o700)
        os.close(dir_fd)
    proc = subprocess.Popen([*cli(), "run", "p", "--", "true"], env=env)
    assert proc.wait(timeout=60) == 0
    assert manifests(env)[-1]["ccs_pid"] != proc.pid  # and it still serves its user


@pytest.mark.usefixtures("secret_service")
def test_uninstall_stops_it(env, resident):
    r = ccs(env, "uninstall", "--yes")
    assert r.returncode == 0, r.stderr
    assert f"stopped the resident launcher (pid {resident})" in r.stdout
    assert _gone(resident)
    assert not (folder(env) / "on").exists()


@pytest.mark.usefixtures("secret_service", "resident")
def test_ctrl_c_while_the_worker_works_ends_its_launch_at_once(env, tmp_path):
    """A session bus that never answers holds the worker in the key's lookup; Ctrl-C to the `ccs` the
    user started ends it there, as it ends a launch without the resident: "interrupted", 130, no
    manifest, and nothing written afterwards (the worker holds the same stderr: the pipe closes only
    when it is gone too)."""
    bus_path = tmp_path / "silent-bus"
    bus = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    bus.bind(str(bus_path))
    bus.listen(8)
    try:
        proc = subprocess.Popen([*cli(), "run", "p", "--", "true"], env={
            **env, "DBUS_SESSION_BUS_ADDRESS": f"unix:path={bus_path}"}, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        conn, _ = bus.accept()  # the worker asks the bus, which says nothing
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=4)  # well within the lookup's own 5 s
        conn.close()
    finally:
        bus.close()
    assert (proc.returncode, out, err) == (130, "", "ccs: interrupted\n")
    assert manifests(env) == []


@pytest.mark.usefixtures("secret_service")
def test_the_resident_keeps_no_folder_or_descriptor_of_who_started_it(env, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    read, write = os.pipe()
    try:
        r = subprocess.run([*cli(), "resident", "on"], env=env, cwd=proj, pass_fds=(write,), capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        pid = resident_pid(env)
        assert pid is not None
        os.close(write)
        write = -1
        # nobody holds the pipe's other end now: a caller waiting for its end (make, a CI wrapper) is not held
        import select

        assert select.select([read], [], [], 5)[0] and os.read(read, 1) == b""
        assert os.readlink(f"/proc/{pid}/cwd") == "/"
        assert not any(str(proj) in os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd"))
    finally:
        os.close(read)
        if write != -1:
            os.close(write)
        ccs(env, "resident", "off")


@pytest.mark.usefixtures("secret_service")
def test_a_launch_that_starts_the_resident_is_not_its_parent(env):
    assert ccs(env, "resident", "on").returncode == 0
    first = resident_pid(env)
    ccs(env, "resident", "off")
    assert first is not None and _gone(first)
    (folder(env) / "on").touch()
    try:
        proc = subprocess.Popen([*cli(), "run", "p", "--", "sleep", "3"], env=env)
        pid = new_resident(env, None)
        assert pid is not None
        stat = Path(f"/proc/{pid}/stat").read_text()
        assert int(stat.rsplit(")", 1)[1].split()[1]) != proc.pid  # no zombie of it in a long session
        assert proc.wait(timeout=60) == 0
    finally:
        ccs(env, "resident", "off")


@pytest.mark.usefixtures("secret_service")
def test_a_handed_back_launch_says_its_lines_once(env, tmp_path):
    """A recorded launch is handed back to the client after the worker printed its notes: they are
    dropped, and the client's own say them once, as without the resident."""
    noisy = {k: v for k, v in env.items() if k != "CCS_ENV_NOTE"} | {"OPENAI_BASE_URL": "https://stale.invalid/v1"}
    args = ("run", "--record", "p", "--", "true")
    without = ccs(noisy, *args)
    assert without.returncode == 0 and "OPENAI_BASE_URL" in without.stderr, without.stderr
    assert ccs(env, "resident", "on").returncode == 0
    try:
        through = ccs(noisy, *args)
    finally:
        ccs(env, "resident", "off")
    assert through.returncode == 0
    assert through.stderr == without.stderr


LIAR = """
import json, os, sys
from ccswitch_tui.resident.wire import recv, send
import socket
claims = json.loads(sys.argv[1])  # the namespaces and root of a process outside, not its own
claims["root"] = tuple(claims["root"])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[2])
here = os.open(".", os.O_PATH | os.O_DIRECTORY)
send(s, {"protocol": 1, "kind": "cli", "argv": ["run", "p", "--", "true"], "environ": dict(os.environ),
         "umask": 0o022, "terminal": False, "streams": [None, None, None], **claims}, (0, 1, 2, here))
message, _ = recv(s)
print(*message, sep=": ")
"""


@pytest.mark.usefixtures("secret_service")
def test_a_client_in_another_mount_namespace_is_refused_whatever_it_claims(env, resident):
    """A sandboxed process of the user's that reaches the socket and copies the outside's namespace
    names into its request still gets no launch (and no key): the worker reads the peer's namespaces
    from /proc."""
    from other_user import need_root

    need_root()
    claims = subprocess.run([sys.executable, "-I", "-c", "import json; from ccswitch_tui.resident.client import "
                             "identity; print(json.dumps(identity()))"], env=env, capture_output=True, text=True,
                            timeout=60, check=True).stdout
    r = subprocess.run(["unshare", "--mount", sys.executable, "-I", "-c", LIAR, claims, str(folder(env) / "sock")],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "refused: a peer in another namespace or root\n"
    assert manifests(env) == []

"""`ccs ps` and `ccs inspect` against real processes: executables named claude/codex started with
crafted environments, plain processes carrying ccs's markers, and real `ccs run` / `ccs launch`
children. Every finding code appears where it should and nowhere else; no key is ever printed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from conftest import skip_or_fail
from waiting import wait_execed

from ccswitch_tui.diagnose import inspect as insp
from ccswitch_tui.diagnose import processes
from ccswitch_tui.errors import UsageError
from ccswitch_tui.keys.keyring import KeyStore
from ccswitch_tui.launch.plan import plan_for
from ccswitch_tui.model import ERROR, Finding
from ccswitch_tui.policy import MARKERS
from ccswitch_tui.profiles.store import Store

KEY = "sk-inspect-KEEPME-0123456789abcdef"
OTHER_KEY = "sk-inspect-OTHER-fedcba9876543210"
ROTATED_KEY = "sk-inspect-ROTATED-00112233445566"
SECRETS = (KEY, OTHER_KEY, ROTATED_KEY)
SLEEP = shutil.which("sleep") or "/bin/sleep"

PROFILE = """schema = 1
[provider]
name = "Loop"
base_url = "http://127.0.0.1:9/api"
key = "{key_id}"

[claude]
model = "claude-test-model"

[codex]
base_url = "http://127.0.0.1:9/api/v1"
model = "gpt-test"

[run]
export = ["openai", "anthropic"]
model = "run-model"
"""


# --- fixtures -------------------------------------------------------------------------------------

@pytest.fixture
def spawn() -> Iterator[Callable[..., subprocess.Popen]]:
    """Start real processes; every one (and anything it started) is killed afterwards."""
    started: list[subprocess.Popen] = []

    def start(argv: list[str], env: dict[str, str], cwd: Path | None = None, **kw) -> subprocess.Popen:
        p = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, **kw)
        started.append(p)
        # Popen returns once exec began; the new image's argv and environment appear a moment later.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with open(f"/proc/{p.pid}/cmdline", "rb") as fh:
                    if fh.read():
                        break
            except OSError:
                break
            time.sleep(0.002)
        return p

    yield start
    for p in started:
        try:
            kids = psutil.Process(p.pid).children(recursive=True)
        except psutil.Error:
            kids = []
        for k in kids:
            try:
                k.kill()
            except psutil.Error:
                pass
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)


@pytest.fixture
def fake_bin(tmp_path: Path) -> Path:
    """Executables named like the clients: `claude` and `codex` are `sleep` under another name."""
    d = tmp_path / "bin"
    d.mkdir()
    for name in ("claude", "codex"):
        (d / name).symlink_to(SLEEP)
    return d


@pytest.fixture
def setup(ccs_home, key_id, tmp_path):
    """A profile `loop` serving claude, codex and run, with its key in the real keyring."""
    store = Store(ccs_home)
    keys = KeyStore(ccs_home, os.environ)
    store.save_text("loop", PROFILE.format(key_id=key_id), create=True)
    keys.set(key_id, KEY)
    return store, keys, ccs_home


def parent_env(tmp_path: Path) -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}


def plan_env(setup, tool: str, tmp_path: Path, key: str = KEY) -> dict[str, str]:
    store, _, paths = setup
    plan = plan_for(store.load("loop"), tool, key, parent_env(tmp_path), tmp_path, paths=paths)
    return dict(plan.env)


def inspect_now(setup, pid: int, profile: str | None = None) -> insp.Inspection:
    store, _, paths = setup
    return insp.Inspector(store, KeyStore(paths, os.environ)).inspect_pid(pid, profile)


def codes(findings, severity: str | None = None) -> set[tuple[str, str | None]]:
    return {(f.code, f.variable) for f in findings if severity is None or f.severity == severity}


def no_secret(*texts: str) -> None:
    for t in texts:
        for s in SECRETS:
            assert s not in t, "a key value was printed"


# --- recognising the clients -----------------------------------------------------------------------

@pytest.mark.parametrize(("argv", "tool"), [
    (["claude"], "claude"),
    (["/home/u/.local/bin/claude", "-p", "hi"], "claude"),
    (["/x/node_modules/@anthropic-ai/claude-code/bin/claude.exe"], "claude"),
    (["node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"], "claude"),
    (["/usr/bin/node", "--no-warnings", "/x/@anthropic-ai/claude-code/cli-wrapper.cjs"], "claude"),
    (["/bin/sh", "/tmp/bin/claude", "--settings", "x"], "claude"),
    (["codex", "exec"], "codex"),
    (["node", "/x/node_modules/@openai/codex/bin/codex.js", "exec"], "codex"),
    (["/x/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex", "exec"], "codex"),
    (["C:\\Program Files\\nodejs\\node.exe", "C:\\npm\\node_modules\\@openai\\codex\\bin\\codex.js"], "codex"),
    (["sleep", "30"], None),
    (["node", "server.js"], None),
    (["vim", "claude"], None),
    (["python3", "-m", "claude_tools"], None),
    ([], None),
])
def test_recognise(argv, tool):
    assert processes.recognise(argv) == tool


# --- findings on real processes --------------------------------------------------------------------

def _with(**extra: str) -> Callable[[dict[str, str]], dict[str, str]]:
    return lambda env: {**env, **extra}


def _without(name: str) -> Callable[[dict[str, str]], dict[str, str]]:
    return lambda env: {k: v for k, v in env.items() if k != name}


MANAGED_CASES = [
    # (tool, change to the clean environment, the error findings expected)
    ("claude", _with(), set()),
    ("claude", _with(OPENAI_BASE_URL="http://127.0.0.1:9/other/v1"), {("foreign-family", "OPENAI_BASE_URL")}),
    ("claude", _with(CODEX_HOME="/tmp/elsewhere"), {("foreign-family", "CODEX_HOME")}),
    ("claude", _with(OPENAI_API_KEY=OTHER_KEY), {("foreign-family", "OPENAI_API_KEY")}),
    ("claude", _with(ANTHROPIC_BASE_URL="http://127.0.0.1:9/stale"), {("base-url-drift", "ANTHROPIC_BASE_URL")}),
    ("claude", _without("ANTHROPIC_BASE_URL"), {("base-url-drift", "ANTHROPIC_BASE_URL")}),
    ("claude", _with(ANTHROPIC_MODEL="stale-model"), {("model-drift", "ANTHROPIC_MODEL")}),
    ("claude", _with(ANTHROPIC_DEFAULT_HAIKU_MODEL="stale-haiku"), {("model-drift", "ANTHROPIC_DEFAULT_HAIKU_MODEL")}),
    ("claude", _with(ANTHROPIC_AUTH_TOKEN=OTHER_KEY), {("key-drift", "ANTHROPIC_AUTH_TOKEN")}),
    ("claude", _without("ANTHROPIC_AUTH_TOKEN"), {("key-drift", "ANTHROPIC_AUTH_TOKEN")}),
    ("claude", _with(ANTHROPIC_API_KEY=OTHER_KEY), {("unmanaged-routing", "ANTHROPIC_API_KEY")}),
    ("claude", _with(ANTHROPIC_CUSTOM_HEADERS="x-route: b"), {("unmanaged-routing", "ANTHROPIC_CUSTOM_HEADERS")}),
    ("claude", _with(CLAUDE_CONFIG_DIR="/tmp/other-config"), {("unmanaged-routing", "CLAUDE_CONFIG_DIR")}),
    ("claude", _with(CLAUDE_CODE_USE_BEDROCK="1", AWS_EC2_METADATA_DISABLED="true"),
     {("cloud-switch", "CLAUDE_CODE_USE_BEDROCK")}),
    ("claude", _with(HTTPS_PROXY="http://127.0.0.1:9", NO_PROXY="localhost"), set()),  # proxy: warn/info only
    ("codex", _with(), set()),
    ("codex", _with(CODEX_MANAGED_BY_NPM="1", CODEX_MANAGED_PACKAGE_ROOT="/x/@openai/codex"), set()),
    ("codex", _with(ANTHROPIC_BASE_URL="http://127.0.0.1:9/api"), {("foreign-family", "ANTHROPIC_BASE_URL")}),
    ("codex", _with(ANTHROPIC_API_KEY=KEY), {("foreign-family", "ANTHROPIC_API_KEY")}),
    ("codex", _with(CLAUDE_CODE_USE_VERTEX="1"), {("cloud-switch", "CLAUDE_CODE_USE_VERTEX")}),
    ("codex", _with(OPENAI_BASE_URL="http://127.0.0.1:9/stale/v1"), {("base-url-drift", "OPENAI_BASE_URL")}),
    ("codex", _with(CCS_CODEX_API_KEY=OTHER_KEY), {("key-drift", "CCS_CODEX_API_KEY")}),
    ("codex", _with(CODEX_HOME="/tmp/other-codex-home"), {("unmanaged-routing", "CODEX_HOME")}),
    ("run", _with(), set()),
    ("run", _with(OPENAI_BASE_URL="http://127.0.0.1:9/stale/v1"), {("base-url-drift", "OPENAI_BASE_URL")}),
    ("run", _with(CCS_MODEL="other-model"), {("model-drift", "CCS_MODEL")}),
    ("run", _with(OPENAI_API_KEY=OTHER_KEY), {("key-drift", "OPENAI_API_KEY")}),
    ("run", _with(OPENAI_ORG_ID="org-x"), {("unmanaged-routing", "OPENAI_ORG_ID")}),
]


@pytest.mark.parametrize(("tool", "change", "expected"), MANAGED_CASES)
def test_managed_process_findings(setup, spawn, fake_bin, tmp_path, tool, change, expected):
    env = change(plan_env(setup, tool, tmp_path))
    exe = {"claude": fake_bin / "claude", "codex": fake_bin / "codex", "run": Path(SLEEP)}[tool]
    proc = spawn([str(exe), "300"], env, cwd=tmp_path)
    ins = inspect_now(setup, proc.pid)
    assert ins.profile == "loop" and ins.profile_source == "marker" and ins.tool == tool and ins.managed
    assert ins.launch_id == env["CCS_LAUNCH_ID"]
    assert codes(ins.findings, ERROR) == expected
    if not expected:  # a clean child: nothing but the proxy case's own warnings
        assert {f.code for f in ins.findings} <= {"proxy"}
        assert ins.diff.empty or set(ins.diff.added) <= {"CODEX_MANAGED_BY_NPM", "CODEX_MANAGED_PACKAGE_ROOT",
                                                         "HTTPS_PROXY", "NO_PROXY"}
    shown = json.dumps(ins.to_dict())
    no_secret(shown, *(f.message for f in ins.findings))


def test_proxy_is_a_warning_with_its_way_out(setup, spawn, fake_bin, tmp_path):
    env = {**plan_env(setup, "claude", tmp_path), "HTTPS_PROXY": "http://user:pw-secret@127.0.0.1:9"}
    ins = inspect_now(setup, spawn([str(fake_bin / "claude"), "300"], env).pid)
    (f,) = [f for f in ins.findings if f.code == "proxy"]
    assert f.severity == "warn" and f.variable == "HTTPS_PROXY"
    assert "pw-secret" not in f.message and "user:****@127.0.0.1:9" in f.message
    assert "ccs launch loop claude" in f.message
    assert ins.display_diff()["added"] == {"HTTPS_PROXY": "http://user:****@127.0.0.1:9"}


def test_diff_shows_changes_masked_with_fingerprints(setup, spawn, fake_bin, tmp_path):
    env = {**plan_env(setup, "claude", tmp_path), "ANTHROPIC_AUTH_TOKEN": OTHER_KEY, "ANTHROPIC_MODEL": "m2",
           "EXTRA_SECRET_THING": "very-private-value-123456"}
    del env["CLAUDE_CONFIG_DIR"]
    ins = inspect_now(setup, spawn([str(fake_bin / "claude"), "300"], env).pid)
    d = ins.display_diff()
    assert d["added"] == {"EXTRA_SECRET_THING": "ver…3456"}
    assert list(d["removed"]) == ["CLAUDE_CONFIG_DIR"]
    assert d["changed"]["ANTHROPIC_MODEL"] == {"expected": "claude-test-model", "actual": "m2"}
    tok = d["changed"]["ANTHROPIC_AUTH_TOKEN"]
    keys = KeyStore(setup[2], os.environ)
    assert tok["expected"] == f"(profile key {keys.fingerprint(KEY)})"
    assert tok["actual"] == f"sk-…3210 ({keys.fingerprint(OTHER_KEY)})"
    assert ("routing-missing", "CLAUDE_CONFIG_DIR") in codes(ins.findings, ERROR)
    (drift,) = [f for f in ins.findings if f.code == "key-drift"]
    assert keys.fingerprint(OTHER_KEY) in drift.message and keys.fingerprint(KEY) in drift.message
    assert "very-private" not in json.dumps(ins.to_dict())


def test_unmanaged_process_is_judged_against_clean(setup, spawn, fake_bin, tmp_path):
    env = {**parent_env(tmp_path), "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/a", "ANTHROPIC_AUTH_TOKEN": OTHER_KEY,
           "OPENAI_BASE_URL": "http://127.0.0.1:9/b/v1", "AWS_REGION": "us-east-1", "UNRELATED": "x"}
    ins = inspect_now(setup, spawn([str(fake_bin / "claude"), "300"], env).pid)
    assert ins.profile is None and not ins.managed and ins.judged_against == "clean" and ins.tool == "claude"
    by_var = {f.variable: f for f in ins.findings}
    assert by_var["ANTHROPIC_BASE_URL"].code == "unmanaged-routing" and by_var["ANTHROPIC_BASE_URL"].family == "claude"
    assert by_var["ANTHROPIC_AUTH_TOKEN"].family == "claude"
    assert by_var["OPENAI_BASE_URL"].code == "foreign-family" and by_var["OPENAI_BASE_URL"].family == "openai"
    assert by_var["AWS_REGION"].family == "cloud"
    assert "UNRELATED" not in by_var
    drift = [f for f in ins.findings if f.code == "base-url-drift"]
    assert len(drift) == 1 and drift[0].severity == ERROR and "2 distinct base URLs" in drift[0].message
    assert set(ins.display_diff()["added"]) == {"ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "OPENAI_BASE_URL",
                                                "AWS_REGION", "UNRELATED"}
    no_secret(json.dumps(ins.to_dict()))


def test_clean_unmanaged_and_single_url_processes(setup, spawn, fake_bin, tmp_path):
    clean = inspect_now(setup, spawn([str(fake_bin / "codex"), "300"], parent_env(tmp_path)).pid)
    assert clean.findings == () and clean.diff.empty and clean.tool == "codex"
    one = inspect_now(setup, spawn([str(fake_bin / "codex"), "300"],
                                   {**parent_env(tmp_path), "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}).pid)
    assert [(f.code, f.severity) for f in one.findings] == [("unmanaged-routing", "warn")]


def test_profile_option_judges_an_unmanaged_process(setup, spawn, fake_bin, tmp_path):
    env = {k: v for k, v in plan_env(setup, "claude", tmp_path).items() if k not in MARKERS}
    pid = spawn([str(fake_bin / "claude"), "300"], env).pid
    ins = inspect_now(setup, pid, profile="loop")
    assert ins.profile == "loop" and ins.profile_source == "option" and not ins.managed
    assert ins.findings == () and ins.diff.empty
    with pytest.raises(UsageError, match="no profile named 'nope'"):
        inspect_now(setup, pid, profile="nope")


def test_marker_of_a_deleted_profile(setup, spawn, tmp_path):
    env = {**plan_env(setup, "run", tmp_path), "CCS_PROFILE": "gone-profile"}
    ins = inspect_now(setup, spawn([SLEEP, "300"], env).pid)
    assert ins.profile is None and ("profile-unknown", "CCS_PROFILE") in codes(ins.findings)
    # judged against clean: the run exports are listed as unmanaged routing
    assert ("unmanaged-routing", "OPENAI_API_KEY") in codes(ins.findings)


def test_key_rotated_after_launch_is_key_drift(setup, spawn, fake_bin, tmp_path, key_id):
    pid = spawn([str(fake_bin / "codex"), "300"], plan_env(setup, "codex", tmp_path)).pid
    assert not inspect_now(setup, pid).has_errors
    setup[1].set(key_id, ROTATED_KEY)
    ins = inspect_now(setup, pid)
    assert codes(ins.findings, ERROR) == {("key-drift", "CCS_CODEX_API_KEY")}


def test_missing_key_cannot_be_compared_but_is_not_an_error(setup, spawn, fake_bin, tmp_path, key_id):
    pid = spawn([str(fake_bin / "claude"), "300"], plan_env(setup, "claude", tmp_path)).pid
    setup[1].delete(key_id)
    ins = inspect_now(setup, pid)
    assert [(f.code, f.severity) for f in ins.findings] == [("key-unavailable", "warn")]


def test_gone_and_unreadable_pids(setup, spawn, tmp_path, monkeypatch):
    p = spawn([SLEEP, "300"], parent_env(tmp_path))
    p.kill()
    p.wait()
    with pytest.raises(UsageError, match=rf"pid {p.pid}: no such process"):
        inspect_now(setup, p.pid)
    with pytest.raises(UsageError, match="not a process id"):
        inspect_now(setup, 0)
    q = spawn([SLEEP, "300"], parent_env(tmp_path))

    def denied(self):
        raise psutil.AccessDenied(self.pid)

    monkeypatch.setattr(psutil.Process, "environ", denied)
    with pytest.raises(UsageError, match=rf"pid {q.pid}: cannot read its environment"):
        inspect_now(setup, q.pid)


# --- ps -------------------------------------------------------------------------------------------

def _rows(procs: list[insp.ProcessInfo]) -> dict[int, insp.ProcessInfo]:
    return {p.pid: p for p in procs}


def test_list_processes(setup, spawn, fake_bin, tmp_path):
    store, keys, _ = setup
    managed = spawn([str(fake_bin / "claude"), "300"],
                    {**plan_env(setup, "claude", tmp_path), "OPENAI_API_KEY": OTHER_KEY}, cwd=tmp_path)
    child = spawn([SLEEP, "301"], plan_env(setup, "run", tmp_path))
    unmanaged = spawn([str(fake_bin / "codex"), "302"], {**parent_env(tmp_path), "OPENAI_BASE_URL": "http://x/v1"})
    plain = spawn([SLEEP, "303"], parent_env(tmp_path))
    routed = spawn([SLEEP, "304"], {**parent_env(tmp_path), "ANTHROPIC_API_KEY": OTHER_KEY})
    rows = _rows(insp.list_processes(store, keys))
    assert plain.pid not in rows and routed.pid not in rows and os.getpid() not in rows
    m = rows[managed.pid]
    assert (m.tool, m.profile, m.status, m.cwd) == ("claude", "loop", "ok", str(tmp_path))
    assert m.counts == {"error": 1, "warn": 0, "info": 0} and set(m.reasons) == {"tool", "marker"}
    assert abs(m.started - psutil.Process(managed.pid).create_time()) < 1
    c = rows[child.pid]
    assert (c.tool, c.profile, c.reasons, c.counts["error"]) == ("run", "loop", ("marker",), 0)
    u = rows[unmanaged.pid]
    assert (u.tool, u.profile, u.launch_id, u.counts) == ("codex", None, None, {"error": 0, "warn": 1, "info": 0})
    rows_all = _rows(insp.list_processes(store, keys, all_=True))
    assert routed.pid in rows_all and rows_all[routed.pid].reasons == ("routing",)
    assert rows_all[routed.pid].tool is None and plain.pid not in rows_all


def test_unreadable_and_exited_processes_are_shown_as_such(setup, spawn, fake_bin, tmp_path, monkeypatch):
    store, keys, _ = setup
    other = spawn([str(fake_bin / "claude"), "300"], parent_env(tmp_path))
    real_read = processes.read_file

    def read(path: str) -> bytes:
        if path == f"/proc/{other.pid}/environ":
            raise PermissionError(13, "Permission denied")
        return real_read(path)

    monkeypatch.setattr(processes, "read_file", read)
    row = _rows(insp.list_processes(store, keys))[other.pid]
    assert (row.status, row.counts, row.tool) == ("access-denied", None, "claude")
    assert "another user" in row.error

    gone = spawn([str(fake_bin / "codex"), "300"], parent_env(tmp_path))
    real_details = processes.details

    def details(pid, argv):
        if pid == gone.pid:
            gone.kill()
            gone.wait()
        return real_details(pid, argv)

    monkeypatch.setattr(insp, "details", details)
    row = _rows(insp.list_processes(store, keys))[gone.pid]
    assert row.status == "gone" and row.counts is None


def _as_nobody_python(tmp_path: Path) -> list[str] | None:
    """A Python that user `nobody` can run with ccs importable. When the checkout itself is not
    readable by `nobody` (a clone under /root, say), ccs and the few packages `ps`/`inspect` need are
    copied to a world-readable folder first."""
    if os.geteuid() != 0:
        return None
    py = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    if not os.path.exists(py):
        return None
    import click
    import jeepney
    import psutil as psutil_mod

    import ccswitch_tui

    lib = tmp_path / "nobody-lib"
    for mod in (ccswitch_tui, click, jeepney, psutil_mod):
        src = Path(mod.__file__).parent
        shutil.copytree(src, lib / src.name, ignore=shutil.ignore_patterns("__pycache__"))
    for d in [tmp_path, *tmp_path.parents]:
        if d == Path("/"):
            break
        os.chmod(d, os.stat(d).st_mode | 0o005)  # let `nobody` traverse to the copy (test folders only)
    for path in lib.rglob("*"):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    os.chmod(lib, 0o755)
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "PYTHONPATH": str(lib), "PYTHONDONTWRITEBYTECODE": "1"}
    probe = subprocess.run([py, "-c", "import ccswitch_tui.cli, psutil, click"], env=env, user=65534, group=65534,
                           capture_output=True, cwd="/", timeout=30)
    return [py, env["PYTHONPATH"]] if probe.returncode == 0 else None


def test_another_users_process_for_real(spawn, tmp_path):
    """`ccs ps` and `ccs inspect` run as `nobody` against a root-owned `claude`."""
    runner = _as_nobody_python(tmp_path)
    if runner is None:
        skip_or_fail("needs root and the system Python of the same version to run ccs as user nobody")
    py, pythonpath = runner
    target = spawn([str(Path("claude")), "300"], {**parent_env(tmp_path), "ANTHROPIC_API_KEY": KEY},
                   executable=SLEEP)
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "PYTHONPATH": pythonpath, "CCS_HOME": "/tmp/ccs-nobody-none"}
    ps = subprocess.run([py, "-m", "ccswitch_tui", "ps", "--json"], env=env, user=65534, group=65534,
                        capture_output=True, text=True, cwd="/", timeout=60)
    assert ps.returncode == 0, ps.stderr
    row = {p["pid"]: p for p in json.loads(ps.stdout)["processes"]}[target.pid]
    assert row["status"] == "access-denied" and row["tool"] == "claude" and row["findings"] is None
    ins = subprocess.run([py, "-m", "ccswitch_tui", "inspect", str(target.pid)], env=env, user=65534, group=65534,
                         capture_output=True, text=True, cwd="/", timeout=60)
    assert ins.returncode == 2 and "cannot read its environment" in ins.stderr
    assert "Traceback" not in ins.stderr and len(ins.stderr.strip().splitlines()) == 1
    no_secret(ps.stdout, ps.stderr, ins.stdout, ins.stderr)


# --- the commands, with real `ccs run` / `ccs launch` children ------------------------------------

def wait_for_child(sup: subprocess.Popen, match: Callable[[psutil.Process], bool], timeout: float = 20) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert sup.poll() is None, "the supervisor exited early"
        for k in psutil.Process(sup.pid).children(recursive=True):
            try:
                if match(k):
                    return k.pid
            except psutil.Error:
                continue
        time.sleep(0.05)
    raise AssertionError("the child never appeared")


def test_real_ccs_run_child(setup, spawn, ccs, base_env, key_id, tmp_path):
    outputs: list[str] = []
    sup = spawn([sys.executable, "-m", "ccswitch_tui", "run", "loop", "--", SLEEP, "300"], base_env, cwd=tmp_path)
    pid = wait_for_child(sup, lambda p: p.name() == "sleep" and "CCS_LAUNCH_ID" in p.environ())

    r = ccs("inspect", str(pid), env=base_env)
    outputs += [r.stdout, r.stderr]
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"pid {pid}" in r.stdout and "profile loop (from CCS_PROFILE)" in r.stdout
    assert "changes the process made to its own environment afterwards are invisible" in r.stdout
    r = ccs("inspect", str(pid), "--json", env=base_env)
    outputs += [r.stdout, r.stderr]
    data = json.loads(r.stdout)
    assert r.returncode == 0 and data["profile"] == "loop" and data["tool"] == "run" and data["managed"]
    assert data["counts"]["error"] == 0 and data["key_fingerprint"].startswith("fp:")

    r = ccs("ps", "--json", env=base_env)
    outputs += [r.stdout, r.stderr]
    rows = {p["pid"]: p for p in json.loads(r.stdout)["processes"]}
    assert rows[pid]["profile"] == "loop" and rows[pid]["launch_id"] == data["launch_id"]
    assert rows[pid]["findings"] == {"error": 0, "warn": 0, "info": 0}
    assert sup.pid not in rows  # the supervisor itself carries no markers
    r = ccs("ps", env=base_env)
    outputs += [r.stdout, r.stderr]
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith(f"{pid} "))
    assert "loop" in line and data["launch_id"] in line and "clean" in line

    # the key is rotated while the child runs: key-drift, exit 3, in both formats
    assert ccs("key", "set", key_id, input=ROTATED_KEY, env=base_env).returncode == 0
    r = ccs("inspect", str(pid), env=base_env)
    outputs += [r.stdout, r.stderr]
    assert r.returncode == 3 and "key-drift" in r.stdout and "OPENAI_API_KEY" in r.stdout
    assert r.stderr.strip() == f"ccs: error: pid {pid}: 2 error finding(s)"
    r = ccs("inspect", str(pid), "--json", env=base_env)
    outputs += [r.stdout, r.stderr]
    assert r.returncode == 3
    assert {f["code"] for f in json.loads(r.stdout)["findings"]} == {"key-drift"}
    no_secret(*outputs)


def test_real_ccs_launch_of_an_executable_named_claude(setup, spawn, ccs, base_env, tmp_path):
    bindir = tmp_path / "claude-bin"
    bindir.mkdir()
    script = bindir / "claude"
    script.write_text(f"#!/bin/sh\n{SLEEP} 300\n")  # no exec: the sh process stays, named claude
    script.chmod(0o755)
    env = {**base_env, "PATH": f"{bindir}:{base_env['PATH']}"}
    work = tmp_path / "work"
    work.mkdir()
    sup = spawn([sys.executable, "-m", "ccswitch_tui", "launch", "loop", "claude"], env, cwd=work)
    pid = wait_for_child(sup, lambda p: any(a.endswith("/claude") for a in p.cmdline()))
    sleeper = wait_for_child(sup, lambda p: p.name() == "sleep")
    r = ccs("ps", "--json", env=base_env)
    rows = {p["pid"]: p for p in json.loads(r.stdout)["processes"]}
    assert rows[pid]["tool"] == "claude" and rows[pid]["profile"] == "loop" and "tool" in rows[pid]["reasons"]
    assert rows[pid]["findings"]["error"] == 0 and rows[pid]["cwd"] == str(work)
    assert rows[sleeper]["tool"] == "claude" and rows[sleeper]["reasons"] == ["marker"]
    r = ccs("inspect", str(pid), "--json", env=base_env)
    assert r.returncode == 0, r.stdout
    assert json.loads(r.stdout)["findings"] == []
    no_secret(r.stdout, r.stderr)


def test_cli_exit_codes_and_no_key_anywhere(setup, spawn, ccs, fake_bin, base_env, tmp_path):
    outputs: list[str] = []
    dirty = spawn([str(fake_bin / "claude"), "300"],
                  {**plan_env(setup, "claude", tmp_path), "ANTHROPIC_AUTH_TOKEN": OTHER_KEY,
                   "OPENAI_API_KEY": KEY, "CLAUDE_CODE_USE_BEDROCK": "1", "AWS_EC2_METADATA_DISABLED": "true"})
    unmanaged = spawn([str(fake_bin / "codex"), "300"],
                      {**parent_env(tmp_path), "OPENAI_API_KEY": KEY, "ANTHROPIC_AUTH_TOKEN": ROTATED_KEY})
    for args in (["inspect", str(dirty.pid)], ["inspect", str(dirty.pid), "--json"]):
        r = ccs(*args, env=base_env)
        outputs += [r.stdout, r.stderr]
        assert r.returncode == 3
        assert r.stderr.strip() == f"ccs: error: pid {dirty.pid}: 3 error finding(s)"
    assert {"key-drift", "foreign-family", "cloud-switch"} <= {f["code"] for f in json.loads(outputs[-2])["findings"]}
    # inspect judges the one process (its findings are errors: 3); ps lists them all and succeeds (0)
    for args, code in ((["inspect", str(unmanaged.pid)], 3), (["inspect", str(unmanaged.pid), "--json"], 3),
                       (["ps"], 0), (["ps", "--json"], 0), (["ps", "--all"], 0), (["ps", "--all", "--json"], 0)):
        r = ccs(*args, env=base_env)
        outputs += [r.stdout, r.stderr]
        assert r.returncode == code, r.stderr
        assert "Traceback" not in r.stderr
    rows = {p["pid"]: p for p in json.loads(outputs[-2])["processes"]}
    assert rows[dirty.pid]["findings"]["error"] == 3 and rows[unmanaged.pid]["profile"] is None

    gone = spawn([SLEEP, "300"], parent_env(tmp_path))
    gone.kill()
    gone.wait()
    for args in (["inspect", str(gone.pid)], ["inspect", "notapid"], ["inspect", str(dirty.pid), "--profile", "nope"],
                 ["inspect", str(dirty.pid), "--profile", "../x"]):
        r = ccs(*args, env=base_env)
        outputs += [r.stdout, r.stderr]
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr and r.stdout == ""
    no_secret(*outputs)


def test_finding_shape():
    f = Finding("key-drift", "error", "msg", pid=3, variable="X", family="claude")
    assert f.where == "pid 3: X"
    assert f.to_dict() == {"code": "key-drift", "severity": "error", "where": "pid 3: X", "pid": 3, "path": None,
                           "variable": "X", "family": "claude", "message": "msg"}
    with pytest.raises(ValueError):
        Finding("x", "fatal", "m")



@pytest.mark.parametrize(("name", "value", "out"), [
    ("ANTHROPIC_BASE_URL", "https://h/api", "https://h/api"),
    ("ANTHROPIC_MODEL", "claude-x", "claude-x"),
    ("HTTPS_PROXY", "http://me:pw@proxy:3128", "http://me:****@proxy:3128"),
    ("ANTHROPIC_AUTH_TOKEN", KEY, "sk-…cdef"),
    ("ANTHROPIC_AUTH_TOKEN", "short", "****"),
    ("ANTHROPIC_API_KEY", "/etc/passwd", "****"),
    ("CCS_LAUNCH_ID", "20261202T000000Z-abcd1234", "20261202T000000Z-abcd1234"),
    ("CLAUDE_CODE_USE_BEDROCK", "1", "1"),
    ("PATH", "/usr/bin:/bin", "/usr/bin:/bin"),
    ("API_TIMEOUT_MS", "600000", "600000"),
    ("MY_SETTING", "some opaque value here", "some opaque value here"),  # one rule: not secret, as `ccs env` shows it
    ("MY_SECRET_SETTING", "some opaque value here", "som…here"),
])
def test_values_are_masked_unless_known_non_secret(name, value, out):
    from ccswitch_tui.policy import shown

    assert shown(name, value) == out


def test_ps_all_leaves_out_ccs_itself_started_from_a_contaminated_shell(setup, spawn, ccs, base_env, tmp_path):
    """ccs's supervisor holds the shell's stale routing variables but passes none on: `ps --all`
    listed it as an unmanaged process with errors above its clean child. ccs's other processes (a
    shim, `python -m ccswitch_tui`) are its own too; any other process holding them is still listed."""
    dirty_env = {**base_env, "OPENAI_BASE_URL": "https://stale.example/v1", "ANTHROPIC_BASE_URL": "https://old.example"}
    sup = spawn([sys.executable, "-m", "ccswitch_tui", "run", "loop", "--", SLEEP, "300"], dirty_env, cwd=tmp_path)
    pid = wait_for_child(sup, lambda p: p.name() == "sleep" and "CCS_LAUNCH_ID" in p.environ())
    other = spawn([SLEEP, "300"], dirty_env, cwd=tmp_path)
    shim_like = spawn([sys.executable, "-I", "-c", "import time, ccswitch_tui; time.sleep(300)"], dirty_env,
                      cwd=tmp_path)
    for p in (other, shim_like):  # both run their own program, with the dirty environment, before ps looks
        wait_execed(p.pid, list(p.args))
    rows = {p["pid"]: p for p in json.loads(ccs("ps", "--all", "--json", env=base_env).stdout)["processes"]}
    assert rows[pid]["profile"] == "loop" and rows[pid]["findings"]["error"] == 0
    assert sup.pid not in rows and shim_like.pid not in rows
    assert rows[other.pid]["reasons"] == ["routing"] and rows[other.pid]["findings"]["error"] > 0
    text = ccs("ps", "--all", env=base_env).stdout
    assert not any(ln.startswith(f"{sup.pid} ") for ln in text.splitlines()), text


@pytest.mark.parametrize("argv,mine", [
    (["/usr/bin/python3", "/home/u/.local/bin/ccs", "launch", "p", "claude"], True),
    (["python3", "-m", "ccswitch_tui", "run", "p", "--", "x"], True),
    (["/v/bin/python", "-I", "-c", "import sys; import ccswitch_tui.shims as s; s.main()", "p", "s", "claude"], True),
    (["/usr/bin/python3", "/usr/bin/ccswitch"], True),
    (["ccs", "ps"], False),
    (["/usr/bin/python3", "agent.py", "ccswitch_tui"], False),
    (["node", "/x/ccs"], False),  # npm's @kaitranntt/ccs
    (["/usr/bin/python3", "-c", "print(1)"], False),
    (["sleep", "300"], False),
])
def test_ccs_own_processes_are_recognised_by_their_command_line(argv, mine):
    from ccswitch_tui.diagnose.processes import is_ccs

    assert is_ccs(argv) is mine

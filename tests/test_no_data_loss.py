"""Nothing lost under concurrency or interruption: parallel imports of one CC Switch database, parallel
`ccs edit`s of one profile, an edit racing an import merge, the key index and the keyring after a
failed write, and the temp files a killed writer leaves. All with real `ccs` processes started
together and the real Secret Service."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from conftest import forget_indexed_keys
from test_import_cc_switch import claude_row, codex_row, make_db

from ccswitch_tui.importers.cc_switch import plan_cc_switch
from ccswitch_tui.importers.planner import Planner
from ccswitch_tui.keys.keyring import SERVICE, KeyStore
from ccswitch_tui.paths import Paths, resolve_paths
from ccswitch_tui.profiles.store import Store


def ccs_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "ccswitch_tui", *args]


def start_together(argvs: list[list[str]], env: dict[str, str] | list[dict[str, str]]) -> list[subprocess.Popen]:
    envs = env if isinstance(env, list) else [env] * len(argvs)
    return [subprocess.Popen(a, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             stdin=subprocess.DEVNULL) for a, e in zip(argvs, envs, strict=True)]


def finish(procs: list[subprocess.Popen], timeout: float = 120) -> list[tuple[int, str, str]]:
    out = []
    for p in procs:
        so, se = p.communicate(timeout=timeout)
        out.append((p.returncode, so, se))
    return out


def keyring_value(kid: str) -> str | None:
    import keyring

    return keyring.get_password(SERVICE, kid)


def temp_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp")) if folder.is_dir() else []


# --- 1. concurrent imports of one CC Switch database ----------------------------------------------

@pytest.mark.parametrize("trial", range(3))
def test_concurrent_cc_switch_imports_keep_every_key(tmp_path, secret_service, trial):
    tag = uuid.uuid4().hex[:6]
    home = tmp_path / f"ccs-{trial}"
    paths = resolve_paths({"CCS_HOME": str(home)})
    k1, k2 = f"sk-one-{uuid.uuid4().hex}", f"sk-two-{uuid.uuid4().hex}"
    db = make_db(tmp_path / "cc" / "cc-switch.db", [
        claude_row("a", f"Gw {tag}", k1, "https://gw.example.com/api", ANTHROPIC_MODEL="m-1"),
        codex_row("b", f"Gw {tag}", k1, 'model_provider = "gw"\nmodel = "m-2"\n\n[model_providers.gw]\n'
                                         'name = "Gw"\nbase_url = "https://gw.example.com/v1"\n'),
        claude_row("c", f"Other {tag}", k2, "https://other.example.org/api"),
    ])
    env = {**os.environ, "CCS_HOME": str(home), "HOME": str(tmp_path / "home")}
    try:
        results = finish(start_together([ccs_cmd("import", "cc-switch", "--db", str(db), "--json")] * 4, env))
        actions: dict[str, list[str]] = {}
        for rc, out, err in results:
            assert rc == 0, err
            assert "Secret Service" not in err and "keyring" not in err, err
            for item in json.loads(out)["items"]:
                actions.setdefault(item["source"], []).append(item["action"])
        for source, seen in actions.items():
            # one process created or merged each row; every other one found it unchanged
            assert sorted(seen).count("unchanged") == 3, (source, seen)
            assert "error" not in seen, (source, seen)
        store = Store(paths)
        profiles = {e.name: e.profile for e in store.entries()}
        assert len(profiles) == 2 and all(profiles.values()), profiles
        values = {keyring_value(p.key_id) for p in profiles.values()}
        assert values == {k1, k2}  # each profile's key is in the keyring: no loser deleted it
        assert temp_files(paths.profiles) == [] and temp_files(paths.state) == []
    finally:
        forget_indexed_keys(paths)


# --- 2. lost updates ------------------------------------------------------------------------------

PROFILE = """\
# a hand-written profile
schema = 1
description = "edited in parallel"

[provider]
name = "Relay"
base_url = "https://relay.example.com/api"
key = "{key}"

[claude]
auth = "token"
"""


def script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / f"{name}.sh"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_parallel_edits_never_drop_a_saved_change(ccs_home: Paths, tmp_path):
    ccs_home.profiles.mkdir(parents=True)
    target = ccs_home.profiles / "p.toml"
    target.write_text(PROFILE.format(key="relay-key"))
    editor = script(tmp_path, "append", 'sleep 0.5\nprintf "# change %s\\n" "$TAG" >> "$1"\n')
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    envs = [{**os.environ, "EDITOR": editor, "TAG": f"n{i}", "TMPDIR": str(scratch)} for i in range(20)]
    envs = [{k: v for k, v in e.items() if k != "VISUAL"} for e in envs]
    results = finish(start_together([ccs_cmd("edit", "p")] * 20, envs))
    final = target.read_text()
    saved, refused = [], []
    for i, (rc, out, err) in enumerate(results):
        assert "Traceback" not in err
        if rc == 0:
            assert out.strip() == f"saved {target}"
            saved.append(i)
        else:
            assert rc == 2 and len(err.strip().splitlines()) == 1, err
            assert "changed on disk since it was read" in err
            kept = Path(err.split("kept in ")[1].split(":")[0])
            assert f"# change n{i}\n" in kept.read_text()  # the refused edit is kept, named
            refused.append(i)
    assert saved, results
    for i in saved:
        assert f"# change n{i}\n" in final, (i, final)  # every "saved" is in the file
    for i in refused:
        assert f"# change n{i}\n" not in final
    assert len(saved) + len(refused) == 20


def test_edit_does_not_undo_a_concurrent_import_merge(ccs_home: Paths, tmp_path, key_id):
    KeyStore(ccs_home).set(key_id, key := f"sk-merge-{uuid.uuid4().hex}")
    ccs_home.profiles.mkdir(parents=True, exist_ok=True)
    target = ccs_home.profiles / "relay.toml"
    target.write_text(PROFILE.format(key=key_id))
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text('model_provider = "relay"\nmodel = "gpt-4.1"\n\n'
                                            '[model_providers.relay]\nname = "Relay"\n'
                                            'base_url = "https://relay.example.com/v1"\n')
    (codex_home / "auth.json").write_text(json.dumps({"OPENAI_API_KEY": key}))
    go = tmp_path / "go"
    editor = script(tmp_path, "slow", f'while [ ! -e "{go}" ]; do sleep 0.05; done\necho "# mine" >> "$1"\n')
    env = {k: v for k, v in os.environ.items() if k != "VISUAL"} | {"EDITOR": editor, "TMPDIR": str(tmp_path)}
    edit = subprocess.Popen(ccs_cmd("edit", "relay"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 30
        while not list(tmp_path.glob("ccs-relay-*.toml")) and time.monotonic() < deadline:
            time.sleep(0.05)
        imp = subprocess.run(ccs_cmd("import", "codex", "--home", str(codex_home), "--json"), env=env,
                             capture_output=True, text=True, timeout=60)
        assert imp.returncode == 0, imp.stderr
        assert [i["action"] for i in json.loads(imp.stdout)["items"]] == ["merged"]
        go.touch()
        out, err = edit.communicate(timeout=60)
    finally:
        edit.kill()
    assert edit.returncode == 2, (out, err)
    assert "[codex]" in target.read_text()  # the merge survived
    kept = Path(err.split("kept in ")[1].split(":")[0])
    assert kept.read_text().endswith("# mine\n") and "[codex]" not in kept.read_text()


def test_tui_save_refuses_over_a_change_made_meanwhile(ccs_home: Paths, tmp_path):
    from ccswitch_tui.errors import UsageError
    from ccswitch_tui.tui.service import Service

    ccs_home.profiles.mkdir(parents=True)
    target = ccs_home.profiles / "p.toml"
    target.write_text(original := PROFILE.format(key="k"))
    service = Service(ccs_home, Store(ccs_home), KeyStore(ccs_home), {}, tmp_path)
    target.write_text(original + "# someone else\n")
    with pytest.raises(UsageError, match="changed on disk"):
        service.save_text("p", original + "# mine\n", expected=original)
    assert target.read_text().endswith("# someone else\n")


# --- 3. the key index and the keyring agree -------------------------------------------------------

def in_namespace(mounts: str, argv: list[str], **kw) -> subprocess.CompletedProcess:
    """Run ``argv`` in a private mount namespace after the shell ``mounts`` (a real tmpfs that can be
    filled, a read-only bind mount): the real way to make a folder full or read-only here."""
    import shlex

    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    if probe.returncode != 0:
        from conftest import skip_or_fail

        skip_or_fail(f"no private mount namespaces here (unshare -rm: {probe.stderr.decode().strip()})")
    return subprocess.run(["unshare", "-rm", "sh", "-c", f"{mounts} && exec {shlex.join(argv)}"],
                          capture_output=True, text=True, timeout=60, **kw)


@pytest.mark.parametrize("how", ["lock-is-a-folder", "read-only", "full"])
def test_key_set_that_cannot_write_the_index_stores_nothing(ccs, ccs_home: Paths, key_id, how):
    state = ccs_home.state
    state.mkdir(parents=True)
    value = "sk-unindexed-" + uuid.uuid4().hex
    if how == "lock-is-a-folder":
        (state / ".keys.lock").mkdir()  # the index can be read but not written
        r = ccs("key", "set", key_id, input=value)
    else:
        mounts = {"read-only": f"mount --bind {state} {state} && mount -o remount,ro,bind {state}",
                  "full": f"mount -t tmpfs -o size=16k none {state} && "
                          f"(dd if=/dev/zero of={state}/fill bs=4k count=64 2>/dev/null; true)"}[how]
        r = in_namespace(mounts, ccs_cmd("key", "set", key_id), input=value, env=dict(os.environ))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert keyring_value(key_id) is None  # no key that the index does not know


def test_a_failed_import_leaves_no_orphan_and_the_next_one_reuses_the_id(tmp_path, ccs_home: Paths, secret_service):
    tag = uuid.uuid4().hex[:6]
    key = f"sk-gw-{uuid.uuid4().hex}"
    db = make_db(tmp_path / "cc" / "cc-switch.db", [claude_row("a", f"gw{tag}", key, "https://gw.example.com")])
    env = {**os.environ, "CCS_HOME": str(ccs_home.profiles.parent), "HOME": str(tmp_path / "home")}
    ccs_home.state.mkdir(parents=True)
    (ccs_home.state / ".keys.lock").mkdir()  # the index cannot be written
    try:
        r = subprocess.run(ccs_cmd("import", "cc-switch", "--db", str(db)), env=env, capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert keyring_value(f"gw{tag}") is None
        assert not list(ccs_home.profiles.glob("*.toml"))
        (ccs_home.state / ".keys.lock").rmdir()
        r = subprocess.run(ccs_cmd("import", "cc-switch", "--db", str(db), "--json"), env=env,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        (item,) = json.loads(r.stdout)["items"]
        assert (item["action"], item["key_id"], item["key"]) == ("created", f"gw{tag}", "stored")
    finally:
        forget_indexed_keys(ccs_home)


def test_an_import_that_cannot_write_takes_back_only_its_own_keys(tmp_path, ccs_home: Paths, secret_service):
    tag = uuid.uuid4().hex[:6]
    key = f"sk-gw-{uuid.uuid4().hex}"
    db = make_db(tmp_path / "cc" / "cc-switch.db", [claude_row("a", f"gw{tag}", key, "https://gw.example.com"),
                                                    claude_row("b", f"hub{tag}", key + "x", "https://hub.example")])
    store, keys = Store(ccs_home), KeyStore(ccs_home)
    try:
        planner = Planner(store, keys)
        plan_cc_switch(planner, db, None)
        # meanwhile, a profile of the same name appears, and someone stores a key under the other id
        store.save_text(f"gw{tag}", PROFILE.format(key="elsewhere"), create=True)
        keys.set(f"hub{tag}", "sk-set-meanwhile-by-hand")
        planner.apply()
        actions = {i.name: (i.action, i.reason) for i in planner.items}
        assert actions[f"gw{tag}"][0] == "error" and "already exists" in actions[f"gw{tag}"][1]
        assert keys.get(f"gw{tag}") is None  # created by this call, taken back
        assert f"gw{tag}" not in keys.ids()
        assert keys.get(f"hub{tag}") == key + "x"  # written: kept
    finally:
        forget_indexed_keys(ccs_home)


def test_a_key_removed_meanwhile_is_not_blamed_on_the_keyring(ccs_home: Paths, key_id):
    keys = KeyStore(ccs_home)
    keys.set(key_id, "sk-removed-" + uuid.uuid4().hex)
    import keyring

    keyring.delete_password(SERVICE, key_id)  # another process removes it
    assert keys.get(key_id) is None
    assert keys.delete(key_id) is False


# `ccs key rm` in a child whose Item.delete first has `secret-tool` (another process, on the real
# session bus) remove the item: ccs's search found it, the delete then meets the real Secret
# Service's "no such object". The wrap is only the hook that puts the other process in that window.
_REMOVED_MEANWHILE = """
import subprocess, sys
import secretstorage.item
real = secretstorage.item.Item.delete
def delete(self):
    kid = sys.argv[1]
    subprocess.run(["secret-tool", "clear", "service", "ccswitch-tui", "username", kid], check=True)
    gone = subprocess.run(["secret-tool", "lookup", "service", "ccswitch-tui", "username", kid],
                          capture_output=True)
    assert gone.returncode != 0 and not gone.stdout, gone  # secret-tool's "not found" (its own status)
    print("removed-meanwhile", file=sys.stderr, flush=True)
    return real(self)
secretstorage.item.Item.delete = delete
from ccswitch_tui.cli import run
sys.exit(run(["key", "rm", kid := sys.argv[1], "--yes"]))
"""


def test_a_key_removed_between_the_search_and_the_delete_is_not_blamed_on_the_keyring(ccs_home: Paths, key_id):
    import shutil

    if shutil.which("secret-tool") is None:
        from conftest import skip_or_fail

        skip_or_fail("secret-tool (libsecret-tools) is not installed")
    KeyStore(ccs_home).set(key_id, "sk-removed-" + uuid.uuid4().hex)
    assert key_id in KeyStore(ccs_home).ids()
    r = subprocess.run([sys.executable, "-c", _REMOVED_MEANWHILE, key_id], capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    lines = r.stderr.splitlines()
    assert lines[0] == "removed-meanwhile", r.stderr  # the race happened, in the window
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert lines[1:] == [f"ccs: error: no key stored for id {key_id!r}; see `ccs key list`"], r.stderr
    assert "Traceback" not in r.stderr
    assert keyring_value(key_id) is None
    assert key_id not in KeyStore(ccs_home).ids()  # the index follows the keyring


# --- 4. temp files ----------------------------------------------------------------------------------

def test_kill_9_during_cp_leaves_no_temp_file_after_the_next_write(ccs, ccs_home: Paths):
    ccs_home.profiles.mkdir(parents=True)
    (ccs_home.profiles / "src.toml").write_text(PROFILE.format(key="k") + "# padding\n" * 20000)
    env = {**os.environ}
    rng = random.Random(9)
    for i in range(8):
        p = subprocess.Popen(ccs_cmd("cp", "src", f"c{i}"), env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, 0.4))
        p.send_signal(signal.SIGKILL)
        p.wait()
    # a writer killed between its temp file and the rename, for certain; a file of the user's stays
    (ccs_home.profiles / ".c99.toml.x1y2z3w4.tmp").write_text("half")
    (ccs_home.profiles / ".my-notes.tmp").write_text("mine")
    assert ccs("cp", "src", "final").returncode == 0
    assert temp_files(ccs_home.profiles) == [".my-notes.tmp"]
    assert (ccs_home.profiles / "final.toml").read_text() == (ccs_home.profiles / "src.toml").read_text()
    # and `ccs rm` sweeps too
    (ccs_home.profiles / ".c98.toml.abc_1234.tmp").write_text("half")
    assert ccs("rm", "final", "--yes").returncode == 0
    assert temp_files(ccs_home.profiles) == [".my-notes.tmp"]


def test_a_stale_index_temp_file_is_swept_by_the_next_key_write(ccs, ccs_home: Paths, key_id):
    ccs_home.state.mkdir(parents=True)
    stale = ccs_home.state / ".keys.json.q9w8e7r6.tmp"
    stale.write_text('{"keys": ["half"]}')
    assert ccs("key", "set", key_id, input="sk-sweep-" + uuid.uuid4().hex).returncode == 0
    assert not stale.exists()


# a `ccs` whose rename of one file waits, so that a SIGKILL lands between atomic_write's temp file and
# its rename for certain (os.replace is wrapped in the child only to hold it in that window)
_HELD = """
import fnmatch, os, sys, time
real = os.replace
def held(src, dst, *a, **k):
    if fnmatch.fnmatch(str(dst), sys.argv[1]):
        print("in-window", flush=True)
        time.sleep(600)
    return real(src, dst, *a, **k)
os.replace = held
from ccswitch_tui.cli import run
sys.exit(run(sys.argv[2:]))
"""


def killed_while_writing(target: Path | str, args: list[str], env: dict[str, str]) -> None:
    """Run `ccs ARGS` and SIGKILL it after it wrote the temp file of ``target`` (a glob), before the
    rename."""
    p = subprocess.Popen([sys.executable, "-c", _HELD, str(target), *args], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        line = p.stdout.readline()
    finally:
        p.send_signal(signal.SIGKILL)
        _, err = p.communicate(timeout=30)
    assert line == "in-window\n", (line, err)


LAUNCHABLE = """\
schema = 1

[provider]
name = "Relay"
base_url = "https://relay.example.com/api"
key = "env:CCS_SWEEP_KEY"

[claude]
auth = "token"

[codex]
model = "m-1"

[run]
export = ["openai"]
"""


def launch_env(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("claude", "codex"):
        (bin_dir / tool).write_text("#!/bin/sh\nexit 0\n")
        (bin_dir / tool).chmod(0o755)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(home),
            "CCS_SWEEP_KEY": "sk-sweep-" + "k" * 24}


@pytest.mark.parametrize("tool,name", [("codex", "config.toml"), ("claude", "ccs-settings.json")])
def test_a_launch_killed_mid_write_leaves_a_temp_file_the_next_launch_sweeps(ccs, ccs_home: Paths, tmp_path,
                                                                            tool, name):
    ccs_home.profiles.mkdir(parents=True)
    (ccs_home.profiles / "p.toml").write_text(LAUNCHABLE)
    env = launch_env(tmp_path)
    folder = ccs_home.tool_dir("p", tool)
    killed_while_writing(folder / name, ["launch", "p", tool], env)
    (left,) = temp_files(folder)
    assert left.startswith(f".{name}.")
    # the user's own files and the temp file of a file ccs does not write there stay
    (folder / ".notes.tmp").write_text("mine")
    (folder / ".AGENTS.md.abcd1234.tmp").write_text("another program's")
    r = ccs("launch", "p", tool, env=env)
    assert r.returncode == 0, r.stderr
    assert temp_files(folder) == [".AGENTS.md.abcd1234.tmp", ".notes.tmp"]
    assert (folder / name).stat().st_size > 0


def test_a_salt_writer_killed_mid_write_leaves_a_temp_file_the_next_write_sweeps(ccs, ccs_home: Paths, tmp_path):
    ccs_home.profiles.mkdir(parents=True)
    (ccs_home.profiles / "p.toml").write_text(LAUNCHABLE)
    env = launch_env(tmp_path)
    killed_while_writing(ccs_home.salt, ["run", "p", "--", "true"], env)
    assert not ccs_home.salt.exists()
    (left,) = temp_files(ccs_home.state)
    assert left.startswith(".salt.")
    assert ccs("run", "p", "--", "true", env=env).returncode == 0
    assert temp_files(ccs_home.state) == []
    assert len(bytes.fromhex(ccs_home.salt.read_text().strip())) == 32


def test_a_manifest_temp_file_is_swept_only_once_no_live_writer_can_own_it(ccs, ccs_home: Paths, tmp_path):
    from ccswitch_tui.runs.manifests import STALE_TEMP_SECONDS

    ccs_home.profiles.mkdir(parents=True)
    (ccs_home.profiles / "p.toml").write_text(LAUNCHABLE)
    env = launch_env(tmp_path)
    assert ccs("run", "p", "--", "true", env=env).returncode == 0  # the salt and runs/ exist
    killed_while_writing(ccs_home.runs / "*.json", ["run", "p", "--", "true"], env)
    (fresh,) = (ccs_home.runs / name for name in temp_files(ccs_home.runs))
    # manifests are written without a lock: a fresh temp file may be a live `ccs run`'s, so it stays
    old = ccs_home.runs / ".20260101T000000Z-0000dead.json.o1l2d3x4.tmp"
    old.write_text("{")
    mine = ccs_home.runs / ".notes.tmp"
    mine.write_text("mine")
    hour_ago = time.time() - STALE_TEMP_SECONDS - 60
    os.utime(old, (hour_ago, hour_ago))
    os.utime(mine, (hour_ago, hour_ago))
    r = ccs("runs", env=env)
    assert r.returncode == 0, r.stderr
    assert temp_files(ccs_home.runs) == sorted([fresh.name, mine.name])
    os.utime(fresh, (hour_ago, hour_ago))
    assert ccs("runs", env=env).returncode == 0
    assert temp_files(ccs_home.runs) == [mine.name]


def test_a_stale_tui_settings_temp_file_is_swept_by_the_next_save(ccs_home: Paths):
    from ccswitch_tui.runs.manifests import STALE_TEMP_SECONDS
    from ccswitch_tui.tui.settings import load_settings, save_setting

    ccs_home.state.mkdir(parents=True)
    old = ccs_home.state / ".tui.json.a1b2c3d4.tmp"
    fresh = ccs_home.state / ".tui.json.e5f6g7h8.tmp"  # perhaps another TUI's, mid-write
    for p in (old, fresh):
        p.write_text("{")
    hour_ago = time.time() - STALE_TEMP_SECONDS - 60
    os.utime(old, (hour_ago, hour_ago))
    save_setting(ccs_home, "theme", "nord")
    assert temp_files(ccs_home.state) == [fresh.name]
    assert load_settings(ccs_home) == {"theme": "nord"}


def test_sigterm_during_edit_ends_the_editor_and_removes_the_copy(ccs_home: Paths, tmp_path):
    ccs_home.profiles.mkdir(parents=True)
    target = ccs_home.profiles / "p.toml"
    target.write_text(original := PROFILE.format(key="k"))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    pidfile = tmp_path / "editor.pid"
    editor = script(tmp_path, "waits", f'echo $$ > "{pidfile}"\nexec sleep 60\n')
    env = {k: v for k, v in os.environ.items() if k != "VISUAL"} | {"EDITOR": editor, "TMPDIR": str(scratch)}
    for sig, code in ((signal.SIGTERM, 143), (signal.SIGHUP, 129)):
        pidfile.unlink(missing_ok=True)
        p = subprocess.Popen(ccs_cmd("edit", "p"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        editor_pid = int(pidfile.read_text())
        p.send_signal(sig)
        _, err = p.communicate(timeout=30)
        assert p.returncode == code, err
        assert err.strip().splitlines() == [f"ccs: error: stopped by {sig.name} while editing; {target} left unchanged"]
        assert list(scratch.iterdir()) == []
        assert target.read_text() == original
        time.sleep(0.2)
        stat = Path(f"/proc/{editor_pid}/stat")
        assert not stat.exists() or stat.read_text().split()[2] == "Z"  # the editor was ended


def test_sigterm_during_edit_keeps_a_changed_copy_and_names_it(ccs_home: Paths, tmp_path):
    ccs_home.profiles.mkdir(parents=True)
    (ccs_home.profiles / "p.toml").write_text(PROFILE.format(key="k"))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    ready = tmp_path / "ready"
    editor = script(tmp_path, "writes", f'echo "# half done" >> "$1"\ntouch "{ready}"\nexec sleep 60\n')
    env = {k: v for k, v in os.environ.items() if k != "VISUAL"} | {"EDITOR": editor, "TMPDIR": str(scratch)}
    p = subprocess.Popen(ccs_cmd("edit", "p"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 143
    (kept,) = scratch.iterdir()
    assert err.strip().endswith(f"your edit is kept in {kept}")
    assert kept.read_text().endswith("# half done\n")


# --- further cases of the same kinds ------------------------------------------------------------------

@pytest.mark.parametrize("trial", range(2))
def test_a_claude_and_a_codex_import_at_once_make_one_profile_with_both(tmp_path, secret_service, trial):
    """Two different imports of one provider race to create and to merge: both tools end in one
    profile, with its key, whichever runs first."""
    home = tmp_path / "ccs"
    paths = resolve_paths({"CCS_HOME": str(home)})
    key = f"sk-both-{uuid.uuid4().hex}"
    tag = uuid.uuid4().hex[:6]
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"env": {"ANTHROPIC_BASE_URL": "https://both.example.com/anthropic",
                                            "ANTHROPIC_AUTH_TOKEN": key}}))
    codex = tmp_path / "codex"
    codex.mkdir()
    (codex / "config.toml").write_text(f'model_provider = "b{tag}"\nmodel = "m-1"\n\n[model_providers.b{tag}]\n'
                                       f'name = "both{tag}"\nbase_url = "https://both.example.com/v1"\n')
    (codex / "auth.json").write_text(json.dumps({"OPENAI_API_KEY": key}))
    env = {**os.environ, "CCS_HOME": str(home), "HOME": str(tmp_path / "home")}
    try:
        results = finish(start_together([ccs_cmd("import", "claude", "--settings", str(settings), "--name",
                                                  f"both{tag}"),
                                         ccs_cmd("import", "codex", "--home", str(codex))], env))
        assert all(rc == 0 for rc, _, _ in results), results
        profiles = [e.profile for e in Store(paths).entries()]
        assert len(profiles) == 1 and profiles[0] is not None, results
        assert set(profiles[0].tools) >= {"claude", "codex"}
        assert keyring_value(profiles[0].key_id) == key
    finally:
        forget_indexed_keys(paths)


def test_key_set_and_rm_at_once_leave_index_and_keyring_agreeing(ccs_home: Paths, key_id):
    env = {**os.environ}
    for _ in range(3):
        argvs = [ccs_cmd("key", "set", key_id) if i % 2 == 0 else ccs_cmd("key", "rm", key_id, "--yes")
                 for i in range(8)]
        procs = [subprocess.Popen(a, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for a in argvs]
        for i, p in enumerate(procs):
            _, err = p.communicate(input=f"sk-race-{i}-" + "q" * 24, timeout=120)
            assert "Traceback" not in err and "unavailable" not in err, err
        indexed = key_id in KeyStore(ccs_home).ids()
        assert indexed == (keyring_value(key_id) is not None)


def test_edit_of_a_profile_removed_meanwhile_says_so_and_keeps_the_edit(ccs_home: Paths, tmp_path):
    ccs_home.profiles.mkdir(parents=True)
    target = ccs_home.profiles / "p.toml"
    target.write_text(PROFILE.format(key="k"))
    editor = script(tmp_path, "rm", f'rm "{target}"\necho "# mine" >> "$1"\n')
    env = {k: v for k, v in os.environ.items() if k != "VISUAL"} | {"EDITOR": editor, "TMPDIR": str(tmp_path)}
    r = subprocess.run(ccs_cmd("edit", "p"), env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "was removed since it was read" in r.stderr, r.stderr
    assert not target.exists()  # not brought back behind the remover's back
    kept = Path(r.stderr.split("kept in ")[1].split(":")[0])
    assert kept.read_text().endswith("# mine\n")


def test_an_edit_that_changes_nothing_after_a_concurrent_save_does_not_overwrite(ccs_home: Paths, tmp_path):
    ccs_home.profiles.mkdir(parents=True)
    target = ccs_home.profiles / "p.toml"
    target.write_text(PROFILE.format(key="k"))
    # the editor saves nothing, but someone else saves meanwhile: the other save stays
    editor = script(tmp_path, "other", f'echo "# other" >> "{target}"\n')
    env = {k: v for k, v in os.environ.items() if k != "VISUAL"} | {"EDITOR": editor, "TMPDIR": str(tmp_path)}
    r = subprocess.run(ccs_cmd("edit", "p"), env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("no changes")
    assert target.read_text().endswith("# other\n")
    assert not list(tmp_path.glob("ccs-p-*.toml"))

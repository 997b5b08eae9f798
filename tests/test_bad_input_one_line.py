"""Hostile and careless input: every case is one line with the right exit code, never a traceback,
a hang or an "internal error", and one bad file never breaks commands over the other profiles.

Files nested thousands of levels deep, FIFOs and links to /dev/zero where files belong, files that
are not UTF-8 or too large, damaged run manifests, odd run ids, a broken keyring configuration, NUL
and blank values, wrong-typed routing fields in CC Switch rows, BOMs, misnamed profile files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from test_import_cc_switch import claude_row, codex_row, make_db

from ccswitch_tui.paths import Paths

GOOD = """\
schema = 1
description = "the good one"

[provider]
name = "Good"
base_url = "https://good.example/api"
key = "env:CCS_T_KEY"

[claude]
auth = "token"

[codex]
model = "m-1"

[run]
export = ["openai"]
"""
KEY = "sk-hardening-" + "Q7x2Lm9P" * 3


def deep_toml(n: int = 600, kind: str = "array") -> str:
    if kind == "mixed":
        return f"x = {'[{a = ' * n}1{'}]' * n}\n"
    return f"x = {'[' * n}{']' * n}\n" if kind == "array" else f"x = {'{a = ' * n}1{'}' * n}\n"


def deep_json(n: int = 3000) -> str:
    return '{"env": ' + "[" * n + "]" * n + "}"


def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None, input: str | None = None,
        timeout: float = 30) -> subprocess.CompletedProcess:
    full = {**os.environ, "CCS_T_KEY": KEY, **(env or {})}
    return subprocess.run([sys.executable, "-m", "ccswitch_tui", *args], env=full, cwd=cwd, input=input,
                          capture_output=True, text=True, timeout=timeout,
                          stdin=None if input is not None else subprocess.DEVNULL)


def clean(r: subprocess.CompletedProcess) -> None:
    text = r.stdout + r.stderr
    assert "Traceback" not in text and "internal error" not in text and "RecursionError" not in text, text


def one_line(r: subprocess.CompletedProcess, code: int = 2) -> str:
    clean(r)
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


def ok(r: subprocess.CompletedProcess) -> str:
    clean(r)
    assert r.returncode == 0, (r.returncode, r.stderr)
    return r.stdout


@pytest.fixture
def home(ccs_home: Paths) -> Paths:
    ccs_home.profiles.mkdir(parents=True)
    (ccs_home.profiles / "good.toml").write_text(GOOD)
    return ccs_home


def listed(home: Paths) -> dict[str, dict]:
    return {r["name"]: r for r in json.loads(ok(run("list", "--json")))["profiles"]}


# --- 11. nesting too deep --------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["array", "table", "mixed"])
def test_a_deeply_nested_profile_is_one_broken_entry(home: Paths, kind, tmp_path):
    (home.profiles / "deep.toml").write_text(GOOD + deep_toml(kind=kind))
    rows = listed(home)
    assert rows["good"]["ok"] and not rows["deep"]["ok"]
    assert "nested" in rows["deep"]["error"] and "deep" in rows["deep"]["error"]
    assert "nested" in one_line(run("show", "deep"))
    assert str(home.profiles / "deep.toml") + ":17:" in one_line(run("show", "deep"))
    ok(run("key", "list"))
    ok(run("env", "good"))
    r = run("doctor", "--json", env={"HOME": str(tmp_path)})
    clean(r)
    assert r.returncode == 3, r.stderr  # the broken profile is an error finding


def test_deeply_nested_json_everywhere_is_one_line(home: Paths, tmp_path):
    # a run manifest
    home.runs.mkdir(parents=True)
    (home.runs / "20260101T000000Z-deadbeef.json").write_text(deep_json())
    ok(run("runs"))
    ok(run("ps"))
    assert "not a readable run manifest" in one_line(run("runs", "diff", "20260101T000000Z-deadbeef", "x"))
    # the key index
    (home.state / "keys.json").write_text('{"keys": ' + "[" * 3000 + "]" * 3000 + "}")
    ok(run("key", "list"))
    # Claude Code's live settings
    settings = tmp_path / "settings.json"
    settings.write_text(deep_json())
    line = one_line(run("import", "claude", "--settings", str(settings), "--dry-run"))
    assert f"{settings}:1:" in line and "nested too deeply" in line
    # a repository's .claude/settings.json: a warning naming the file, the launch plan still made
    repo = tmp_path / "repo"
    (repo / ".claude").mkdir(parents=True)
    (repo / ".claude" / "settings.json").write_text(deep_json())
    r = run("env", "good", "--tool", "claude", "--cwd", str(repo))
    ok(r)
    assert "nested too deeply" in r.stderr
    # Codex's config.toml
    codex = tmp_path / "codex"
    codex.mkdir()
    (codex / "config.toml").write_text('model = "m"\n' + deep_toml())
    line = one_line(run("import", "codex", "--home", str(codex), "--dry-run"))
    assert "nested too deeply" in line or "not valid TOML" in line


def test_deep_json_in_cc_switch_rows_and_config(home: Paths, tmp_path):
    db = make_db(tmp_path / "cc" / "cc-switch.db", [
        {"id": "deep", "app": "claude", "name": "Deep", "settings": deep_json()},
        {"id": "meta", "app": "claude", "name": "Meta", "settings": {"env": {
            "ANTHROPIC_BASE_URL": "https://meta.example", "ANTHROPIC_AUTH_TOKEN": "sk-" + "m" * 30}},
         "meta": None},
        claude_row("fine", "Fine", "sk-fine-" + "f" * 30, "https://fine.example"),
        {**claude_row("dmeta", "Dmeta", "sk-dmeta-" + "d" * 30, "https://dmeta.example"),
         "meta": None},
        codex_row("dtoml", "Dtoml", "sk-dtoml-" + "t" * 30, 'model = "m"\n' + deep_toml()),
    ])
    import sqlite3

    con = sqlite3.connect(db)
    con.execute("UPDATE providers SET meta = ? WHERE id = 'dmeta'", ("[" * 3000 + "]" * 3000,))
    con.commit()
    con.close()
    out = json.loads(ok(run("import", "cc-switch", "--db", str(db), "--dry-run", "--json")))
    items = {i["source"]: i for i in out["items"]}
    assert items["db:claude/deep"]["action"] == "error"
    assert "nested too deeply" in items["db:claude/deep"]["reason"]
    assert items["db:claude/fine"]["action"] == "created"
    assert items["db:claude/dmeta"]["action"] == "created"  # a meta that cannot be read is ignored, with a warning
    assert any("meta" in w for w in items["db:claude/dmeta"]["warnings"])
    assert items["db:codex/dtoml"]["action"] == "error" and "nested" in items["db:codex/dtoml"]["reason"]
    (db.parent / "config.json").write_text(deep_json())
    out = json.loads(ok(run("import", "cc-switch", "--db", str(db), "--dry-run", "--json")))
    assert any("nested too deeply" in (i["reason"] or "") for i in out["items"])


# --- 12. not regular files, not UTF-8, too large -----------------------------------------------------

def test_fifo_dev_zero_and_huge_profiles_do_not_hang_list(home: Paths):
    os.mkfifo(home.profiles / "x.toml")
    (home.profiles / "zero.toml").symlink_to("/dev/zero")
    (home.profiles / "huge.toml").write_text(GOOD + "# " + "x" * (9 * 1024 * 1024) + "\n")
    (home.profiles / "latin.toml").write_bytes(GOOD.encode() + b'# caf\xe9\n')
    rows = listed(home)
    assert rows["good"]["ok"]
    assert "FIFO" in rows["x"]["error"]
    assert "character device" in rows["zero"]["error"]
    assert "limit" in rows["huge"]["error"]
    assert "not UTF-8" in rows["latin"]["error"] and "0xe9" in rows["latin"]["error"]
    assert "FIFO" in one_line(run("show", "x"))
    ok(run("key", "list"))


@pytest.mark.parametrize("what", ["fifo", "dev-zero", "latin-1", "directory"])
def test_a_repository_settings_file_that_is_no_file_is_a_warning_not_a_hang(home: Paths, tmp_path, what):
    repo = tmp_path / "repo"
    (repo / ".claude").mkdir(parents=True)
    target = repo / ".claude" / "settings.json"
    if what == "fifo":
        os.mkfifo(target)
    elif what == "dev-zero":
        target.symlink_to("/dev/zero")
    elif what == "directory":
        target.mkdir()
    else:
        target.write_bytes(b'{"env": {"X": "caf\xe9"}}')
    r = run("env", "good", "--tool", "claude", "--cwd", str(repo), timeout=20)
    ok(r)
    assert str(target) in r.stderr
    r = run("doctor", cwd=repo, env={"HOME": str(tmp_path)}, timeout=30)
    clean(r)


@pytest.mark.parametrize("what", ["fifo", "dev-zero", "latin-1"])
def test_live_and_cc_switch_sources_that_are_no_files(home: Paths, tmp_path, what):
    settings = tmp_path / "settings.json"
    config = tmp_path / "cc" / "config.json"
    config.parent.mkdir()
    for path in (settings, config):
        if what == "fifo":
            os.mkfifo(path)
        elif what == "dev-zero":
            path.symlink_to("/dev/zero")
        else:
            path.write_bytes(b'{"env": {"ANTHROPIC_BASE_URL": "https://x.example/\xff"}}')
    line = one_line(run("import", "claude", "--settings", str(settings), "--dry-run", timeout=20))
    assert str(settings) in line
    line = one_line(run("import", "cc-switch", "--db", str(config.parent / "cc-switch.db"), "--dry-run",
                        timeout=20))
    assert str(config) in line


def test_a_fifo_among_the_run_manifests(home: Paths):
    home.runs.mkdir(parents=True)
    os.mkfifo(home.runs / "20260101T000000Z-0000fifo.json")
    ok(run("runs", timeout=20))
    assert "not a readable run manifest" in one_line(run("runs", "diff", "20260101T000000Z-0000fifo", "y"))


# --- files a launch reads beside the profile: the user's shared pieces, the profile's own configs ------

def plant(path: Path, what: str, toml: bool = False) -> None:
    """Put something that is no readable file where ``path`` belongs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if what == "fifo":
        os.mkfifo(path)
    elif what == "deep":
        path.write_text(deep_toml() if toml else deep_json())
    else:  # latin-1
        path.write_bytes(b'model = "caf\xe9"\n' if toml else b'{"theme": "caf\xe9"}')


@pytest.mark.parametrize("what", ["fifo", "deep", "latin-1"])
@pytest.mark.parametrize("piece", ["user-claude-json", "profile-claude-json", "user-codex-config"])
def test_a_shared_piece_that_cannot_be_read_is_a_warning_naming_it(home: Paths, tmp_path, what, piece):
    user = tmp_path / "home"
    user.mkdir()
    target, tool = {
        "user-claude-json": (user / ".claude.json", "claude"),
        "profile-claude-json": (home.tool_dir("good", "claude") / ".claude.json", "claude"),
        "user-codex-config": (user / ".codex" / "config.toml", "codex"),
    }[piece]
    if piece == "profile-claude-json":  # the user's file is fine: there is something to copy in
        (user / ".claude.json").write_text(json.dumps({"hasCompletedOnboarding": True}))
    plant(target, what, toml=target.suffix == ".toml")
    r = run("env", "good", "--tool", tool, env={"HOME": str(user)}, timeout=20)
    ok(r)  # the launch plan is still made
    warning = [line for line in r.stderr.splitlines() if str(target) in line]
    assert len(warning) == 1, r.stderr
    assert "not shared" in warning[0] or "not copied" in warning[0], warning
    if what == "fifo":
        assert "FIFO" in warning[0]
    elif what == "deep":
        assert "nested too deeply" in warning[0]
    else:
        assert "not UTF-8" in warning[0] and "0xe9" in warning[0]


def fake_client(folder: Path, name: str) -> Path:
    """A stand-in for the client on PATH: the launch gets as far as running it."""
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / name
    exe.write_text("#!/bin/sh\necho stand-in ran\n")
    exe.chmod(0o755)
    return folder


def test_a_launch_goes_on_past_a_shared_piece_that_is_a_fifo(home: Paths, tmp_path):
    user = tmp_path / "home"
    user.mkdir()
    os.mkfifo(user / ".claude.json")
    bin_dir = fake_client(tmp_path / "bin", "claude")
    r = run("launch", "good", "claude", env={"HOME": str(user), "PATH": f"{bin_dir}:{os.environ['PATH']}"},
            timeout=20)
    clean(r)
    assert r.returncode == 0, (r.returncode, r.stderr)
    assert "stand-in ran" in r.stdout
    assert str(user / ".claude.json") in r.stderr and "FIFO" in r.stderr


@pytest.mark.parametrize("what", ["fifo", "deep", "latin-1", "deeper-than-tomlkit"])
def test_the_profiles_own_codex_config_that_cannot_be_read_is_one_line(home: Paths, tmp_path, what):
    config = home.tool_dir("good", "codex") / "config.toml"
    if what == "deeper-than-tomlkit":  # tomllib reads 150 levels, tomlkit (which edits it) refuses
        config.parent.mkdir(parents=True)
        config.write_text(deep_toml(150))
    else:
        plant(config, what, toml=True)
    user = tmp_path / "home"
    user.mkdir()
    for args in (("env", "good", "--tool", "codex"), ("launch", "good", "codex")):
        line = one_line(run(*args, env={"HOME": str(user)}, timeout=20))
        assert str(config) in line and "remove it (ccs writes a new one)" in line, line
        assert {"fifo": "FIFO", "deep": "nested too deeply", "latin-1": "not UTF-8",
                "deeper-than-tomlkit": "nested more than 100 levels"}[what] in line, line
    config.unlink()  # the fix the line gives
    ok(run("env", "good", "--tool", "codex", env={"HOME": str(user)}))


@pytest.mark.parametrize("what", ["fifo", "deep", "latin-1"])
def test_the_tui_starts_with_default_settings_when_its_settings_file_is_no_file(home: Paths, tmp_path, what):
    from pty_session import PtySession

    plant(home.state / "tui.json", what)
    env = {**os.environ, "CCS_T_KEY": KEY, "HOME": str(tmp_path), "TERM": "xterm-256color"}
    s = PtySession([sys.executable, "-m", "ccswitch_tui"], env)
    try:
        s.expect("the good one", timeout=30)  # the list and the detail of the profile: started
        # let the tabs finish mounting: a ctrl+q while they mount can raise NoMatches in
        # RunningView.on_mount (a race of its own, not the settings file's)
        s.pump(2.0)
        s.send("\x11")  # ctrl+q
        assert s.wait(timeout=20) == 0
        assert "Traceback" not in s.text and "RecursionError" not in s.text
    finally:
        s.close()


@pytest.mark.parametrize("what", ["fifo", "deep"])
def test_ps_and_inspect_read_a_daemons_manifest_safely(home: Paths, tmp_path, what):
    lid = "20260101T000000Z-0000dead"
    home.runs.mkdir(parents=True)
    plant(home.runs / f"{lid}.json", what)
    (tmp_path / "app-server").write_text("import time\ntime.sleep(60)\n")
    daemon_env = {"PATH": os.environ["PATH"], "CCS_LAUNCH_ID": lid, "CCS_PROFILE": "good",
                  "CODEX_HOME": str(home.tool_dir("good", "codex"))}
    # argv is `codex app-server`, as a Codex daemon's is: Python running the script named app-server
    daemon = subprocess.Popen(["codex", "app-server"], executable=sys.executable, cwd=tmp_path, env=daemon_env)
    try:
        import time

        deadline = time.monotonic() + 10
        while Path(f"/proc/{daemon.pid}/cmdline").read_bytes() != b"codex\0app-server\0":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        r = run("inspect", str(daemon.pid), timeout=20)
        clean(r)
        assert r.returncode == 3, (r.returncode, r.stderr)  # a daemon of a launch not on record: an error
        assert "not on record" in r.stdout, r.stdout
        r = run("ps", "--all", timeout=20)
        clean(r)
        assert r.returncode == 0, (r.returncode, r.stderr)
    finally:
        daemon.kill()
        daemon.wait()


# --- 15. manifests, run ids, keyring configuration, NUL, schema ---------------------------------------

def manifest(lid: str, **fields) -> dict:
    return {"launch_id": lid, "profile": "good", "tool": "run", "argv": ["python"], "started": "2026-01-01T00:00:00Z",
            "ended": None, "exit_status": None, "base_urls": {}, "models": {}, "key_fingerprint": "fp:1", **fields}


@pytest.mark.parametrize("fields", [
    {"started": 5}, {"started": None, "launch_id": 7}, {"argv": "python run.py"}, {"argv": [1, None]},
    {"exit_status": "done"}, {"exit_status": [1]}, {"profile": ["x"]}, {"key_fingerprint": {"a": 1}},
    {"exit_status": True},
])
def test_runs_with_wrong_typed_manifest_fields(home: Paths, fields):
    home.runs.mkdir(parents=True)
    (home.runs / "20260102T000000Z-aaaaaaaa.json").write_text(json.dumps(manifest("20260102T000000Z-aaaaaaaa")))
    (home.runs / "20260101T000000Z-bbbbbbbb.json").write_text(json.dumps(manifest("20260101T000000Z-bbbbbbbb",
                                                                                   **fields)))
    assert "20260102T000000Z-aaaaaaaa" in ok(run("runs"))
    ok(run("runs", "--json"))
    r = run("runs", "diff", "20260102T000000Z-aaaaaaaa", "20260101T000000Z-bbbbbbbb")
    clean(r)
    drifted = any(f in fields for f in ("key_fingerprint", "base_urls", "models"))
    assert r.returncode == (3 if drifted else 0), (r.returncode, r.stderr)  # 3: the runs drifted


@pytest.mark.parametrize("ref", ["*", "[", "2026*", "?", "[a-z]", "**"])
def test_run_ids_with_glob_characters(home: Paths, ref):
    home.runs.mkdir(parents=True)
    for lid in ("20260102T000000Z-aaaaaaaa", "20260101T000000Z-bbbbbbbb"):
        (home.runs / f"{lid}.json").write_text(json.dumps(manifest(lid)))
    line = one_line(run("runs", "diff", ref, "20260102T000000Z-aaaaaaaa"))
    assert "no run with launch id" in line


# each command and its exit code with a backend that cannot load: 2 where it needs the keyring (bad
# input: the variable names a backend that is not there), 3 for doctor (it reports the backend as an
# error finding), 0 where no key is needed
COMMANDS = [(("list",), 0), (("show", "kr"), 0), (("key", "list"), 2), (("key", "show", "x"), 2), (("env", "kr"), 2),
            (("runs",), 0), (("ps",), 0), (("presets",), 0), (("export", "kr"), 0),
            (("new", "n1", "--preset", "deepseek"), 0), (("doctor",), 3), (("run", "kr", "--", "true"), 2),
            (("key", "set", "x"), 2), (("key", "rm", "x", "--yes"), 2), (("inspect", str(os.getpid())), 0)]


@pytest.mark.parametrize("backend", ["no.such.Backend", "keyring.backends.NoSuch.Keyring", "os.path"])
@pytest.mark.parametrize(("args", "code"), COMMANDS, ids=[" ".join(a[:2]) for a, _ in COMMANDS])
def test_an_unloadable_keyring_backend_is_one_line_not_an_internal_error(home: Paths, args, code, tmp_path, backend):
    (home.profiles / "kr.toml").write_text(GOOD.replace("env:CCS_T_KEY", "kr-key"))
    r = run(*args, env={"PYTHON_KEYRING_BACKEND": backend, "HOME": str(tmp_path)}, input="sk-x" * 8)
    clean(r)
    assert r.returncode == code, (r.returncode, r.stderr)
    if r.returncode == 2:
        assert "PYTHON_KEYRING_BACKEND" in r.stderr, r.stderr


@pytest.mark.parametrize("value", ['"a\\u0000b"', '"\\u0000"', '"x\\u0000"'])
def test_nul_in_an_env_value_is_refused_at_validation(home: Paths, value):
    for table in ("env", "claude.env", "codex.env"):
        (home.profiles / "nul.toml").write_text(GOOD + f"\n[{table}]\nNAME = {value}\n")
        line = one_line(run("show", "nul"))
        assert "NUL" in line and f"{table}.NAME" in line
        assert "NUL" in one_line(run("run", "nul", "--", "true"))


@pytest.mark.parametrize("where,line", [
    ("claude", 'model = "a\\u0000b"'), ("run", 'model = "\\u0000"'), ("codex", 'model = "m\\u0000"'),
    ("policy", 'inherit = ["A\\u0000"]'), ("provider", 'website = "https://w.example/\\u0000"'),
])
def test_nul_in_any_other_value_is_refused_too(home: Paths, where, line):
    base = GOOD.replace('[codex]\nmodel = "m-1"\n', "[codex]\n")
    text = (base.replace(f"[{where}]\n", f"[{where}]\n{line}\n") if f"[{where}]" in base
            else base + f"\n[{where}]\n{line}\n")
    (home.profiles / "nul.toml").write_text(text)
    assert "NUL" in one_line(run("show", "nul"))
    assert "NUL" in one_line(run("run", "nul", "--", "true"))
    assert "NUL" in listed(home)["nul"]["error"]


@pytest.mark.parametrize("schema", ["1.0", "true", '"1"', "1e0", "+1.0"])
def test_schema_must_be_the_integer_1(home: Paths, schema):
    (home.profiles / "s.toml").write_text(GOOD.replace("schema = 1", f"schema = {schema}"))
    assert "schema" in one_line(run("show", "s"))


# --- 16. blank and control-character keys --------------------------------------------------------------

@pytest.mark.parametrize("value", [" ", "   ", "\t", " \t "])
def test_a_blank_environment_key_is_refused(home: Paths, value):
    line = one_line(run("run", "good", "--", "true", env={"CCS_T_KEY": value}))
    assert "blank" in line and "CCS_T_KEY" in line


def test_a_blank_keyring_key_is_refused(home: Paths, key_id):
    import keyring

    keyring.set_password("ccswitch-tui", key_id, "   ")  # stored by another program
    (home.profiles / "kr.toml").write_text(GOOD.replace("env:CCS_T_KEY", key_id))
    line = one_line(run("run", "kr", "--", "true"))
    assert "blank" in line and key_id in line
    assert f"store it again with `ccs key set {key_id}`" in line  # the id, and the CLI's words for the way out
    from ccswitch_tui.errors import KeyError_, StoreKey
    from ccswitch_tui.keys.keyring import KeyStore
    from ccswitch_tui.profiles.store import Store
    from ccswitch_tui.tui.service import in_tui

    with pytest.raises(KeyError_) as caught:
        KeyStore(home, dict(os.environ)).resolve(Store(home).load("kr"))
    assert str(caught.value) in line and caught.value.remedy == StoreKey(key_id, again=True)  # the way out as data
    said = in_tui(caught.value, key_id)  # the TUI words it from the data: its k key
    assert said.endswith("; press k to store it") and "blank" in said and "ccs key set" not in said
    assert in_tui(caught.value, "another-id") == str(caught.value)  # k stores another key: the core's words


def test_a_run_without_a_command_names_the_profile_in_its_example(home: Paths, tmp_path):
    from ccswitch_tui.errors import UsageError
    from ccswitch_tui.keys.keyring import KeyStore
    from ccswitch_tui.launch import launcher as launch
    from ccswitch_tui.profiles.store import Store

    env = {**os.environ, "CCS_T_KEY": KEY}
    with pytest.raises(UsageError) as caught:
        launch.build("good", "run", store=Store(home), keys=KeyStore(home, env), paths=home, environ=env,
                     cwd=tmp_path)
    assert "`ccs run good -- python run.py`" in str(caught.value) and "PROFILE" not in str(caught.value)


@pytest.mark.parametrize("bad", ["sk-a\x00b" + "c" * 20, "sk-tab\tkey" + "c" * 20, "sk-esc\x1bkey" + "c" * 20,
                                 "sk-del\x7fkey" + "c" * 20])
def test_import_refuses_keys_with_control_characters(home: Paths, tmp_path, bad, secret_service):
    db = make_db(tmp_path / "cc" / "cc-switch.db", [claude_row("ctl", "Ctl", bad, "https://ctl.example")])
    out = json.loads(ok(run("import", "cc-switch", "--db", str(db), "--json")))
    (item,) = out["items"]
    assert item["action"] == "error" and "control characters" in item["reason"]
    assert not (home.profiles / "ctl.toml").exists()
    assert not home.key_index.exists() or json.loads(home.key_index.read_text())["keys"] == []


# --- 17. --scrub keeps every byte but the key ------------------------------------------------------------

def scrub_claude(tmp_path: Path, raw: bytes, key: str, name: str) -> tuple[subprocess.CompletedProcess, bytes]:
    settings = tmp_path / f"{name}.json"
    settings.write_bytes(raw)
    r = run("import", "claude", "--settings", str(settings), "--name", name, "--scrub", "--json")
    return r, settings.read_bytes()


SCRUB_CASES = {
    # name: (text with KEY, the same text without it)
    "huge-number": ('{"a": 1E400, "env": {"ANTHROPIC_BASE_URL": "https://h.example", '
                    '"ANTHROPIC_AUTH_TOKEN": "@KEY@", "X": 1.50}}',
                    '{"a": 1E400, "env": {"ANTHROPIC_BASE_URL": "https://h.example", "X": 1.50}}'),
    "lone-surrogate": ('{"note": "\\ud800", "env": {"ANTHROPIC_AUTH_TOKEN": "@KEY@", '
                       '"ANTHROPIC_BASE_URL": "https://h.example"}}',
                       '{"note": "\\ud800", "env": {"ANTHROPIC_BASE_URL": "https://h.example"}}'),
    "crlf": ('{\r\n  "env": {\r\n    "ANTHROPIC_BASE_URL": "https://h.example",\r\n    "ANTHROPIC_AUTH_TOKEN": '
             '"@KEY@"\r\n  },\r\n  "x": "\\u00e9"\r\n}\r\n',
             '{\r\n  "env": {\r\n    "ANTHROPIC_BASE_URL": "https://h.example"\r\n  },\r\n  "x": "\\u00e9"\r\n}\r\n'),
    "tabs-and-order": ('{\n\t"z": 1,\n\t"env": {\n\t\t"ANTHROPIC_AUTH_TOKEN": "@KEY@",\n\t\t"ANTHROPIC_BASE_URL": '
                       '"https://h.example"\n\t},\n\t"a": [1,2]\n}',
                       '{\n\t"z": 1,\n\t"env": {\n\t\t"ANTHROPIC_BASE_URL": "https://h.example"\n\t},'
                       '\n\t"a": [1,2]\n}'),
    "copies-in-a-list": ('{"env": {"ANTHROPIC_BASE_URL": "https://h.example", "ANTHROPIC_API_KEY": "@KEY@"}, '
                         '"l": ["a", "@KEY@", "b", "@KEY@"], "only": {"k": " @KEY@ "}}',
                         '{"env": {"ANTHROPIC_BASE_URL": "https://h.example"}, "l": ["a", "b"], "only": {}}'),
}


@pytest.mark.parametrize("case", sorted(SCRUB_CASES))
def test_scrub_keeps_everything_but_the_key_byte_for_byte(home: Paths, tmp_path, case, secret_service):
    from conftest import forget_indexed_keys

    key = "sk-scrub-" + uuid.uuid4().hex
    before, after = SCRUB_CASES[case]
    name = f"s-{case}-{uuid.uuid4().hex[:4]}"
    try:
        r, raw = scrub_claude(tmp_path, before.replace("@KEY@", key).encode(), key, name)
        ok(r)
        assert raw == after.encode()
    finally:
        forget_indexed_keys(home)


def test_scrub_toml_keeps_crlf_and_comments(home: Paths, tmp_path, secret_service):
    from conftest import forget_indexed_keys

    key = "sk-scrub-" + uuid.uuid4().hex
    codex = tmp_path / "codex"
    codex.mkdir()
    config = ('# mine\r\nmodel = "m-1"   # main\r\nmodel_provider = "gw"\r\n\r\n[model_providers.gw]\r\n'
              'name = "Gw"\r\nbase_url = "https://gw.example/v1"\r\nexperimental_bearer_token = "@KEY@"  # secret\r\n'
              'x = 1E3\r\n')
    (codex / "config.toml").write_bytes(config.replace("@KEY@", key).encode())
    try:
        r = run("import", "codex", "--home", str(codex), "--name", f"t{uuid.uuid4().hex[:6]}", "--scrub", "--json")
        out = json.loads(ok(r))
        assert out["scrubbed"][0]["removed"] == ["model_providers.gw.experimental_bearer_token"]
        expected = config.replace('experimental_bearer_token = "@KEY@"  # secret\r\n', "")
        assert (codex / "config.toml").read_bytes() == expected.encode()
    finally:
        forget_indexed_keys(home)


# --- 18. wrong-typed routing fields in CC Switch rows -----------------------------------------------------

@pytest.mark.parametrize("field,value", [
    ("ANTHROPIC_BASE_URL", 5), ("ANTHROPIC_BASE_URL", True), ("ANTHROPIC_BASE_URL", ["https://x"]),
    ("ANTHROPIC_BASE_URL", {"u": 1}), ("ANTHROPIC_MODEL", 4), ("ANTHROPIC_AUTH_TOKEN", 12345678901234567890),
])
def test_a_wrong_typed_claude_routing_field_skips_the_row(home: Paths, tmp_path, field, value):
    row = claude_row("r", "Row", "sk-row-" + "r" * 30, "https://row.example")
    row["settings"]["env"][field] = value
    db = make_db(tmp_path / "cc" / "cc-switch.db", [row])
    (item,) = json.loads(ok(run("import", "cc-switch", "--db", str(db), "--dry-run", "--json")))["items"]
    assert item["action"] == "skipped" and f"env.{field}" in item["reason"], item
    assert "api.anthropic.com" not in json.dumps(item)


@pytest.mark.parametrize("config,field", [
    ('model = "m"\nmodel_provider = "gw"\n[model_providers.gw]\nbase_url = 5\n', "base_url"),
    ('model = "m"\nmodel_provider = 1\n', "model_provider"),
    ('model = 3\nmodel_provider = "gw"\n[model_providers.gw]\nbase_url = "https://gw.example/v1"\n', "model"),
    ('model = "m"\nopenai_base_url = ["https://x"]\n', "openai_base_url"),
])
def test_a_wrong_typed_codex_routing_field_skips_the_row(home: Paths, tmp_path, config, field):
    db = make_db(tmp_path / "cc" / "cc-switch.db", [codex_row("c", "Cx", "sk-cx-" + "c" * 30, config)])
    (item,) = json.loads(ok(run("import", "cc-switch", "--db", str(db), "--dry-run", "--json")))["items"]
    assert item["action"] == "skipped" and field in item["reason"], item


# --- 19. lines that say what is really wrong ------------------------------------------------------------

@pytest.mark.parametrize("raw,words", [
    (b"\xef\xbb\xbf" + GOOD.encode(), "byte-order mark"),
    (GOOD.encode().replace(b'"the good one"', b'"the\x00one"'), "NUL"),
    (b"schema = 1\n\x00\n", "NUL"),
])
def test_bom_and_nul_are_named(home: Paths, raw, words):
    (home.profiles / "odd.toml").write_bytes(raw)
    line = one_line(run("show", "odd"))
    assert words in line and "Empty key" not in line
    assert words in listed(home)["odd"]["error"]


@pytest.mark.parametrize("fname", ["UPPER.toml", ".hidden.toml", "x.TOML", "with space.toml", "-dash.toml"])
def test_misnamed_profile_files_are_listed_as_broken(home: Paths, fname):
    (home.profiles / fname).write_text(GOOD)
    rows = listed(home)
    assert rows["good"]["ok"]
    assert not rows[fname]["ok"] and "rename it" in rows[fname]["error"], rows
    assert fname in ok(run("list"))


def test_a_secret_that_is_not_text_is_not_blamed_on_the_keyring(home: Paths, key_id):
    import secretstorage

    conn = secretstorage.dbus_init()
    collection = secretstorage.get_default_collection(conn)
    collection.create_item("raw", {"service": "ccswitch-tui", "username": key_id}, b"\xff\xfe\x00raw",
                           replace=True)
    line = one_line(run("key", "show", key_id))
    assert "not UTF-8" in line and "unavailable" not in line and "Secret Service" not in line
    assert f"store it again with `ccs key set {key_id}`" in line and "ccs key set ID" not in line


def test_the_null_backend_does_not_claim_a_key_was_stored(home: Paths, key_id):
    r = run("key", "set", key_id, input="sk-null-" + "n" * 30,
            env={"PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring"})
    line = one_line(r)
    assert "did not keep" in line and "stored" not in r.stdout
    assert key_id not in (json.loads(home.key_index.read_text())["keys"] if home.key_index.exists() else [])


# --- 13. a full disk during `ccs run` ----------------------------------------------------------------------

def test_a_full_disk_during_run_keeps_the_childs_status_and_closes_the_manifest(home: Paths, tmp_path):
    import shlex

    if subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode != 0:
        from conftest import skip_or_fail

        skip_or_fail("no private mount namespaces here (unshare -rm)")
    state = home.state
    state.mkdir(parents=True)
    fill = f"dd if=/dev/zero of={state}/fill bs=4k count=1000 2>/dev/null; exit 7"
    ccs = shlex.join([sys.executable, "-m", "ccswitch_tui", "run", "good", "--", "sh", "-c", fill])
    script = (f"mount -t tmpfs -o size=256k none {state} && {ccs}; echo rc=$?; "
              f"cat {state}/runs/*.json")
    r = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "CCS_T_KEY": KEY})
    clean(r)
    out = r.stdout
    assert "rc=7" in out, (out, r.stderr)  # the child's status, not 2
    manifest = json.loads(out.split("rc=7\n", 1)[1])
    assert manifest["exit_status"] == 7 and manifest["ended"]  # closed, though the disk is full


def test_a_read_only_state_folder_starts_nothing_and_says_so(home: Paths, tmp_path):
    """It said `cannot start 'true'` and that the run ended with status 127: the command never ran,
    the manifest could not be written."""
    import shlex

    if subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode != 0:
        from conftest import skip_or_fail

        skip_or_fail("no private mount namespaces here (unshare -rm)")
    state = home.state
    first = subprocess.run([sys.executable, "-m", "ccswitch_tui", "run", "good", "--", "true"], capture_output=True,
                           text=True, env={**os.environ, "CCS_T_KEY": KEY})  # the salt and the runs folder
    assert first.returncode == 0, first.stderr
    marker = tmp_path / "ran"
    ccs = shlex.join([sys.executable, "-m", "ccswitch_tui", "run", "good", "--", "touch", str(marker)])
    script = f"mount --bind {state} {state} && mount -o remount,bind,ro {state} && {ccs}"
    r = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "CCS_T_KEY": KEY})
    line = one_line(r)
    assert "cannot write the run manifest" in line and "'touch' was not started" in line, line
    assert "status 127" not in r.stderr and "cannot start" not in r.stderr
    assert not marker.exists()


# --- 14. SIGTERM right after the child starts ---------------------------------------------------------------

def test_sigterm_as_the_child_starts_reaches_the_child_and_closes_the_manifest(home: Paths, tmp_path):
    import signal
    import time

    env = {**os.environ, "CCS_T_KEY": KEY}
    bad = []
    for trial in range(12):
        p = subprocess.Popen([sys.executable, "-m", "ccswitch_tui", "run", "good", "--", "sleep", "30"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        children = Path(f"/proc/{p.pid}/task/{p.pid}/children")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the moment the child exists (forked, maybe not yet exec'd)
            try:
                if children.read_text().split():
                    break
            except OSError:
                break
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=30)
        if p.returncode != 143 or "Traceback" in err:
            bad.append((trial, p.returncode, err))
    assert not bad, bad
    manifests = [json.loads(m.read_text()) for m in home.runs.glob("*.json")]
    assert len(manifests) == 12
    assert all(m["exit_status"] == 143 and m["ended"] for m in manifests), manifests
    leftovers = subprocess.run(["pgrep", "-f", "^sleep 30$"], capture_output=True, text=True).stdout.split()
    for pid in leftovers:  # an orphan of this test would carry this test's CCS_HOME
        try:
            assert str(home.profiles.parent) not in Path(f"/proc/{pid}/environ").read_text(errors="replace")
        except OSError:
            continue


# --- 15. a process environment that is not UTF-8 -----------------------------------------------------------

def test_inspect_a_process_whose_environment_is_not_utf8(home: Paths, tmp_path):
    env = {b"PATH": b"/usr/bin:/bin", b"B\xffAD": b"\xff\xfe", b"ANTHROPIC_BASE_URL": b"http://x\xff",
           b"CCS_PROFILE": b"g\xffood", b"CCS_LAUNCH_ID": b"x\xff", b"OPENAI_API_KEY": b"sk-\xff" + b"z" * 30}
    child = subprocess.Popen([b"/bin/sleep", b"30"], env=env)
    try:
        from waiting import wait_execed

        wait_execed(child.pid, ["/bin/sleep", "30"])  # before the exec, /proc shows the test's own environment
        for args in (("inspect", str(child.pid)), ("inspect", str(child.pid), "--json"), ("ps", "--all")):
            for lang in ("C.UTF-8", "C"):
                r = run(*args, env={"LANG": lang, "LC_ALL": lang})
                clean(r)
                assert r.returncode == 0, r.stderr  # no profile or launch on record: nothing to judge
                assert "z" * 30 not in r.stdout
    finally:
        child.kill()
        child.wait()


# --- a provider answering `ccs check` with JSON nested too deeply -------------------------------------------

def test_check_survives_an_error_body_nested_too_deeply(home: Paths):
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Deep(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = ("[" * 3000).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Deep)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        (home.profiles / "loop.toml").write_text(GOOD.replace("https://good.example/api", url)
                                                 .replace('\n[codex]\nmodel = "m-1"\n', "\n"))
        r = run("check", "loop", "--timeout", "5")
        clean(r)
        assert r.returncode == 3, (r.stdout, r.stderr)
    finally:
        server.shutdown()


@pytest.mark.parametrize("what", ["fifo", "dev-zero", "huge"])
def test_state_files_that_are_no_files_do_not_hang_key_commands(home: Paths, what, key_id):
    home.state.mkdir(parents=True)
    (home.profiles / "kr.toml").write_text(GOOD.replace("env:CCS_T_KEY", key_id))
    for path in (home.salt, home.key_index):
        if what == "fifo":
            os.mkfifo(path)
        elif what == "dev-zero":
            path.symlink_to("/dev/zero")
        else:
            path.write_text(" " * (9 * 1024 * 1024))
    ok(run("key", "set", key_id, input="sk-state-" + "s" * 30, timeout=20))
    assert "fp:" in ok(run("key", "show", key_id, timeout=20))
    assert key_id in ok(run("key", "list", timeout=20))


@pytest.mark.parametrize("raw", [b"\xff\xfe{}", b'{"launch_id": "x"' + b" " * (65 << 20) + b"}", b"[]", b"null"],
                         ids=["latin-1", "huge", "list", "null"])
def test_a_damaged_manifest_asked_for_by_id_is_one_line(home: Paths, raw):
    home.runs.mkdir(parents=True)
    (home.runs / "20260101T000000Z-cccccccc.json").write_bytes(raw)
    (home.runs / "20260102T000000Z-aaaaaaaa.json").write_text(json.dumps(manifest("20260102T000000Z-aaaaaaaa")))
    assert "20260102T000000Z-aaaaaaaa" in ok(run("runs"))
    line = one_line(run("runs", "diff", "20260101T000000Z-cccccccc", "20260102T000000Z-aaaaaaaa"))
    assert "20260101T000000Z-cccccccc.json" in line


def test_live_settings_too_large_is_one_line(home: Paths, tmp_path):
    settings = tmp_path / "settings.json"
    settings.write_text('{"env": {}, "pad": "' + "x" * (9 * 1024 * 1024) + '"}')
    assert "limit" in one_line(run("import", "claude", "--settings", str(settings), "--dry-run"))


TOML_SCRUBS = {
    # name: (config.toml with @KEY@, expected text after, removed)
    "dotted-and-quoted": ('model = "m"\nmodel_provider = "gw"\n[model_providers.gw]\nbase_url = "https://gw.example/v1"\n'
                          '"quoted.key" = "@KEY@"\nx.y = "@KEY@"\nx.z = 1\n',
                          'model = "m"\nmodel_provider = "gw"\n[model_providers.gw]\nbase_url = "https://gw.example/v1"\n'
                          'x.z = 1\n',
                          ['model_providers.gw."quoted.key"', "model_providers.gw.x.y"]),
    "inside-a-longer-string": ('model = "m"\nmodel_provider = "gw"\n[model_providers.gw]\n'
                               'base_url = "https://gw.example/v1"\nnote = """\nt = "@KEY@"\n"""\n', None, []),
}


@pytest.mark.parametrize("case", sorted(TOML_SCRUBS))
def test_scrub_toml_removes_only_what_is_exactly_the_key(home: Paths, tmp_path, case, secret_service):
    from conftest import forget_indexed_keys

    key = "sk-scrub-" + uuid.uuid4().hex
    before, after, removed = TOML_SCRUBS[case]
    codex = tmp_path / "codex"
    codex.mkdir()
    (codex / "config.toml").write_text(before.replace("@KEY@", key))
    (codex / "auth.json").write_text(json.dumps({"OPENAI_API_KEY": key}))
    try:
        out = json.loads(ok(run("import", "codex", "--home", str(codex), "--name", f"t{uuid.uuid4().hex[:6]}",
                                "--scrub", "--json")))
        entry = next(e for e in out["scrubbed"] if e["path"].endswith("config.toml"))
        assert entry["removed"] == removed
        text = (codex / "config.toml").read_text()
        if after is None:  # not cut out blindly: reported, the file untouched
            assert text == before.replace("@KEY@", key) and "by hand" in entry["note"]
        else:
            assert text == after
        assert json.loads((codex / "auth.json").read_text()) == {}
    finally:
        forget_indexed_keys(home)

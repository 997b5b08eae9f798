"""The `ccs` command as a real child process: list, show, new, edit, rm, presets, help, errors and exit codes;
presets after a plain wheel install; the profile commands never import textual or httpx."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import skip_or_fail

from ccswitch_tui import tools
from ccswitch_tui.paths import Paths
from ccswitch_tui.profiles.presets import list_presets, new_profile_text, presets_dir
from ccswitch_tui.profiles.store import Store, validate_text
from ccswitch_tui.tools.checker import KEY_ID_RE

ROOT = Path(__file__).resolve().parent.parent
PRESET_FILES = [p.stem for p in sorted((ROOT / "profiles").glob("*.toml"))]
ENV_KEY = "sk-envkey-" + "Zr4Tq8Wm" * 3 + "c0de"
NO_BUS = "unix:path=/nonexistent/ccs-test/bus"


def no_traceback(r: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout, r.stderr


def fails(r: subprocess.CompletedProcess, code: int = 2) -> str:
    """The one error line of a failed run, checked: exit code, one line, no traceback."""
    no_traceback(r)
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("ccs: error: ")
    return lines[0]


def ok(r: subprocess.CompletedProcess) -> str:
    no_traceback(r)
    assert r.returncode == 0, (r.returncode, r.stderr)
    return r.stdout


def env_with(**extra: str | None) -> dict[str, str]:
    env = dict(os.environ)
    for k, v in extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def write(paths: Paths, name: str, text: str) -> Path:
    paths.profiles.mkdir(parents=True, exist_ok=True)
    path = paths.profiles / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return path


ENV_PROFILE = """\
# uses a key from the environment
schema = 1
description = "env-keyed"

[provider]
name = "Env Co"
base_url = "https://env.example/api"
key = "env:CCS_TEST_ENV_KEY"
website = "https://env.example"

[codex]
model = "m-1"
reasoning_effort = "high"

[codex.env]
CODEX_EXTRA = "x"

[run]
export = ["openai", "anthropic"]

[env]
API_TIMEOUT_MS = "600000"

[policy]
inherit = ["MY_*"]
"""

ROW_KEYS = ["name", "path", "ok", "error", "provider", "base_url", "tools", "key_id", "key_present", "description"]


# --- list ------------------------------------------------------------------------------------------

def test_list_empty(ccs, ccs_home: Paths):
    out = ok(ccs("list"))
    assert out.startswith(f"no profiles in {ccs_home.profiles}")
    assert json.loads(ok(ccs("list", "--json"))) == {"profiles": [], "keyring_error": None}


def test_list_json_shape_and_broken_profile(ccs, ccs_home: Paths):
    write(ccs_home, "envy", ENV_PROFILE)
    broken = write(ccs_home, "broken", 'schema = 1\n[provider]\nname = "P"\nbase_url = https://x\n')
    data = json.loads(ok(ccs("list", "--json", env=env_with(CCS_TEST_ENV_KEY=ENV_KEY))))
    assert list(data) == ["profiles", "keyring_error"]
    assert data["keyring_error"] is None  # only env keys: the keyring is not asked
    rows = data["profiles"]
    assert [r["name"] for r in rows] == ["broken", "envy"]
    assert all(list(r) == ROW_KEYS for r in rows)
    assert rows[1] == {
        "name": "envy", "path": str(ccs_home.profiles / "envy.toml"), "ok": True, "error": None,
        "provider": "Env Co", "base_url": "https://env.example/api", "tools": ["codex", "run"],
        "key_id": "env:CCS_TEST_ENV_KEY", "key_present": True, "description": "env-keyed",
    }
    b = rows[0]
    assert b["ok"] is False and b["path"] == str(broken)
    assert b["error"].startswith(f"{broken}:4:")
    assert [b[k] for k in ROW_KEYS[4:]] == [None, None, [], None, None, None]

    text = ok(ccs("list", env=env_with(CCS_TEST_ENV_KEY=None)))
    lines = text.splitlines()
    assert lines[0].split() == ["NAME", "PROVIDER", "BASE", "URL", "TOOLS", "KEY"]
    assert lines[1].startswith("broken") and "BROKEN" in lines[1] and f"{broken}:4:" in lines[1]
    assert lines[2].split() == ["envy", "Env", "Co", "https://env.example/api", "codex,run",
                                "env:CCS_TEST_ENV_KEY", "(MISSING)"]


def test_list_when_the_keyring_is_unreachable(ccs, ccs_home: Paths):
    write(ccs_home, "envy", ENV_PROFILE)
    write(ccs_home, "kr", '[provider]\nname = "K"\nbase_url = "https://k.example"\nkey = "some-id"\n')
    r = ccs("list", "--json", env=env_with(DBUS_SESSION_BUS_ADDRESS=NO_BUS, CCS_TEST_ENV_KEY=ENV_KEY))
    data = json.loads(ok(r))
    assert "keyring unavailable" in data["keyring_error"]
    assert {p["name"]: p["key_present"] for p in data["profiles"]} == {"envy": True, "kr": None}
    r = ccs("list", env=env_with(DBUS_SESSION_BUS_ADDRESS=NO_BUS))
    assert "some-id (?)" in ok(r)
    assert r.stderr.startswith("note: key presence unknown: keyring unavailable") and len(r.stderr.splitlines()) == 1


# --- show ------------------------------------------------------------------------------------------

def test_show_text_and_json_with_env_key(ccs, ccs_home: Paths):
    write(ccs_home, "envy", ENV_PROFILE)
    env = env_with(CCS_TEST_ENV_KEY=ENV_KEY)
    text = ok(ccs("show", "envy", env=env))
    data = json.loads(ok(ccs("show", "envy", "--json", env=env)))
    salt = bytes.fromhex(ccs_home.salt.read_text())
    fp = "fp:" + hmac.new(salt, ENV_KEY.encode(), hashlib.sha256).hexdigest()[:12]
    assert ENV_KEY not in text and ENV_KEY not in json.dumps(data)
    assert text.splitlines() == [
        f"envy  ({ccs_home.profiles / 'envy.toml'})",
        "  env-keyed",
        "provider   Env Co  https://env.example/api",
        "website    https://env.example",
        f"key        env:CCS_TEST_ENV_KEY  sk-…c0de  {fp}",
        "codex      https://env.example/api  model=m-1  provider_id=envy  effort=high",
        "           CODEX_EXTRA=x",
        "run        export=openai,anthropic  model=-",
        "env        API_TIMEOUT_MS=600000",
        "inherit    MY_*",
    ]
    assert data == {
        "name": "envy", "description": "env-keyed",
        "provider": {"name": "Env Co", "base_url": "https://env.example/api", "key": "env:CCS_TEST_ENV_KEY",
                     "website": "https://env.example"},
        "tools": ["codex", "run"],
        **{s.name: None for s in tools.load().specs() if s.name not in ("codex", "run")},  # every client it lacks
        "codex": {"base_url": "https://env.example/api", "model": "m-1", "provider_id": "envy",
                  "reasoning_effort": "high", "wire_api": "responses", "env": {"CODEX_EXTRA": "x"}},
        "run": {"export": ["openai", "anthropic"], "model": None},
        "env": {"API_TIMEOUT_MS": "600000"}, "policy": {"inherit": ["MY_*"], "quiet": None, "share": None},
        "secrets": {},
        "path": str(ccs_home.profiles / "envy.toml"),
        "key": {"id": "env:CCS_TEST_ENV_KEY", "present": True, "mask": "sk-…c0de", "fingerprint": fp, "error": None},
    }
    missing = ok(ccs("show", "envy", env=env_with(CCS_TEST_ENV_KEY=None)))
    assert "key        env:CCS_TEST_ENV_KEY  MISSING" in missing


def test_show_errors(ccs, ccs_home: Paths):
    write(ccs_home, "envy", ENV_PROFILE)
    assert "no profile named 'nope'" in fails(ccs("show", "nope"))
    assert "invalid profile name" in fails(ccs("show", "../envy"))
    bad = write(ccs_home, "bad", ENV_PROFILE.replace("reasoning_effort", "reasoning"))
    line = fails(ccs("show", "bad"))
    assert f"{bad}: unknown field [codex].reasoning; did you mean 'reasoning_effort'?" in line


# --- new -------------------------------------------------------------------------------------------

def test_new_from_preset_keeps_the_preset_text(ccs, ccs_home: Paths):
    r = ccs("new", "tt", "--preset", "taotoken")
    path = ccs_home.profiles / "tt.toml"
    assert ok(r).splitlines() == [f"created {path}", "URLs each tool will use:",
                                  "  claude    https://taotoken.net/api  → https://taotoken.net/api/v1/messages",
                                  "  codex     https://taotoken.net/api  → https://taotoken.net/api/responses",
                                  "  opencode  https://taotoken.net/api  → https://taotoken.net/api/chat/completions",
                                  "  kilo      https://taotoken.net/api  → https://taotoken.net/api/chat/completions",
                                  "  qwen      https://taotoken.net/api  → https://taotoken.net/api/chat/completions",
                                  "next: store its key with `ccs key set taotoken`"]
    text = path.read_text(encoding="utf-8")
    assert text == (ROOT / "profiles" / "taotoken.toml").read_text(encoding="utf-8")
    assert text.startswith("# TaoToken — https://taotoken.net\n")
    p = Store(ccs_home).load("tt")
    assert p.provider.base_url == "https://taotoken.net/api"
    assert p.key_id == "taotoken"
    codex = p.side("codex")
    assert codex is not None and codex.model == "gpt-4.1" and codex.provider_id == "taotoken"
    assert p.side("run").model == "gpt-4.1" and p.side("run").export == ("openai",)

    before = path.read_bytes()
    assert "already exists" in fails(ccs("new", "tt", "--preset", "openai"))
    assert path.read_bytes() == before


def test_new_from_flags(ccs, ccs_home: Paths):
    ok(ccs("new", "gw", "--base-url", "https://gw.example/v1", "--key", "gw-key",
           "--claude-model", "claude-x", "--codex-model", "codex-y"))
    p = Store(ccs_home).load("gw")
    assert (p.provider.name, p.provider.base_url, p.key_id) == ("gw", "https://gw.example/v1", "gw-key")
    assert p.side("claude") is not None and p.side("claude").model == "claude-x"
    assert p.side("claude").base_url == "https://gw.example"  # Claude Code appends /v1/messages: fixed
    assert p.side("codex") is not None and (p.side("codex").model, p.side("codex").provider_id) == ("codex-y", "gw")
    assert p.tools == ("claude", "codex", "run")

    # a preset with overrides: comments kept, the fields replaced
    r = ccs("new", "tt2", "--preset", "taotoken", "--base-url", "https://tt.example/api", "--key", "env:TT_KEY",
            "--codex-model", "gpt-5")
    out = ok(r)
    assert "ccs key set" not in out and "next: export TT_KEY" in out  # an env key is not stored with `ccs key set`
    text = (ccs_home.profiles / "tt2.toml").read_text(encoding="utf-8")
    assert text.startswith("# TaoToken")
    p = Store(ccs_home).load("tt2")
    assert (p.provider.base_url, p.key_id, p.side("codex").model) == ("https://tt.example/api", "env:TT_KEY", "gpt-5")
    assert p.side("run").model == "gpt-4.1"

    # the bare minimum: a base URL; the key id defaults to the profile's name
    ok(ccs("new", "bare", "--base-url", "https://b.example"))
    p = Store(ccs_home).load("bare")
    assert p.key_id == "bare" and p.tools == ("claude", "run")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["new", "x"], "needs --base-url"),
        (["new", "x", "--preset", "nope"], "no preset named 'nope'; known presets: anthropic"),
        (["new", "../x", "--preset", "taotoken"], "invalid profile name '../x'"),
        (["new", "x", "--base-url", "ftp://x"], "is not an http(s) URL"),
        (["new", "x", "--base-url", "https://x", "--key", "bad key"], "invalid key id"),
    ],
)
def test_new_refusals(ccs, ccs_home: Paths, args, message):
    assert message in fails(ccs(*args))
    assert not (ccs_home.profiles / "x.toml").exists()


# --- edit ------------------------------------------------------------------------------------------

def editor(tmp_path: Path, name: str, body: str) -> str:
    script = tmp_path / f"{name}.sh"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return str(script)


def test_edit(ccs, ccs_home: Paths, tmp_path: Path):
    ok(ccs("new", "tt", "--preset", "taotoken"))
    path = ccs_home.profiles / "tt.toml"
    original = path.read_text(encoding="utf-8")
    scratch = tmp_path / "scratch"
    scratch.mkdir()

    good = editor(tmp_path, "good", "sed -i 's/^description = .*/description = \"edited\"/' \"$1\"\n")
    r = ccs("edit", "tt", env=env_with(EDITOR=good, VISUAL=None, TMPDIR=str(scratch)))
    assert ok(r).strip() == f"saved {path}"
    edited = path.read_text(encoding="utf-8")
    assert edited == original.replace('description = "GPT-4.1 AppWorld reruns through TaoToken"',
                                      'description = "edited"')
    assert edited != original and Store(ccs_home).load("tt").description == "edited"
    assert list(scratch.iterdir()) == []
    before = path.read_bytes()

    # a TOML error: exit 2, file:line named, old file whole, the edit kept for the user
    bad = editor(tmp_path, "bad",
                 "printf 'schema = 1\\n[provider]\\nname = \"P\"\\nbase_url = https://x\\n' > \"$1\"\n")
    line = fails(ccs("edit", "tt", env=env_with(EDITOR=bad, VISUAL=None, TMPDIR=str(scratch))))
    assert re.search(rf"{re.escape(str(path))}:4:\d+: ", line), line
    assert f"{path} left unchanged" in line
    kept = Path(line.split("your edit is kept in ")[1].strip())
    assert kept.parent == scratch and "base_url = https://x" in kept.read_text()
    assert path.read_bytes() == before

    # a schema error, through VISUAL (which wins over EDITOR)
    schema = editor(tmp_path, "schema", "sed -i 's/^model = \"gpt-4.1\"/modle = \"x\"/' \"$1\"\n")
    line = fails(ccs("edit", "tt", env=env_with(VISUAL=schema, EDITOR=good, TMPDIR=str(scratch))))
    assert "unknown field [codex].modle; did you mean 'model'?" in line
    assert path.read_bytes() == before

    failing = editor(tmp_path, "failing", "echo x >> \"$1\"; exit 3\n")
    assert "editor exited with status 3" in fails(ccs("edit", "tt", env=env_with(EDITOR=failing, VISUAL=None)))
    assert "not found" in fails(ccs("edit", "tt", env=env_with(EDITOR="/nonexistent/editor", VISUAL=None)))
    assert path.read_bytes() == before

    # an editor command that cannot be parsed or started, or that loses the copy: one line, no temp left
    kept_so_far = sorted(scratch.iterdir())
    for cmd, message in (("'unclosed", "cannot parse the editor command"),
                         (str(tmp_path), "cannot be started"),
                         (editor(tmp_path, "rm", 'rm "$1"\n'), "cannot read the edited copy")):
        assert message in fails(ccs("edit", "tt", env=env_with(EDITOR=cmd, VISUAL=None, TMPDIR=str(scratch))))
        assert path.read_bytes() == before
    assert sorted(scratch.iterdir()) == kept_so_far

    noop = editor(tmp_path, "noop", "true\n")
    assert ok(ccs("edit", "tt", env=env_with(EDITOR=noop, VISUAL=None))).strip() == f"no changes to {path}"
    assert "no profile named" in fails(ccs("edit", "nope", env=env_with(EDITOR=noop)))


# --- rm --------------------------------------------------------------------------------------------

def test_rm(ccs, ccs_home: Paths):
    path = write(ccs_home, "envy", ENV_PROFILE)
    line = fails(ccs("rm", "envy"))
    assert "not confirmed (no terminal); pass --yes" in line
    assert path.exists()
    assert ok(ccs("rm", "envy", "--yes")).strip() == f"deleted {path}"
    assert not path.exists()
    assert "no profile named 'envy'" in fails(ccs("rm", "envy", "--yes"))


# --- presets ---------------------------------------------------------------------------------------

def test_presets_cli(ccs):
    data = json.loads(ok(ccs("presets", "--json")))
    assert [p["name"] for p in data["presets"]] == PRESET_FILES
    tt = next(p for p in data["presets"] if p["name"] == "taotoken")
    assert tt == {
        "name": "taotoken", "description": "GPT-4.1 AppWorld reruns through TaoToken", "provider": "TaoToken",
        "website": "https://taotoken.net",
        "base_urls": {"provider": "https://taotoken.net/api", "claude": "https://taotoken.net/api",
                      "codex": "https://taotoken.net/api", "opencode": "https://taotoken.net/api",
                      "kilo": "https://taotoken.net/api", "qwen": "https://taotoken.net/api"},
        "tools": ["claude", "codex", "opencode", "kilo", "qwen", "run"], "key_id": "taotoken",
    }
    text = ok(ccs("presets"))
    assert text.splitlines()[0].split() == ["PRESET", "PROVIDER", "TOOLS", "DESCRIPTION"]
    assert len(text.splitlines()) == 1 + len(PRESET_FILES)


def test_every_preset_validates_and_makes_a_profile():
    assert presets_dir() == ROOT / "profiles"  # a source checkout / editable install
    presets = list_presets()
    assert [p.name for p in presets] == PRESET_FILES
    for pr in presets:
        assert pr.profile.name == pr.name and pr.profile.description
        assert pr.header, f"{pr.name}.toml has no comment header"
        text = new_profile_text("mine", pr.name)
        _, p = validate_text("mine", text)
        assert p.provider == pr.profile.provider
        assert text.splitlines()[0] == pr.text.splitlines()[0]


KEY_LIKE = [
    re.compile(r"sk-[A-Za-z0-9_-]{8,}"),
    re.compile(r"(?i)(api[_-]?key|token|secret|password)\s*=\s*\"[^\"]{8,}\""),
]


def opaque_tokens(text: str) -> list[str]:
    """Long runs that look like keys: many digits or mixed case, and not a variable name like API_TIMEOUT_MS."""
    out = []
    for tok in re.findall(r"[A-Za-z0-9_+/=-]{24,}", text):
        if re.fullmatch(r"[A-Z][A-Z0-9_]*", tok) or max(len(part) for part in re.split(r"[-_.]", tok)) <= 10:
            continue  # a variable name, or a model id like claude-sonnet-4-5-20250929
        if len(re.findall(r"\d", tok)) >= 8 or (re.search(r"[a-z]", tok) and re.search(r"[A-Z]", tok)):
            out.append(tok)
    return out


def test_presets_hold_no_keys():
    for path in sorted((ROOT / "profiles").glob("*.toml")):
        text = path.read_text(encoding="utf-8")
        for pattern in KEY_LIKE:
            assert not pattern.search(text), f"{path.name}: {pattern.search(text).group(0)!r}"
        assert opaque_tokens(text) == [], path.name
        for m in re.finditer(r'(?m)^key\s*=\s*"([^"]*)"', text):
            assert KEY_ID_RE.fullmatch(m.group(1)) and len(m.group(1)) <= 32, f"{path.name}: key = {m.group(1)!r}"


def test_presets_usable_from_a_plain_wheel_install(tmp_path: Path):
    try:
        import hatchling  # noqa: F401
    except ImportError:
        skip_or_fail("hatchling is not installed in the venv (pip install -e '.[test]')")
    wheels, target, elsewhere = tmp_path / "wheels", tmp_path / "site", tmp_path / "elsewhere"
    elsewhere.mkdir()
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    r = subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(ROOT)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    (wheel,) = wheels.glob("ccswitch_tui-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert sorted(n for n in names if n.startswith("ccswitch_tui/presets/")) == [
        f"ccswitch_tui/presets/{n}.toml" for n in PRESET_FILES]
    r = subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(wheel)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    code = ("import json, ccswitch_tui, ccswitch_tui.profiles.presets as p; "
            "print(json.dumps({'pkg': ccswitch_tui.__file__, 'dir': str(p.presets_dir()), "
            "'names': [x.name for x in p.list_presets()], 'tt': p.load_preset('taotoken').profile.key_id}))")
    env = env_with(PYTHONPATH=str(target), CCS_HOME=str(tmp_path / "home"))
    r = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert Path(got["pkg"]).is_relative_to(target)
    assert Path(got["dir"]) == target / "ccswitch_tui" / "presets"
    assert got["names"] == PRESET_FILES and got["tt"] == "taotoken"


# --- help, unknown commands, errors -----------------------------------------------------------------

HELP_ALL = """
import contextlib, io, json
import click
from ccswitch_tui.cli import COMMANDS, cli, run
argvs = [[]] + [[c] for c in COMMANDS]
for c in COMMANDS:
    cmd = cli.get_command(None, c)
    if isinstance(cmd, click.Group):
        argvs += [[c, s] for s in cmd.list_commands(None)]
out = {}
for argv in argvs:
    for flag in ("--help", "-h"):
        buf, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
            rc = run([*argv, flag])
        out[" ".join([*argv, flag])] = [rc, buf.getvalue(), err.getvalue()]
print(json.dumps(out))
"""


def test_help_for_every_command(ccs_home: Paths):
    r = subprocess.run([sys.executable, "-c", HELP_ALL], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    results = json.loads(r.stdout)
    assert {"list --help", "key set --help", "key rm -h", "presets --help", "--help"} <= set(results)
    for argv, (rc, out, err) in results.items():
        assert rc == 0, (argv, err)
        assert out.startswith("Usage: ccs"), (argv, out)
        assert err == "", (argv, err)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bogus"], "No such command 'bogus'"),
        (["list", "--bogus"], "No such option '--bogus'"),
        (["--bogus"], "No such option '--bogus'"),
        (["show"], "Missing argument 'PROFILE'"),
        (["key", "nope"], "No such command 'nope'"),
    ],
)
def test_usage_errors_exit_2_with_one_line(ccs, args, message):
    line = fails(ccs(*args))
    assert message in line and "--help" in line


def test_version(ccs):
    out = ok(ccs("--version"))
    from ccswitch_tui import __version__

    assert out.strip() == f"ccs, version {__version__}"


# --- the profile commands stay light ---------------------------------------------------------------

LIGHT = """
import contextlib, io, json, sys
from ccswitch_tui import cli
rcs = []
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    for argv in (["list"], ["list", "--json"], ["show", "envy"], ["show", "kr", "--json"], ["presets"]):
        rcs.append(cli.run(argv))
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("textual", "httpx"))
print(json.dumps({"rcs": rcs, "heavy": heavy}))
"""


def test_profile_commands_never_import_textual_or_httpx(ccs_home: Paths):
    write(ccs_home, "envy", ENV_PROFILE)
    write(ccs_home, "kr", '[provider]\nname = "K"\nbase_url = "https://k.example"\nkey = "some-id"\n')
    r = subprocess.run([sys.executable, "-c", LIGHT], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["rcs"] == [0, 0, 0, 0, 0]
    assert got["heavy"] == []


def test_cp_copies_the_file_and_refuses_clashes(ccs, ccs_home):
    assert ccs("new", "src", "--preset", "taotoken").returncode == 0
    src = ccs_home.profiles / "src.toml"
    src.write_text(src.read_text() + "# a trailing comment\n")
    r = ccs("cp", "src", "dst")
    assert r.returncode == 0, r.stderr
    assert (ccs_home.profiles / "dst.toml").read_text() == src.read_text()
    refusals = [(["cp", "src", "dst"], "already exists"), (["cp", "src", "src"], "needs another name"),
                (["cp", "nope", "x"], "no profile named 'nope'"), (["cp", "src", "../x"], "invalid profile name")]
    for args, message in refusals:
        r = ccs(*args)
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)


def test_new_refuses_a_key_as_key_id_and_writes_nothing(ccs, ccs_home):
    pasted = "sk-ant-api03-" + "x" * 40
    r = ccs("new", "p", "--base-url", "https://p.invalid", "--key", pasted)
    assert r.returncode == 2 and "looks like a key itself" in r.stderr
    assert pasted not in r.stderr + r.stdout
    assert not (ccs_home.profiles / "p.toml").exists()


def test_a_state_folder_that_is_a_file_is_bad_input_not_a_crash(ccs, ccs_home):
    assert ccs("new", "p", "--base-url", "https://p.invalid", "--key", "env:SOME_KEY").returncode == 0
    shutil.rmtree(ccs_home.state, ignore_errors=True)  # (`ccs new` keeps the profile's parsed text there)
    ccs_home.state.parent.mkdir(parents=True, exist_ok=True)
    ccs_home.state.write_text("not a folder\n")
    env = {**os.environ, "SOME_KEY": "sk-some-0123456789abcdef"}
    r = ccs("run", "p", "--", "true", env=env)
    assert r.returncode == 2, r.stderr
    assert str(ccs_home.state) in r.stderr and "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_did_you_mean_for_commands_and_profiles(ccs, ccs_home: Paths):
    """`ccs lunch` said only "No such command"; `ccs launch kimj claude` listed the first 8 of 200
    profiles instead of naming 'kimi'."""
    assert "No such command 'lunch'. Did you mean 'launch'?" in fails(ccs("lunch"))
    assert "Did you mean one of: 'usage', 'use'?" in fails(ccs("usge"))
    assert "Did you mean" not in fails(ccs("zzz"))
    store = Store(ccs_home)
    for i in range(200):
        store.save_text(f"gw-{i:03d}", new_profile_text(f"gw-{i:03d}", "taotoken"), create=True)
    store.save_text("kimi", new_profile_text("kimi", "kimi"), create=True)
    line = fails(ccs("launch", "kimj", "claude"))
    assert "no profile named 'kimj'" in line and "did you mean 'kimi'?" in line and "all 201" in line, line
    assert "gw-000" not in line
    line = fails(ccs("show", "zzzzzz"))
    assert "none of the 201 profiles is close" in line and "gw-000" not in line, line

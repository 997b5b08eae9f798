"""Nothing ccs prints can drive the user's terminal. Escape sequences (OSC title, hyperlink and
clipboard, CSI, DCS), a C1 control and bidi overrides are fed through every place text from elsewhere
comes from — a hostile repository's Claude Code, Gemini CLI and OpenCode files and Codex's config, a
real process's directory and environment, a CC Switch row, a provider's error body and served model
in records — and no raw control character reaches the stdout or stderr of any command, or the TUI's
screen. JSON output stays valid JSON holding the exact text."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
import time
import unicodedata
from pathlib import Path

import pytest
from conftest import forget_indexed_keys
from provider_stub import ProviderStub

from ccswitch_tui.terminal_text import visible, visible_json

# Each ends in a marker word, so a test can also see that the text was shown (escaped), not dropped.
PAYLOADS = {
    "osc-title": "\x1b]0;EVIL-TITLE\x07",
    "osc-hyperlink": "\x1b]8;;file:evil.example\x1b\\EVIL-LINK\x1b]8;;\x1b\\",
    "osc-clipboard": "\x1b]52;c;aGFja2Vk\x07EVIL-CLIP",
    "csi": "\x1b[2J\x1b[1;31mEVIL-CSI\x1b[0m",
    "dcs": "\x1bP1$rEVIL-DCS\x1b\\",
    "c1": "\x9b2J\x9d0;EVIL-C1\x9c",
    "bidi": "\u202eEVIL-BIDI\u2066gpj.exe\u2069\u202c",
}
BIDI = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}
KEY = "sk-terminal-text-0123456789abcdef"


def raw_controls(text: str) -> list[str]:
    """Every character a terminal could obey: C0 but newline and tab, DEL, C1, bidi, lone surrogates."""
    return [c for c in text if (unicodedata.category(c) in ("Cc", "Cs") and c not in "\n\t") or c in BIDI]


def marker(payload: str) -> str:
    return re.search(r"EVIL-[A-Z0-9]+", payload).group(0)


def strings(data) -> list[str]:
    """Every string (keys too) in a parsed JSON document."""
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [s for k, v in data.items() for s in (k, *strings(v))]
    if isinstance(data, list):
        return [s for v in data for s in strings(v)]
    return []


def holds(data, text: str) -> bool:
    return any(text in s for s in strings(data))


def assert_clean(outputs: list[tuple[str, subprocess.CompletedProcess]], payload: str) -> None:
    for what, r in outputs:
        for name, text in (("stdout", r.stdout), ("stderr", r.stderr)):
            assert not raw_controls(text), f"`ccs {what}` {name}: {raw_controls(text)!r} in {text!r}"
        assert "Traceback" not in r.stderr and "internal error" not in r.stderr, (what, r.stderr)
    shown = "".join(r.stdout + r.stderr for _, r in outputs)
    assert marker(payload) in shown, "the text was not shown at all"


def run(*args: str, env: dict[str, str], cwd: Path | None = None, input: str | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ccswitch_tui", *args], env=env, cwd=cwd, input=input,
                          capture_output=True, text=True, timeout=timeout,
                          stdin=None if input is not None else subprocess.DEVNULL)


@pytest.fixture
def env(ccs_home, tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {"PATH": f"/usr/local/bin:/usr/bin:/bin:{Path(sys.executable).parent}", "HOME": str(home),
            "CCS_HOME": os.environ["CCS_HOME"], "LANG": "C.UTF-8", "CCS_T_KEY": KEY,
            "DBUS_SESSION_BUS_ADDRESS": os.environ.get("DBUS_SESSION_BUS_ADDRESS", ""),
            "CCS_CLAUDE_MANAGED_SETTINGS": str(tmp_path / "no-managed-settings.json")}


PROFILE = """\
schema = 1
description = "every client"

[provider]
name = "Plain"
base_url = "{url}"
key = "{key}"

[claude]
model = "claude-m"

[codex]
model = "gpt-4.1"

[gemini]
model = "gemini-m"

[opencode]
model = "oc-m"

[run]
export = ["openai"]
"""


def write_profile(ccs_home, name: str = "p", url: str = "https://plain.example/v1", key: str = "env:CCS_T_KEY"):
    ccs_home.profiles.mkdir(parents=True, exist_ok=True)
    (ccs_home.profiles / f"{name}.toml").write_text(PROFILE.format(url=url, key=key))


# --- the helper ----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", PAYLOADS)
def test_visible_escapes_every_control_and_keeps_the_rest(kind):
    text = f"line one é 中文 [bold]x[/]\n\tpath/{PAYLOADS[kind]}\r\x7f\udc9b"
    shown = visible(text)
    assert not raw_controls(shown)
    assert visible(shown) == shown  # idempotent: wrapping twice shows the same
    assert shown.startswith("line one é 中文 [bold]x[/]\n\tpath/") and marker(PAYLOADS[kind]) in shown
    assert shown.endswith("\\x0d\\x7f\\x9b")  # the undecodable byte shown as the byte it was
    assert "\\x1b" in shown or "\\x9b" in shown or "\\u202e" in shown


def test_visible_json_is_the_same_data():
    data = {k: v + "\udc9b\x7f" for k, v in PAYLOADS.items()}
    text = visible_json(json.dumps(data, ensure_ascii=False))
    assert not raw_controls(text) and json.loads(text) == data and holds(json.loads(text), PAYLOADS["c1"])


# --- validation: a profile is plain text ---------------------------------------------------------

@pytest.mark.parametrize("field,line", [
    ("description", 'description = "\\u001b]0;HIJACKED-TITLE\\u0007"'),
    ("[env].X", '[env]\nX = "a\\u009bb"'),
    ("[provider].name", None),
])
def test_a_control_character_in_a_profile_value_is_one_line_naming_the_field(ccs_home, env, field, line):
    write_profile(ccs_home)
    path = ccs_home.profiles / "p.toml"
    text = path.read_text()
    if field == "description":
        text = text.replace('description = "every client"', line)
    elif line:
        text += line + "\n"
    else:
        text = text.replace('name = "Plain"', 'name = "Pl\\u001b[2Jain"')
    path.write_text(text)
    dotted = {"description": "description", "[env].X": "env.X", "[provider].name": "provider.name"}[field]
    for args in (("show", "p"), ("env", "p"), ("run", "p", "--", "true")):
        r = run(*args, env=env)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1, (args, r.stderr)
        assert "control character" in lines[0] and dotted in lines[0] and not raw_controls(r.stderr)
    listed = json.loads(run("list", "--json", env=env).stdout)["profiles"]
    assert "control character" in listed[0]["error"] and not listed[0]["ok"]


def test_newline_and_tab_in_a_value_still_load(ccs_home, env):
    write_profile(ccs_home)
    path = ccs_home.profiles / "p.toml"
    path.write_text(path.read_text().replace('description = "every client"', 'description = "a\\tb\\nc"'))
    r = run("show", "p", env=env)
    assert r.returncode == 0 and "a\tb\nc" in r.stdout, r.stderr


# --- a hostile repository, and a hostile Codex home ----------------------------------------------

@pytest.mark.parametrize("kind", PAYLOADS)
def test_a_hostile_repository_and_codex_home(ccs_home, env, tmp_path, kind):
    p = PAYLOADS[kind]
    repo = tmp_path / "repo"
    (repo / ".claude").mkdir(parents=True)
    (repo / ".gemini").mkdir()
    (repo / ".claude" / "settings.json").write_text(json.dumps({"env": {
        "ANTHROPIC_BASE_URL": f"http://evil.example/{p}x", "ANTHROPIC_MODEL": p}, "model": p}))
    (repo / ".claude" / "settings.local.json").write_text(json.dumps({"env": {p: "1"}}))
    (repo / ".gemini" / "settings.json").write_text(json.dumps({"model": {"name": p},
                                                                "security": {"auth": {"selectedType": p}}}))
    (repo / ".env").write_text(f"GOOGLE_GEMINI_BASE_URL=http://evil.example/{p}\n")
    (repo / "opencode.json").write_text(json.dumps({"model": p, "provider": {p: {"options": {"baseURL": p}}}}))
    codex = Path(env["HOME"]) / ".codex"
    codex.mkdir()
    (codex / "config.toml").write_text(
        f'model = {json.dumps(p)}\nmodel_provider = "evil"\n[model_providers.evil]\nname = {json.dumps(p)}\n'
        f'base_url = {json.dumps("http://evil.example/v1/" + p)}\nwire_api = "responses"\nenv_key = "EVIL_KEY"\n')
    (codex / "auth.json").write_text(json.dumps({"OPENAI_API_KEY": "sk-evil-" + "x" * 30}))
    claude_user = Path(env["HOME"]) / ".claude"
    claude_user.mkdir()
    (claude_user / "settings.json").write_text(json.dumps({"env": {"ANTHROPIC_BASE_URL": f"http://u.example/{p}"}}))
    write_profile(ccs_home)

    outputs = []
    for args in (("doctor", "--cwd", str(repo)), ("env", "p", "--tool", "claude", "--cwd", str(repo)),
                 ("env", "p", "--tool", "gemini", "--cwd", str(repo)),
                 ("env", "p", "--tool", "opencode", "--cwd", str(repo)),
                 ("env", "p", "--tool", "codex", "--cwd", str(repo)),
                 ("env", "p", "--tool", "claude", "--cwd", str(repo), "--diff"),
                 ("run", "p", "--cwd", str(repo), "--", "true"),
                 ("launch", "p", "claude", "--cwd", str(repo), "--", "--version"),
                 ("import", "claude", "--settings", str(repo / ".claude" / "settings.json"), "--dry-run"),
                 ("import", "codex", "--dry-run")):
        outputs.append((" ".join(args[:3]), run(*args, env=env, cwd=repo)))
    assert_clean(outputs, p)
    doctor = outputs[0][1]
    assert doctor.returncode == 3 and "settings-override" in doctor.stdout

    # JSON stays JSON, holding the exact text
    r = run("doctor", "--cwd", str(repo), "--json", env=env)
    assert not raw_controls(r.stdout)
    assert holds(json.loads(r.stdout), f"http://evil.example/{p}x")
    r = run("env", "p", "--tool", "claude", "--cwd", str(repo), "--format", "json", env=env)
    assert not raw_controls(r.stdout) and json.loads(r.stdout)["tool"] == "claude"


# --- a real process: its directory and its environment -------------------------------------------

@pytest.mark.parametrize("kind", PAYLOADS)
def test_a_process_in_a_hostile_directory_with_hostile_variables(ccs_home, env, tmp_path, kind):
    p = PAYLOADS[kind]
    where = tmp_path / f"dir{p.replace('/', '_')}"
    where.mkdir()
    raw = os.fsencode(str(where)) + b"-\x9b\xff"  # and bytes that are not UTF-8 at all
    os.mkdir(raw)
    write_profile(ccs_home)
    child_env = {"PATH": "/usr/bin:/bin", "HOME": env["HOME"], "ANTHROPIC_BASE_URL": f"http://evil.example/{p}",
                 "OPENAI_BASE_URL": "http://evil.example/v1", "CCS_PROFILE": p, "CCS_TOOL": p,
                 "CCS_LAUNCH_ID": p, "ANTHROPIC_MODEL": p}
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=child_env, cwd=raw,
                             stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and Path(f"/proc/{child.pid}/cwd").resolve() == Path.cwd():
            time.sleep(0.01)
        outputs = [("ps --all", run("ps", "--all", env=env)),
                   ("inspect", run("inspect", str(child.pid), env=env)),
                   ("inspect --profile", run("inspect", str(child.pid), "--profile", "p", env=env))]
        assert_clean(outputs, p)
        assert str(child.pid) in outputs[0][1].stdout and "\\x9b\\xff" in outputs[0][1].stdout
        assert "\\x9b\\xff" in outputs[1][1].stdout
        data = json.loads(run("ps", "--all", "--json", env=env).stdout)
        (me,) = [x for x in data["processes"] if x["pid"] == child.pid]
        assert os.fsencode(me["cwd"]) == raw  # the exact directory, as JSON can say it
        r = run("inspect", str(child.pid), "--json", env=env)
        assert not raw_controls(r.stdout) and json.loads(r.stdout)["pid"] == child.pid
    finally:
        child.kill()
        child.wait()


# --- a CC Switch database ------------------------------------------------------------------------

SCHEMA = """CREATE TABLE providers (id TEXT NOT NULL, app_type TEXT NOT NULL, name TEXT NOT NULL,
settings_config TEXT NOT NULL, website_url TEXT, category TEXT, created_at INTEGER, sort_index INTEGER,
notes TEXT, icon TEXT, icon_color TEXT, meta TEXT NOT NULL DEFAULT '{}', is_current BOOLEAN NOT NULL DEFAULT 0,
in_failover_queue BOOLEAN NOT NULL DEFAULT 0, PRIMARY KEY (id, app_type))"""


@pytest.mark.parametrize("kind", PAYLOADS)
def test_a_cc_switch_row_with_a_hostile_name_and_notes(ccs_home, env, secret_service, kind):
    p = PAYLOADS[kind]
    db = Path(env["HOME"]) / ".cc-switch" / "cc-switch.db"
    db.parent.mkdir()
    con = sqlite3.connect(db)
    con.execute(SCHEMA)
    rows = [("r1", "claude", f"Relay {p}", {"env": {"ANTHROPIC_BASE_URL": "https://relay.example/api",
                                                   "ANTHROPIC_AUTH_TOKEN": "sk-relay-" + "a1" * 16,
                                                   "ANTHROPIC_MODEL": "relay-m"}}, f"notes {p}\nmore {p}"),
            ("r2", "claude", f"Broken {p}", {"env": {"ANTHROPIC_BASE_URL": f"https://x.example/{p}",
                                                    "ANTHROPIC_AUTH_TOKEN": "sk-broken-" + "b2" * 16}}, p)]
    for i, (rid, app, name, settings, notes) in enumerate(rows):
        con.execute("INSERT INTO providers (id, app_type, name, settings_config, notes, meta, sort_index) "
                    "VALUES (?,?,?,?,?,?,?)", (rid, app, name, json.dumps(settings), notes, "{}", i))
    con.commit()
    con.close()
    try:
        outputs = [("import cc-switch --dry-run", run("import", "cc-switch", "--dry-run", env=env)),
                   ("import cc-switch", run("import", "cc-switch", env=env))]
        assert outputs[1][1].returncode == 0, outputs[1][1].stderr
        names = [x["name"] for x in json.loads(run("list", "--json", env=env).stdout)["profiles"]]
        assert names, outputs[1][1].stdout
        outputs += [("list", run("list", env=env))]
        outputs += [(f"show {n}", run("show", n, env=env)) for n in names]
        outputs += [("export", run("export", names[0], "--format", "json", env=env))]
        assert_clean(outputs, p)
        data = json.loads(run("import", "cc-switch", "--dry-run", "--json", env=env).stdout)
        assert holds(data, p) or holds(data, visible(p))
    finally:
        forget_indexed_keys(ccs_home)


# --- a provider: its error bodies and its served model, recorded ---------------------------------

PROGRAM = textwrap.dedent("""
    import json, os, urllib.request, urllib.error
    base = os.environ["OPENAI_BASE_URL"].rstrip("/")
    def post(path, body):
        req = urllib.request.Request(base + path, json.dumps(body).encode(), method="POST", headers={
            "content-type": "application/json", "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
        try:
            return urllib.request.urlopen(req, timeout=30).read()
        except urllib.error.HTTPError as exc:
            return exc.read()
    post("/responses", {"model": "gpt-4.1", "input": "hi"})
    post("/chat/completions", {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]})
""")


@pytest.fixture
def provider():
    s = ProviderStub()
    yield s
    s.close()


@pytest.mark.parametrize("kind", PAYLOADS)
def test_a_provider_error_body_and_served_model(ccs_home, env, key_id, provider, tmp_path, kind):
    p = PAYLOADS[kind]
    provider.served = f"served {p}"
    body = {"error": {"message": f"upstream says {p}", "type": p}}
    provider.fault = {"/chat/completions": ("status", 400, body), "/v1/messages": ("status", 400, body)}
    write_profile(ccs_home, url=provider.url + "/v1", key=key_id)
    assert run("key", "set", key_id, input=KEY, env=env).returncode == 0
    program = tmp_path / "prog.py"
    program.write_text(PROGRAM)
    outputs = []
    for _ in range(2):
        outputs.append(("run --record", run("run", "--record", "--label", "x", "p", "--", sys.executable,
                                             str(program), env=env, timeout=120)))
        assert outputs[-1][1].returncode == 0, outputs[-1][1].stderr
    ids = [m["launch_id"] for m in json.loads(run("runs", "--json", env=env).stdout)["runs"]]
    records = Path(os.environ["CCS_HOME"]) / "state" / "runs"
    recs = [json.loads(line) for f in records.glob("*.requests.jsonl") for line in f.read_text().splitlines()]
    assert any(r.get("model_served") == f"served {p}" for r in recs)  # what the provider said, as it said it
    assert any(p in (r.get("error") or "") for r in recs)
    for args in (("runs",), ("runs", "diff", *ids), ("runs", "report", *ids), ("runs", "report", "--label", "x"),
                 ("runs", "report", *ids, "--csv"), ("check", "p")):
        outputs.append((" ".join(args[:2]), run(*args, env=env)))
    assert_clean(outputs, p)
    check = outputs[-1][1]
    assert check.returncode == 3 and "upstream says" in check.stdout
    for args in (("runs", "--json"), ("runs", "report", *ids, "--json"), ("check", "p", "--json")):
        r = run(*args, env=env)
        assert not raw_controls(r.stdout)
        assert holds(json.loads(r.stdout), p)


# --- the error printer ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind", PAYLOADS)
def test_error_lines_show_the_text_escaped(ccs_home, env, tmp_path, kind):
    p = PAYLOADS[kind]
    write_profile(ccs_home)
    outputs = [("show", run("show", f"x{p}", env=env)),
               ("doctor --cwd", run("doctor", "--cwd", str(tmp_path / f"no{p.replace('/', '_')}"), env=env)),
               ("inspect --profile", run("inspect", "1", "--profile", p, env=env)),
               ("import claude", run("import", "claude", "--settings", str(tmp_path / p.replace("/", "_")),
                                     env=env))]
    for _, r in outputs:
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert_clean(outputs, p)


# --- the shell ccs started from ------------------------------------------------------------------

@pytest.mark.parametrize("kind", PAYLOADS)
def test_the_shell_ccs_started_from(ccs_home, env, kind):
    p = PAYLOADS[kind]
    write_profile(ccs_home)
    shell = {**env, "ANTHROPIC_BASE_URL": f"http://evil.example/{p}", "TZ": p, "OPENAI_MODEL": p}
    outputs = [(" ".join(a), run(*a, env=shell)) for a in (
        ("env", "p"), ("env", "p", "--format", "dotenv"), ("env", "p", "--tool", "claude", "--diff"),
        ("doctor",))]
    assert_clean(outputs, p)
    r = run("env", "p", "--format", "json", env=shell)
    assert not raw_controls(r.stdout) and json.loads(r.stdout)["env"]["TZ"] == p  # inherited, exact in JSON
    r = run("env", "p", "--tool", "claude", "--diff", "--format", "json", env=shell)
    assert not raw_controls(r.stdout) and holds(json.loads(r.stdout), f"http://evil.example/{p}")


# --- on a real terminal --------------------------------------------------------------------------

def on_terminal(*args: str, env: dict[str, str]) -> tuple[int, str]:
    """Run `ccs ARGS` with stdout and stderr on a real pseudo-terminal; its exit status and what it wrote."""
    import pty

    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "ccswitch_tui", *args], env=env, stdin=subprocess.DEVNULL,
                                stdout=slave, stderr=slave)
        os.close(slave)
        slave = -1
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the last writer closed the terminal
                break
            if not chunk:
                break
            out += chunk
        rc = proc.wait(30)
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    return rc, out.decode("utf-8").replace("\r\n", "\n")  # the terminal's line discipline adds the CR


@pytest.mark.parametrize("kind", ["csi", "osc-clipboard", "c1"])
def test_on_a_terminal_nothing_is_stripped_for_us(ccs_home, env, tmp_path, kind):
    """On a pipe click strips CSI sequences itself; on a terminal it does not, so the rule is ccs's."""
    p = PAYLOADS[kind]
    repo = tmp_path / "repo"
    (repo / ".claude").mkdir(parents=True)
    (repo / ".claude" / "settings.json").write_text(json.dumps({"env": {"ANTHROPIC_BASE_URL": f"http://e.example/{p}"}}))
    rc, text = on_terminal("doctor", "--cwd", str(repo), env=env)
    assert rc == 3 and "settings-override" in text and marker(p) in text
    assert not raw_controls(text), raw_controls(text)


def test_export_shows_a_comment_escaped_on_a_terminal_and_exact_through_a_pipe(ccs_home, env):
    """TOML refuses C0 controls even in comments, but not C1 or bidi characters."""
    write_profile(ccs_home)
    path = ccs_home.profiles / "p.toml"
    path.write_text("# shared by \x9b2J \u202eEVIL-CMT\n" + path.read_text())
    rc, text = on_terminal("export", "p", env=env)
    assert rc == 0 and "\\x9b2J \\u202eEVIL-CMT" in text and not raw_controls(text)
    r = run("export", "p", env=env)
    assert r.returncode == 0 and "\x9b2J \u202eEVIL-CMT" in r.stdout  # the file's text, for a file


def test_a_debug_traceback_shows_the_text_escaped(ccs_home, env):
    p = PAYLOADS["osc-clipboard"]
    r = run("--debug", "show", f"x{p}", env=env)
    assert r.returncode == 1 and "Traceback" in r.stderr and marker(p) in r.stderr
    assert not raw_controls(r.stderr)


@pytest.mark.parametrize("kind", ["osc-clipboard", "bidi", "csi"])
def test_usage_shows_names_labels_and_models_from_the_state_escaped(ccs_home, env, kind):
    """`ccs usage` printed a manifest's profile name (a run not recorded) and a records file's name
    raw, and `--csv` the labels and served model names with their escape and bidi characters."""
    p = PAYLOADS[kind]
    runs = ccs_home.runs
    runs.mkdir(parents=True)
    (runs / "20261206T100000Z-aaaaaaaa.json").write_text(json.dumps({
        "launch_id": "20261206T100000Z-aaaaaaaa", "profile": f"not-recorded{p}", "tool": "run",
        "started": "2026-12-06T10:00:00Z", "ended": "2026-12-06T10:00:01Z", "exit_status": 0}))
    (runs / "20261206T100100Z-bbbbbbbb.requests.jsonl").write_text(json.dumps({
        "id": 1, "started": "2026-12-06T10:01:00Z", "model_served": f"served{p}", "outcome": "ok",
        "input_tokens": 3, "output_tokens": 4}) + "\n")
    (runs / "20261206T100100Z-bbbbbbbb.json").write_text(json.dumps({
        "launch_id": "20261206T100100Z-bbbbbbbb", "profile": "p", "tool": "run", "label": f"round{p}",
        "started": "2026-12-06T10:01:00Z", "ended": "2026-12-06T10:01:01Z", "exit_status": 0,
        "recording": {"records": "20261206T100100Z-bbbbbbbb.requests.jsonl"}}))
    (runs / "20261206T100200Z-cccccccc.json").write_text(json.dumps({
        "launch_id": "20261206T100200Z-cccccccc", "profile": "p", "tool": "run",
        "started": "2026-12-06T10:02:00Z", "ended": "2026-12-06T10:02:01Z", "exit_status": 0,
        "recording": {"records": f"gone{p}.requests.jsonl"}}))
    outputs = [(" ".join(a), run(*a, env=env)) for a in (
        ("usage",), ("usage", "--csv"), ("usage", "--by", "label"), ("usage", "--by", "label", "--csv"),
        ("usage", "--by", "model"), ("usage", "--by", "model", "--csv"))]
    for what, r in outputs:
        assert r.returncode == 0, (what, r.stderr)
    assert_clean(outputs, p)
    data = json.loads(run("usage", "--by", "model", "--json", env=env).stdout)
    assert holds(data, f"served{p}") and holds(data, f"not-recorded{p}")  # JSON keeps the exact text

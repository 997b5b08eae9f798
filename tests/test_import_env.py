"""`ccs import env FILE`: a .env file in dotenv or shell syntax becomes a profile, its key goes to the
real keyring, every unused line is reported, and --scrub rewrites the file byte for byte except the
key's lines. Values are resolved as `sh` resolves them (checked against the real sh)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import tomlkit

from ccswitch_tui.importers.dotenv import parse

KEY = "sk-walkthrough-3f9a1c7e5b2d4f608a1e"
OTHER = "sk-other-provider-9b8a7c6d5e4f3a2b1c0d"
WALKTHROUGH = f"""\
export TAOTOKEN_BASE_URL=https://taotoken.net/api
export TAOTOKEN_API_KEY={KEY}
export OPENAI_API_KEY=$TAOTOKEN_API_KEY
export OPENAI_BASE_URL=$TAOTOKEN_BASE_URL
export ANTHROPIC_BASE_URL=$TAOTOKEN_BASE_URL
export ANTHROPIC_AUTH_TOKEN=$TAOTOKEN_API_KEY
"""


def profiles_dir() -> Path:
    return Path(os.environ["CCS_HOME"]) / "profiles"


def profile_data(name: str) -> dict:
    return tomlkit.parse((profiles_dir() / f"{name}.toml").read_text()).unwrap()


def keyring_value(key_id: str) -> str | None:
    import keyring

    return keyring.get_password("ccswitch-tui", key_id)


@pytest.fixture
def cleanup_keys(ccs_home):
    yield
    from conftest import forget_indexed_keys

    forget_indexed_keys(ccs_home)


# --- the parser against the real sh -----------------------------------------------------------------

SH_SAMPLE = """\
# a comment
PLAIN=abc
export EXPORTED=one
SINGLE='it''s $PLAIN literal'
DOUBLE="x $PLAIN ${EXPORTED}-y \\"q\\" \\$not"
UNQUOTED=$PLAIN/${EXPORTED}/z  # trailing comment
MIXED="a"'b'c$PLAIN
EMPTY=
UNKNOWN_REF=$NOT_SET_ANYWHERE
DOLLAR_END=cost$
ESCAPED=a\\ b
"""


def test_values_resolve_as_sh_resolves_them(tmp_path):
    f = tmp_path / "sample.env"
    f.write_text(SH_SAMPLE)
    parsed = parse(SH_SAMPLE)
    assert not parsed.unread
    ours = {e.name: e.value for e in parsed.entries}
    out = subprocess.run(["sh", "-c", f'set -a; . "{f}"; env -0'], capture_output=True, check=True,
                         env={"PATH": "/usr/bin:/bin"}).stdout.decode()
    theirs = dict(x.split("=", 1) for x in out.split("\0") if "=" in x)
    for name, value in ours.items():
        assert theirs.get(name, "") == value, name
    assert ours["DOUBLE"] == 'x abc one-y "q" $not' and ours["SINGLE"] == "its $PLAIN literal"
    refs = {e.name: e.refs for e in parsed.entries}
    assert refs["UNQUOTED"] == ("PLAIN", "EXPORTED") and refs["SINGLE"] == ()


@pytest.mark.parametrize(("line", "reason"), [
    ("set -a", "a command, not an assignment"),
    ("source .env.other", "a command, not an assignment"),
    ("A = b", "spaces around '='"),
    ("A=$(cat key.txt)", "runs a command"),
    ("A=`cat key.txt`", "runs a command"),
    ("A=${B:-default}", "parameter expansion"),
    ("A=one two", "more than one word"),
    ("A='open", "does not close"),
    ("A=x; rm -rf /", "more than an assignment"),
])
def test_lines_ccs_does_not_evaluate_say_why(line, reason):
    parsed = parse(f"OK=1\n{line}\n")
    (u,) = parsed.unread
    assert u.line == 2 and reason in u.reason and [e.name for e in parsed.entries] == ["OK"]


# --- imports through the CLI and the real keyring ----------------------------------------------------

@pytest.mark.usefixtures("secret_service", "cleanup_keys")
def test_the_walkthrough_file_becomes_the_taotoken_profile_and_is_scrubbed(ccs, base_env, tmp_path):
    f = tmp_path / ".env.taotoken"
    f.write_text(WALKTHROUGH)
    r = ccs("import", "env", str(f), "--scrub", "--dry-run", env=base_env)
    assert r.returncode == 0, r.stderr
    assert "would remove line 2 TAOTOKEN_API_KEY" in r.stdout and not profiles_dir().exists(), r.stdout
    assert f.read_text() == WALKTHROUGH

    r = ccs("import", "env", str(f), "--scrub", "--json", env=base_env)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["import"] == "env" and report["summary"]["created"] == 1 and report["summary"]["skipped"] == 0
    (item,) = report["items"]
    assert item["profile"] == "taotoken" and item["key"] == "stored" and "preset taotoken" in item["reason"]
    assert keyring_value(item["key_id"]) == KEY
    data = profile_data("taotoken")
    assert data["provider"]["base_url"] == "https://taotoken.net/api" and data["provider"]["key"] == item["key_id"]
    assert data["run"]["export"] == ["openai", "anthropic", {"key": "TAOTOKEN_API_KEY",
                                                             "base_url": "TAOTOKEN_BASE_URL"}]
    assert data["claude"]["auth"] == "token" and data["codex"]["model"] == "gpt-4.1"
    assert KEY not in (profiles_dir() / "taotoken.toml").read_text()

    # the scrubbed file: every byte kept but the key's line, which a comment naming the key id replaced
    (scrubbed,) = report["scrubbed"]
    assert scrubbed["removed"] == ["line 2 TAOTOKEN_API_KEY"]
    assert scrubbed["referencing"] == ["line 3 OPENAI_API_KEY", "line 6 ANTHROPIC_AUTH_TOKEN"]
    lines = WALKTHROUGH.splitlines(keepends=True)
    after = f.read_text().splitlines(keepends=True)
    assert after[:1] + after[2:] == lines[:1] + lines[2:]
    assert after[1].startswith("# TAOTOKEN_API_KEY: in the OS keyring under key id 'taotoken'")
    assert KEY not in f.read_text()

    # the same file again (as it was): the profile is there already
    f2 = tmp_path / "again.env"
    f2.write_text(WALKTHROUGH)
    r = ccs("import", "env", str(f2), env=base_env)
    assert r.returncode == 0 and "unchanged taotoken" in r.stdout, r.stdout
    # the scrubbed file: nothing to import, and why
    r = ccs("import", "env", str(f), env=base_env)
    assert r.returncode == 0 and "the file sets no key" in r.stdout
    assert "empty (it references $TAOTOKEN_API_KEY" in r.stdout


DOTENV = f"""\
# gateway for the eval scripts\r
MYGW_BASE_URL="https://gw.example.org/v1"\r
MYGW_API_KEY='{OTHER}'\r
OPENAI_BASE_URL=${{MYGW_BASE_URL}}\r
OPENAI_API_KEY=${{MYGW_API_KEY}}\r
SEED=42\r
HTTPS_PROXY=http://127.0.0.1:3128\r
PLACEHOLDER_BASE_URL=not-a-url\r
run_this_command\r
"""


@pytest.mark.usefixtures("secret_service", "cleanup_keys")
def test_dotenv_with_custom_names_unused_lines_and_a_byte_exact_scrub(ccs, base_env, tmp_path):
    f = tmp_path / ".env"
    f.write_bytes(DOTENV.encode())
    r = ccs("import", "env", str(f), "--scrub", "--json", env=base_env)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    created = [i for i in report["items"] if i["action"] == "created"]
    assert [i["profile"] for i in created] == ["example"]
    skipped = {i["name"]: i["reason"] for i in report["items"] if i["action"] == "skipped"}
    assert set(skipped) == {"SEED", "HTTPS_PROXY", "PLACEHOLDER_BASE_URL", "run_this_command"}
    assert "not a key or a base URL" in skipped["SEED"] and "proxy family" in skipped["HTTPS_PROXY"]
    assert "not an http(s) URL" in skipped["PLACEHOLDER_BASE_URL"] and "a command" in skipped["run_this_command"]
    data = profile_data("example")
    assert data["run"]["export"] == ["openai", {"key": "MYGW_API_KEY", "base_url": "MYGW_BASE_URL"}]
    assert data["provider"]["base_url"] == "https://gw.example.org/v1" and "claude" not in data
    assert keyring_value(created[0]["key_id"]) == OTHER
    # not a shell file: the key's line goes, nothing takes its place; CRLF and the rest stay as they were
    lines = DOTENV.encode().splitlines(keepends=True)
    assert f.read_bytes() == b"".join(lines[:2] + lines[3:])

    # the plan of the imported profile hands the program its own names
    r = ccs("env", "example", "--format", "json", env=base_env)
    env = json.loads(r.stdout)["env"] if "env" in json.loads(r.stdout) else json.loads(r.stdout)
    assert "MYGW_API_KEY" in json.dumps(env) and OTHER not in r.stdout


@pytest.mark.usefixtures("secret_service", "cleanup_keys")
def test_identical_keys_share_one_id_and_a_profile_is_merged(ccs, base_env, tmp_path):
    assert ccs("new", "gw", "--base-url", "https://gw.example.org/v1", "--key", "gw-key",
               env=base_env).returncode == 0
    assert ccs("key", "set", "gw-key", input=OTHER, env=base_env).returncode == 0
    f = tmp_path / "gw.env"
    f.write_text(f"MYGW_BASE_URL=https://gw.example.org/v1\nMYGW_API_KEY={OTHER}\n")
    r = ccs("import", "env", str(f), "--json", env=base_env)
    assert r.returncode == 0, r.stderr
    (item,) = json.loads(r.stdout)["items"]
    assert item["action"] == "merged" and item["profile"] == "gw" and item["key_id"] == "gw-key"
    assert profile_data("gw")["run"]["export"][-1] == {"key": "MYGW_API_KEY", "base_url": "MYGW_BASE_URL"}
    # the same key under another host: a new profile, the key id shared
    f.write_text(f"OTHERGW_BASE_URL=https://other.example.net/v1\nOTHERGW_API_KEY={OTHER}\n")
    r = ccs("import", "env", str(f), "--json", env=base_env)
    (item,) = json.loads(r.stdout)["items"]
    assert item["action"] == "created" and item["key"] == "shared" and item["key_id"] == "gw-key"


def _nothing_written(f: Path, before: bytes | None) -> None:
    assert not profiles_dir().exists() or not list(profiles_dir().glob("*.toml"))
    if before is not None:
        assert f.read_bytes() == before


@pytest.mark.parametrize(("make", "message"), [
    (lambda p: p.write_bytes(b"A=1\n\0\x01binary"), "a binary file"),
    (lambda p: p.write_bytes(b"A=" + b"x" * 300_000 + b"\n"), "more than the 262144-byte limit"),
    (lambda p: os.mkfifo(p), "is a FIFO"),
    (lambda p: p.mkdir(), "is a directory"),
    (lambda p: p.write_bytes(b"K=\xff\xfe\n"), "not UTF-8"),
    (lambda p: p.write_text("X_BASE_URL=https://x.example/v1\nX_API_KEY=YOUR_API_KEY\n"),
     "line 2: X_API_KEY's value does not look like an API key"),
    # a walk-through's template: a marked key whose body is a placeholder (it was imported as a key)
    (lambda p: p.write_text("OPENAI_BASE_URL=https://x.example/v1\nOPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxx\n"),
     "line 2: OPENAI_API_KEY's value does not look like an API key"),
    (lambda p: p.write_text("OPENAI_BASE_URL=https://x.example/v1\nOPENAI_API_KEY=sk-your-api-key-here-0000\n"),
     "line 2: OPENAI_API_KEY's value does not look like an API key"),
    # a key with an escape in it: stored, then every launch refused it
    (lambda p: p.write_bytes(b'OPENAI_BASE_URL=https://x.example/v1\nOPENAI_API_KEY="sk-live0123\x1b[31m4567abcdefXYZ"\n'),
     "line 2: OPENAI_API_KEY's value holds a control character"),
    (lambda p: None, "not found"),
])
def test_bad_files_one_line_nothing_written(ccs, base_env, tmp_path, make, message):
    f = tmp_path / "bad.env"
    make(f)
    before = f.read_bytes() if f.is_file() else None
    r = ccs("import", "env", str(f), "--scrub", env=base_env, timeout=30)
    assert r.returncode == 2, r.stdout + r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and message in r.stderr and "Traceback" not in r.stderr
    _nothing_written(f, before)


def test_an_unreadable_file_is_one_line(ccs, base_env, tmp_path):
    """A file the system refuses to read (as root, a mode cannot refuse: /proc/self/mem answers EIO)."""
    if os.geteuid() == 0:
        f = Path("/proc/self/mem")
    else:
        f = tmp_path / "locked.env"
        f.write_text("A=1\n")
        f.chmod(0)
    r = ccs("import", "env", str(f), env=base_env)
    assert r.returncode == 2 and "cannot read" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    _nothing_written(f, None)


@pytest.mark.usefixtures("secret_service", "cleanup_keys")
def test_client_variables_become_their_tables(ccs, base_env, tmp_path):
    """ANTHROPIC_* give the "anthropic" export and Claude Code's fields (auth from the key's name, the
    models); Gemini CLI's variables its table when the file names the model it requires."""
    f = tmp_path / "claude.env"
    f.write_text(f"ANTHROPIC_BASE_URL=https://gw.example.com/anthropic\nANTHROPIC_API_KEY={OTHER}\n"
                 "ANTHROPIC_MODEL=glm-5\nANTHROPIC_DEFAULT_HAIKU_MODEL=glm-5-air\n")
    r = ccs("import", "env", str(f), "--json", env=base_env)
    assert r.returncode == 0, r.stderr
    (item,) = json.loads(r.stdout)["items"]
    data = profile_data(item["profile"])
    assert data["run"]["export"] == ["anthropic"]
    assert data["claude"] == {"auth": "api-key", "model": "glm-5", "haiku": "glm-5-air"}
    assert data["provider"]["base_url"] == "https://gw.example.com/anthropic"

    g = tmp_path / "gemini.env"
    g.write_text(f"GOOGLE_GEMINI_BASE_URL=https://gem.example.net/gemini\nGEMINI_API_KEY={KEY}\n"
                 "GEMINI_MODEL=gemini-2.5-pro\n")
    r = ccs("import", "env", str(g), "--json", env=base_env)
    report = json.loads(r.stdout)
    assert r.returncode == 0 and report["summary"]["created"] == 1 and report["summary"]["skipped"] == 0, r.stdout
    data = profile_data(report["items"][0]["profile"])
    assert data["gemini"] == {"model": "gemini-2.5-pro"} and data["provider"]["base_url"] == \
        "https://gem.example.net/gemini"
    # without the model, Gemini CLI's URL is reported unused (the table would be invalid), nothing created
    g.write_text(f"GOOGLE_GEMINI_BASE_URL=https://gem2.example.net/gemini\nGEMINI_API_KEY={KEY}\n")
    report = json.loads(ccs("import", "env", str(g), "--json", env=base_env).stdout)
    reasons = {i["name"]: i["reason"] for i in report["items"] if i["action"] == "skipped"}
    assert "gemini family" in reasons["GOOGLE_GEMINI_BASE_URL"] and report["summary"]["created"] == 0


@pytest.mark.usefixtures("secret_service", "cleanup_keys")
def test_the_providers_key_wins_over_another_token(ccs, base_env, tmp_path):
    f = tmp_path / "mixed.env"
    f.write_text(f"GITHUB_TOKEN=ghp_{'A1b2C3d4E5f6G7h8' * 2}\nMYGW_BASE_URL=https://gw.example.org/v1\n"
                 f"MYGW_API_KEY={OTHER}\n")
    report = json.loads(ccs("import", "env", str(f), "--json", env=base_env).stdout)
    created = [i for i in report["items"] if i["action"] == "created"]
    assert len(created) == 1 and keyring_value(created[0]["key_id"]) == OTHER
    (skipped,) = [i for i in report["items"] if i["action"] == "skipped"]
    assert skipped["name"] == "GITHUB_TOKEN" and "another key than line 3's MYGW_API_KEY" in skipped["reason"]
    assert "ghp_" not in json.dumps(report)


@pytest.mark.usefixtures("secret_service", "cleanup_keys")
def test_lines_not_evaluated_are_named_never_shown(ccs, base_env, tmp_path):
    f = tmp_path / "odd.env"
    f.write_text(f"X_BASE_URL=https://x.example.org/v1\nX_API_KEY={OTHER}\nOPENAI_API_KEY={KEY} extra\n"
                 f"{KEY}\nprintf hello\n")
    r = ccs("import", "env", str(f), "--json", env=base_env)
    report = json.loads(r.stdout)
    skipped = {i["source"].rsplit(":", 1)[1]: (i["name"], i["reason"]) for i in report["items"]
               if i["action"] == "skipped"}
    assert skipped["3"] == ("OPENAI_API_KEY", skipped["3"][1]) and "more than one word" in skipped["3"][1]
    assert skipped["4"][0] == "(line)" and skipped["5"][0] == "printf"
    assert KEY not in r.stdout and OTHER not in r.stdout
    assert KEY not in ccs("import", "env", str(f), "--dry-run", env=base_env).stdout


@pytest.mark.usefixtures("secret_service", "cleanup_keys")
def test_a_dry_run_says_what_it_would_do_and_name_names_the_key_too(ccs, tmp_path):
    """`--dry-run` said `created` for what it did not create; `--name tt` named the profile tt but the
    key `127.0.0.1` (the host's label)."""
    env_file = tmp_path / "gw.env"
    env_file.write_text(f"OPENAI_API_KEY={KEY}\nOPENAI_BASE_URL=http://127.0.0.1:43125/v1\n")
    r = ccs("import", "env", str(env_file), "--dry-run", "--name", "tt")
    assert r.returncode == 0, r.stderr
    first = r.stdout.splitlines()[0]
    assert first.startswith("would create") and " tt " in first, r.stdout
    assert "key tt (would store)" in r.stdout and "127.0.0.1 (" not in r.stdout, r.stdout
    assert "dry run, nothing written: 1 to create, 0 to merge, 0 unchanged" in r.stdout
    assert json.loads(ccs("import", "env", str(env_file), "--dry-run", "--name", "tt", "--json").stdout)[
        "items"][0]["action"] == "created"  # the JSON keeps its action words
    assert not (profiles_dir() / "tt.toml").exists()
    r = ccs("import", "env", str(env_file), "--name", "tt")
    assert r.returncode == 0 and r.stdout.startswith("created") and "key tt (stored" in r.stdout, r.stdout
    assert keyring_value("tt") == KEY and profile_data("tt")["provider"]["key"] == "tt"
    r = ccs("import", "env", str(env_file), "--dry-run")  # without --name: the existing profile, unchanged
    assert "unchanged" in r.stdout.splitlines()[0], r.stdout


# --- --scrub on files that are not simply the user's own ---------------------------------------------

@pytest.mark.usefixtures("secret_service", "cleanup_keys")
def test_scrub_by_root_keeps_another_users_file_theirs(ccs, base_env, tmp_path):
    """Scrubbed by root, a user's file became root's (0600), and its owner could no longer read it."""
    if os.geteuid() != 0:
        from conftest import skip_or_fail

        skip_or_fail("needs root: the case is root scrubbing another user's file")
    f = tmp_path / "user.env"
    f.write_text(WALKTHROUGH)
    os.chown(f, 65534, 65534)
    f.chmod(0o640)
    r = ccs("import", "env", str(f), "--scrub", env=base_env)
    assert r.returncode == 0, r.stderr
    st = f.stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (65534, 65534, 0o640)
    assert KEY not in f.read_text()


@pytest.mark.usefixtures("secret_service", "cleanup_keys")
def test_scrub_leaves_a_hard_linked_file_and_says_why(ccs, base_env, tmp_path):
    """A rename gave the file a new inode: the hard link kept the key, and nothing said so."""
    f = tmp_path / ".env.taotoken"
    f.write_text(WALKTHROUGH)
    other = tmp_path / "backup.env"
    os.link(f, other)
    r = ccs("import", "env", str(f), "--scrub", env=base_env)
    assert r.returncode == 0, r.stderr
    assert "not scrubbed: it has 1 other hard link(s)" in r.stdout and "created" in r.stdout, r.stdout
    assert f.read_text() == WALKTHROUGH and os.stat(f).st_ino == os.stat(other).st_ino
    assert keyring_value("taotoken") == KEY  # the import itself went through


@pytest.mark.usefixtures("secret_service", "cleanup_keys")
def test_scrub_on_a_read_only_folder_still_reports_the_import(ccs, base_env, tmp_path):
    """It exited 2 blaming ccs's own folders and printed no report, though the profile and the key
    had been written."""
    import shlex
    import sys

    if subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode != 0:
        from conftest import skip_or_fail

        skip_or_fail("no private mount namespaces here (unshare -rm)")
    folder = tmp_path / "repo"
    folder.mkdir()
    f = folder / ".env.taotoken"
    f.write_text(WALKTHROUGH)
    cmd = shlex.join([sys.executable, "-m", "ccswitch_tui", "import", "env", str(f), "--scrub"])
    script = f"mount --bind {folder} {folder} && mount -o remount,bind,ro {folder} && {cmd}"
    r = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=60,
                       env=base_env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("created") and "not scrubbed: cannot rewrite it (Read-only file system)" in r.stdout
    assert "line 2" in r.stdout and f.read_text() == WALKTHROUGH
    assert keyring_value("taotoken") == KEY and (profiles_dir() / "taotoken.toml").exists()


def test_a_file_changed_right_before_the_rename_is_left_as_it_is(tmp_path):
    """A line appended between the scrub's read and its rename was lost."""
    from ccswitch_tui.importers.scrub_file import rewrite

    f = tmp_path / "x.env"
    old = b"A=1\nKEY=sk-secret\n"
    f.write_bytes(old + b"B=2\n")  # appended after ccs read ``old``
    assert "changed while ccs rewrote it" in rewrite(f, old, b"A=1\n")
    assert f.read_bytes() == old + b"B=2\n" and [p.name for p in tmp_path.iterdir()] == ["x.env"]
    f.write_bytes(old)
    assert rewrite(f, old, b"A=1\n") is None and f.read_bytes() == b"A=1\n"

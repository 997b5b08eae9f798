"""The profile store: tomlkit round trips that keep comments and order, broken files listed beside good
ones, atomic writes, name checks before any path, CCS_HOME vs XDG, file modes, concurrent writers."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from waiting import until

from ccswitch_tui import atomic
from ccswitch_tui.errors import ProfileError, UsageError
from ccswitch_tui.model import Profile, Provider
from ccswitch_tui.paths import Paths, ensure_private_dir, resolve_paths
from ccswitch_tui.policy import secret_name
from ccswitch_tui.policy.shapes import looks_like_key
from ccswitch_tui.profiles.presets import load_preset
from ccswitch_tui.profiles.store import Store, validate_text
from ccswitch_tui.tools.checker import ENV_NAME_RE, INHERIT_RE, KEY_ID_RE, NAME_RE
from ccswitch_tui.tools.claude import ClaudeSide
from ccswitch_tui.tools.codex import BUILTIN_PROVIDERS as BUILTIN_CODEX_PROVIDERS
from ccswitch_tui.tools.codex import PROVIDER_ID_RE, REASONING_EFFORTS, CodexSide, default_provider_id
from ccswitch_tui.tools.run import RunSide

ROOT = Path(__file__).resolve().parent.parent

GOOD = """\
# a hand-written profile
schema = 1
description = "good one"   # trailing comment

[provider]
name = "P"
base_url = "https://h.example/api"
key = "k"
"""


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def leftovers(folder: Path) -> list[str]:
    """Temp files a write may have left behind (the lock file is permanent by design)."""
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.fixture
def store(ccs_home: Paths) -> Store:
    return Store(ccs_home)


# --- save / load ----------------------------------------------------------------------------------

def test_save_then_load(store: Store):
    p = store.save_text("good", GOOD, create=True)
    assert store.path_for("good") == store.paths.profiles / "good.toml"
    assert store.path_for("good").read_text(encoding="utf-8") == GOOD
    assert store.load("good") == p
    assert p.provider == Provider(name="P", base_url="https://h.example/api", key="k")
    assert p.description == "good one"
    assert store.names() == ["good"]
    assert store.exists("good") and not store.exists("other")


def test_create_refuses_existing(store: Store):
    store.save_text("good", GOOD, create=True)
    with pytest.raises(UsageError, match="already exists"):
        store.save_text("good", GOOD.replace("good one", "other"), create=True)
    assert store.path_for("good").read_text(encoding="utf-8") == GOOD


def test_unknown_profile_is_usage_error_listing_known(store: Store):
    store.save_text("good", GOOD)
    with pytest.raises(UsageError, match=r"no profile named 'nope' .*known: good"):
        store.load("nope")


def test_one_value_changed_keeps_comments_and_order(store: Store):
    text = load_preset("taotoken").text
    store.save_text("tt", text, create=True)
    doc = store.load_doc("tt")
    doc["codex"]["model"] = "gpt-5"
    p = store.save_doc("tt", doc)
    assert p.side("codex") is not None and p.side("codex").model == "gpt-5"
    new = store.path_for("tt").read_text(encoding="utf-8")
    old_lines, new_lines = text.splitlines(), new.splitlines()
    # exactly one line differs: every comment, blank line and key stays where it was
    assert len(old_lines) == len(new_lines)
    changed = [(a, b) for a, b in zip(old_lines, new_lines, strict=True) if a != b]
    assert changed == [('model = "gpt-4.1"', 'model = "gpt-5"')]
    assert store.load("tt").side("run").model == "gpt-4.1"  # the [run] model is a different key


def test_inline_comment_survives_rewrite(store: Store):
    store.save_text("good", GOOD)
    doc = store.load_doc("good")
    doc["provider"]["name"] = "Q"
    store.save_doc("good", doc)
    text = store.path_for("good").read_text(encoding="utf-8")
    assert "# a hand-written profile" in text
    assert 'description = "good one"   # trailing comment' in text
    assert 'name = "Q"' in text


def test_delete(store: Store):
    store.save_text("good", GOOD)
    assert store.delete("good") == store.path_for("good")
    assert not store.path_for("good").exists()
    with pytest.raises(UsageError, match="no profile named 'good'"):
        store.delete("good")


# --- broken files ---------------------------------------------------------------------------------

BROKEN = {
    "syntax": ('schema = 1\n[provider]\nname = "P"\nbase_url = https://x\n', r"syntax\.toml:4:"),
    "schema": (GOOD.replace('key = "k"', 'key = "k"\nkye = "x"'), r"unknown field \[provider\]\.kye"),
    # tomlkit before 0.14 raises KeyAlreadyPresent without a position for a table defined twice
    # this way; later versions raise a ParseError at the second definition
    "twice": ('[a]\nb = 1\n[a.b]\nc = 1\n', r"twice\.toml:3:1: the table \[a\.b\] sets b, which line 2 already set"),
    "eof": ("schema = [\n", r"eof\.toml:1:10: this array is not closed: end it with \]"),
}


def test_broken_profiles_listed_with_error_while_others_load(store: Store):
    store.save_text("a-good", GOOD)
    store.save_text("z-good", GOOD)
    for name, (text, _) in BROKEN.items():
        (store.root / f"{name}.toml").write_text(text, encoding="utf-8")
    (store.root / "Not A Name.toml").write_text(GOOD)  # not a valid name: listed as broken, not fatal
    entries = {e.name: e for e in store.entries()}
    assert sorted(entries) == sorted(["a-good", "z-good", "Not A Name.toml", *BROKEN])
    misnamed = entries.pop("Not A Name.toml")
    assert misnamed.profile is None and "[a-z0-9][a-z0-9._-]{0,63}" in misnamed.error and "rename it" in misnamed.error
    for good in ("a-good", "z-good"):
        assert entries[good].error is None and entries[good].profile == store.load(good)
    for name, (_, pattern) in BROKEN.items():
        e = entries[name]
        assert e.profile is None and e.path == store.path_for(name)
        assert e.error is not None and "\n" not in e.error
        assert str(store.path_for(name)) in e.error
        assert re.search(pattern, e.error), e.error


def test_undecodable_and_unreadable_files_are_profile_errors(store: Store):
    store.save_text("good", GOOD)
    (store.root / "latin.toml").write_bytes(b'description = "caf\xe9"\n')
    (store.root / "dir.toml").mkdir()
    entries = {e.name: e for e in store.entries()}
    assert entries["good"].profile is not None
    assert "cannot read" in entries["latin"].error
    assert "cannot read" in entries["dir"].error


def test_dangling_link_is_a_broken_profile_not_a_missing_one(store: Store):
    store.save_text("good", GOOD)
    (store.root / "dangling.toml").symlink_to(store.root / "gone" / "target.toml")
    entries = {e.name: e for e in store.entries()}
    assert entries["good"].profile is not None
    assert entries["dangling"].profile is None
    assert "does not exist" in entries["dangling"].error and "\n" not in entries["dangling"].error
    with pytest.raises(ProfileError, match="dangling.toml: cannot read"):
        store.load("dangling")


def test_a_file_removed_while_listing_is_left_out(store: Store, monkeypatch: pytest.MonkeyPatch):
    store.save_text("good", GOOD)
    store.save_text("going", GOOD)
    real_names = store.names()
    store.path_for("going").unlink()
    monkeypatch.setattr(store, "names", lambda: real_names)
    assert [e.name for e in store.entries()] == ["good"]


# --- atomic writes --------------------------------------------------------------------------------

def test_invalid_text_leaves_old_file_byte_for_byte(store: Store):
    store.save_text("good", GOOD)
    path = store.path_for("good")
    before = path.read_bytes()
    for bad in ("schema = [\n", GOOD.replace("https://h.example/api", "ftp://x"), GOOD + "[env]\nX_TOKEN = 'x'\n"):
        with pytest.raises(ProfileError):
            store.save_text("good", bad)
        assert path.read_bytes() == before
    assert leftovers(store.root) == []


def test_failed_write_leaves_old_file_and_no_temp(store: Store, monkeypatch: pytest.MonkeyPatch):
    store.save_text("good", GOOD)
    path = store.path_for("good")
    before = path.read_bytes()

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="No space left"):
        store.save_text("good", GOOD.replace("good one", "new one"))
    assert path.read_bytes() == before
    assert leftovers(store.root) == []

    monkeypatch.undo()

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(5, "I/O error")

    monkeypatch.setattr(atomic.os, "replace", broken_replace)
    with pytest.raises(OSError, match="I/O error"):
        store.save_text("good", GOOD.replace("good one", "new one"))
    assert path.read_bytes() == before
    assert leftovers(store.root) == []


# --- names ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["../x", "..", "/tmp/x", "x/y", "a\x00b", "X", ".x", ""])
def test_bad_names_refused_before_any_path(store: Store, tmp_path: Path, name: str):
    with pytest.raises(UsageError, match="invalid profile name"):
        store.path_for(name)
    with pytest.raises(UsageError, match="invalid profile name"):
        store.save_text(name, GOOD)
    with pytest.raises(UsageError, match="invalid profile name"):
        store.load(name)
    with pytest.raises(UsageError, match="invalid profile name"):
        store.delete(name)
    # nothing was written anywhere: not even the profiles folder
    assert not store.root.exists()
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


# --- where things live ----------------------------------------------------------------------------

def test_ccs_home_holds_everything(tmp_path: Path):
    p = resolve_paths({"CCS_HOME": str(tmp_path / "h")})
    assert p.profiles == tmp_path / "h" / "profiles"
    assert p.state == tmp_path / "h" / "state"
    assert p.salt == p.state / "salt"
    assert p.runs == p.state / "runs"
    assert p.tool_dir("tt", "codex") == p.state / "tools" / "tt" / "codex"


def test_ccs_home_tilde_expanded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert resolve_paths({"CCS_HOME": "~/c"}).profiles == tmp_path / "c" / "profiles"


def test_xdg_dirs_without_ccs_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.delenv("CCS_HOME", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "st"))
    for env in (None, dict(os.environ), dict(os.environ, CCS_HOME="")):
        p = resolve_paths(env)
        assert p.profiles == tmp_path / "cfg" / "ccs" / "profiles"
        assert p.state == tmp_path / "st" / "ccs"


def test_xdg_dirs_used_by_the_cli(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if k != "CCS_HOME"}
    env |= {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
            "XDG_STATE_HOME": str(tmp_path / "st"), "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"}
    code = ("from ccswitch_tui.cli import run; import sys; rc = run(['new', 'xdg', '--preset', 'taotoken']); "
            "rc = rc or run(['list', '--json']); sys.exit(rc)")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    expected = tmp_path / "cfg" / "ccs" / "profiles" / "xdg.toml"
    assert expected.is_file()
    assert mode(expected) == 0o600 and mode(expected.parent) == 0o700
    listed = json.loads(r.stdout[r.stdout.index("{"):])
    assert [(p["name"], p["path"]) for p in listed["profiles"]] == [("xdg", str(expected))]
    assert not (tmp_path / "home" / ".config").exists()


# --- modes ----------------------------------------------------------------------------------------

def test_profile_files_0600_and_folders_0700(store: Store):
    old = os.umask(0o022)
    try:
        store.save_text("good", GOOD)
        path = store.path_for("good")
        assert mode(path) == 0o600
        assert mode(store.root) == 0o700
        os.chmod(path, 0o644)  # a file a person copied in with looser permissions
        store.save_text("good", GOOD.replace("good one", "again"))
        assert mode(path) == 0o600
    finally:
        os.umask(old)


def test_ensure_private_dir_tightens_existing(tmp_path: Path):
    d = tmp_path / "a" / "b"
    d.mkdir(parents=True, mode=0o755)
    os.chmod(d, 0o755)
    assert ensure_private_dir(d) == d
    assert mode(d) == 0o700


# --- property: load → save → load is the identity, and comments survive ----------------------------

def _basic(s: str) -> str:
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


@st.composite
def toml_string(draw, value: str) -> str:
    """``value`` as a TOML string: basic (escaped) or, when possible, literal."""
    literal_ok = "'" not in value and not any(ord(c) < 0x20 or ord(c) == 0x7F for c in value)
    if literal_ok and draw(st.booleans()):
        return f"'{value}'"
    return _basic(value)


# a key-shaped value, or a control character but newline and tab, is refused in any field
REFUSED_CONTROLS = "".join(chr(c) for c in (*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)))
words = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters=REFUSED_CONTROLS),
                max_size=24).filter(lambda s: not looks_like_key(s))
nonblank = words.filter(lambda s: s.strip() != "")
comment_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=30,
).map(lambda s: "# " + s.strip()).filter(lambda c: c != "#")
hosts = st.sampled_from(["h.example", "taotoken.net", "127.0.0.1:8080", "api.x-y.io"])
paths_ = st.from_regex(r"(/[a-z0-9._~-]{1,8}){0,3}", fullmatch=True)
urls = st.builds(lambda s, h, p: f"{s}://{h}{p}", st.sampled_from(["http", "https"]), hosts, paths_)
env_names = st.from_regex(ENV_NAME_RE, fullmatch=True).filter(
    lambda n: len(n) <= 20 and not secret_name(n))
env_tables = st.dictionaries(env_names, words.filter(lambda w: "\x00" not in w), max_size=4)  # a NUL is refused
key_refs = st.one_of(
    st.from_regex(KEY_ID_RE, fullmatch=True).filter(
        lambda k: len(k) <= 30 and not k.startswith("env:") and not looks_like_key(k)),
    env_names.map(lambda n: "env:" + n),
)
opt = st.none() | nonblank


@st.composite
def profiles(draw):
    """(name, data, expected Profile). ``data`` maps table → {key: value}; None = field absent."""
    name = draw(st.from_regex(NAME_RE, fullmatch=True).filter(lambda n: len(n) <= 20))
    prov = {"name": draw(nonblank), "base_url": draw(urls), "key": draw(key_refs), "website": draw(st.none() | urls)}
    provider = Provider(**prov)
    data: dict[str, dict] = {"": {"schema": 1, "description": draw(st.none() | words)}, "provider": prov}
    claude = codex = None
    run = RunSide()
    if draw(st.booleans()):
        t = {"base_url": draw(st.none() | urls), "auth": draw(st.sampled_from([None, "token", "api-key"])),
             "model": draw(opt), "opus": draw(opt), "sonnet": draw(opt), "haiku": draw(opt), "subagent": draw(opt)}
        env = draw(env_tables)
        data["claude"], data["claude.env"] = t, env
        claude = ClaudeSide(**(t | {"base_url": t["base_url"] or provider.base_url, "auth": t["auth"] or "token"}),
                            env=env)
    if draw(st.booleans()):
        pid = draw(st.none() | st.from_regex(PROVIDER_ID_RE, fullmatch=True).filter(
            lambda p: p not in BUILTIN_CODEX_PROVIDERS and len(p) <= 20 and not looks_like_key(p)))
        t = {"base_url": draw(st.none() | urls), "model": draw(nonblank), "provider_id": pid,
             "reasoning_effort": draw(st.none() | st.sampled_from(REASONING_EFFORTS)),
             "wire_api": draw(st.none() | st.sampled_from(["responses", "chat"]))}
        env = draw(env_tables)
        data["codex"], data["codex.env"] = t, env
        codex = CodexSide(base_url=t["base_url"] or provider.base_url, model=t["model"],
                          provider_id=pid or default_provider_id(name), reasoning_effort=t["reasoning_effort"], env=env,
                          wire_api=t["wire_api"] or "responses")
    if draw(st.booleans()):
        export = draw(st.lists(st.sampled_from(["openai", "anthropic"]), max_size=3))
        t = {"export": export, "model": draw(opt)}
        data["run"] = t
        run = RunSide(export=tuple(dict.fromkeys(export)), model=t["model"])
    env = draw(env_tables)
    data["env"] = env
    # names and NAME_* globs outside the routing families (a glob reaching them is refused)
    inherit = draw(st.lists(st.from_regex(INHERIT_RE, fullmatch=True).map(lambda n: "MY_" + n).filter(
        lambda n: len(n) <= 20 and not looks_like_key(n)), max_size=3))
    data["policy"] = {"inherit": inherit}
    sides = {"claude": claude, "codex": codex, "run": run}
    expected = Profile(name=name, provider=provider, description=data[""]["description"] or "",
                       sides={k: v for k, v in sides.items() if v is not None}, env=env, inherit=tuple(inherit))
    return name, data, expected


@st.composite
def rendered(draw):
    """A profile as TOML text written by hand: comments between lines and after values."""
    name, data, expected = draw(profiles())
    lines: list[str] = []
    comments: list[str] = []

    def maybe_comment() -> None:
        if draw(st.integers(0, 3)) == 0:
            c = draw(comment_text)
            comments.append(c)
            lines.append(c)

    def value(v) -> str:
        if isinstance(v, list):
            return "[" + ", ".join(draw(toml_string(x)) for x in v) + "]"
        if isinstance(v, int):
            return str(v)
        return draw(toml_string(v))

    for table, fields in data.items():
        maybe_comment()
        if table:
            lines.append(f"[{table}]")
        for k, v in fields.items():
            if v is None:
                continue
            maybe_comment()
            key = k if draw(st.integers(0, 4)) else f'"{k}"'
            line = f"{key} = {value(v)}"
            if draw(st.integers(0, 4)) == 0:
                c = draw(comment_text)
                comments.append(c)
                line += "  " + c
            lines.append(line)
        lines.append("")
    maybe_comment()
    return name, "\n".join(lines) + "\n", comments, expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rendered())
def test_round_trip_is_identity_and_keeps_comments(case):
    name, text, comments, expected = case
    with tempfile.TemporaryDirectory() as d:
        store = Store(Paths(profiles=Path(d) / "profiles", state=Path(d) / "state"))
        first = store.save_text(name, text, create=True)
        assert first == expected
        assert store.load(name) == expected

        store.save_doc(name, store.load_doc(name))
        again = store.path_for(name).read_text(encoding="utf-8")
        assert again == text  # an unchanged document is rewritten byte for byte
        assert store.load(name) == expected
        for c in comments:
            assert c in again

        # a change to one value keeps everything else, comments included
        doc = store.load_doc(name)
        doc["description"] = 'changed "ü" \\ value'
        changed = store.save_doc(name, doc)
        assert changed == Profile(**(vars(expected) | {"description": 'changed "ü" \\ value'}))
        final = store.path_for(name).read_text(encoding="utf-8")
        for c in comments:
            assert c in final
        assert leftovers(store.root) == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([
    "[a]\n", "[a.b]\n", "b = 1\n", "a.b = 1\n", "[[a]]\n", "[provider]\n", 'name = "P"\n', "key = 'k'\n",
    'base_url = "https://h"\n', "schema = 1\n", "x = [\n", '"', "= \n", "\ufeff", "{a = 1}", "[claude]\n",
    "env = 3\n", "[claude.env]\n", 'A = "1"\n', "'''\n", "#c\n", "\r\n", "nan\n", "[run]\n", "a = {b = 1}\n",
]), max_size=10).map("".join))
def test_any_text_is_a_profile_or_one_profile_error(text):
    try:
        validate_text("p", text, "/x/p.toml")
    except ProfileError as exc:
        assert str(exc).startswith("/x/p.toml")
        assert "\n" not in str(exc)


# --- two processes writing the same profile ------------------------------------------------------

WRITER = """
import sys, time
from pathlib import Path
from ccswitch_tui.paths import Paths
from ccswitch_tui.profiles.store import Store
root, text_file, go = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
store = Store(Paths(profiles=root / "profiles", state=root / "state"))
text = text_file.read_text(encoding="utf-8")
Path(sys.argv[5]).touch()  # up and waiting
while not go.exists():
    time.sleep(0.001)
for _ in range(int(sys.argv[4])):
    store.save_text("shared", text)
"""


def test_two_processes_saving_at_once_leave_one_whole_version(tmp_path: Path):
    root = tmp_path / "home"
    store = Store(Paths(profiles=root / "profiles", state=root / "state"))
    versions = [GOOD.replace("good one", f"version {v} " + v * 3000) for v in "AB"]
    store.save_text("shared", versions[0])
    go = tmp_path / "go"
    procs = []
    for i, text in enumerate(versions):
        f = tmp_path / f"v{i}.toml"
        f.write_text(text, encoding="utf-8")
        procs.append(subprocess.Popen([sys.executable, "-c", WRITER, str(root), str(f), str(go), "150",
                                       str(tmp_path / f"ready{i}")]))
    until(lambda: all((tmp_path / f"ready{i}").exists() for i in range(len(procs))), 60, "both writers to start")
    go.touch()
    path = store.path_for("shared")
    while any(p.poll() is None for p in procs):
        assert path.read_text(encoding="utf-8") in versions  # a reader never sees half a file
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    final = path.read_text(encoding="utf-8")
    assert final in versions
    assert store.load("shared").description == final.split('description = "')[1].split('"')[0]
    assert leftovers(store.root) == []
    assert sorted(p.name for p in store.root.iterdir()) == [".lock", "shared.toml"]
    assert mode(path) == 0o600


def test_profiles_are_listed_by_name_a_name_before_its_longer_forms(store: Store):
    """Sorting by file name put `tt-b.toml` before `tt.toml` ('-' sorts before '.')."""
    for name in ("tt-b", "tt", "tt.2", "a", "tt_c"):
        store.save_text(name, GOOD, create=True)
    assert [e.name for e in store.entries()] == ["a", "tt", "tt-b", "tt.2", "tt_c"] == store.names()

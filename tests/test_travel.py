"""Runs that travel: `ccs runs export` and `ccs runs import`.

- a round run on two machines (state folders), exported and imported into a third, gives the same
  rounds table as the round run on one;
- the archive holds no secret: its bytes (compressed and not) are searched for the key (from the real
  keyring), the bridge token the child held and every `[secrets]` value, in their encoded forms; and
  export refuses, writing nothing, when a run holds one;
- a hostile archive (absolute paths, `..`, links, devices, huge members, damaged JSON or gzip, digests
  that do not match) is refused in one line and writes nothing; importing an archive twice changes
  nothing; imported runs are read-only, keep their origin, show in every view, and a locked round stays
  locked.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile
from pathlib import Path
from urllib.parse import quote

import pytest
from conftest import forget_indexed_keys
from leakcheck import assert_one_line
from provider_stub import ProviderStub
from test_portable_fingerprints import SALT, machine, rerun, runs, setup

from ccswitch_tui.paths import resolve_paths

KEY = "sk-portable-0123456789abcdef0123"


# --- the same table from two machines as from one --------------------------------------------------------

def test_a_round_from_two_machines_reads_as_the_round_run_on_one(ccs, base_env, tmp_path):
    one_stub, two_stub = ProviderStub(), ProviderStub()
    try:
        one = machine(base_env, tmp_path, "one")
        a, b, c = (machine(base_env, tmp_path, n) for n in ("a", "b", "c"))
        setup(ccs, one, one_stub.url + "/v1")
        for env in (a, b):
            setup(ccs, env, two_stub.url + "/v1")
        for i in (1, 2, 3, 4):
            rerun(ccs, one, tmp_path, "R", i)
            rerun(ccs, a if i <= 2 else b, tmp_path, "R", i)
        for env in (a, b):
            r = ccs("runs", "export", "--label", "R", "-o", str(tmp_path / f"{env['CCS_MACHINE']}.tar.gz"), env=env)
            assert r.returncode == 0 and "exported 2 run(s)" in r.stdout, r.stderr
        r = ccs("runs", "import", str(tmp_path / "a.tar.gz"), str(tmp_path / "b.tar.gz"), env=c)
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines() == [f"{tmp_path / 'a.tar.gz'}: imported 2 run(s)",
                                         f"{tmp_path / 'b.tar.gz'}: imported 2 run(s)"]
        (alone,) = json.loads(ccs("runs", "report", "--rounds", "R", "--json", env=one).stdout)["rounds"]
        (split,) = json.loads(ccs("runs", "report", "--rounds", "R", "--json", env=c).stdout)["rounds"]
        assert alone["verdict"] == "clean: the gap is the agent's" and alone["machines"] == ["one"]
        assert split["machines"] == ["a", "b"]
        assert split["base_urls"] == [two_stub.url + "/v1"] and alone["base_urls"] == [one_stub.url + "/v1"]
        assert same_but_where_and_when(split) == same_but_where_and_when(alone)
        assert alone["k"] == 4 and alone["tasks"] == 8 and alone["pass_at_1"] is not None
        # the table itself: the same row, with a MACHINES column because the round spans two
        md_alone = ccs("runs", "report", "--rounds", "R", "--md", env=one).stdout.splitlines()
        md_split = ccs("runs", "report", "--rounds", "R", "--md", env=c).stdout.splitlines()
        assert md_split[0] == md_alone[0].replace("| BASE URLS |", "| MACHINES | BASE URLS |")
        assert "| a b |" in md_split[2]
    finally:
        one_stub.close()
        two_stub.close()


def same_but_where_and_when(row: dict) -> dict:
    """A round's row without what must differ between two worlds: launch ids, machines, which stub (its
    URL), and timing (peak concurrency, the timelines' clock, which request of a run came first); each
    timeline keeps its counts."""
    out = {k: v for k, v in row.items() if k not in ("runs", "machines", "base_urls", "peak_concurrency")}
    out["matrix"] = {k: v for k, v in row["matrix"].items() if k not in ("reruns", "tasks")}
    # per task and rerun: the loopback provider's tokens grow with the order requests reach it (4 at once)
    out["tasks"] = [{**t, "routing": [{k: v for k, v in (x or {}).items() if k != "tokens"} for x in t["routing"]]}
                    for t in row["matrix"]["tasks"]]
    out["timelines"] = [{k: t[k] for k in ("requests", "auth_failures", "rate_limited", "retries", "errors")}
                        for t in row["timelines"]]
    return out


# --- no secret in an archive ----------------------------------------------------------------------------

def encoded_forms(secret: str) -> list[bytes]:
    """The secret as a leak would show it: as is, upper and lower case, URL-encoded, JSON-escaped, hex,
    and the part of its base64 (both alphabets) that does not depend on its neighbours, at each offset."""
    raw = secret.encode()
    out = {raw, secret.upper().encode(), secret.lower().encode(), quote(secret, safe="").encode(),
           json.dumps(secret)[1:-1].encode(), raw.hex().encode()}
    for lead in range(3):
        enc = base64.b64encode(b"\0" * lead + raw)
        inner = enc[4 if lead else 0: len(enc) - (4 if (lead + len(raw)) % 3 else 0)]
        out |= {inner, inner.replace(b"+", b"-").replace(b"/", b"_")}
    return sorted(out)


def assert_holds_none(data: bytes, *secrets: str) -> None:
    for s in secrets:
        for form in encoded_forms(s):
            assert form not in data, f"the archive holds {s[:6]}… as {form[:20]!r}"


@pytest.fixture
def leaky(ccs, base_env, key_id, tmp_path):
    """A recorded run (bodies too) whose child sends its token and both [secrets] values in a header, the
    query and the body; the key is in the real keyring, one [secrets] value too, the other in a variable."""
    stub = ProviderStub()
    paths = resolve_paths({"CCS_HOME": base_env["CCS_HOME"]})
    extra_id = key_id + "-extra"
    env = {**base_env, "GW_EXTRA": "gw-extra-secret-7b1d3f4e6a8c0b2d"}
    try:
        assert ccs("new", "gw", "--base-url", stub.url + "/v1", "--key", key_id, env=env).returncode == 0
        profile = Path(env["CCS_HOME"]) / "profiles" / "gw.toml"
        profile.write_text(profile.read_text() + f'\n[secrets]\nGW_EXTRA = "env:GW_EXTRA"\nGW_OTHER = "{extra_id}"\n')
        assert ccs("key", "set", key_id, input=KEY, env=env).returncode == 0
        assert ccs("key", "set", extra_id, input="gw-other-secret-2d4f6e8a1c5f0c2e", env=env).returncode == 0
        child = tmp_path / "child.py"
        token_file = tmp_path / "token"
        child.write_text(
            "import json, os, sys, urllib.request\n"
            "token, extra, other = (os.environ[n] for n in ('OPENAI_API_KEY', 'GW_EXTRA', 'GW_OTHER'))\n"
            "open(sys.argv[1], 'w').write(token)\n"
            "body = {'model': 'gpt-4.1', 'messages': [{'role': 'user', 'content': f'{extra} {other} {token}'}]}\n"
            "req = urllib.request.Request(os.environ['OPENAI_BASE_URL'] + '/chat/completions?gw=' + extra,\n"
            "    data=json.dumps(body).encode(), method='POST',\n"
            "    headers={'Authorization': 'Bearer ' + token, 'x-gw-extra': extra, 'x-gw-other': other,\n"
            "             'Content-Type': 'application/json'})\n"
            "urllib.request.urlopen(req).read()\n")
        r = ccs("run", "--record-bodies", "--label", "L", "gw", "--", sys.executable, str(child), str(token_file),
                env=env)
        assert r.returncode == 0, r.stderr
        assert len(stub.posts()) == 1 and stub.seen[0].headers["authorization"] == f"Bearer {KEY}"
        yield env, [KEY, token_file.read_text(), env["GW_EXTRA"], "gw-other-secret-2d4f6e8a1c5f0c2e"]
    finally:
        stub.close()
        forget_indexed_keys(paths)


@pytest.mark.usefixtures("secret_service")
def test_the_archive_holds_no_secret(ccs, leaky, tmp_path):
    env, secrets = leaky
    token = secrets[1]
    assert token.startswith("ccs-bridge-")
    archive = tmp_path / "runs.tar.gz"
    r = ccs("runs", "export", "--label", "L", "-o", str(archive), env=env)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    raw = archive.read_bytes()
    plain = gzip.decompress(raw)
    with tarfile.open(fileobj=io.BytesIO(plain)) as tar:
        names = tar.getnames()
        records = tar.extractfile(next(n for n in names if n.endswith(".requests.jsonl"))).read()
    assert len(names) == 3 and b"gpt-4.1" in records and b"x-request-id" in records  # it holds the run
    for data in (raw, plain):
        assert_holds_none(data, *secrets, SALT)
    salt = (Path(env["CCS_HOME"]) / "state" / "salt").read_text().strip()
    assert_holds_none(plain, salt)
    with pytest.raises(AssertionError):  # the search finds what it looks for
        assert_holds_none(plain + base64.b64encode(b"Bearer " + token.encode()), token)


@pytest.mark.usefixtures("secret_service")
@pytest.mark.parametrize("which,form", [
    (0, lambda s: base64.b64encode(b"user:" + s.encode()).decode()),  # the key in a Basic header
    (2, lambda s: quote(s, safe="")),  # a [secrets] value from a variable, URL-encoded
    (3, lambda s: s.upper()),  # a [secrets] value from the keyring, upper-cased
    (1, lambda s: s),  # the bridge token as is
], ids=["key-base64", "secret-url", "secret-case", "token"])
def test_export_refuses_runs_that_hold_a_secret_and_writes_nothing(ccs, leaky, tmp_path, which, form):
    env, secrets = leaky
    runs_dir = Path(env["CCS_HOME"]) / "state" / "runs"
    (records,) = runs_dir.glob("*.requests.jsonl")
    with records.open("a") as fh:
        fh.write(json.dumps({"id": 99, "error": f"upstream said: {form(secrets[which])}"}) + "\n")
    archive = tmp_path / "runs.tar.gz"
    r = ccs("runs", "export", "--label", "L", "-o", str(archive), env=env)
    line = assert_one_line(r, 2, says="refusing to export: the runs hold ")
    assert "nothing was written" in line and not archive.exists()
    assert list(tmp_path.glob(".runs.tar.gz.*")) == []
    for s in secrets:
        assert s not in line


# --- hostile archives -------------------------------------------------------------------------------------

def put(home: Path, lid: str, **extra) -> None:
    runs_dir = home / "state" / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    m = {"launch_id": lid, "profile": "p", "tool": "run", "started": f"2026-01-01T00:00:0{lid[-1]}Z",
         "ended": "2026-01-01T00:01:00Z", "exit_status": 0, "base_urls": {"OPENAI_BASE_URL": "https://a/v1"},
         "models": {}, "key_id": "k", "key_fingerprint": "fp:1", "key_salt": "0123456789ab", "env_hash": "sha256:1",
         "label": "R", **extra}
    (runs_dir / f"{lid}.json").write_text(json.dumps(m))


@pytest.fixture
def good_archive(ccs, base_env, tmp_path) -> Path:
    a = machine(base_env, tmp_path, "a")
    put(Path(a["CCS_HOME"]), "20260101T000001Z-00000001")
    put(Path(a["CCS_HOME"]), "20260101T000002Z-00000002", recording={"records": "20260101T000002Z-00000002"
                                                                                 ".requests.jsonl"})
    (Path(a["CCS_HOME"]) / "state" / "runs" / "20260101T000002Z-00000002.requests.jsonl").write_text(
        '{"id": 1, "path": "/v1/chat/completions", "status": 200}\n')
    path = tmp_path / "good.tar.gz"
    r = ccs("runs", "export", "--all", "-o", str(path), env=a)
    assert r.returncode == 0, r.stderr
    return path


def members(path: Path) -> list[tuple[tarfile.TarInfo, bytes]]:
    with tarfile.open(path) as tar:
        return [(m, tar.extractfile(m).read()) for m in tar.getmembers()]


def write(path: Path, items: list[tuple[tarfile.TarInfo, bytes]], reindex: bool = False) -> Path:
    """An archive of ``items``; ``reindex``: the index's digests made to match (only the content is wrong)."""
    if reindex:
        files = {m.name: data for m, data in items}
        index = json.loads(files["ccs-export.json"])
        for run in index["runs"]:
            for name in run["files"]:
                if f"runs/{name}" in files:
                    run["files"][name] = "sha256:" + hashlib.sha256(files[f"runs/{name}"]).hexdigest()
        items = [(m, json.dumps(index).encode() if m.name == "ccs-export.json" else d) for m, d in items]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for m, data in items:
            m.size = len(data) if m.isreg() else 0
            tar.addfile(m, io.BytesIO(data) if m.isreg() else None)
    path.write_bytes(gzip.compress(buf.getvalue()))
    return path


def extra_member(name: str, data: bytes = b"{}", kind: bytes = tarfile.REGTYPE, link: str = "") -> \
        tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info, data


def manifest_member(items, lid_end: str = "00000001") -> int:
    return next(i for i, (m, _) in enumerate(items) if m.name.endswith(f"{lid_end}.json"))


def hostile(kind: str, good: Path, tmp_path: Path) -> Path:
    items = members(good)
    dest = tmp_path / f"{kind}.tar.gz"
    i = manifest_member(items)
    m, data = items[i]
    if kind == "absolute":
        return write(dest, [*items, extra_member("/tmp/ccs-hostile.json")])
    if kind == "dotdot":
        return write(dest, [*items, extra_member("runs/../../ccs-hostile.json")])
    if kind == "symlink":
        items[i] = extra_member(m.name, b"", tarfile.SYMTYPE, "/etc/passwd")
        return write(dest, items)
    if kind == "hardlink":
        return write(dest, [*items, extra_member("runs/x.json", b"", tarfile.LNKTYPE, m.name)])
    if kind == "device":
        return write(dest, [*items, extra_member("runs/x.json", b"", tarfile.CHRTYPE)])
    if kind == "folder":
        return write(dest, [extra_member("runs", b"", tarfile.DIRTYPE), *items])
    if kind == "huge":
        items[i] = (m, b" " * (17 << 20))  # a manifest past its 16 MiB
        return write(dest, items, reindex=True)
    if kind == "damaged-json":
        items[i] = (m, b'{"launch_id": "20260101T000001Z-00000001", ')
        return write(dest, items, reindex=True)
    if kind == "damaged-record":
        j = next(k for k, (x, _) in enumerate(items) if x.name.endswith(".requests.jsonl"))
        items[j] = (items[j][0], b'{"id": 1}\n{"id": 2, \n')
        return write(dest, items, reindex=True)
    if kind == "tampered":
        items[i] = (m, data.replace(b'"fp:1"', b'"fp:2"'))
        return write(dest, items)
    if kind == "unlisted":
        return write(dest, [*items, extra_member("runs/20260101T000009Z-00000009.json")])
    if kind == "twice":
        return write(dest, [*items, items[i]])
    if kind == "another-run":
        items[i] = (m, data.replace(b"00000001", b"00000007"))
        return write(dest, items, reindex=True)
    if kind == "bad-machine":
        items[i] = (m, data.replace(b'"label"', b'"machine": "a\\u001b[2Jb", "label"'))
        return write(dest, items, reindex=True)
    if kind == "foreign-records":
        items[i] = (m, data.replace(b'"label"', b'"recording": {"records": "../../../.bashrc"}, "label"'))
        return write(dest, items, reindex=True)
    if kind == "no-index":
        return write(dest, [x for x in items if x[0].name != "ccs-export.json"])
    if kind == "truncated":
        dest.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
        return dest
    if kind == "not-an-archive":
        dest.write_text("just some text\n")
        return dest
    raise AssertionError(kind)


HOSTILE = {
    "absolute": "has an absolute path", "dotdot": "leaves the archive's folder", "symlink": "is a link",
    "hardlink": "is a link", "device": "is not a regular file", "folder": "is not a regular file",
    "huge": "more than the 16777216 bytes", "damaged-json": "is not JSON",
    "damaged-record": ".requests.jsonl line 2 is not JSON", "tampered": "its sha256 differs",
    "unlisted": "is not listed in ccs-export.json", "twice": "appears twice",
    "another-run": "holds the manifest of another run", "bad-machine": "its machine is not a machine's name",
    "no-index": "no ccs-export.json",
    "foreign-records": "names a file beside it that is not runs/", "truncated": "not a readable ccs runs archive",
    "not-an-archive": "not a readable ccs runs archive",
}


def tree(home: Path) -> dict[str, tuple[bytes, int, int]]:
    return {str(p.relative_to(home)): (p.read_bytes() if p.is_file() else b"", p.stat().st_mode, p.stat().st_mtime_ns)
            for p in sorted(home.rglob("*"))}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_archive_is_refused_in_one_line_and_writes_nothing(ccs, base_env, tmp_path, good_archive, kind):
    b = machine(base_env, tmp_path, "b")
    home = Path(b["CCS_HOME"])
    put(home, "20260101T000005Z-00000005")
    before = tree(home)
    bad = hostile(kind, good_archive, tmp_path)
    r = ccs("runs", "import", str(good_archive), str(bad), env=b)  # a good archive beside it: not imported either
    line = assert_one_line(r, 2, says=f"{bad}: refused: ")
    assert HOSTILE[kind] in line and line.endswith("nothing was imported")
    assert "\x1b" not in line
    assert tree(home) == before
    assert not Path("/tmp/ccs-hostile.json").exists() and not (tmp_path / "ccs-hostile.json").exists()


# --- importing: twice, read-only, every view, locks ------------------------------------------------------------

def test_importing_twice_changes_nothing_and_imported_runs_are_read_only(ccs, base_env, tmp_path, good_archive):
    b = machine(base_env, tmp_path, "b")
    home = Path(b["CCS_HOME"])
    put(home, "20260101T000005Z-00000005")
    assert ccs("runs", "import", str(good_archive), env=b).stdout.strip() == f"{good_archive}: imported 2 run(s)"
    once = tree(home)
    r = ccs("runs", "import", str(good_archive), env=b)
    assert r.returncode == 0 and r.stdout.strip() == f"{good_archive}: imported 0 run(s), 2 already here"
    assert tree(home) == once
    imported = home / "state" / "runs" / "20260101T000001Z-00000001.json"
    assert imported.stat().st_mode & 0o777 == 0o400
    m = json.loads(imported.read_text())
    assert m["origin"]["machine"] == "a" and m["origin"]["ccs_version"] and m["origin"]["exported"]
    out = tmp_path / "out.jsonl"
    out.write_text('{"task_id": "t", "success": true}\n')
    assert_one_line(ccs("runs", "attach", "20260101T000001Z", str(out), env=b), 2,
                    says="was imported from 'a' and is read-only here")
    assert tree(home) == once

    # every view: a MACHINE column once the runs come from more than one machine
    lines = ccs("runs", env=b).stdout.splitlines()
    assert lines[0].split()[:3] == ["LAUNCH", "ID", "MACHINE"]
    assert [ln.split()[1] for ln in lines[1:]] == ["b", "a", "a"]
    assert {m["launch_id"]: m["machine"] for m in runs(ccs, b)} == {
        "20260101T000005Z-00000005": "b", "20260101T000002Z-00000002": "a", "20260101T000001Z-00000001": "a"}
    report = ccs("runs", "report", "--label", "R", env=b).stdout.splitlines()
    assert report[0].split()[:3] == ["LAUNCH", "ID", "MACHINE"] and report[1].split()[1] == "a"
    table = ccs("runs", "report", "--rounds", "R", env=b).stdout
    assert "MACHINES" not in table and "R: ran on 2 machines: a, b" in table  # the 80-column table: a line
    wide = ccs("runs", "report", "--rounds", "R", "--wide", env=b).stdout.splitlines()
    assert "MACHINES" in wide[0] and " a b " in wide[1]
    board = tmp_path / "board.html"
    assert ccs("runs", "report", "--rounds", "R", "--html", str(board), env=b).returncode == 0
    assert "<th>machines</th><th>base urls</th>" in board.read_text() and ">a b</td>" in board.read_text()
    diff = ccs("runs", "diff", "20260101T000001Z", "20260101T000005Z", env=b).stdout
    assert "note: 20260101T000005Z-00000005 ran on b, 20260101T000001Z-00000001 on a" in diff
    usage = json.loads(ccs("usage", "--by", "machine", "--json", env=b).stdout)
    assert [(r["key"], r["requests"]) for r in usage["rows"]] == [("a", 1)] and usage["totals"]["machines"] == ["a"]
    from ccswitch_tui.keys.keyring import KeyStore
    from ccswitch_tui.profiles.store import Store
    from ccswitch_tui.tui import render
    from ccswitch_tui.tui.service import Service

    paths = resolve_paths({"CCS_HOME": str(home)})
    rows = Service(paths, Store(paths), KeyStore(paths, {}), {}, tmp_path).runs("p")
    shown = {r.manifest["launch_id"]: str(render.run_summary(r)) for r in rows}
    assert "a (imported, read-only)" in shown["20260101T000001Z-00000001"]
    assert "imported" not in shown["20260101T000005Z-00000005"]
    single = machine(base_env, tmp_path, "c")
    assert ccs("runs", "import", str(good_archive), env=single).returncode == 0
    assert "MACHINE" not in ccs("runs", env=single).stdout.splitlines()[0]  # one machine: no column


def test_a_later_export_replaces_an_earlier_import_and_never_the_other_way(ccs, base_env, tmp_path):
    a, b = machine(base_env, tmp_path, "a"), machine(base_env, tmp_path, "b")
    put(Path(a["CCS_HOME"]), "20260101T000001Z-00000001")
    first, second = tmp_path / "first.tar.gz", tmp_path / "second.tar.gz"
    assert ccs("runs", "export", "--all", "-o", str(first), env=a).returncode == 0
    out = tmp_path / "out.jsonl"
    out.write_text('{"task_id": "t", "success": true}\n')
    assert ccs("runs", "attach", "20260101T000001Z", str(out), env=a).returncode == 0
    assert ccs("runs", "export", "--all", "-o", str(second), env=a).returncode == 0
    items = members(second)
    later = json.loads(items[0][1])
    later["exported"] = "2999-01-01T00:00:00Z"  # later: both exports may fall within one second
    write(second, [(items[0][0], json.dumps(later).encode()), *items[1:]])
    assert ccs("runs", "import", str(first), env=b).returncode == 0
    assert ccs("runs", "import", str(second), env=b).stdout.strip() == f"{second}: imported 1 run(s)"
    (m,) = runs(ccs, b)
    assert m["outcomes"]["passed"] == 1
    results = Path(b["CCS_HOME"]) / "state" / "runs" / "20260101T000001Z-00000001.outcomes.jsonl"
    assert results.is_file() and results.stat().st_mode & 0o777 == 0o400  # the results came along
    (row,) = json.loads(ccs("runs", "report", "--rounds", "R", "--json", env=b).stdout)["rounds"]
    assert (row["tasks"], row["pass_at_1"]) == (1, 100.0)
    r = ccs("runs", "import", str(first), env=b)
    assert "an import from a later export" in r.stderr and runs(ccs, b)[0]["outcomes"]["passed"] == 1


def test_a_locked_round_stays_locked_where_it_is_imported(ccs, base_env, tmp_path):
    a, b = machine(base_env, tmp_path, "a"), machine(base_env, tmp_path, "b")
    for env in (a, b):
        setup(ccs, env, "http://127.0.0.1:9/v1")
    assert ccs("run", "--label", "R", "--locked", "gw", "--", "true", env=a).returncode == 0
    archive = tmp_path / "a.tar.gz"
    assert ccs("runs", "export", "--label", "R", "-o", str(archive), env=a).returncode == 0
    r = ccs("runs", "import", str(archive), env=b)
    assert r.returncode == 0 and "round 'R' is locked on its first run" in r.stderr and "(from a)" in r.stderr
    r = ccs("run", "--label", "R", "gw", "--", "true", env={**b, "GW_KEY": "sk-another-0123456789abcdef"})
    assert_one_line(r, 3, says="would not be the same as the first run of locked round 'R'")
    assert "key_fingerprint" in r.stderr
    r = ccs("run", "--label", "R", "gw", "--", "true", env=b)  # the same key, the shared salt: the same run
    assert r.returncode == 0, r.stderr
    (mine, theirs) = runs(ccs, b)
    assert mine["same_as"] == theirs["launch_id"] and theirs["machine"] == "a" and mine["machine"] == "b"


def test_export_says_which_runs(ccs, base_env, tmp_path):
    a = machine(base_env, tmp_path, "a")
    put(Path(a["CCS_HOME"]), "20260101T000001Z-00000001")
    put(Path(a["CCS_HOME"]), "20260101T000002Z-00000002", ended=None, exit_status=None, ccs_pid=os.getpid(),
        ccs_start=None)
    assert_one_line(ccs("runs", "export", env=a), 2, says="say which runs to export")
    assert_one_line(ccs("runs", "export", "--label", "nope", env=a), 2, says="no run has the label 'nope'")
    r = ccs("runs", "export", "--since", "2026-01-01", "-o", str(tmp_path / "x.tar.gz"), env=a)
    assert r.returncode == 0 and "exported 1 run(s)" in r.stdout, r.stderr
    assert "run 20260101T000002Z-00000002 is still going: left out" in r.stderr
    again = ccs("runs", "export", "--all", "-o", str(tmp_path / "x.tar.gz"), env=a)
    assert_one_line(again, 2, says="x.tar.gz already exists; pass --force to replace it")
    assert ccs("runs", "export", "--all", "--force", "-o", str(tmp_path / "x.tar.gz"), env=a).returncode == 0
    assert_one_line(ccs("runs", "export", "--all", "-o", str(tmp_path), env=a), 2, says="is a directory")
    assert_one_line(ccs("runs", "export", "--all", env={**a, "CCS_MACHINE": "bad name"}), 2,
                    says="CCS_MACHINE='bad name' is not a machine name")
    assert_one_line(ccs("runs", "import", str(tmp_path / "missing.tar.gz"), env=a), 2, says="no such archive")

"""Only what the user owns steers a launch: a `.ccs-profile` another local user wrote, a FIFO, a
symbolic link (to a secret file, say), a file or a folder others can write are named in one line and
ignored, and the user's clients keep running under the user's own choice. Real files, a real second
local user (made with `useradd`), real shims started by name, real `ccs status` and `ccs doctor`."""

from __future__ import annotations

import grp
import json
import os
import pwd
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import skip_or_fail

from ccswitch_tui.launch import shims

KEY = "sk-proj-TrustTest0123456789abcdefGHIJ"
GH_TOKEN = "ghp_TrustTestAbCdEf0123456789aBcDeF0123"


def shim_dir() -> Path:
    return Path(os.environ["CCS_HOME"]) / "state" / "shims"


def by_name(env: dict[str, str], *argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), env=env, cwd=cwd, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


@pytest.fixture
def world(ccs, base_env, tmp_path) -> dict:
    """Profiles `mine` (chosen with `ccs use`) and `work`; a stand-in `codex` on PATH that prints which
    profile it was launched under; the shims first on PATH."""
    for name in ("mine", "work"):
        r = ccs("new", name, "--base-url", "http://127.0.0.1:9", "--key", "env:PK", "--claude-model", "m",
                "--codex-model", "n", env=base_env)
        assert r.returncode == 0, r.stderr
    assert ccs("use", "mine", env=base_env).returncode == 0
    real = tmp_path / "real"
    real.mkdir()
    (real / "codex").write_text('#!/bin/sh\necho "codex ran under profile=${CCS_PROFILE:-none}"\n')
    (real / "codex").chmod(0o755)
    env = {**base_env, "PATH": f"{shim_dir()}:{real}:{base_env['PATH']}", "PK": "pk-value-not-a-real-key"}
    return {"env": env, "tmp": tmp_path}


@pytest.fixture
def other_user(tmp_path: Path) -> Iterator[pwd.struct_passwd]:
    """A throwaway local user, removed afterwards (needs root and useradd, as in CI)."""
    if os.geteuid() != 0 or not shutil.which("useradd"):
        skip_or_fail("needs root and useradd to make a second local user")
    name = f"ccst{uuid.uuid4().hex[:8]}"
    r = subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group", name],
                       capture_output=True, text=True)
    if r.returncode != 0:
        skip_or_fail(f"useradd failed: {r.stderr.strip()}")
    try:
        for d in [tmp_path, *tmp_path.parents]:  # let the user reach the test's folders (test folders only)
            if d == Path("/"):
                break
            os.chmod(d, os.stat(d).st_mode | 0o001)
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], capture_output=True)


def as_user(user: pwd.struct_passwd, script: str, cwd: Path) -> None:
    """Run ``script`` in ``sh`` as ``user``: what that user can do to a shared folder."""
    subprocess.run(["sh", "-c", script], cwd=cwd, user=user.pw_uid, group=user.pw_gid, check=True,
                   env={"PATH": "/usr/bin:/bin"}, timeout=30)


def sticky_shared(tmp_path: Path) -> Path:
    """A shared folder like /tmp: anyone may create entries, only their owner may remove them."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    return shared


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def status_rows(ccs, env, cwd) -> dict:
    r = ccs("status", "--json", env=env, cwd=cwd)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# --- another user's file ------------------------------------------------------------------------

def test_another_users_project_file_in_a_shared_parent_is_ignored(ccs, world, other_user):
    shared = sticky_shared(world["tmp"])
    mine = shared / "my-project"
    mine.mkdir()
    as_user(other_user, "echo work > .ccs-profile", cwd=shared)  # picks *my* profile `work`
    planted = shared / ".ccs-profile"
    assert planted.stat().st_uid == other_user.pw_uid

    r = by_name(world["env"], "codex", cwd=mine)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "codex ran under profile=mine\n"  # my own `ccs use` choice, not the planted file
    line = one_line(r.stderr)
    assert str(planted) in line and other_user.pw_name in line and "ignor" in line
    assert "remove" in line  # the way out

    report = status_rows(ccs, world["env"], mine)
    row = {t["tool"]: t for t in report["tools"]}["codex"]
    assert (row["profile"], row["source"]) == ("mine", "use")
    assert [i["path"] for i in report["ignored"]] == [str(planted)]
    text = ccs("status", env=world["env"], cwd=mine)
    assert text.returncode == 0 and f"ignored: {planted}" in text.stdout
    doctor = json.loads(ccs("doctor", "--json", env=world["env"], cwd=mine).stdout)
    (finding,) = [f for f in doctor["findings"] if f["code"] == "project-file-ignored"]
    assert finding["severity"] == "warn" and finding["path"] == str(planted)


def test_another_users_fifo_does_not_break_my_clients(ccs, world, other_user):
    shared = sticky_shared(world["tmp"])
    mine = shared / "my-project"
    mine.mkdir()
    as_user(other_user, "mkfifo .ccs-profile", cwd=shared)
    r = by_name(world["env"], "codex", cwd=mine)
    assert (r.returncode, r.stdout) == (0, "codex ran under profile=mine\n"), r.stderr
    line = one_line(r.stderr)
    assert str(shared / ".ccs-profile") in line and "FIFO" in line
    with pytest.raises(PermissionError):  # the sticky folder: only its owner can remove it …
        as_user_remove(shared / ".ccs-profile", owner=other_user)
    assert status_rows(ccs, world["env"], mine)["error"] is None  # … and nothing fails because of it


def as_user_remove(path: Path, owner: pwd.struct_passwd) -> None:
    """Try to remove ``path`` as a third user (neither root nor its owner): what a sticky folder forbids."""
    nobody = pwd.getpwnam("nobody")
    r = subprocess.run(["rm", "-f", str(path)], user=nobody.pw_uid, group=nobody.pw_gid, capture_output=True,
                       text=True, timeout=30)
    if r.returncode != 0 and path.exists():
        raise PermissionError(r.stderr.strip())


def test_my_own_file_in_a_folder_another_user_controls_is_ignored(ccs, world, other_user):
    theirs = world["tmp"] / "theirs"
    theirs.mkdir()
    os.chown(theirs, other_user.pw_uid, other_user.pw_gid)
    os.chmod(theirs, 0o777)  # they (and anyone) can swap what is in it
    project = theirs / "proj"
    project.mkdir()
    (project / ".ccs-profile").write_text("work\n")  # mine, but its folder chain is not
    r = by_name(world["env"], "codex", cwd=project)
    assert (r.returncode, r.stdout) == (0, "codex ran under profile=mine\n"), r.stderr
    line = one_line(r.stderr)
    assert str(project / ".ccs-profile") in line and str(theirs) in line


def test_a_file_or_folder_others_can_write_is_ignored(ccs, world, other_user):
    project = world["tmp"] / "proj"
    project.mkdir()
    profile = project / ".ccs-profile"
    profile.write_text("work\n")
    os.chmod(profile, 0o666)
    r = by_name(world["env"], "codex", cwd=project)
    assert (r.returncode, r.stdout) == (0, "codex ran under profile=mine\n"), r.stderr
    line = one_line(r.stderr)
    assert str(profile) in line and "chmod go-w" in line
    # writable by a group another user is in
    os.chown(profile, 0, other_user.pw_gid)
    os.chmod(profile, 0o664)
    r = by_name(world["env"], "codex", cwd=project)
    assert r.stdout == "codex ran under profile=mine\n" and str(profile) in one_line(r.stderr)
    # a folder of the chain that others can write (not sticky)
    os.chmod(profile, 0o644)
    os.chmod(project, 0o777)
    r = by_name(world["env"], "codex", cwd=project)
    assert r.stdout == "codex ran under profile=mine\n" and str(project) in one_line(r.stderr)
    # and `ccs use --here` does not write a file there that would be ignored
    profile.unlink()
    r = ccs("use", "--here", "work", env=world["env"], cwd=project)
    assert r.returncode == 2 and "would be ignored" in one_line(r.stderr) and not profile.exists()


def test_a_group_writable_file_of_my_private_group_counts(ccs, world):
    """Debian and Ubuntu give each user a private group and umask 002: group-writable files and folders
    are then the user's own."""
    me = pwd.getpwuid(os.geteuid())
    group = grp.getgrgid(me.pw_gid)
    if group.gr_name != me.pw_name or any(m != me.pw_name for m in group.gr_mem):
        skip_or_fail(f"the test user {me.pw_name} has no private group")
    project = world["tmp"] / "proj"
    project.mkdir()
    os.chmod(project, 0o775)
    profile = project / ".ccs-profile"
    profile.write_text("work\n")
    os.chown(profile, me.pw_uid, me.pw_gid)
    os.chmod(profile, 0o664)
    r = by_name(world["env"], "codex", cwd=project)
    assert (r.returncode, r.stdout, r.stderr) == (0, "codex ran under profile=work\n", "")


def test_use_here_never_writes_over_another_users_file(ccs, world, other_user):
    shared = sticky_shared(world["tmp"])
    as_user(other_user, "echo work > .ccs-profile", cwd=shared)
    r = ccs("use", "--here", "mine", env=world["env"], cwd=shared)
    line = one_line(r.stderr)
    assert r.returncode == 2 and other_user.pw_name in line and "remove it" in line
    assert (shared / ".ccs-profile").read_text() == "work\n" and (shared / ".ccs-profile").stat().st_uid != 0


def test_root_owned_project_file_counts(ccs, world):
    """A file root owns (a machine-wide default) counts for every user; as root, it is one's own."""
    project = world["tmp"] / "proj"
    project.mkdir()
    (project / ".ccs-profile").write_text("work\n")
    os.chmod(project / ".ccs-profile", 0o644)
    if os.geteuid() != 0:
        pytest.skip("root-owned files can only be made as root")
    r = by_name(world["env"], "codex", cwd=project)
    assert (r.returncode, r.stdout, r.stderr) == (0, "codex ran under profile=work\n", "")


# --- links and secrets --------------------------------------------------------------------------

@pytest.mark.parametrize(("target", "secret"), [
    (".env", KEY),
    ("git-credentials", GH_TOKEN),
])
def test_a_link_to_a_secret_file_is_ignored_and_never_quoted(ccs, world, target, secret):
    repo = world["tmp"] / "repo"
    repo.mkdir()
    content = f"OPENAI_API_KEY={KEY}\n" if target == ".env" else f"https://me:{GH_TOKEN}@github.com\n"
    (repo / target).write_text(content)
    os.chmod(repo / target, 0o600)
    (repo / ".ccs-profile").symlink_to(target)
    r = by_name(world["env"], "codex", cwd=repo)
    assert (r.returncode, r.stdout) == (0, "codex ran under profile=mine\n"), r.stderr
    line = one_line(r.stderr)
    assert str(repo / ".ccs-profile") in line and "symbolic link" in line and "ccs use --here" in line
    for out in (r.stdout, r.stderr):
        assert secret not in out and secret[:12] not in out
    status = ccs("status", env=world["env"], cwd=repo)
    assert status.returncode == 0
    assert secret[:12] not in status.stdout + status.stderr
    # `ccs use --here` does not write through the link, nor quote what it points at
    r = ccs("use", "--here", "work", env=world["env"], cwd=repo)
    assert r.returncode == 2 and "symbolic link" in one_line(r.stderr) and secret[:12] not in r.stderr
    assert (repo / ".ccs-profile").is_symlink() and (repo / target).read_text() == content


@pytest.mark.parametrize("content", [
    f"{KEY}\n",
    f"OPENAI_API_KEY={KEY}\n",
    "password=Hunter2-Hunter2!\n",
    f"https://me:{GH_TOKEN}@github.com\n",
    "my passphrase is correct horse battery staple\n",
])
def test_a_careless_copy_of_a_secret_file_is_refused_without_quoting_it(ccs, world, content):
    """The user's own regular file is obeyed, so a damaged one is an error, but its line shows no more
    than a short, filtered excerpt."""
    project = world["tmp"] / "proj"
    project.mkdir()
    (project / ".ccs-profile").write_text(content)
    secret_part = content.strip().split("=")[-1].replace("https://me:", "")[:14]
    r = by_name(world["env"], "codex", cwd=project)
    assert r.returncode == 2 and r.stdout == ""
    line = one_line(r.stderr)
    assert f"{project / '.ccs-profile'}:1:" in line and secret_part not in line, line
    status = ccs("status", env=world["env"], cwd=project)
    assert status.returncode == 2 and secret_part not in status.stdout + status.stderr


def test_a_bad_name_is_still_shown_so_it_can_be_fixed(ccs, world):
    project = world["tmp"] / "proj"
    project.mkdir()
    (project / ".ccs-profile").write_text("Work\n")
    r = by_name(world["env"], "codex", cwd=project)
    assert r.returncode == 2 and "'Work' is not a profile name" in one_line(r.stderr)


def test_shim_error_lines_pass_the_output_filter(world):
    """Text from elsewhere in a shim's line (here a folder named after a token, as a careless clone
    might be) goes through the same filter as every line `ccs` prints."""
    project = world["tmp"] / f"clone-{GH_TOKEN}"
    project.mkdir()
    (project / ".ccs-profile").write_text("Bad Name\n")
    r = by_name(world["env"], "codex", cwd=project)
    line = one_line(r.stderr)
    assert r.returncode == 2 and "is not a profile name" in line and GH_TOKEN not in line, line
    assert "…" in line.split(".ccs-profile")[0]  # the token's mask


# --- the lookup itself ----------------------------------------------------------------------------

def test_an_ignored_file_does_not_hide_a_trusted_one_further_up(world):
    top = world["tmp"] / "top"
    (top / "mid" / "low").mkdir(parents=True)
    (top / ".ccs-profile").write_text("work\n")
    (top / "mid" / ".ccs-profile").symlink_to(top / ".ccs-profile")
    found = shims.find_project_file(top / "mid" / "low")
    assert found.path == str(top / ".ccs-profile")
    assert [i.path for i in found.ignored] == [str(top / "mid" / ".ccs-profile")]


def test_the_tui_header_says_a_project_file_was_ignored(world, ccs_home):
    from ccswitch_tui.launch.use_status import header

    project = world["tmp"] / "proj"
    project.mkdir()
    (project / ".ccs-profile").symlink_to("/dev/null")
    line = header(ccs_home, world["env"], project)
    assert "codex→mine (ccs use)" in line and "not yours, ignored (`ccs status`)" in line, line

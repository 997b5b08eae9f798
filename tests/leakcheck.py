"""Helpers for tests that run the real `ccs` and look for secrets in everything it printed."""

from __future__ import annotations

import subprocess
from pathlib import Path


def streams(r: subprocess.CompletedProcess) -> str:
    return (r.stdout or "") + "\n" + (r.stderr or "")


def assert_hidden(r: subprocess.CompletedProcess, *secrets: str) -> None:
    """No secret, nor a long inner piece of one, in stdout or stderr."""
    out = streams(r)
    for s in secrets:
        assert s not in out, f"secret printed by ccs: {out!r}"
        if len(s) >= 20:
            assert s[6:-6] not in out, f"part of a secret printed by ccs: {out!r}"


def assert_one_line(r: subprocess.CompletedProcess, code: int = 2, *, says: str | None = None) -> str:
    """Exit ``code``, nothing on stdout, and exactly one `ccs: ...` line on stderr (no traceback)."""
    lines = r.stderr.strip().splitlines()
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert len(lines) == 1 and lines[0].startswith("ccs: "), r.stderr
    assert "Traceback" not in r.stderr
    if says is not None:
        assert says in lines[0], lines[0]
    return lines[0]


def write_profile(home_profiles: Path, name: str, body: str) -> Path:
    home_profiles.mkdir(parents=True, exist_ok=True)
    path = home_profiles / f"{name}.toml"
    path.write_text(body, encoding="utf-8")
    return path


def nothing_on_disk_holds(root: Path, *secrets: str) -> None:
    for f in root.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            for s in secrets:
                assert s.encode() not in data, f"{f} holds a secret"


BASIC = """schema = 1
[provider]
name = "P"
base_url = "{url}"
key = "{key}"
[run]
export = ["openai"]
model = "gpt-4.1"
"""

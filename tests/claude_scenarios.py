"""Interactive Claude Code launched through ccs on a real pseudo-terminal, run inside a private
network namespace by tests/test_claude_interactive.py (through tests/netns.py): the loopback stub
is all the client can reach, and strace records every connect() it tries anyway.

Run as ``python tests/claude_scenarios.py NAME JSON_ARGS``; prints the scenario's result as JSON.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pty_session import PtySession  # noqa: E402
from stub_server import StubServer  # noqa: E402

CCS = [sys.executable, "-m", "ccswitch_tui"]
TRUST = r"Enter\s*to\s*confirm"
READY = r"auto\s*mode|for\s*shortcuts"


def ccs(env: dict[str, str], *args: str, input: str | None = None,
        cwd: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CCS, *args], env=env, input=input, capture_output=True, text=True, timeout=120,
                          cwd=cwd, stdin=None if input is not None else subprocess.DEVNULL)


def ok(r: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert r.returncode == 0, f"{r.args}: rc {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def inet_connects(trace: str) -> list[str]:
    """host:port of every AF_INET/AF_INET6 connect() in an strace log."""
    out = []
    for line in trace.splitlines():
        if "connect(" not in line or "AF_UNIX" in line:
            continue
        m = re.search(r'sin6?_port=htons\((\d+)\).*?(?:inet_addr|inet_pton\(AF_INET6, )\("?([0-9a-f.:]+)"', line)
        if m:
            out.append(f"{m.group(2)}:{m.group(1)}")
    return out


def files_holding(roots: list[Path], *needles: str) -> list[str]:
    found = []
    for root in roots:
        for dirpath, _dirs, files in os.walk(root):
            for name in files:
                path = Path(dirpath, name)
                try:
                    data = path.read_bytes()
                except OSError:
                    continue
                if any(n.encode() in data for n in needles):
                    found.append(str(path))
    return found


def setup(env: dict[str, str], key_id: str, key: str, stub: StubServer, auth: str) -> Path:
    ok(ccs(env, "new", "p", "--base-url", stub.url, "--key", key_id, "--claude-model", "cm"))
    ok(ccs(env, "key", "set", key_id, input=key))
    if auth != "token":
        prof = Path(env["CCS_HOME"]) / "profiles" / "p.toml"
        text = prof.read_text()
        assert "[claude]\n" in text, text
        prof.write_text(text.replace("[claude]\n", f'[claude]\nauth = "{auth}"\n', 1))
    work = Path(env["HOME"]) / "work"
    work.mkdir(exist_ok=True)
    return work


def converse(s: PtySession, out: dict[str, Any], prompt: str = "say hi") -> None:
    """Trust the folder as a person would, wait for the prompt, ask, wait for the answer, leave."""
    s.expect(TRUST, 90)
    out["before_trust"] = s.text
    s.pump(3)  # the dialog takes keys once it has settled
    s.send("\x1b[B")  # "Yes, I trust this folder"
    s.pump(1)
    s.send("\r")
    s.expect(READY, 60)
    s.pump(2)
    s.type_line(prompt)
    s.expect("stub ?reply", 90)
    s.type_line("/exit")


def first_launch(env: dict[str, str], key_id: str, key: str, auth: str) -> dict[str, Any]:
    """A profile's first interactive launch in a fresh config dir, traced with strace -f."""
    stub = StubServer("provider")
    try:
        work = setup(env, key_id, key, stub, auth)
        trace = Path(env["HOME"]) / "trace.txt"
        s = PtySession(["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(trace), *CCS, "launch", "p", "claude"],
                       {**env, "TERM": "xterm-256color"}, cwd=str(work))
        out: dict[str, Any] = {}
        try:
            try:
                converse(s, out)
                out["rc"] = s.wait(60)
            except AssertionError as exc:
                out["error"] = str(exc)[-3000:]
            out["text"] = s.text[-6000:]
        finally:
            s.close()
        posts = stub.posts()
        out["posts"] = [{"path": p.path, "x-api-key": p.headers.get("x-api-key"),
                         "authorization": p.headers.get("authorization")} for p in posts]
        out["connects"] = sorted(set(inet_connects(trace.read_text())))
        out["stub_port"] = stub.url.rsplit(":", 1)[1]
        trace.unlink()
        out["key_files"] = files_holding([Path(env["HOME"]), Path(env["CCS_HOME"])], key, key[-20:])
        return out
    finally:
        stub.close()


def isolate_resume(env: dict[str, str], key_id: str, key: str) -> dict[str, Any]:
    """An --isolate session in a repository whose settings would override the profile, then the
    resume command ccs printed, run as printed in the same repository."""
    stub = StubServer("provider")
    try:
        work = setup(env, key_id, key, stub, "token")
        (work / ".claude").mkdir()
        repo_settings = {"env": {"ANTHROPIC_DEFAULT_HAIKU_MODEL": "repo-model"}}  # not a key the profile sets
        (work / ".claude" / "settings.json").write_text(json.dumps(repo_settings))
        out: dict[str, Any] = {}
        s = PtySession([*CCS, "launch", "p", "claude", "--isolate"], {**env, "TERM": "xterm-256color"}, cwd=str(work))
        try:
            try:
                converse(s, out)
                out["rc"] = s.wait(60)
            except AssertionError as exc:
                out["error"] = str(exc)[-3000:]
            text = s.text
        finally:
            s.close()
        out["tail"] = text[-1500:]
        m = re.search(r"ccs launch p claude [^\n]*--resume [0-9a-f-]{36}", text)
        out["hint"] = m.group(0) if m else None
        if m is None:
            return out
        argv = shlex.split(m.group(0))
        assert argv[0] == "ccs"
        r = PtySession([*CCS, *argv[1:]], {**env, "TERM": "xterm-256color"}, cwd=str(work))
        try:
            try:
                r.expect(READY, 90)
                r.expect("stub ?reply", 30)  # the earlier conversation is back on screen
                out["resumed"] = True
                r.pump(2)
                r.type_line("/exit")
                out["resume_rc"] = r.wait(60)
            except AssertionError as exc:
                out["resume_error"] = str(exc)[-3000:]
            out["resume_tail"] = r.text[-1500:]
        finally:
            r.close()
        # the same hint without --isolate is refused here: the flag is what makes it work
        bare = [a for a in argv[1:] if a != "--isolate"]
        bare_run = ccs(env, *bare, cwd=str(work))
        out["bare_rc"], out["bare_stderr"] = bare_run.returncode, bare_run.stderr[-800:]
        return out
    finally:
        stub.close()


def tui_first_launch(env: dict[str, str], key_id: str, key: str) -> dict[str, Any]:
    """`c` in the TUI on a profile never launched before: Claude Code gets the terminal (through
    ccs's pseudo-terminal relay), answers, and the TUI is back with its status."""
    stub = StubServer("provider")
    try:
        work = setup(env, key_id, key, stub, "token")
        out: dict[str, Any] = {}
        s = PtySession(CCS, {**env, "TERM": "xterm-256color"}, cwd=str(work), rows=30, cols=110)
        try:
            try:
                s.expect("filter profiles", 60)
                s.pump(2)
                s.send("c")
                converse(s, out)
                s.expect(r"exited\s*with\s*status\s*0", 60)
                out["back"] = True
                s.send("\x11")  # ctrl+q
                out["rc"] = s.wait(30)
            except AssertionError as exc:
                out["error"] = str(exc)[-3000:]
            out["text"] = s.text[-4000:]
        finally:
            s.close()
        out["posts"] = [p.headers.get("authorization") for p in stub.posts()]
        return out
    finally:
        stub.close()


if __name__ == "__main__":
    result = globals()[sys.argv[1]](**json.loads(sys.argv[2]))
    print(json.dumps(result))

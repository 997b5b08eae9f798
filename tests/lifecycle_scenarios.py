"""Scenarios with the real interactive clients, run by tests/netns.py inside a private network
namespace (a loopback stub is the only server they can reach). Each prints one JSON object last."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pty_session import PtySession  # noqa: E402
from stub_server import StubServer  # noqa: E402

from ccswitch_tui.tools.codex import daemons  # noqa: E402

CCS = [sys.executable, "-m", "ccswitch_tui"]


def ccs(env: dict[str, str], *args: str, input: str | None = None,
        cwd: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CCS, *args], env=env, input=input, capture_output=True, text=True, timeout=120,
                          cwd=cwd, stdin=None if input is not None else subprocess.DEVNULL)


def ok(r: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert r.returncode == 0, f"{r.args}: rc {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def interactive_codex(env: dict[str, str], profile: str, cwd: str) -> PtySession:
    s = PtySession([*CCS, "launch", profile, "codex"], {**env, "TERM": "xterm-256color"}, cwd=cwd)
    s.expect("Ask Codex", 120)
    s.type_line("say hi")
    s.expect("stub ?reply", 90)
    return s


def quit_codex(s: PtySession) -> int:
    s.type_line("/quit")
    return s.wait(90)


def daemons_and_rotation(env: dict[str, str], key_id: str, key1: str, key2: str) -> dict[str, Any]:
    stub = StubServer("provider")
    home = Path(env["CCS_HOME"]) / "state" / "tools" / "p" / "codex"
    out: dict[str, Any] = {}
    try:
        ok(ccs(env, "new", "p", "--base-url", stub.url, "--key", key_id, "--codex-model", "p-codex"))
        ok(ccs(env, "key", "set", key_id, input=key1))
        # 1: an interactive session, ended with /quit: its daemons end with it
        s = interactive_codex(env, "p", env["HOME"])
        out["daemons_during_1"] = [d.pid for d in daemons.find(home)]
        out["rc1"] = quit_codex(s)
        out["text1_tail"] = s.text[-600:]
        s.close()
        out["daemons_after_1"] = [d.pid for d in daemons.find(home) if _alive(d.pid)]
        # the printed hint resumes that session under the same profile
        m = re.search(r"ccs launch p codex -- resume ([0-9a-f-]{36})", s.text)
        if m:
            r = PtySession([*CCS, "launch", "p", "codex", "--", "resume", m.group(1)],
                           {**env, "TERM": "xterm-256color"}, cwd=env["HOME"])
            try:
                r.expect("say hi", 120)  # the earlier conversation is back on screen
                out["resumed"] = True
                out["rc_resume"] = quit_codex(r)
            finally:
                r.close()
        # 2: ccs killed with SIGKILL mid-session: the run is lost
        s = interactive_codex(env, "p", env["HOME"])
        os.kill(s.pid, signal.SIGKILL)
        s.wait(30)
        s.close()
        runs = json.loads(ok(ccs(env, "runs", "--json")).stdout)["runs"]
        out["states"] = [r["state"] for r in runs]
        out["runs_table"] = ok(ccs(env, "runs")).stdout
        out["daemons_after_kill"] = [d.pid for d in daemons.find(home) if _alive(d.pid)]
        # a daemon as a launch by an earlier ccs left it (those launches passed no `-c`, so Codex started
        # `codex app-server` daemons that outlived them): the real app-server, with that launch's
        # environment and the first key
        planted = subprocess.Popen(
            ["codex", "app-server"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, cwd=env["HOME"],
            env={**env, "CODEX_HOME": str(home), "CCS_CODEX_API_KEY": key1, "CCS_PROFILE": "p", "CCS_TOOL": "codex",
                 "CCS_LAUNCH_ID": runs[0]["launch_id"]})
        deadline = time.monotonic() + 30
        while not daemons.find(home) and time.monotonic() < deadline and planted.poll() is None:
            time.sleep(0.1)
        out["leftover"] = [d.pid for d in daemons.find(home)]
        # the key is rotated: ps and inspect call the old daemons wrong
        ok(ccs(env, "key", "set", key_id, input=key2))
        procs = json.loads(ccs(env, "ps", "--json").stdout)["processes"]
        out["ps"] = {p["pid"]: p["findings"] for p in procs if p["pid"] in out["leftover"]}
        if out["leftover"]:
            ins = json.loads(ccs(env, "inspect", str(out["leftover"][0]), "--json").stdout)
            out["inspect_codes"] = sorted({f["code"] for f in ins["findings"] if f["severity"] == "error"})
            out["inspect_warn_codes"] = sorted({f["code"] for f in ins["findings"] if f["severity"] == "warn"})
            out["inspect_has_internal"] = any(f.get("variable") == "CODEX_INTERNAL_APP_SERVER_REMOTE_CONTROL_DISABLED"
                                              for f in ins["findings"])
        # 3: the next launch ends the stale daemons first, so the provider gets the new key
        before = len(stub.posts())
        s = interactive_codex(env, "p", env["HOME"])
        out["auth_3"] = [r.headers.get("authorization") for r in stub.posts()[before:]]
        out["leftover_alive_during_3"] = [p for p in out["leftover"] if _alive(p)]
        out["rc3"] = quit_codex(s)
        s.close()
        runs = json.loads(ok(ccs(env, "runs", "--json")).stdout)["runs"]
        out["daemons_ended_3"] = runs[0].get("daemons_ended")
        out["daemons_after_3"] = [d.pid for d in daemons.find(home) if _alive(d.pid)]
        out["auth_1"] = [r.headers.get("authorization") for r in stub.posts()[:before]]
        planted.stdin.close()
        out["planted_rc"] = planted.wait(30)
        return out
    finally:
        daemons.end(daemons.find(home), home)
        stub.close()


def claude_resume(env: dict[str, str], key_id: str, key: str) -> dict[str, Any]:
    """An interactive Claude Code session, then the resume command ccs printed, run for real."""
    stub = StubServer("provider")
    try:
        ok(ccs(env, "new", "p", "--base-url", stub.url, "--key", key_id, "--claude-model", "cm"))
        ok(ccs(env, "key", "set", key_id, input=key))
        Path(env["HOME"], ".claude.json").write_text(json.dumps({"hasCompletedOnboarding": True}))
        work = Path(env["HOME"]) / "work"
        work.mkdir(exist_ok=True)
        s = PtySession([*CCS, "launch", "p", "claude"], {**env, "TERM": "xterm-256color"}, cwd=str(work))
        try:
            s.expect(r"Enter\s*to\s*confirm", 90)
            s.pump(3)  # the dialog takes keys once it has settled
            s.send("\x1b[B")  # "Yes, I trust this folder"
            s.pump(1)
            s.send("\r")
            s.expect(r"auto\s*mode|for\s*shortcuts", 60)
            s.pump(2)
            s.type_line("say hi")
            s.expect("stub ?reply", 90)
            s.type_line("/exit")
            rc = s.wait(60)
            text = s.text
        finally:
            s.close()
        m = re.search(r"ccs launch p claude -- --resume ([0-9a-f-]{36})", text)
        out: dict[str, Any] = {"rc": rc, "hint": m.group(0) if m else None, "tail": text[-800:]}
        if m:
            r = ccs(env, "launch", "p", "claude", "--", "--resume", m.group(1), "-p", "again", "--output-format",
                    "json", cwd=str(work))
            out["resume_rc"] = r.returncode
            out["resume_stderr"] = r.stderr[-800:]
            out["resumed_messages"] = json.dumps(stub.posts()[-1].body.get("messages"))
        return out
    finally:
        stub.close()


def _alive(pid: int) -> bool:
    from ccswitch_tui.procfs import process_start

    return process_start(pid) is not None


def kept_config(env: dict[str, str], key_id: str, key: str) -> dict[str, Any]:
    """`mcp add` and the user's comments survive a relaunch; the user's own MCP servers reach a new
    profile of both clients."""
    stub = StubServer("provider")
    out: dict[str, Any] = {}
    try:
        ok(ccs(env, "new", "p", "--base-url", stub.url, "--key", key_id, "--codex-model", "m",
               "--claude-model", "c"))
        ok(ccs(env, "key", "set", key_id, input=key))
        ok(ccs(env, "launch", "p", "codex", "--", "mcp", "add", "added-server", "--", "echo", "hi"))
        config = Path(env["CCS_HOME"]) / "state" / "tools" / "p" / "codex" / "config.toml"
        config.write_text("# my own note\n" + config.read_text())
        # the profile changes its model: ccs edits its own keys, keeps the rest
        prof = Path(env["CCS_HOME"]) / "profiles" / "p.toml"
        prof.write_text(prof.read_text().replace('model = "m"', 'model = "m2"'))
        r = ok(ccs(env, "launch", "p", "codex", "--", "mcp", "list"))
        out["mcp_list"] = r.stdout
        out["config"] = config.read_text()
        r = ok(ccs(env, "launch", "p", "codex", "--", "exec", "--skip-git-repo-check", "hi"))
        out["exec_model"] = stub.posts()[-1].body.get("model")
        # the user's own setup, shared with a new profile
        user_home = Path(env["HOME"])
        (user_home / ".codex").mkdir(exist_ok=True)
        (user_home / ".codex" / "config.toml").write_text(
            '[mcp_servers.user-codex-server]\ncommand = "echo"\nargs = ["user"]\n')
        (user_home / ".codex" / "AGENTS.md").write_text("be brief\n")
        (user_home / ".claude.json").write_text(json.dumps({
            "mcpServers": {"user-claude-server": {"type": "stdio", "command": "echo", "args": ["user"]},
                           "routing-server": {"command": "echo", "env": {"ANTHROPIC_BASE_URL": "http://x"}}},
            "hasCompletedOnboarding": True, "theme": "dark", "primaryApiKey": "sk-never-shared-0123456789"}))
        ok(ccs(env, "new", "q", "--base-url", stub.url, "--key", key_id, "--codex-model", "m", "--claude-model", "c"))
        out["q_codex_mcp"] = ok(ccs(env, "launch", "q", "codex", "--", "mcp", "list")).stdout
        r = ccs(env, "launch", "q", "claude", "--", "mcp", "list")
        out["q_claude_mcp"] = r.stdout + r.stderr
        qclaude = Path(env["CCS_HOME"]) / "state" / "tools" / "q" / "claude" / ".claude.json"
        out["q_claude_json"] = json.loads(qclaude.read_text())
        qcodex = Path(env["CCS_HOME"]) / "state" / "tools" / "q" / "codex"
        out["q_agents_link"] = os.readlink(qcodex / "AGENTS.md") if (qcodex / "AGENTS.md").is_symlink() else None
        env_json = json.loads(ok(ccs(env, "env", "q", "--tool", "codex", "--format", "json")).stdout)
        out["env_shared"] = [s["piece"] for s in env_json["shared"]]
        out["env_stderr"] = ccs(env, "env", "q", "--tool", "claude").stderr
        return out
    finally:
        for name in ("p", "q"):
            home = Path(env["CCS_HOME"]) / "state" / "tools" / name / "codex"
            daemons.end(daemons.find(home), home)
        stub.close()


def _inet_connects(trace: str) -> list[str]:
    """host:port of every AF_INET/AF_INET6 connect() in an strace log."""
    out = []
    for line in trace.splitlines():
        if "connect(" not in line or "AF_UNIX" in line:
            continue
        m = re.search(r'sin6?_port=htons\((\d+)\).*?(?:inet_addr|inet_pton\(AF_INET6, )\("?([0-9a-f.:]+)"', line)
        if m:
            out.append(f"{m.group(2)}:{m.group(1)}")
    return out


def quiet(env: dict[str, str], key_id: str, key: str, tool: str, quiet_policy: bool | None,
          profile: str) -> dict[str, Any]:
    """Every connect() of a real client launched through ccs, traced with strace -f."""
    name = profile
    stub = StubServer("provider")
    try:
        ok(ccs(env, "new", name, "--base-url", stub.url, "--key", key_id, "--codex-model", "m", "--claude-model", "c"))
        ok(ccs(env, "key", "set", key_id, input=key))
        if quiet_policy is not None:
            prof = Path(env["CCS_HOME"]) / "profiles" / f"{name}.toml"
            prof.write_text(prof.read_text() + f"\n[policy]\nquiet = {str(quiet_policy).lower()}\n")
        trace = Path(env["HOME"]) / f"trace-{name}-{tool}.txt"
        args = ["-p", "say hi", "--output-format", "json"] if tool == "claude" else \
            ["exec", "--skip-git-repo-check", "say hi"]
        run_env = {**env, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "", "AWS_EC2_METADATA_DISABLED": "true"}
        r = subprocess.run(["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(trace), *CCS, "launch", name, tool,
                            "--", *args], env=run_env, capture_output=True, text=True, timeout=180,
                           stdin=subprocess.DEVNULL)
        return {"rc": r.returncode, "stderr": r.stderr[-2000:], "stub": stub.url.rsplit(":", 1)[1],
                "connects": sorted(set(_inet_connects(trace.read_text()))), "posts": len(stub.posts())}
    finally:
        home = Path(env["CCS_HOME"]) / "state" / "tools" / name / "codex"
        daemons.end(daemons.find(home), home)
        stub.close()


def key_on_disk(env: dict[str, str], key_id: str, key: str) -> dict[str, Any]:
    """Every file under the profile's CODEX_HOME, read over and over while `codex exec` runs."""
    import threading
    import time

    stub = StubServer("provider")
    home = Path(env["CCS_HOME"]) / "state" / "tools" / "p" / "codex"
    seen: set[str] = set()
    done = threading.Event()

    def scan() -> None:
        for p in list(home.rglob("*")) if home.is_dir() else []:
            try:
                if p.is_file() and not p.is_symlink() and key.encode() in p.read_bytes():
                    seen.add(str(p.relative_to(home)))
            except OSError:
                pass

    def watch() -> None:
        while not done.is_set():
            scan()
            time.sleep(0.005)

    try:
        ok(ccs(env, "new", "p", "--base-url", stub.url, "--key", key_id, "--codex-model", "m"))
        ok(ccs(env, "key", "set", key_id, input=key))
        t = threading.Thread(target=watch)
        t.start()
        r = ccs(env, "launch", "p", "codex", "--", "exec", "--skip-git-repo-check", "run the command: echo hi")
        done.set()
        t.join()
        scan()  # what the launch left behind: it has ended its daemons before it returned
        return {"rc": r.returncode, "stderr": r.stderr[-800:], "seen": sorted(seen), "posts": len(stub.posts())}
    finally:
        done.set()
        stub.close()


def oss_provider_id(env: dict[str, str], key_id: str, key: str) -> dict[str, Any]:
    stub = StubServer("provider")
    try:
        ok(ccs(env, "new", "p", "--base-url", stub.url, "--key", key_id, "--codex-model", "m"))
        prof = Path(env["CCS_HOME"]) / "profiles" / "p.toml"
        prof.write_text(re.sub(r'provider_id = "[^"]*"', 'provider_id = "oss"', prof.read_text()))
        ok(ccs(env, "key", "set", key_id, input=key))
        r = ccs(env, "launch", "p", "codex", "--", "exec", "--skip-git-repo-check", "hi")
        return {"rc": r.returncode, "stdout": r.stdout, "stderr": r.stderr[-1500:], "posts": len(stub.posts()),
                "profile": prof.read_text()}
    finally:
        stub.close()


def codex_by_name_under_shim(env: dict[str, str], key_id: str, key: str) -> dict[str, Any]:
    """Interactive Codex started by name (`codex`) with the shim folder first on PATH: the session works
    inside the launch the shim made, and no app-server daemon of it is left."""
    stub = StubServer("provider")
    home = Path(env["CCS_HOME"]) / "state" / "tools" / "p" / "codex"
    out: dict[str, Any] = {}
    try:
        ok(ccs(env, "new", "p", "--base-url", stub.url, "--key", key_id, "--codex-model", "p-codex"))
        ok(ccs(env, "key", "set", key_id, input=key))
        ok(ccs(env, "use", "p"))
        shimmed = {**env, "PATH": f"{Path(env['CCS_HOME']) / 'state' / 'shims'}:{env['PATH']}",
                   "TERM": "xterm-256color"}
        s = PtySession(["codex"], shimmed, cwd=env["HOME"])
        try:
            s.expect("Ask Codex", 120)
            s.type_line("say hi")
            s.expect("stub ?reply", 90)
            found = daemons.find(home)
            out["daemons"] = [{"argv": _cmdline(d.pid), "profile": _environ(d.pid).get("CCS_PROFILE"),
                               "launch": _environ(d.pid).get("CCS_LAUNCH_ID")} for d in found]
            out["rc"] = quit_codex(s)
        finally:
            s.close()
        out["daemons_after"] = [d.pid for d in daemons.find(home) if _alive(d.pid)]
        out["runs"] = [{"profile": r["profile"], "tool": r["tool"], "launch_id": r["launch_id"]}
                       for r in json.loads(ok(ccs(env, "runs", "--json")).stdout)["runs"]]
        out["auth"] = sorted({r.headers.get("authorization") or "" for r in stub.posts()})
        return out
    finally:
        daemons.end(daemons.find(home), home)
        stub.close()


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace").split("\0")[:-1]
    except OSError:
        return []


def _environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes().decode("utf-8", "replace")
    except OSError:
        return {}
    return dict(x.split("=", 1) for x in raw.split("\0") if "=" in x)


if __name__ == "__main__":
    result = globals()[sys.argv[1]](**json.loads(sys.argv[2]))
    print(json.dumps(result))

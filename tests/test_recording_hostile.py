"""`--record` against hostile providers, end to end with real parts: `ccs run` of a program that
reads every byte the bridge sends it, the real Claude Code and `codex exec` (pass-through and
translated) traced with strace, a recorded child whose ccs is killed while another user waits on
its port, and records that say what the child really got.

Keys here have no credential shape (GLM's ``<32 hex>.<16 chars>``, a plain gateway secret): the
masker's shape rules would hide ``sk-…`` keys and prove nothing."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import skip_or_fail
from hostile_stub import Got, HostileStub, echo_answers, pieces_of, response
from key_samples import GLM
from provider_stub import ProviderStub

KEY = GLM
OTHER = "gw7Qx2LmPz94RtYvWq3N"


def assert_clean(data: bytes, *secrets: str) -> None:
    for s in secrets:
        for i in range(len(s) - 9):
            at = data.find(s[i:i + 10].encode())
            assert at < 0, (s[i:i + 10], data[max(0, at - 600):at + 200])


@pytest.fixture
def hostile():
    s = HostileStub()
    yield s
    s.close()


def write_profile(url: str, extra: str = "", tools: str = "[run]\nexport = [\"openai\"]\nmodel = \"m\"\n") -> None:
    home = Path(os.environ["CCS_HOME"]) / "profiles"
    home.mkdir(parents=True, exist_ok=True)
    (home / "p.toml").write_text(f'schema = 1\n[provider]\nname = "P"\nbase_url = "{url}"\nkey = "env:HOSTILE_KEY"\n'
                                 f'{tools}[secrets]\nMY_GATEWAY_AUTH = "env:HOSTILE_GW"\n{extra}')


@pytest.fixture
def env(base_env):
    return {**base_env, "HOSTILE_KEY": KEY, "HOSTILE_GW": OTHER}


def runs(ccs, env) -> list[dict]:
    return json.loads(ccs("runs", "--json", env=env).stdout)["runs"]


def records_of(manifest: dict) -> list[dict]:
    path = Path(os.environ["CCS_HOME"]) / "state" / "runs" / manifest["recording"]["records"]
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def everything_on_disk() -> bytes:
    return b"".join(p.read_bytes() for p in Path(os.environ["CCS_HOME"]).rglob("*") if p.is_file())


RAW_CHILD = textwrap.dedent('''
    import json, os, socket, sys
    from urllib.parse import urlsplit
    base = urlsplit(os.environ["OPENAI_BASE_URL"])
    token, gw = os.environ["OPENAI_API_KEY"], os.environ["MY_GATEWAY_AUTH"]
    replies = {}
    with open(sys.argv[2]) as f:
        plan = json.load(f)
    for name, method, path, version, body in plan:
        path = path.replace("TOKEN", token)
        body = body.replace("TOKEN", token).encode()
        with socket.create_connection((base.hostname, base.port)) as s:
            s.sendall((f"{method} {base.path}{path} {version}\\r\\nHost: x\\r\\nAuthorization: Bearer {token}\\r\\n"
                       f"X-Gateway-Auth: {gw}\\r\\nContent-Type: application/json\\r\\n"
                       f"Content-Length: {len(body)}\\r\\nConnection: close\\r\\n\\r\\n").encode() + body)
            out = b""
            while True:
                more = s.recv(65536)
                if not more:
                    break
                out += more
        replies[name] = out.hex()
    with open(sys.argv[1], "w") as f:
        json.dump({"replies": replies, "token": token}, f)
''')


def dechunked(raw: bytes) -> bytes:
    head, _, body = raw.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" not in head.lower():
        return raw
    out = b""
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out += rest[:size]
        body = rest[size + 2:]
    return head + b"\r\n\r\n" + out


def test_ccs_run_child_gets_no_secret_and_records_hold_none(ccs, env, hostile, tmp_path):
    echo_answers(hostile, KEY, OTHER)
    message = "x" * 480 + KEY + " " + OTHER  # right across the 500 characters an error keeps
    hostile.answers["/fail"] = lambda got: response("502 Bad Gateway", {"Content-Type": "text/plain"},
                                                    message.encode())
    hostile.answers["/echo-model"] = lambda got: response(
        "200 OK", {"Content-Type": "application/json"},
        json.dumps({"model": json.loads(got.body)["model"], "echo": got.headers["x-gateway-auth"]}).encode())
    write_profile(hostile.url + "/v1")
    program = tmp_path / "raw_child.py"
    program.write_text(RAW_CHILD)
    stream = '{"model":"m","stream":true}'
    plan = [("redirect", "GET", "/redirect?key=TOKEN", "HTTP/1.1", ""),
            ("elsewhere", "GET", "/elsewhere?key=TOKEN", "HTTP/1.1", ""),
            ("auth", "POST", "/auth", "HTTP/1.1", stream), ("old", "POST", "/old", "HTTP/1.0", stream),
            ("stream", "POST", "/chat/completions", "HTTP/1.1", stream), ("gzip", "GET", "/gzip", "HTTP/1.1", ""),
            ("fail", "POST", "/fail", "HTTP/1.1", stream),
            ("model", "POST", "/echo-model", "HTTP/1.1", '{"model":"TOKEN"}')]
    out, plan_file = tmp_path / "out.json", tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan))
    r = ccs("run", "--record", "p", "--", sys.executable, str(program), str(out), str(plan_file), env=env,
            timeout=120)
    assert r.returncode == 0, r.stderr
    result = json.loads(out.read_text())
    replies = {k: dechunked(bytes.fromhex(v)) for k, v in result["replies"].items()}
    assert len(hostile.seen) == len(plan) and all(KEY in json.dumps(g.headers) for g in hostile.seen)
    assert_clean(b"".join(replies.values()), KEY, OTHER)
    token = result["token"].encode()
    assert b"you sent Bearer " + token in replies["old"] and b"Location: http://127.0.0.1:" in replies["redirect"]
    assert replies["stream"].count(token) == 1 and b"Incorrect API key provided: Bearer " + token in replies["auth"]
    (manifest,) = runs(ccs, env)
    records = records_of(manifest)
    assert_clean(everything_on_disk(), KEY, OTHER, result["token"])
    (fail,) = [x for x in records if x["path"] == "/fail"]
    assert fail["error"].startswith("x" * 480) and fail["outcome"] == "upstream-error"
    assert any(s["path"] == "/fail" for s in manifest["requests"]["error_samples"])
    (model,) = [x for x in records if x["path"] == "/echo-model"]
    assert model["model_requested"] == model["model_served"] and result["token"] not in json.dumps(manifest)


def traced(wrapper_dir: Path, clients_bin: Path, name: str, trace: Path) -> None:
    """``name`` on PATH as a wrapper running the real client under strace, recording the data of every
    read the client's processes make, and the opens and closes that tell a file from a socket."""
    wrapper_dir.mkdir(exist_ok=True)
    w = wrapper_dir / name
    w.write_text(f'#!/bin/sh\nexec strace -f -qq -s 4194304 -xx '
                 f'-e trace=read,recvfrom,recvmsg,readv,open,openat,close '
                 f'-o {trace} {clients_bin / name} "$@"\n')
    w.chmod(0o755)


_CALL = re.compile(r"(\d+)\s+(read|recvfrom|recvmsg|readv|open|openat|close)\((.*)\)\s+=\s+(-?\d+)")
_UNFINISHED = re.compile(r"(\d+)\s+(\w+)\((.*)<unfinished \.\.\.>")
_RESUMED = re.compile(r"(\d+)\s+<\.\.\. (\w+) resumed>(.*)\)\s+=\s+(-?\d+)")


def read_data(trace: Path) -> bytes:
    """Every byte the traced processes read from anything but a file they opened (sockets, pipes),
    per process and descriptor in order, joined. Files are left out: a client's own binary, libraries
    and configs are not what a provider sent, and strace's split calls (unfinished/resumed) are joined."""
    streams: dict[tuple[str, str], bytearray] = {}
    files: set[str] = set()  # descriptors that open/openat returned, until they are closed
    pending: dict[str, tuple[str, str]] = {}  # pid → (call, arguments so far) of an unfinished call
    for line in trace.read_text(errors="replace").splitlines():
        if m := _UNFINISHED.match(line):
            pending[m.group(1)] = (m.group(2), m.group(3))
            continue
        if m := _RESUMED.match(line):
            call, head = pending.pop(m.group(1), (m.group(2), ""))
            pid, args, ret = m.group(1), head + m.group(3), m.group(4)
        elif m := _CALL.match(line):
            pid, call, args, ret = m.group(1), m.group(2), m.group(3), m.group(4)
        else:
            continue
        fd = args.split(",", 1)[0].strip()
        if call in ("open", "openat"):
            if int(ret) >= 0:
                files.add(ret)
            continue
        if call == "close":
            files.discard(fd)
            continue
        if fd in files:
            continue
        data = b"".join(bytes.fromhex(h.replace("\\x", "")) for h in re.findall(r'"((?:\\x[0-9a-f]{2})*)"', args))
        streams.setdefault((pid, fd), bytearray()).extend(data)
    return b"\n".join(bytes(v) for v in streams.values())


def need_strace() -> None:
    if not shutil.which("strace"):
        pytest.fail("strace is needed (scripts/install-test-deps.sh installs it)")


def test_claude_code_gets_no_secret_back(ccs, env, client_bin, tmp_path):
    """A gateway that quotes the credential back in its status text, a header and the streamed text."""
    clients_bin = client_bin("claude")
    from stub_server import anthropic_stream

    need_strace()
    hostile = HostileStub()
    try:
        def echo(got: Got) -> list[bytes]:
            auth = got.headers.get("authorization") or got.headers.get("x-api-key", "")
            events = anthropic_stream("claude-pinned", f"you sent {auth} with {OTHER}").decode()
            return response(f"200 OK {auth}", {"Content-Type": "text/event-stream", "X-Echo-Auth": auth},
                            pieces=pieces_of(events, events.index(KEY) + 7, events.index(OTHER) + 4))
        hostile.answers["/v1/messages"] = echo
        write_profile(hostile.url, tools="[claude]\nmodel = \"claude-pinned\"\n[claude.env]\n"
                                         "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = \"1\"\n")
        trace = tmp_path / "claude.trace"
        traced(tmp_path / "wrap", clients_bin, "claude", trace)
        run_env = {**env, "PATH": f"{tmp_path / 'wrap'}:{clients_bin}:{env['PATH']}"}
        r = ccs("launch", "p", "claude", "--record", "--", "-p", "say hi", "--output-format", "json", env=run_env,
                timeout=180)
        assert r.returncode == 0, r.stderr
        assert all(KEY in json.dumps(g.headers) for g in hostile.seen)
        result = json.loads(r.stdout)["result"]
        assert result.startswith("you sent ") and "ccs-bridge-" in result and "gw7…Wq3N" in result
        data = read_data(trace)
        assert b"you sent " in data  # the answers were read, and are in the trace
        assert_clean(data + r.stdout.encode() + r.stderr.encode(), KEY, OTHER)
        assert_clean(everything_on_disk(), KEY, OTHER)
    finally:
        hostile.close()


CODEX_PID = "hostile"


def codex_profile(url: str, wire_api: str) -> None:
    write_profile(url, tools=f'[codex]\nmodel = "m"\nprovider_id = "{CODEX_PID}"\nwire_api = "{wire_api}"\n')


def codex_exec(ccs, env, cwd: Path, *extra: str, prompt: str = "say hi", timeout: float = 180):
    return ccs("launch", "p", "codex", "--record", "--", "exec", "--skip-git-repo-check", "-c",
               "analytics.enabled=false", "-c", f"model_providers.{CODEX_PID}.request_max_retries=0",
               "-c", f"model_providers.{CODEX_PID}.stream_max_retries=0", *extra, prompt, env=env, cwd=cwd,
               timeout=timeout)


@pytest.mark.parametrize("wire_api", ["responses", "chat"])
def test_codex_gets_no_secret_back(ccs, env, client_bin, tmp_path, wire_api):
    """Pass-through (Responses) and translated (Chat Completions): an upstream error that quotes the
    credential, in a 400 body and inside the stream."""
    clients_bin = client_bin("codex")
    need_strace()
    hostile = HostileStub()
    try:
        def in_stream(got: Got) -> list[bytes]:
            auth = got.headers["authorization"]
            if wire_api == "chat":
                event = "data: " + json.dumps({"error": {"message": f"key {auth} revoked ({OTHER})"}}) + "\n\n"
            else:
                event = "event: response.failed\ndata: " + json.dumps({"type": "response.failed", "response": {
                    "id": "r", "status": "failed",
                    "error": {"code": "invalid_api_key", "message": f"key {auth} revoked ({OTHER})"}}}) + "\n\n"
            return response(f"200 OK {auth}", {"Content-Type": "text/event-stream", "X-Echo-Auth": auth},
                            pieces=pieces_of(event, event.index(KEY) + 13, event.index(OTHER) + 5))
        hostile.answers["/chat/completions" if wire_api == "chat" else "/responses"] = in_stream
        codex_profile(hostile.url + "/v1", wire_api)
        trace = tmp_path / "codex.trace"
        traced(tmp_path / "wrap", clients_bin, "codex", trace)
        run_env = {**env, "PATH": f"{tmp_path / 'wrap'}:{clients_bin}:{env['PATH']}"}
        r = codex_exec(ccs, run_env, tmp_path)
        # launch passes on the child's status: Codex's for a failed turn
        assert r.returncode == 1 and hostile.seen, r.stderr[-2000:]
        assert all(KEY in g.headers["authorization"] for g in hostile.seen)
        data = read_data(trace)
        assert b"revoked" in data
        assert_clean(data + r.stdout.encode() + r.stderr.encode(), KEY, OTHER)
        assert_clean(everything_on_disk(), KEY, OTHER)
        records = records_of(runs(ccs, env)[0])
        assert records and all(x["outcome"] == "upstream-error" and "revoked" in x["error"] for x in records)
    finally:
        hostile.close()


# --- records that say what the child got -------------------------------------------------------------


def test_codex_turns_are_ok_though_codex_hangs_up_at_once(ccs, env, client_bin, hostile, tmp_path):
    """Codex closes its connection as soon as ``response.completed`` arrives, while this provider (like
    many) still holds the stream open a moment before ending it; each turn is still ok."""
    clients_bin = client_bin("codex")
    from stub_server import responses_stream

    events = [e + b"\n\n" for e in responses_stream("stub reply").split(b"\n\n") if e]
    hostile.pause = 0.4
    hostile.answers["/responses"] = lambda got: response("200 OK", {"Content-Type": "text/event-stream"},
                                                         pieces=[*events, b"", b""])
    codex_profile(hostile.url + "/v1", "responses")
    run_env = {**env, "PATH": f"{clients_bin}:{env['PATH']}"}
    for _ in range(3):
        r = codex_exec(ccs, run_env, tmp_path)
        assert r.returncode == 0, r.stderr
        assert "stub reply" in r.stdout
    manifests = runs(ccs, env)
    assert len(manifests) == 3
    for manifest in manifests:
        records = records_of(manifest)
        assert records and all((x["status"], x["outcome"]) == (200, "ok") for x in records), records
        assert manifest["requests"]["errors"] == 0 and manifest["requests"]["by_outcome"] == {"ok": len(records)}


@pytest.mark.parametrize(("kind", "says"), [
    ("empty", "with an empty body"),
    ("json-as-sse", "without one SSE data line"),
])
def test_a_failed_translated_codex_turn_is_recorded_as_failed(ccs, env, client_bin, hostile, tmp_path, kind, says):
    clients_bin = client_bin("codex")
    whole = json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                                     "finish_reason": "stop"}]}).encode()
    answer = {"empty": response("200 OK", {"Content-Type": "application/json"}, b""),
              "json-as-sse": response("200 OK", {"Content-Type": "text/event-stream"}, whole)}[kind]
    hostile.answers["/chat/completions"] = lambda got: answer
    codex_profile(hostile.url + "/v1", "chat")
    r = codex_exec(ccs, {**env, "PATH": f"{clients_bin}:{env['PATH']}"}, tmp_path)
    assert r.returncode == 1, r.stderr[-2000:]  # launch passes on the child's status: Codex's for a failed turn
    (manifest,) = runs(ccs, env)
    records = records_of(manifest)
    assert records and len(records) == len(hostile.seen)
    for x in records:
        assert (x["status"], x["upstream_status"], x["outcome"]) == (200, 200, "upstream-error")
        assert "without an answer" in x["error"] and says in x["error"], x["error"]
    assert manifest["requests"]["errors"] == len(records) and "ok" not in manifest["requests"]["by_outcome"]


def test_sigterm_to_ccs_mid_request_leaves_a_record(ccs, env, client_bin, hostile, tmp_path):
    clients_bin = client_bin("codex")
    hostile.answers["/responses"] = lambda got: [b"<hang>"]
    codex_profile(hostile.url + "/v1", "responses")
    full = {**env, "PATH": f"{clients_bin}:{env['PATH']}", "CCS_HOME": os.environ["CCS_HOME"]}
    proc = subprocess.Popen([sys.executable, "-m", "ccswitch_tui", "launch", "p", "codex", "--record", "--", "exec",
                             "--skip-git-repo-check", "-c", "analytics.enabled=false", "say hi"],
                            env=full, cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not hostile.seen and time.monotonic() < deadline:
            time.sleep(0.05)
        assert hostile.seen, "codex never sent its request"
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    (manifest,) = runs(ccs, env)
    records = records_of(manifest)
    assert len(records) == len(hostile.seen) >= 1
    assert {x["outcome"] for x in records} <= {"client-disconnected", "bridge-stopped"}, records
    assert sum(manifest["requests"]["by_outcome"].values()) == len(records)


def test_a_child_that_gives_up_leaves_a_record(ccs, env, hostile, tmp_path):
    hostile.answers["/chat/completions"] = lambda got: [b"<hang>"]
    write_profile(hostile.url + "/v1")
    program = tmp_path / "give_up.py"
    program.write_text(textwrap.dedent('''
        import os, time, urllib.request
        req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=b'{"model":"m"}',
                                     headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
        try:
            urllib.request.urlopen(req, timeout=1)
        except Exception as exc:
            print("gave up:", type(exc).__name__)
    '''))
    r = ccs("run", "--record", "p", "--", sys.executable, str(program), env=env, timeout=60)
    assert r.returncode == 0 and "gave up" in r.stdout, r.stderr
    (manifest,) = runs(ccs, env)
    (record,) = records_of(manifest)
    assert record["outcome"] == "client-disconnected" and record["status"] is None
    assert manifest["requests"]["by_outcome"] == {"client-disconnected": 1}


# --- a recorded child whose ccs dies ---------------------------------------------------------------

# One keep-alive connection that resets when it closes (SO_LINGER 0): no TIME_WAIT is left on the
# bridge's port, which would keep the other user from binding it for a minute and prove nothing.
LOOPING_CHILD = textwrap.dedent('''
    import http.client, os, socket, struct, sys, time
    from urllib.parse import urlsplit
    base = urlsplit(os.environ["OPENAI_BASE_URL"])
    with open(sys.argv[1], "w") as f:
        f.write(str(os.getpid()))
    conn = None
    while True:
        try:
            if conn is None:
                conn = http.client.HTTPConnection(base.hostname, base.port, timeout=1)
                conn.connect()
                conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.request("POST", base.path + "/chat/completions",
                         body=b'{"model":"m","messages":[{"role":"user","content":"my prompt"}]}',
                         headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
                                  "Content-Type": "application/json"})
            body = conn.getresponse().read()
            with open(sys.argv[2], "ab") as f:
                f.write(body + b"\\n")
        except Exception:
            if conn is not None:
                conn.close()
            conn = None
        time.sleep(0.05)
''')

# Run as the other user: take the port the moment it is free, and answer whatever comes.
LISTENER = textwrap.dedent('''
    import json, socket, sys, time
    port = int(sys.argv[-1])
    got, s = [], None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.listen(16)
            break
        except OSError:
            s.close()
            s = None
            time.sleep(0.01)
    if s is not None:
        s.settimeout(0.2)
        end = time.monotonic() + 3
        while time.monotonic() < end:
            try:
                c, _ = s.accept()
            except socket.timeout:
                continue
            c.settimeout(1)
            try:
                got.append(c.recv(65536).decode("latin-1"))
                c.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Length: 15\\r\\nConnection: close\\r\\n\\r\\n{"forged":true}')
            except OSError:
                pass
            c.close()
    print(json.dumps({"bound": s is not None, "got": got}))
''')


def test_a_recorded_child_does_not_outlive_a_killed_ccs(ccs, env, tmp_path):
    import psutil

    if os.geteuid() != 0 or not shutil.which("setpriv") or not os.path.exists("/usr/bin/python3"):
        skip_or_fail("needs root, setpriv and /usr/bin/python3 to listen as the user nobody")
    provider = ProviderStub()
    try:
        write_profile(provider.url + "/v1")
        program = tmp_path / "loop.py"
        program.write_text(LOOPING_CHILD)
        pid_file, answers = tmp_path / "child.pid", tmp_path / "answers"
        full = {**env, "CCS_HOME": os.environ["CCS_HOME"]}
        proc = subprocess.Popen([sys.executable, "-m", "ccswitch_tui", "run", "--record", "p", "--", sys.executable,
                                 str(program), str(pid_file), str(answers)], env=full, stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not (answers.exists() and answers.read_bytes().count(b"\n") >= 2):
                time.sleep(0.05)
            assert answers.exists(), "the child never got an answer through the bridge"
            (manifest,) = runs(ccs, env)
            port = int(manifest["recording"]["bridge"].rsplit(":", 1)[1])
            child = psutil.Process(int(pid_file.read_text()))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
            r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                                "/usr/bin/python3", "-c", LISTENER, str(port)],
                               capture_output=True, text=True, timeout=30, cwd="/")
            assert r.returncode == 0, r.stderr
            heard = json.loads(r.stdout)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            alive = pid_file.exists() and psutil.pid_exists(int(pid_file.read_text()))
            if alive and psutil.Process(int(pid_file.read_text())).status() != psutil.STATUS_ZOMBIE:
                os.kill(int(pid_file.read_text()), signal.SIGKILL)  # the test failed: leave nothing running
        assert heard["got"] == [], heard  # nothing of the child's reached the other user
        try:
            assert child.status() == psutil.STATUS_ZOMBIE  # ended; reaped by whoever adopted it
        except psutil.NoSuchProcess:
            pass
        assert b"forged" not in answers.read_bytes()
        assert runs(ccs, env)[0]["state"] == "lost"
    finally:
        provider.close()

"""`ccs check` against a real HTTP server on loopback answering every status, a host under
.invalid, a port with nothing listening, a server that accepts and never answers, and TLS spoken
to a plain-HTTP port. No key ever appears in the output, even when a server echoes it."""

from __future__ import annotations

import json
import os
import pty
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ccswitch_tui.diagnose.check import check_profiles, plan_probes, proxy_for
from ccswitch_tui.keys.keyring import KeyStore
from ccswitch_tui.profiles.store import Store

KEY = "sk-check-SECRET-0123456789abcdef"


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args):  # quiet
        pass

    def _reply(self, status: int, body: object = None, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body if body is not None else {"ok": status < 300}).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        self.server.seen.append({"method": self.command, "path": self.path, "headers": dict(self.headers),
                                 "body": body})
        path = self.path.split("?")[0]
        if path.startswith("http://"):  # a request sent to us as a proxy
            self._reply(200, {"proxied": True})
            return
        parts = path.split("/")  # "", "s", scenario, ...rest
        scenario = parts[2] if len(parts) > 2 else ""
        rest = "/".join(parts[3:])
        last = parts[-1]
        cred = self.headers.get("authorization") or self.headers.get("x-api-key") or ""
        if scenario == "ok":
            if last == "models":
                self._reply(200, {"data": [{"id": "gpt-test"}, {"id": "run-model"}]})
            else:
                self._reply(200, {"id": "x", "content": [], "usage": {"input_tokens": 1, "output_tokens": 1}})
        elif scenario == "together":  # answered once `expect_together` requests wait at once (or 20 s on)
            srv = self.server
            with srv.together:
                srv.waiting += 1
                srv.most_waiting = max(srv.most_waiting, srv.waiting)
                srv.together.notify_all()
                srv.together.wait_for(lambda: srv.most_waiting >= srv.expect_together, timeout=20)
                srv.waiting -= 1
            self._reply(200)
        elif scenario == "auth":
            self._reply(401, {"error": {"type": "authentication_error", "message": f"invalid key: {cred}"}})
        elif scenario == "forbidden":
            self._reply(403, {"error": {"message": "forbidden"}})
        elif scenario == "nf":
            self._reply(404, {"error": {"type": "not_found_error", "message": "Not Found"}})
        elif scenario == "model":
            self._reply(404, {"error": {"message": "The model `nope-model` does not exist",
                                        "type": "invalid_request_error", "code": "model_not_found"}})
        elif scenario == "amodel":
            self._reply(404, {"type": "error", "error": {"type": "not_found_error", "message": "model: nope-model"}})
        elif scenario == "rate":
            self._reply(429, {"error": {"message": "slow down"}})
        elif scenario == "server":
            self._reply(503, {"error": {"message": "overloaded"}})
        elif scenario == "badreq":
            self._reply(400, {"error": {"message": "max_tokens: must be positive"}})
        elif scenario == "redirect":
            self._reply(301, {}, {"location": "https://elsewhere.invalid/api"})
        elif scenario == "html":
            page = b"<html><head><title>x</title><style>p{}</style></head><body><h1>502 Bad Gateway</h1></body></html>"
            self.send_response(502)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
        elif scenario == "needv1":
            self._reply(200 if rest.startswith("v1/") else 404, {"error": {"message": "no route"}})
        elif scenario == "chatonly":
            if last == "models":
                self._reply(200, {"data": [{"id": "gpt-test"}]})
            elif rest.endswith("chat/completions"):
                self._reply(200, {"id": "c", "object": "chat.completion", "choices": []})
            else:
                self._reply(404, {"error": {"message": "no route"}})
        else:
            self._reply(418)

    do_GET = do_POST = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.seen: list[dict] = []
        self.together = threading.Condition()  # the "together" scenario: requests in flight at once
        self.waiting = self.most_waiting = self.expect_together = 0
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.shutdown()
    s.server_close()


@pytest.fixture
def silent_port():
    """A port that accepts connections (the kernel's backlog) and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    yield sock.getsockname()[1]
    sock.close()


@pytest.fixture
def dead_port():
    """A port with nothing listening."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.fixture
def make(ccs_home, key_id):
    """Write profiles sharing one key in the real keyring; returns a loader."""
    store = Store(ccs_home)
    keys = KeyStore(ccs_home, os.environ)
    keys.set(key_id, KEY)

    def profile(name: str, base: str, *, claude: str | None = "", codex: str | None = "", run: str = "",
                extra: str = "", auth: str = "token", run_model: str | None = "run-model"):
        text = f'schema = 1\n[provider]\nname = "T"\nbase_url = "{base}"\nkey = "{key_id}"\n'
        if claude is not None:
            text += f'[claude]\nauth = "{auth}"\nmodel = "claude-test"\n'
            text += f'base_url = "{claude}"\n' if claude else ""
        if codex is not None:
            text += '[codex]\nmodel = "gpt-test"\n' + (f'base_url = "{codex}"\n' if codex else "")
        if run:
            text += f'[run]\nexport = [{run}]\n' + (f'model = "{run_model}"\n' if run_model else "")
        text += extra
        store.save_text(name, text, create=True)
        return store.load(name)

    profile.keys = keys  # type: ignore[attr-defined]
    return profile


def one(results, tool):
    (r,) = [r for r in results if r.tool == tool]
    return r


# --- outcomes --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("scenario", "claude_outcome", "codex_outcome", "status"), [
    ("ok", "ok", "ok", 200),
    ("auth", "auth-failed", "auth-failed", 401),
    ("forbidden", "auth-failed", "auth-failed", 403),
    ("nf", "not-found", "not-found", 404),
    ("model", "model-unknown", "model-unknown", 404),
    ("amodel", "model-unknown", "model-unknown", 404),
    ("rate", "rate-limited", "rate-limited", 429),
    ("server", "server-error", "server-error", 503),
    ("badreq", "bad-request", "bad-request", 400),
    ("redirect", "redirected", "redirected", 301),
])
def test_each_status_is_classified(server, make, scenario, claude_outcome, codex_outcome, status):
    p = make("p", f"{server.url}/s/{scenario}", codex=f"{server.url}/s/{scenario}/v1")
    results = check_profiles([p], make.keys, timeout=5)
    c, x = one(results, "claude"), one(results, "codex")
    assert (c.outcome, c.http_status) == (claude_outcome, status)
    assert (x.outcome, x.http_status) == (codex_outcome, status)
    assert (c.ok, x.ok) == (status == 200, status == 200)
    if status == 200:
        assert c.latency_ms is not None and c.latency_ms >= 0 and not c.detail
    else:
        assert c.hint
    for r in results:
        assert KEY not in json.dumps(r.to_dict()) and KEY not in r.finding().message


def test_probe_requests_cost_a_handful_of_tokens(server, make):
    token = make("tok", f"{server.url}/s/ok", codex=f"{server.url}/s/ok/v1")
    apikey = make("api", f"{server.url}/s/ok", codex=None, auth="api-key")
    results = check_profiles([token, apikey], make.keys, timeout=5)
    assert [r.outcome for r in results] == ["ok", "ok", "ok"]
    msgs = [s for s in server.seen if s["path"].endswith("/v1/messages")]
    assert len(msgs) == 2
    bearer = next(s for s in msgs if "authorization" in {k.lower() for k in s["headers"]})
    assert bearer["path"] == "/s/ok/v1/messages" and bearer["method"] == "POST"
    assert bearer["body"] == {"model": "claude-test", "max_tokens": 1,
                              "messages": [{"role": "user", "content": "ping"}]}
    hdrs = {k.lower(): v for k, v in bearer["headers"].items()}
    assert hdrs["authorization"] == f"Bearer {KEY}" and hdrs["anthropic-version"] == "2023-06-01"
    xkey = next(s for s in msgs if s is not bearer)
    hdrs = {k.lower(): v for k, v in xkey["headers"].items()}
    assert hdrs["x-api-key"] == KEY and "authorization" not in hdrs
    (resp,) = [s for s in server.seen if s["path"].endswith("/responses")]
    assert resp["path"] == "/s/ok/v1/responses" and resp["body"]["model"] == "gpt-test"
    assert resp["body"]["max_output_tokens"] == 16
    assert {k.lower(): v for k, v in resp["headers"].items()}["authorization"] == f"Bearer {KEY}"


def test_run_side_uses_the_models_list(server, make):
    p = make("r", f"{server.url}/s/ok/v1", claude=None, codex=None, run='"openai", "anthropic"')
    results = check_profiles([p], make.keys, tool="run", timeout=5)
    # the Anthropic SDK appends /v1/messages to the provider's …/v1: answered, but not passed as ok
    assert [(r.api, r.method, r.outcome) for r in results] == [("openai-models", "GET", "ok"),
                                                                 ("anthropic", "POST", "path-doubled")]
    assert [s["method"] for s in server.seen if s["path"].endswith("/models")] == ["GET"]
    bad = make("r2", f"{server.url}/s/ok/v1", claude=None, codex=None, run='"openai"', run_model="not-listed")
    (r,) = check_profiles([bad], make.keys, tool="run", timeout=5)
    assert r.outcome == "model-unknown" and "not-listed" in r.detail


def test_run_side_falls_back_to_responses_without_a_models_list(server, make):
    p = make("r", f"{server.url}/s/needv1", claude=None, codex=None, run='"openai"')
    (r,) = check_profiles([p], make.keys, timeout=5)
    # /models is not served there, so /responses is probed; it is not served either, without /v1
    assert r.api == "openai" and r.outcome == "not-found" and "/models is not served" in r.detail


def test_same_request_is_sent_once(server, make):
    # [run].model is Claude's model: the run side's Messages probe is the claude side's request
    p = make("d", f"{server.url}/s/ok", codex=None, run='"anthropic"', run_model="claude-test")
    results = check_profiles([p], make.keys, timeout=5)
    assert [r.tool for r in results] == ["claude", "run"] and all(r.ok for r in results)
    assert "same request as the claude probe" in results[1].detail
    assert len([s for s in server.seen if s["path"].endswith("/messages")]) == 1


# --- not-found hints ------------------------------------------------------------------------------

def test_doubled_v1_hint(server, make):
    p = make("p", f"{server.url}/s/nf/v1", codex=None)
    (r,) = check_profiles([p], make.keys, timeout=5)
    assert r.url.endswith("/s/nf/v1/v1/messages") and r.outcome == "not-found"
    assert "/v1 twice" in r.hint and "remove the trailing /v1" in r.hint


def test_a_doubled_v1_that_answers_is_not_passed_as_ok(server, make, ccs):
    """`launch` warns about …/v1/v1/messages; `check` said `ok 200` for it, exit 0."""
    p = make("p", f"{server.url}/s/ok", claude=f"{server.url}/s/ok/v1", codex=None)
    (r,) = check_profiles([p], make.keys, timeout=5)
    assert r.url.endswith("/s/ok/v1/v1/messages") and r.http_status == 200
    assert r.outcome == "path-doubled" and not r.ok
    assert "/v1 twice" in r.hint and "remove the trailing /v1" in r.hint
    out = ccs("check", "p")
    assert out.returncode == 3 and "path-doubled" in out.stdout, out.stdout + out.stderr
    assert out.stdout.count("/v1 twice") == 1, out.stdout  # said once (the detail repeated the hint)


def test_html_error_page_and_doubled_v1_on_any_failure(server, make):
    p = make("p", f"{server.url}/s/html/v1", codex=f"{server.url}/s/html/v1")
    c, x = check_profiles([p], make.keys, timeout=5)
    assert (c.outcome, c.http_status, c.detail) == ("server-error", 502, "502 Bad Gateway")
    assert "/v1 twice" in c.hint and "/v1 twice" not in x.hint


def test_missing_v1_hint(server, make):
    p = make("p", f"{server.url}/s/needv1", claude=None)
    (r,) = check_profiles([p], make.keys, timeout=5)
    assert r.outcome == "not-found" and "no /v1" in r.hint and f"{server.url}/s/needv1/v1" in r.hint
    fixed = make("q", f"{server.url}/s/needv1/v1", claude=None)
    assert check_profiles([fixed], make.keys, timeout=5)[0].outcome == "ok"


def test_endpoint_without_responses_api(server, make):
    p = make("p", f"{server.url}/s/chatonly/v1", claude=None)
    (r,) = check_profiles([p], make.keys, timeout=5)
    assert r.outcome == "not-found" and "no Responses API" in r.hint and 'wire_api = "chat"' in r.hint


# --- network failures -----------------------------------------------------------------------------

def test_unreachable_hosts_and_ports(make, dead_port, server):
    invalid = make("inv", "http://ccs-check-probe.invalid/api", codex=None)
    refused = make("ref", f"http://127.0.0.1:{dead_port}/api", codex=None)
    tls = make("tls", server.url.replace("http://", "https://") + "/s/ok", codex=None)
    r_inv, r_ref, r_tls = check_profiles([invalid, refused, tls], make.keys, timeout=5)
    assert r_inv.outcome == "unreachable" and "DNS" in r_inv.detail and "ccs-check-probe.invalid" in r_inv.detail
    assert r_ref.outcome == "unreachable" and "refused" in r_ref.detail
    assert r_tls.outcome == "unreachable" and "TLS" in r_tls.detail
    assert all(r.http_status is None for r in (r_inv, r_ref, r_tls))


def test_silent_server_is_bounded_by_the_timeout(make, silent_port):
    p = make("hang", f"http://127.0.0.1:{silent_port}/api", codex=f"http://127.0.0.1:{silent_port}/v1")
    t0 = time.monotonic()
    results = check_profiles([p], make.keys, timeout=0.5)
    took = time.monotonic() - t0
    assert [r.outcome for r in results] == ["timeout", "timeout"]
    assert "no answer within 0.5 s" in results[0].detail
    assert took < 3, took  # both probes run at once, each bounded by the timeout


# --- proxies ----------------------------------------------------------------------------------------

def test_shell_proxy_is_ignored_profile_proxy_is_used(server, make, dead_port):
    shell = {"HTTP_PROXY": f"http://127.0.0.1:{dead_port}", "HTTPS_PROXY": f"http://127.0.0.1:{dead_port}",
             "ALL_PROXY": f"http://127.0.0.1:{dead_port}", "http_proxy": f"http://127.0.0.1:{dead_port}"}
    direct = make("direct", f"{server.url}/s/ok", codex=None)
    (r,) = check_profiles([direct], make.keys, timeout=5, environ=shell)
    assert r.ok and r.proxy is None
    proxy = _Server()
    try:
        via = make("via", "http://upstream.invalid/api", codex=None,
                   extra=f'[env]\nHTTP_PROXY = "{proxy.url}"\n')
        (r,) = check_profiles([via], make.keys, timeout=5, environ=shell)
        assert r.ok and r.proxy == proxy.url
        assert proxy.seen[0]["path"] == "http://upstream.invalid/api/v1/messages"
        inherited = make("inh", f"{server.url}/s/ok", codex=None, extra='[policy]\ninherit = ["HTTP_PROXY"]\n')
        assert plan_probes(inherited, "claude", {"HTTP_PROXY": proxy.url})[0].proxy == proxy.url
    finally:
        proxy.shutdown()
        proxy.server_close()
    assert proxy_for("http://127.0.0.1:9/x", {"HTTP_PROXY": "http://p:1", "NO_PROXY": "localhost,127.0.0.1"}) is None
    assert proxy_for("https://a.b.example/x", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": ".example"}) is None
    assert proxy_for("https://a.example/x", {"HTTP_PROXY": "http://p:1"}) is None
    assert proxy_for("https://a.example/x", {"ALL_PROXY": "http://p:2"}) == "http://p:2"


# --- keys and the command ---------------------------------------------------------------------------

def test_missing_key_sends_nothing(server, ccs_home):
    store = Store(ccs_home)
    store.save_text("nokey", f'schema = 1\n[provider]\nname = "T"\nbase_url = "{server.url}/s/ok"\n'
                             'key = "env:CCS_CHECK_NO_SUCH_VAR"\n[claude]\n', create=True)
    (r,) = check_profiles([store.load("nokey")], KeyStore(ccs_home, {}), timeout=5, environ={})
    assert r.outcome == "key-missing" and "CCS_CHECK_NO_SUCH_VAR" in r.detail and not server.seen


def test_command(server, make, ccs, dead_port, silent_port, tmp_path):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
           "HTTPS_PROXY": f"http://127.0.0.1:{dead_port}", "HTTP_PROXY": f"http://127.0.0.1:{dead_port}"}
    make("good", f"{server.url}/s/ok", codex=f"{server.url}/s/ok/v1")
    make("echo", f"{server.url}/s/auth", codex=f"{server.url}/s/auth/v1", auth="api-key")
    outputs = []
    r = ccs("check", "good", env=env)
    outputs += [r.stdout, r.stderr]
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PROFILE" in r.stdout and r.stdout.count(" ok ") == 2
    r = ccs("check", "good", "--tool", "codex", "--json", env=env)
    outputs += [r.stdout, r.stderr]
    data = json.loads(r.stdout)
    assert r.returncode == 0 and [x["tool"] for x in data["results"]] == ["codex"] and data["failed"] == 0
    assert set(data["results"][0]) == {"profile", "tool", "api", "method", "url", "model", "outcome", "ok",
                                       "http_status", "latency_ms", "detail", "hint", "proxy", "model_note"}
    for args in (["check", "echo"], ["check", "echo", "--json"], ["check", "--all"], ["check", "--all", "--json"]):
        r = ccs(*args, env=env)
        outputs += [r.stdout, r.stderr]
        assert r.returncode == 3, r.stdout + r.stderr
        assert "auth-failed" in r.stdout and r.stderr.startswith("ccs: error: ")
    data = json.loads(outputs[-2])
    assert data["failed"] == 2 and {x["profile"] for x in data["results"]} == {"good", "echo"}
    echoed = [x["detail"] for x in data["results"] if x["outcome"] == "auth-failed"]
    assert all("invalid key" in d and "sk-…cdef" in d for d in echoed)  # the echoed key, masked

    make("hang", f"http://127.0.0.1:{silent_port}/api", codex=None)
    t0 = time.monotonic()
    r = ccs("check", "hang", "--timeout", "0.5", env=env)
    outputs += [r.stdout, r.stderr]
    assert r.returncode == 3 and "timeout" in r.stdout and time.monotonic() - t0 < 10
    for args, msg in ((["check"], "give one PROFILE or --all"), (["check", "good", "--all"], "give one PROFILE"),
                      (["check", "nope"], "no profile named"), (["check", "good", "--tool", "run"], "no run side"),
                      (["check", "good", "--timeout", "0"], "--timeout")):
        r = ccs(*args, env=env)
        outputs += [r.stdout, r.stderr]
        assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
    for out in outputs:
        assert KEY not in out


def test_all_is_concurrent_and_shows_progress_on_a_terminal(server, make, ccs_home):
    for i in range(6):
        make(f"slow{i}", f"{server.url}/s/together", codex=None)
    server.expect_together = 6  # each answer waits until all six probes are in flight
    master, slave = pty.openpty()
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-m", "ccswitch_tui", "check", "--all"], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    out, _ = proc.communicate(timeout=60)
    progress = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        progress += chunk
    os.close(master)
    assert proc.returncode == 0, out
    assert out.count(" ok ") == 6
    assert b"checking 6/6" in progress
    assert server.most_waiting == 6  # probed at once: one at a time, each would have waited alone
    assert KEY.encode() not in progress and KEY not in out


def test_a_chat_profile_probes_chat_completions(server, make):
    """wire_api = "chat": the probe goes where ccs's bridge will send Codex's requests."""
    p = make("chat", f"{server.url}/s/chatonly/v1", claude=None, extra='wire_api = "chat"\n')
    (r,) = check_profiles([p], make.keys, timeout=5)
    assert (r.tool, r.api, r.url) == ("codex", "openai-chat", f"{server.url}/s/chatonly/v1/chat/completions")
    sent = server.seen[-1]
    assert sent["body"]["messages"] == [{"role": "user", "content": "ping"}] and sent["body"]["model"] == "gpt-test"
    assert {k.lower(): v for k, v in sent["headers"].items()}["authorization"] == f"Bearer {KEY}"
    q = make("q", f"{server.url}/s/needv1", claude=None, extra='wire_api = "chat"\n')
    (r,) = check_profiles([q], make.keys, timeout=5)
    assert r.outcome == "not-found" and f"{server.url}/s/needv1/v1/chat/completions" in r.hint
    fixed = make("f", f"{server.url}/s/needv1/v1", claude=None, extra='wire_api = "chat"\n')
    assert check_profiles([fixed], make.keys, timeout=5)[0].outcome == "ok"

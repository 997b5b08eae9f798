"""The bridge's own HTTP client (``bridge.wire``) against real TLS and a real proxy on 127.0.0.1:
an https upstream is verified against the CAs the system trusts (``SSL_CERT_FILE`` is how OpenSSL
is told which), through a bridge that loads while the child starts; the profile's HTTP proxy is
used with its credentials, as a CONNECT tunnel for https and with the whole URL for http, and
neither the proxy's password nor the key comes back to the child or into a record."""

from __future__ import annotations

import base64
import http.client
import http.server
import json
import shutil
import socket
import ssl
import subprocess
import threading
from pathlib import Path

import pytest
from conftest import skip_or_fail
from test_bridge import wait_records

from ccswitch_tui.bridge.loading import LoadingBridge
from ccswitch_tui.bridge.server import Bridge, BridgeConfig, Route

KEY = "sk-tls-bridge-0123456789abcdef"
PROXY_USER, PROXY_PASSWORD = "me", "pr@xy-pass-0123456789"
PROXY_URL = f"http://{PROXY_USER}:pr%40xy-pass-0123456789@127.0.0.1:{{port}}"


def _certificate(tmp: Path) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        skip_or_fail("openssl is needed to make the test's certificate")
    tmp.mkdir(parents=True, exist_ok=True)
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key


class _Upstream(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keeps its connections open between requests
    seen: list[str]

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["content-length"]))
        self.seen.append(self.headers["authorization"])
        body = json.dumps({"id": "c", "object": "chat.completion", "model": "served-m", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def upstream_factory():
    servers: list[http.server.ThreadingHTTPServer] = []

    def make(tls: tuple[Path, Path] | None) -> tuple[str, list[str]]:
        seen: list[str] = []
        handler = type("Handler", (_Upstream,), {"seen": seen})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*map(str, tls))
            server.socket = context.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}/v1", seen

    yield make
    for s in servers:
        s.shutdown()
        s.server_close()


class Proxy:
    """A real HTTP proxy: CONNECT tunnels and absolute-form requests, Basic credentials required
    (``refuse`` answers 407 to everything). ``seen`` holds each request line and its credentials."""

    def __init__(self, refuse: bool = False):
        self.refuse = refuse
        self.seen: list[tuple[str, str | None]] = []
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                more = conn.recv(4096)
                if not more:
                    return
                head += more
            head, _, rest = head.partition(b"\r\n\r\n")
            line, *fields = head.decode("latin-1").split("\r\n")
            auth = next((v.strip() for k, _, v in (f.partition(":") for f in fields)
                         if k.lower() == "proxy-authorization"), None)
            self.seen.append((line, auth))
            wanted = "Basic " + base64.b64encode(f"{PROXY_USER}:{PROXY_PASSWORD}".encode()).decode()
            if self.refuse or auth != wanted:
                conn.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
                return
            method, target, _ = line.split(" ")
            if method == "CONNECT":
                host, port = target.rsplit(":", 1)
                upstream = socket.create_connection((host, int(port)))
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:  # http://host:port/path: to the host, in origin form
                hostport, _, path = target.removeprefix("http://").partition("/")
                host, port = hostport.rsplit(":", 1)
                upstream = socket.create_connection((host, int(port)))
                kept = [f for f in fields if not f.lower().startswith("proxy-authorization")]
                upstream.sendall("\r\n".join([f"{method} /{path} HTTP/1.1", *kept]).encode("latin-1")
                                 + b"\r\n\r\n" + rest)
            with upstream:
                threading.Thread(target=self._pipe, args=(upstream, conn), daemon=True).start()
                self._pipe(conn, upstream)

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            try:
                b.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def close(self) -> None:
        self._sock.close()


def _ask(port: int, token: str) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/openai/chat/completions", body=json.dumps({"model": "m", "messages": []}),
                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    answer = conn.getresponse()
    status, body = answer.status, answer.read().decode()
    conn.close()
    return status, body


@pytest.fixture
def trusting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """The system trusts just ``ca`` (read by OpenSSL when the bridge builds its context)."""

    def trust(ca: Path) -> None:
        monkeypatch.setenv("SSL_CERT_FILE", str(ca))
        monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path / "no-such-dir"))

    return trust


def test_an_https_upstream_the_system_trusts_is_reached_through_a_loading_bridge(tmp_path, upstream_factory,
                                                                               trusting):
    tls = _certificate(tmp_path / "up")
    trusting(tls[0])
    url, seen = upstream_factory(tls)
    records = tmp_path / "r.jsonl"
    bridge = LoadingBridge(lambda: BridgeConfig(routes=(Route("openai", url),), key=KEY, records_path=records),
                           records)
    bridge.child_started()
    try:
        status, body = _ask(bridge.port, bridge.token)
    finally:
        bridge.stop()
    assert status == 200, body
    assert json.loads(body)["model"] == "served-m"
    assert seen == [f"Bearer {KEY}"]
    (record,) = bridge.records()
    assert record["outcome"] == "ok" and record["model_served"] == "served-m"


def test_an_https_upstream_the_system_does_not_trust_is_refused(tmp_path, upstream_factory, trusting):
    tls = _certificate(tmp_path / "up")
    other, _ = _certificate(tmp_path / "other")  # a CA the system trusts, which did not sign the upstream's
    trusting(other)
    url, seen = upstream_factory(tls)
    with Bridge(BridgeConfig(routes=(Route("openai", url),), key=KEY, records_path=tmp_path / "r.jsonl")) as b:
        status, body = _ask(b.port, b.token)
        (record,) = wait_records(b, 1)
    assert status == 502 and seen == []
    assert "certificate" in body.lower()
    assert record["outcome"] == "unreachable" and "certificate" in record["error"].lower()
    assert KEY not in json.dumps(record)


@pytest.mark.parametrize("tls", [True, False], ids=["https-connect-tunnel", "http-absolute-url"])
def test_the_profiles_proxy_carries_the_request_with_its_credentials(tmp_path, upstream_factory, trusting, tls):
    certificate = _certificate(tmp_path / "up") if tls else None
    if certificate:
        trusting(certificate[0])
    url, seen = upstream_factory(certificate)
    proxy = Proxy()
    route = Route("openai", url, proxy=PROXY_URL.format(port=proxy.port))
    try:
        with Bridge(BridgeConfig(routes=(route,), key=KEY, records_path=tmp_path / "r.jsonl",
                                 extra_secrets=(PROXY_PASSWORD,))) as b:
            answers = [_ask(b.port, b.token) for _ in range(2)]
            records = wait_records(b, 2)
    finally:
        proxy.close()
    assert [s for s, _ in answers] == [200, 200], answers
    assert seen == [f"Bearer {KEY}"] * 2  # the upstream got the key, through the proxy
    wanted = "Basic " + base64.b64encode(f"{PROXY_USER}:{PROXY_PASSWORD}".encode()).decode()
    hostport = url.split("//")[1].split("/")[0]
    if tls:  # one tunnel, kept open for the second request
        assert proxy.seen == [(f"CONNECT {hostport} HTTP/1.1", wanted)]
    else:
        assert [line for line, _ in proxy.seen][0] == f"POST http://{hostport}/v1/chat/completions HTTP/1.1"
        assert all(auth == wanted for _, auth in proxy.seen)
    text = json.dumps(records) + "".join(body for _, body in answers)
    assert PROXY_PASSWORD not in text and KEY not in text
    assert [r["outcome"] for r in records] == ["ok", "ok"]


def test_a_proxy_that_refuses_is_a_502_naming_it(tmp_path, upstream_factory, trusting):
    certificate = _certificate(tmp_path / "up")
    trusting(certificate[0])
    url, seen = upstream_factory(certificate)
    proxy = Proxy(refuse=True)
    try:
        with Bridge(BridgeConfig(routes=(Route("openai", url, proxy=PROXY_URL.format(port=proxy.port)),), key=KEY,
                                 records_path=tmp_path / "r.jsonl", extra_secrets=(PROXY_PASSWORD,))) as b:
            status, body = _ask(b.port, b.token)
            (record,) = wait_records(b, 1)
    finally:
        proxy.close()
    assert status == 502 and seen == []
    assert record["outcome"] == "unreachable" and "407" in record["error"] and "proxy" in record["error"].lower()
    assert PROXY_PASSWORD not in body + json.dumps(record)

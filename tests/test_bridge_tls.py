"""aiohttp's TLS contexts are built beside the bridge's loading, not in the way of it
(``bridge.deferred_tls``): an https upstream is still verified against the system's CAs, exactly
as aiohttp would, and the ssl module is left as it was. Each case runs in a fresh interpreter
(aiohttp not yet imported), against a real TLS server on 127.0.0.1 with a certificate made here;
``SSL_CERT_FILE`` is how OpenSSL is told which CAs the system trusts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import skip_or_fail

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-tls-bridge-0123456789abcdef"

SCRIPT = r'''
import http.client, http.server, json, ssl, sys, threading
from pathlib import Path
root, cert, key, records = sys.argv[1:5]
sys.path.insert(0, root)
seen = []

class Upstream(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        seen.append(self.headers["authorization"])
        body = json.dumps({"id": "c", "object": "chat.completion", "model": "served-m", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
tls.load_cert_chain(cert, key)
server.socket = tls.wrap_socket(server.socket, server_side=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
upstream = f"https://127.0.0.1:{server.server_address[1]}/v1"

original = ssl.create_default_context
from ccswitch_tui.bridge import deferred_tls
from ccswitch_tui.bridge.loading import LoadingBridge

def config():
    from ccswitch_tui.bridge.server import BridgeConfig, Route
    return BridgeConfig(routes=(Route("openai", upstream),), key=sys.argv[5], records_path=Path(records))

bridge = LoadingBridge(config, Path(records))
conn = http.client.HTTPConnection("127.0.0.1", bridge.port, timeout=30)
conn.request("POST", "/openai/chat/completions", body=json.dumps({"model": "m", "messages": []}),
             headers={"Authorization": f"Bearer {bridge.token}", "Content-Type": "application/json"})
answer = conn.getresponse()
status, body = answer.status, answer.read().decode()
deferred_tls.wait()
import aiohttp.connector as connector
bridge.stop()
print(json.dumps({
    "status": status, "body": body, "upstream_saw": seen,
    "restored": ssl.create_default_context is original and "set_default_verify_paths" not in ssl.SSLContext.__dict__,
    "ca_loaded": connector._SSL_CONTEXT_VERIFIED.cert_store_stats()["x509_ca"],
    "verifies": connector._SSL_CONTEXT_VERIFIED.verify_mode == ssl.CERT_REQUIRED
    and connector._SSL_CONTEXT_VERIFIED.check_hostname,
    "records": [json.loads(line) for line in Path(records).read_text().splitlines()],
}))
'''


def _certificate(tmp: Path) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        skip_or_fail("openssl is needed to make the test's certificate")
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key


def _run(tmp: Path, cert: Path, key: Path, ca_file: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_DIR", "SSL_CERT_FILE")}
    env["SSL_CERT_FILE"] = str(ca_file)
    env["SSL_CERT_DIR"] = str(tmp / "no-such-dir")
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT), str(cert), str(key), str(tmp / "r.jsonl"), KEY],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_an_https_upstream_the_system_trusts_is_reached_through_a_loading_bridge(tmp_path):
    cert, key = _certificate(tmp_path)
    got = _run(tmp_path, cert, key, ca_file=cert)
    assert got["status"] == 200, got["body"]
    assert json.loads(got["body"])["model"] == "served-m"
    assert got["upstream_saw"] == [f"Bearer {KEY}"]
    assert got["restored"] and got["verifies"] and got["ca_loaded"] == 1
    (record,) = got["records"]
    assert record["outcome"] == "ok" and record["model_served"] == "served-m"


def test_an_https_upstream_the_system_does_not_trust_is_refused(tmp_path):
    cert, key = _certificate(tmp_path)
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    other, _ = _certificate(other_dir)  # a CA the system trusts, which did not sign the upstream's certificate
    got = _run(tmp_path, cert, key, ca_file=other)
    assert got["status"] == 502 and got["upstream_saw"] == []
    assert "certificate" in got["body"].lower()
    assert got["restored"] and got["verifies"] and got["ca_loaded"] == 1
    (record,) = got["records"]
    assert record["outcome"] == "unreachable" and KEY not in json.dumps(record)

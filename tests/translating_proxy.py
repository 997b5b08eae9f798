"""A minimal loopback server that drives ``bridge.translate.Exchange`` over plain sockets: Codex
speaks Responses to it, it speaks Chat Completions to an upstream. It exists to test the
translation with the real ``codex`` on its own; launches use the bridge."""

from __future__ import annotations

import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from ccswitch_tui.bridge.translate import ReasoningMemory
from ccswitch_tui.bridge.translate.exchange import Exchange


class TranslatingProxy:
    def __init__(self, upstream: str, provider: str = "stub"):
        self.upstream = urlsplit(upstream)
        self.memory = ReasoningMemory()
        self.exchanges: list[Exchange] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                x = Exchange.start(body, proxy.memory, provider=provider)
                proxy.exchanges.append(x)
                conn = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port, timeout=30)
                conn.request("POST", proxy.upstream.path.rstrip("/") + "/chat/completions", json.dumps(x.chat_body),
                             {"Content-Type": "application/json", "Authorization": self.headers.get("Authorization",
                                                                                                    "")})
                up = conn.getresponse()
                if up.status >= 400:
                    status, out = x.error(up.status, up.read())
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                if "text/event-stream" not in (up.getheader("Content-Type") or ""):
                    self.wfile.write(x.opening() + x.whole(up.read()))
                    return
                self.wfile.write(x.opening())
                while True:
                    piece = up.read1(65536)
                    if not piece:
                        break
                    self.wfile.write(x.feed(piece))
                    self.wfile.flush()
                self.wfile.write(x.end())
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

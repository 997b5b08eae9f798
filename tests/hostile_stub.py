"""A hostile loopback provider: it answers from raw bytes it writes itself, piece by piece, so a test
controls the status line, every header (a ``Location`` built from the query, reflected credentials),
HTTP/1.0 answers, content encodings, and where chunk boundaries fall (each piece is flushed and
followed by a short pause, so the bridge reads it as a chunk of its own).

``answers`` maps a path suffix to a function of the request returning the pieces to send; the
connection is closed after each answer. Every request is kept in ``seen``.
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit


@dataclass
class Got:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def query(self) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}


Answer = Callable[[Got], list[bytes]]


def response(status: str, headers: dict[str, str], body: bytes = b"", *, version: str = "HTTP/1.1",
             pieces: list[bytes] | None = None) -> list[bytes]:
    """A whole answer: the head, then ``pieces`` (chunked on HTTP/1.1 unless a length is given) or
    ``body`` in one piece."""
    head = f"{version} {status}\r\n"
    chunked = pieces is not None and version == "HTTP/1.1" and "Content-Length" not in headers
    if pieces is None and "Content-Length" not in headers and version == "HTTP/1.1":
        headers = {**headers, "Content-Length": str(len(body))}
    if chunked:
        headers = {**headers, "Transfer-Encoding": "chunked"}
    head += "".join(f"{k}: {v}\r\n" for k, v in {**headers, "Connection": "close"}.items()) + "\r\n"
    if pieces is None:
        return [head.encode() + body]
    if not chunked:
        return [head.encode(), *pieces]
    return [head.encode(), *(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in pieces), b"0\r\n\r\n"]


def pieces_of(text: str, *at: int) -> list[bytes]:
    """``text`` cut at the given offsets."""
    data = text.encode()
    cuts = [0, *at, len(data)]
    return [data[a:b] for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


@dataclass
class HostileStub:
    answers: dict[str, Answer] = field(default_factory=dict)
    seen: list[Got] = field(default_factory=list)
    pause: float = 0.03

    def __post_init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self._stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                more = conn.recv(65536)
                if not more:
                    return
                data += more
            head, _, body = data.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
            length = int(headers.get("content-length", "0") or 0)
            while len(body) < length:
                more = conn.recv(65536)
                if not more:
                    break
                body += more
            got = Got(method, path, headers, body)
            self.seen.append(got)
            bare = path.split("?")[0]
            answer = next((a for suffix, a in self.answers.items() if bare.endswith(suffix)), None)
            pieces = answer(got) if answer else response("404 Not Found", {"Content-Type": "application/json"},
                                                         b'{"error":{"message":"no such path"}}')
            for i, piece in enumerate(pieces):
                if i:
                    time.sleep(self.pause)
                if piece == b"":
                    continue
                if piece == b"<hang>":  # never answer more: the client has to give up
                    time.sleep(3600)
                conn.sendall(piece)
            conn.shutdown(socket.SHUT_WR)
            conn.settimeout(5)
            while conn.recv(4096):  # until the client has read the answer and hung up
                pass
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self._stop = True
        self.sock.close()


def echo_answers(stub: HostileStub, key: str, other: str) -> None:
    """Answers that echo what the request carried (its credential in ``Authorization`` and the query,
    ``other`` in ``X-Gateway-Auth``) in every place an answer has, the SSE stream cut inside both."""
    def redirect(got: Got) -> list[bytes]:  # a trailing-slash redirect built from the query it got
        key = got.query["key"]
        return response(f"301 Moved {key}", {"Location": f"{stub.url}/v1/models/?key={key}"}, b"")

    def elsewhere(got: Got) -> list[bytes]:
        return response("302 Found", {"Location": f"https://login.example/cb?key={got.query['key']}"}, b"")

    def unauthorized(got: Got) -> list[bytes]:
        auth = got.headers["authorization"]
        body = json.dumps({"error": {"message": f"Incorrect API key provided: {auth}. Gateway: "
                                                f"{got.headers.get('x-gateway-auth')}", "type": "invalid_api_key"}})
        return response(f"401 Unauthorized {auth}", {"Content-Type": "application/json", "X-Echo-Auth": auth,
                                                     f"X-{key}": "name", "WWW-Authenticate": f'Bearer realm="{auth}"'},
                        pieces=pieces_of(body, 40, 71, 75, 90))

    def old(got: Got) -> list[bytes]:  # HTTP/1.0, no length: the body ends with the connection
        auth = got.headers["authorization"]
        return response("200 OK", {"Content-Type": "text/plain", "X-Echo-Auth": auth}, version="HTTP/1.0",
                        pieces=pieces_of(f"you sent {auth} and {got.headers.get('x-gateway-auth')}", 15, 33, 60))

    def stream(got: Got) -> list[bytes]:
        auth = got.headers["authorization"]
        events = "".join(f"data: {json.dumps({'choices': [{'index': 0, 'delta': {'content': t}}], 'model': 'm'})}\n\n"
                         for t in (f"echo {auth}", f"and {got.headers.get('x-gateway-auth')}", "done"))
        events += "data: [DONE]\n\n"
        at = [events.index(key) + k for k in (1, 16, 31)] + [events.index(other) + 3]
        return response("200 OK", {"Content-Type": "text/event-stream"}, pieces=pieces_of(events, *at))

    def gzipped(got: Got) -> list[bytes]:
        body = gzip.compress(json.dumps({"echo": got.headers["authorization"]}).encode())
        return response("200 OK", {"Content-Type": "application/json", "Content-Encoding": "gzip"}, body)

    def unknown(got: Got) -> list[bytes]:
        return response("200 OK", {"Content-Type": "application/json", "Content-Encoding": "x-secret"},
                        got.headers["authorization"].encode()[::-1])

    stub.answers.update({"/redirect": redirect, "/elsewhere": elsewhere, "/auth": unauthorized, "/old": old,
                         "/chat/completions": stream, "/gzip": gzipped, "/unknown": unknown})

"""``keys/dbus_wire.py``: what it writes reads back the same, the real session bus answers it, and
what a broken or hostile peer sends is refused with ``DBusError`` (never a hang, never another
exception), so the Secret Service lookup falls back to the keyring library."""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from pathlib import Path

import pytest

from ccswitch_tui.keys import dbus_wire, secret_service
from ccswitch_tui.keys.dbus_wire import DBusError, _Writer, parse, split_signature


def roundtrip(signature: str, body: tuple[object, ...]) -> tuple[object, ...]:
    data = dbus_wire.method_call(7, "org.example", "/org/example", "org.example.I", "M", signature, body)
    return parse(data).body


@pytest.mark.parametrize(("signature", "body"), [
    ("", ()),
    ("s", ("plain ünïcode",)),
    ("sv", ("plain", ("s", ""))),
    ("a{ss}", ({"service": "ccswitch", "username": "k"},)),
    ("aoo", (["/org/a", "/org/b"], "/org/session/1")),
    ("a{o(oayays)}", ({"/org/i": ("/org/s", [], list(b"sk-\x00\xff"), "text/plain")},)),
    ("ybnqiuxtd", (255, True, -2, 3, -4, 5, -6, 7, 0.5)),
    ("a(yv)", ([(1, ("o", "/x")), (8, ("g", "a{sv}"))],)),
    ("av", ([("as", ["a", "b"]), ("u", 9)],)),
])
def test_what_is_written_reads_back(signature, body):
    assert roundtrip(signature, body) == body


def test_signatures_split_into_complete_types():
    assert split_signature("a{sv}oa(ii)s") == ["a{sv}", "o", "a(ii)", "s"]
    for bad in ("a", "(", "()", "a{s", "z", "(" * 40 + "i" + ")" * 40):
        with pytest.raises(DBusError):
            split_signature(bad)


def _message(signature: bytes, body: bytes, body_length: int | None = None) -> bytes:
    w = _Writer()
    w.buf += b"l" + bytes([2, 0, 1]) + struct.pack("<II", len(body) if body_length is None else body_length, 1)
    w.put("a(yv)", [(5, ("u", 1)), (8, ("g", signature.decode()))])
    w.pad(8)
    return bytes(w.buf) + body


@pytest.mark.parametrize(("signature", "body", "body_length"), [
    (b"s", struct.pack("<I", 1000) + b"abc\0", None),  # a string past the end
    (b"s", struct.pack("<I", 3) + b"abc", None),  # no NUL
    (b"s", struct.pack("<I", 2) + b"\xff\xfe\0", None),  # not UTF-8
    (b"ai", struct.pack("<I", 0x7FFFFFF0) + b"\0" * 8, None),  # an array far longer than its message
    (b"ai", struct.pack("<I", 6) + b"\0" * 8, None),  # items overrun the array's length
    (b"s", struct.pack("<I", 1) + b"a\0", 40),  # the header's body length is wrong
    (b"u", struct.pack("<II", 1, 2), None),  # a body longer than its signature
    (b"v", b"\x01z\0", None),  # a variant of an unknown type
    (b"v", (b"\x01v\0" * 40) + b"\x01u\0\0\0\0\0\x01\0\0\0", None),  # variants nested past the limit
])
def test_a_malformed_answer_is_refused(signature, body, body_length):
    with pytest.raises(DBusError):
        parse(_message(signature, body, body_length))


@pytest.mark.usefixtures("secret_service")  # a session bus with the Secret Service daemon on it
def test_the_real_session_bus_answers():
    conn = dbus_wire.Connection(os.environ["DBUS_SESSION_BUS_ADDRESS"], timeout=5)
    try:
        names = conn.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "ListNames")[0]
        assert "org.freedesktop.secrets" in names  # type: ignore[operator]
        with pytest.raises(DBusError, match="ServiceUnknown|NameHasNoOwner"):
            conn.call("org.example.nobody", "/", None, "Nothing")
    finally:
        conn.close()


class FakeBus:
    """A Unix socket that authenticates a client, then says ``then`` (bytes, or None for nothing)."""

    def __init__(self, tmp_path: Path, then: bytes | None) -> None:
        self.path = str(tmp_path / "bus")
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        self.server.listen(1)
        self.then = then
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.server.accept()
        with conn:
            got = b""
            while b"\r\n" not in got:
                got += conn.recv(4096)
            conn.sendall(b"OK 0123456789abcdef0123456789abcdef\r\n")
            if self.then is not None:
                conn.sendall(self.then)
            time.sleep(3)

    def close(self) -> None:
        self.server.close()


@pytest.mark.parametrize("then", [
    None,  # says nothing after the authentication: the lookup times out
    b"\x00" * 64,  # not a message
    b"l\x02\x00\x01" + struct.pack("<II", 0x7FFFFFFF, 1) + struct.pack("<I", 0),  # a message of 2 GiB
])
def test_a_hostile_bus_makes_the_lookup_unavailable_in_bounded_time(tmp_path, monkeypatch, then):
    bus = FakeBus(tmp_path, then)
    try:
        monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={bus.path}")
        started = time.monotonic()
        assert secret_service.lookup("ccswitch", "k", timeout=0.5) is secret_service.UNAVAILABLE
        assert time.monotonic() - started < 2.5  # the timeout holds even when the bus stays silent
    finally:
        bus.close()


def test_bus_addresses():
    assert dbus_wire._address("unix:path=/run/user/1000/bus") == "/run/user/1000/bus"
    assert dbus_wire._address("unix:abstract=/tmp/dbus-x,guid=1") == b"\0/tmp/dbus-x"
    assert dbus_wire._address("tcp:host=x,port=1;unix:path=/p%20q") == "/p q"
    with pytest.raises(DBusError):
        dbus_wire._address("tcp:host=localhost,port=1")

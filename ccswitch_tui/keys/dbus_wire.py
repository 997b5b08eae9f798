"""Just enough D-Bus for the Secret Service lookup on the launch path: a blocking connection to
the session bus, method calls, and their answers.

A launch reads one secret; the D-Bus library the ``keyring`` library uses (jeepney) cost a launch
more to import than the rest of the lookup. This speaks the wire format itself (the D-Bus
specification's "Message Protocol"): the EXTERNAL authentication over a Unix socket (a path or an
abstract name), ``Hello``, then messages whose bodies are marshalled from and to these types: the
basic ones (``y b n q i u x t d s o g``) and arrays, structs, dict entries and variants of them.
No file descriptors, no TCP, no signals handled: anything else raises ``DBusError`` or
``OSError``, and the caller falls back to the keyring library.

What comes back is bounded: a message longer than ``MAX_MESSAGE`` or deeper than ``MAX_DEPTH``, a
length or offset that runs past its message, a string that is not UTF-8 all raise ``DBusError``.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from collections.abc import Iterable, Mapping

MAX_MESSAGE = 4 << 20  # bytes: a secret and its item's attributes are far smaller
MAX_DEPTH = 32  # nested containers, as the specification's limit for arrays and structs
METHOD_CALL, METHOD_RETURN, ERROR, SIGNAL = 1, 2, 3, 4
_PATH, _INTERFACE, _MEMBER, _ERROR_NAME, _REPLY_SERIAL, _DESTINATION, _SENDER, _SIGNATURE = range(1, 9)
_FIXED = {"y": ("B", 1), "b": ("I", 4), "n": ("h", 2), "q": ("H", 2), "i": ("i", 4), "u": ("I", 4),
          "x": ("q", 8), "t": ("Q", 8), "d": ("d", 8), "h": ("I", 4)}
_ALIGN = {**{k: size for k, (_, size) in _FIXED.items()}, "s": 4, "o": 4, "g": 1, "v": 1, "a": 4, "(": 8, "{": 8}
_FIELD_TYPES = {_PATH: "o", _INTERFACE: "s", _MEMBER: "s", _ERROR_NAME: "s", _REPLY_SERIAL: "u",
                _DESTINATION: "s", _SENDER: "s", _SIGNATURE: "g"}


class DBusError(Exception):
    """An error answer, or a message ccs cannot read."""


def split_signature(signature: str) -> list[str]:
    """The complete types of a signature: "a{sv}os" → ["a{sv}", "o", "s"]."""
    out, i = [], 0
    while i < len(signature):
        end = _type_end(signature, i, 0)
        out.append(signature[i:end])
        i = end
    return out


def _type_end(sig: str, i: int, depth: int) -> int:
    if depth > MAX_DEPTH:
        raise DBusError("signature nested too deep")
    if i >= len(sig):
        raise DBusError(f"signature {sig!r} ends early")
    c = sig[i]
    if c == "a":
        return _type_end(sig, i + 1, depth + 1)
    if c in "({":
        close = ")" if c == "(" else "}"
        j = i + 1
        while j < len(sig) and sig[j] != close:
            j = _type_end(sig, j, depth + 1)
        if j >= len(sig) or j == i + 1:
            raise DBusError(f"signature {sig!r}: an empty or unclosed {c}")
        return j + 1
    if c in _ALIGN:
        return i + 1
    raise DBusError(f"signature {sig!r}: unknown type {c!r}")


# --- writing ---------------------------------------------------------------------------------------

class _Writer:
    def __init__(self) -> None:
        self.buf = bytearray()

    def pad(self, n: int) -> None:
        self.buf += b"\0" * (-len(self.buf) % n)

    def put(self, t: str, value: object, depth: int = 0) -> None:
        if depth > MAX_DEPTH:
            raise DBusError("value nested too deep")
        c = t[0]
        if c in _FIXED:
            fmt, size = _FIXED[c]
            self.pad(size)
            self.buf += struct.pack("<" + fmt, value)
        elif c in "sog":
            self._text(c, str(value))
        elif c == "v":
            self._variant(value, depth)
        elif c == "a":
            self._array(t, value, depth)
        elif c in "({":
            self._struct(t, value, depth)
        else:
            raise DBusError(f"cannot write type {t!r}")

    def _text(self, c: str, text: str) -> None:
        if c == "g":
            data = text.encode("ascii")
            self.buf += bytes([len(data)]) + data + b"\0"
            return
        data = text.encode("utf-8")
        self.pad(4)
        self.buf += struct.pack("<I", len(data)) + data + b"\0"

    def _variant(self, value: object, depth: int) -> None:  # a variant is (its signature, its value)
        if not (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str)):
            raise DBusError(f"a variant must be (signature, value), not {type(value).__name__}")
        self.put("g", value[0])
        self.put(value[0], value[1], depth + 1)

    def _array(self, t: str, value: object, depth: int) -> None:
        self.pad(4)
        at = len(self.buf)
        self.buf += b"\0\0\0\0"
        self.pad(_ALIGN[t[1]])
        start = len(self.buf)
        items = value.items() if isinstance(value, Mapping) else value
        if not isinstance(items, Iterable):
            raise DBusError(f"an array's value must be iterable, not {type(value).__name__}")
        for item in items:
            self.put(t[1:], item, depth + 1)
        struct.pack_into("<I", self.buf, at, len(self.buf) - start)

    def _struct(self, t: str, value: object, depth: int) -> None:
        if not isinstance(value, tuple):
            raise DBusError(f"a struct's value must be a tuple, not {type(value).__name__}")
        self.pad(8)
        for part, item in zip(split_signature(t[1:-1]), value, strict=True):
            self.put(part, item, depth + 1)


def method_call(serial: int, destination: str, path: str, interface: str | None, member: str,
                signature: str = "", body: tuple[object, ...] = ()) -> bytes:
    """One method call, marshalled (little-endian)."""
    payload = _Writer()
    for t, value in zip(split_signature(signature), body, strict=True):
        payload.put(t, value)
    fields: list[tuple[int, tuple[str, object]]] = [(_PATH, ("o", path)), (_DESTINATION, ("s", destination)),
                                                    (_MEMBER, ("s", member))]
    if interface:
        fields.append((_INTERFACE, ("s", interface)))
    if signature:
        fields.append((_SIGNATURE, ("g", signature)))
    head = _Writer()
    head.buf += b"l" + bytes([METHOD_CALL, 0, 1]) + struct.pack("<II", len(payload.buf), serial)
    head.put("a(yv)", fields)
    head.pad(8)
    return bytes(head.buf + payload.buf)


# --- reading ---------------------------------------------------------------------------------------

class _Reader:
    def __init__(self, data: bytes, big: bool) -> None:
        self.data, self.pos, self.order = data, 0, ">" if big else "<"

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise DBusError("a message runs past its end")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def align(self, n: int) -> None:
        self.take(-self.pos % n)

    def get(self, t: str, depth: int = 0) -> object:
        if depth > MAX_DEPTH:
            raise DBusError("a message nests too deep")
        c = t[0]
        if c in _FIXED:
            fmt, size = _FIXED[c]
            self.align(size)
            value = struct.unpack(self.order + fmt, self.take(size))[0]
            return bool(value) if c == "b" else value
        if c in "so":
            self.align(4)
            (n,) = struct.unpack(self.order + "I", self.take(4))
            return self._text(n)
        if c == "g":
            return self._text(self.take(1)[0])
        if c == "v":
            inner = str(self.get("g"))
            if len(split_signature(inner)) != 1:
                raise DBusError(f"a variant's signature {inner!r} is not one type")
            return (inner, self.get(inner, depth + 1))
        if c == "a":
            return self._array(t, depth)
        if c in "({":
            self.align(8)
            return tuple(self.get(part, depth + 1) for part in split_signature(t[1:-1]))
        raise DBusError(f"cannot read type {t!r}")

    def _array(self, t: str, depth: int) -> object:
        self.align(4)
        (n,) = struct.unpack(self.order + "I", self.take(4))
        self.align(_ALIGN[t[1]])
        end = self.pos + n
        if end > len(self.data):
            raise DBusError("an array runs past its message")
        items = []
        while self.pos < end:
            items.append(self.get(t[1:], depth + 1))
        if self.pos != end:
            raise DBusError("an array's items overrun its length")
        if t[1] == "{":  # dict entries are read as (key, value) pairs
            return {entry[0]: entry[1] for entry in items if isinstance(entry, tuple)}
        return items

    def _text(self, n: int) -> str:
        raw = self.take(n + 1)
        if raw[-1:] != b"\0":
            raise DBusError("a string is not NUL-terminated")
        try:
            return raw[:-1].decode("utf-8")
        except UnicodeDecodeError:
            raise DBusError("a string is not UTF-8") from None


class Message:
    """A message read: its type, header fields (code → value) and body (a tuple)."""

    def __init__(self, kind: int, fields: Mapping[int, object], body: tuple[object, ...]) -> None:
        self.kind, self.fields, self.body = kind, fields, body

    @property
    def reply_to(self) -> int | None:
        serial = self.fields.get(_REPLY_SERIAL)
        return serial if isinstance(serial, int) else None


def parse(data: bytes) -> Message:
    """A whole message (header, fields, body) as read from the bus."""
    if len(data) < 16 or data[:1] not in (b"l", b"B"):
        raise DBusError("not a D-Bus message")
    r = _Reader(data, data[:1] == b"B")
    r.take(1)
    kind = r.take(1)[0]
    r.take(2)  # flags, version
    body_length = r.get("u")
    r.get("u")  # serial
    raw_fields = r.get("a(yv)")
    r.align(8)
    fields: dict[int, object] = {}
    for code, (sig, value) in raw_fields if isinstance(raw_fields, list) else ():
        if code in _FIELD_TYPES and sig == _FIELD_TYPES[code]:
            fields[code] = value
    if not isinstance(body_length, int) or r.pos + body_length != len(data):
        raise DBusError("a message's body is not the length it says")
    signature = str(fields.get(_SIGNATURE, ""))
    body = tuple(r.get(t) for t in split_signature(signature))
    if r.pos != len(data):
        raise DBusError("a message's body is longer than its signature")
    return Message(kind, fields, body)


def message_length(head: bytes) -> int:
    """The whole length of the message whose first 16 bytes are ``head``."""
    order = ">" if head[:1] == b"B" else "<"
    body, fields = struct.unpack(order + "I", head[4:8])[0], struct.unpack(order + "I", head[12:16])[0]
    header = 16 + fields
    return header + (-header % 8) + body


# --- the connection ---------------------------------------------------------------------------------

def _address(spec: str) -> str | bytes:
    """The socket to connect to, from the first usable entry of a bus address."""
    for entry in spec.split(";"):
        transport, _, params = entry.partition(":")
        keys = dict(p.split("=", 1) for p in params.split(",") if "=" in p)
        if transport == "unix" and "path" in keys:
            return _unescape(keys["path"])
        if transport == "unix" and "abstract" in keys:
            return b"\0" + _unescape(keys["abstract"]).encode()
    raise DBusError(f"no unix socket in the bus address {spec[:80]!r}")


def _unescape(value: str) -> str:
    if "%" not in value:
        return value
    out, i = bytearray(), 0
    raw = value.encode()
    while i < len(raw):
        if raw[i:i + 1] == b"%" and i + 2 < len(raw):
            out.append(int(raw[i + 1:i + 3], 16))
            i += 3
        else:
            out.append(raw[i])
            i += 1
    return out.decode()


class Connection:
    """A blocking, authenticated connection to the session bus (``Hello`` answered)."""

    def __init__(self, address: str, timeout: float) -> None:
        self.deadline = time.monotonic() + timeout
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._serial = 0
        self._buffer = b""
        try:
            self.sock.settimeout(timeout)
            self.sock.connect(_address(address))
            self.sock.sendall(b"\0AUTH EXTERNAL " + str(os.getuid()).encode().hex().encode() + b"\r\n")
            if not self._line().startswith(b"OK "):
                raise DBusError("the bus refused the EXTERNAL authentication")
            self.sock.sendall(b"BEGIN\r\n")
            self.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "Hello")
        except BaseException:
            self.sock.close()
            raise

    def close(self) -> None:
        self.sock.close()

    def next_serial(self) -> int:
        self._serial += 1
        return self._serial

    def send(self, data: bytes) -> None:
        self._arm()
        self.sock.sendall(data)

    def call(self, destination: str, path: str, interface: str | None, member: str, signature: str = "",
             body: tuple[object, ...] = ()) -> tuple[object, ...]:
        serial = self.next_serial()
        self.send(method_call(serial, destination, path, interface, member, signature, body))
        return answer(member, self.reply(serial))

    def reply(self, serial: int) -> Message:
        """The answer to the call ``serial`` (what else comes, a signal, is passed over)."""
        while True:
            message = self.receive()
            if message.kind in (METHOD_RETURN, ERROR) and message.reply_to == serial:
                return message

    def receive(self) -> Message:
        head = self._read(16)
        total = message_length(head)
        if total > MAX_MESSAGE:
            raise DBusError(f"a message of {total} bytes")
        return parse(head + self._read(total - 16))

    def _arm(self) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the Secret Service did not answer in time")
        self.sock.settimeout(left)

    def _read(self, n: int) -> bytes:
        while len(self._buffer) < n:
            self._arm()
            chunk = self.sock.recv(max(65536, n - len(self._buffer)))
            if not chunk:
                raise DBusError("the bus closed the connection")
            self._buffer += chunk
        out, self._buffer = self._buffer[:n], self._buffer[n:]
        return out

    def _line(self) -> bytes:
        while b"\r\n" not in self._buffer:
            if len(self._buffer) > 4096:
                raise DBusError("an authentication line too long")
            self._arm()
            chunk = self.sock.recv(4096)
            if not chunk:
                raise DBusError("the bus closed the connection")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\r\n")
        return line


def answer(method: str, message: Message) -> tuple[object, ...]:
    """A method return's body; an error answer raised as ``DBusError``."""
    if message.kind == ERROR:
        raise DBusError(f"{method}: {message.fields.get(_ERROR_NAME)}: {message.body[:1]}")
    return message.body

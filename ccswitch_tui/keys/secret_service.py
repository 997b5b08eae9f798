"""A read-only Secret Service lookup over D-Bus (jeepney), for the launch path.

The `keyring` library finds its backend by importing every installed backend and asking each
for its priority; with secretstorage it also negotiates an encrypted session. That costs several
times more than the lookup itself. Reading one item needs none of it: open a plain session on the
local bus, search by the attributes keyring writes (service, username), fetch the secret.

Anything unusual (no bus, no daemon, a locked item, an error) returns ``UNAVAILABLE`` and the
caller falls back to the keyring library, which knows how to prompt, unlock and explain.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Mapping
from typing import Any

UNAVAILABLE = object()
_BUS = "org.freedesktop.secrets"
_PATH = "/org/freedesktop/secrets"
_IFACE = "org.freedesktop.Secret.Service"


def usable(environ: Mapping[str, str]) -> bool:
    """The fast path applies only when keyring would pick the Secret Service on its own."""
    if environ.get("PYTHON_KEYRING_BACKEND") or not environ.get("DBUS_SESSION_BUS_ADDRESS"):
        return False
    config_home = environ.get("XDG_CONFIG_HOME") or os.path.join(environ.get("HOME", "~"), ".config")
    return not os.path.exists(os.path.join(os.path.expanduser(config_home), "python_keyring", "keyringrc.cfg"))


@contextlib.contextmanager
def _service() -> Iterator[Any]:
    """A blocking connection to the session bus and a caller for the Secret Service; raises
    (ImportError, OSError, D-Bus errors) when there is none. ``call.many`` sends every call of a
    batch before it reads their answers: one round trip for the batch, not one a call."""
    # lazy: jeepney loads only when the Secret Service is asked
    from jeepney import DBusAddress, HeaderFields, MessageType, new_method_call
    from jeepney.io.blocking import open_dbus_connection  # lazy: jeepney loads only when the Secret Service is asked

    conn = open_dbus_connection(bus="SESSION")
    ss = DBusAddress(_PATH, bus_name=_BUS, interface=_IFACE)

    class Caller:
        @staticmethod
        def _answer(method: str, reply: Any) -> tuple[Any, ...]:
            if reply.header.message_type is MessageType.error:
                raise RuntimeError(f"{method}: {reply.body}")
            return reply.body

        def __call__(self, method: str, signature: str, body: tuple[Any, ...], timeout: float) -> tuple[Any, ...]:
            reply = conn.send_and_get_reply(new_method_call(ss, method, signature, body), timeout=timeout)
            return self._answer(method, reply)

        def many(self, method: str, signature: str, bodies: list[tuple[Any, ...]],
                 timeout: float) -> list[tuple[Any, ...]]:
            return self.batch([(method, signature, body) for body in bodies], timeout)

        def batch(self, calls: list[tuple[str, str, tuple[Any, ...]]], timeout: float) -> list[tuple[Any, ...]]:
            """Every call sent, then their answers read, in the order of ``calls``."""
            deadline = time.monotonic() + timeout
            serials: dict[int, str] = {}
            for method, signature, body in calls:
                serial = next(conn.outgoing_serial)
                serials[serial] = method
                conn.send(new_method_call(ss, method, signature, body), serial=serial)
            replies: dict[int, Any] = {}
            while len(replies) < len(serials):  # what else comes (a signal) is not an answer: passed over
                reply = conn.receive(timeout=max(0.0, deadline - time.monotonic()))
                to = reply.header.fields.get(HeaderFields.reply_serial, -1)
                if to in serials:
                    replies[to] = reply
            return [self._answer(method, replies[s]) for s, method in serials.items()]

        @staticmethod
        def close_session(path: str, timeout: float) -> None:
            """Close a session and wait for the answer: a client that drops its connection with a
            session still open races gnome-keyring's clean-up of it, which can abort the daemon."""
            address = DBusAddress(path, bus_name=_BUS, interface="org.freedesktop.Secret.Session")
            conn.send_and_get_reply(new_method_call(address, "Close"), timeout=timeout)

    try:
        yield Caller()
    finally:
        conn.close()


def lookup(service: str, username: str, timeout: float = 5.0) -> object:
    """The stored value (str), None when no item matches, or UNAVAILABLE."""
    try:
        with _service() as call:
            # The search first, alone. gnome-keyring (42) registers a new caller in a callback of its
            # own, which can run after the caller's first call: a session opened then finds no caller
            # and aborts the daemon; a search then fails with an error, and asked again it finds the
            # caller known (both seen with many lookups at once, tests/test_keyring_soak.py). So the
            # session is opened only after a search was answered, and nothing found opens none.
            query = ({"service": service, "username": username},)
            try:
                unlocked, locked = call("SearchItems", "a{ss}", query, timeout)
            except RuntimeError:  # the daemon did not know this caller yet
                unlocked, locked = call("SearchItems", "a{ss}", query, timeout)
            if locked and not unlocked:
                return UNAVAILABLE  # needs an unlock prompt: keyring's job
            if not unlocked:
                return None
            session = call("OpenSession", "sv", ("plain", ("s", "")), timeout)[1]
            try:
                secrets = call("GetSecrets", "aoo", (unlocked[:1], session), timeout)[0]
                if not secrets:
                    return UNAVAILABLE
                (_session, _params, value, _content_type) = next(iter(secrets.values()))
                return bytes(value).decode("utf-8")
            finally:
                call.close_session(session, timeout)
    except Exception:  # noqa: BLE001 — no bus, no daemon, any D-Bus error: let keyring explain
        return UNAVAILABLE


def present(service: str, usernames: list[str], timeout: float = 5.0) -> dict[str, bool] | object:
    """Which usernames have an item for ``service`` (locked or not), without opening a session or
    reading any secret: one search per username. UNAVAILABLE on anything unusual."""
    try:
        with _service() as call:
            found = call.many("SearchItems", "a{ss}", [({"service": service, "username": name},) for name in usernames],
                              timeout)
            return {name: bool(unlocked or locked) for name, (unlocked, locked) in zip(usernames, found, strict=True)}
    except Exception:  # noqa: BLE001 — no bus, no daemon, any D-Bus error: fall back
        return UNAVAILABLE

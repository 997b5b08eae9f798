"""A read-only Secret Service lookup over D-Bus (``keys/dbus_wire.py``), for the launch path.

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
from collections.abc import Iterator, Mapping
from typing import Any

from ccswitch_tui.keys.dbus_wire import ERROR, METHOD_RETURN, Connection, DBusError, Message, answer, method_call

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
def _service(timeout: float) -> Iterator[Any]:
    """A blocking connection to the session bus and a caller for the Secret Service; raises
    (OSError, DBusError) when there is none. ``call.batch`` sends every call of a batch before it
    reads their answers: one round trip for the batch, not one a call."""
    conn = Connection(os.environ.get("DBUS_SESSION_BUS_ADDRESS", ""), timeout)

    class Caller:
        def __call__(self, method: str, signature: str, body: tuple[Any, ...]) -> tuple[Any, ...]:
            return conn.call(_BUS, _PATH, _IFACE, method, signature, body)

        def many(self, method: str, signature: str, bodies: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
            return self.batch([(method, signature, body) for body in bodies])

        def batch(self, calls: list[tuple[str, str, tuple[Any, ...]]]) -> list[tuple[Any, ...]]:
            """Every call sent, then their answers read, in the order of ``calls``."""
            serials: dict[int, str] = {}
            for method, signature, body in calls:
                serial = conn.next_serial()
                serials[serial] = method
                conn.send(method_call(serial, _BUS, _PATH, _IFACE, method, signature, body))
            replies: dict[int, Message] = {}
            while len(replies) < len(serials):  # what else comes (a signal) is not an answer: passed over
                reply = conn.receive()
                if reply.kind in (METHOD_RETURN, ERROR) and reply.reply_to in serials:
                    replies[reply.reply_to] = reply
            return [answer(method, replies[s]) for s, method in serials.items()]

        @staticmethod
        def close_session(path: str) -> None:
            """Close a session and wait for the answer: a client that drops its connection with a
            session still open races gnome-keyring's clean-up of it, which can abort the daemon."""
            conn.call(_BUS, path, "org.freedesktop.Secret.Session", "Close")

    try:
        yield Caller()
    finally:
        conn.close()


def lookup(service: str, username: str, timeout: float = 5.0) -> object:
    """The stored value (str), None when no item matches, or UNAVAILABLE."""
    try:
        with _service(timeout) as call:
            # The search first, alone. gnome-keyring (42) registers a new caller in a callback of its
            # own, which can run after the caller's first call: a session opened then finds no caller
            # and aborts the daemon; a search then fails with an error, and asked again it finds the
            # caller known (both seen with many lookups at once, tests/test_keyring_soak.py). So the
            # session is opened only after a search was answered, and nothing found opens none.
            query = ({"service": service, "username": username},)
            try:
                unlocked, locked = call("SearchItems", "a{ss}", query)
            except DBusError:  # the daemon did not know this caller yet
                unlocked, locked = call("SearchItems", "a{ss}", query)
            if locked and not unlocked:
                return UNAVAILABLE  # needs an unlock prompt: keyring's job
            if not unlocked:
                return None
            session = call("OpenSession", "sv", ("plain", ("s", "")))[1]
            try:
                secrets = call("GetSecrets", "aoo", (unlocked[:1], session))[0]
                if not secrets:
                    return UNAVAILABLE
                (_session, _params, value, _content_type) = next(iter(secrets.values()))
                return bytes(value).decode("utf-8")
            finally:
                call.close_session(session)
    except Exception:  # noqa: BLE001 — no bus, no daemon, any D-Bus error: let keyring explain
        return UNAVAILABLE


def present(service: str, usernames: list[str], timeout: float = 5.0) -> dict[str, bool] | object:
    """Which usernames have an item for ``service`` (locked or not), without opening a session or
    reading any secret: one search per username. UNAVAILABLE on anything unusual."""
    try:
        with _service(timeout) as call:
            found = call.many("SearchItems", "a{ss}", [({"service": service, "username": name},) for name in usernames])
            return {name: bool(unlocked or locked) for name, (unlocked, locked) in zip(usernames, found, strict=True)}
    except Exception:  # noqa: BLE001 — no bus, no daemon, any D-Bus error: fall back
        return UNAVAILABLE

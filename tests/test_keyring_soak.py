"""The launch path's Secret Service lookup (keys/secret_service.py), thousands of times against the
test's real gnome-keyring daemon: found and not found, one after another, from several threads and
from several processes at once. Every lookup answers exactly (the value, or None: never UNAVAILABLE,
which would send a launch to the slow keyring library), and the daemon that answered the first is
the one that answers the last: the same process, alive, still owning the Secret Service's name.

Two races of gnome-keyring (42) are what this is for: a connection dropped with its session still
open raced the daemon's clean-up of that session, and a session opened by a caller the daemon had
not registered yet (it does so in a callback that can run after the caller's first call) aborted it;
with the lookups of the parent commit this test saw the daemon abort within two runs. D-Bus activation
then starts a new, locked daemon (another pid), so a crash shows here even when the last lookups
succeed."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ccswitch_tui.keys.secret_service import _BUS, lookup

pytestmark = pytest.mark.keyring

USERS = 6  # items stored; each lookup asks for one of them or for a name that has none
SEQUENTIAL = 1200
THREADS, PER_THREAD = 8, 150
PROCESSES, PER_PROCESS = 4, 250


def daemon() -> tuple[int, str]:
    """The pid of the process that owns the Secret Service's name on the session bus, and its unique
    connection name."""
    from jeepney.bus_messages import message_bus
    from jeepney.io.blocking import open_dbus_connection

    with open_dbus_connection(bus="SESSION") as conn:
        (pid,) = conn.send_and_get_reply(message_bus.GetConnectionUnixProcessID(_BUS), timeout=5).body
        (owner,) = conn.send_and_get_reply(message_bus.GetNameOwner(_BUS), timeout=5).body
    return int(pid), str(owner)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (and is not a zombie waiting for its parent)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    state = next(line for line in status.splitlines() if line.startswith("State:"))
    return "Z" not in state.split()[1]


@pytest.fixture
def stored(secret_service: str) -> Iterator[tuple[str, dict[str, str]]]:
    """A service of its own with USERS items in the real keyring: (service, username → value)."""
    import keyring

    service = f"ccswitch-tui-soak-{uuid.uuid4().hex[:8]}"
    values = {f"user-{i}": f"sk-soak-{i}-{uuid.uuid4().hex}" for i in range(USERS)}
    for user, value in values.items():
        keyring.set_password(service, user, value)
    yield service, values
    for user in values:
        try:
            keyring.delete_password(service, user)
        except Exception:  # noqa: BLE001 — the daemon is gone: the test has already failed
            pass


def asks(n: int, seed: int, values: dict[str, str]) -> list[tuple[str, str | None]]:
    """``n`` (username, the answer it must get): every second one has no item."""
    users = list(values)
    out = []
    for i in range(n):
        if (i + seed) % 2:
            out.append((f"absent-{seed}-{i}", None))
        else:
            user = users[(i + seed) % len(users)]
            out.append((user, values[user]))
    return out


def wrong(service: str, asked: list[tuple[str, str | None]]) -> list[tuple[str, object]]:
    """The lookups that did not answer what they must (as (username, what came))."""
    out = []
    for user, want in asked:
        got = lookup(service, user)
        if got != want:
            out.append((user, "UNAVAILABLE" if not isinstance(got, str | None) else got))
    return out


CHILD = """
import json, sys
from ccswitch_tui.keys.secret_service import lookup
service, asked = sys.argv[1], json.loads(sys.argv[2])
bad = [(user, got if isinstance(got, str) or got is None else "UNAVAILABLE")
       for user, want in asked if (got := lookup(service, user)) != want]
print(json.dumps({"asked": len(asked), "wrong": bad}))
"""


def test_thousands_of_lookups_answer_exactly_and_the_daemon_survives(stored):
    service, values = stored
    pid, owner = daemon()
    assert alive(pid)

    # one after another
    assert wrong(service, asks(SEQUENTIAL, 0, values)) == []

    # several processes, each its own connections, while threads of this one ask too
    children = [subprocess.Popen([sys.executable, "-c", CHILD, service, json.dumps(asks(PER_PROCESS, 100 + n, values))],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for n in range(PROCESSES)]
    with ThreadPoolExecutor(THREADS) as pool:
        threads = list(pool.map(lambda n: wrong(service, asks(PER_THREAD, 10 + n, values)), range(THREADS)))
    assert threads == [[]] * THREADS
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        assert json.loads(out) == {"asked": PER_PROCESS, "wrong": []}, err

    # the same daemon, alive, still the Secret Service, still answering
    assert daemon() == (pid, owner)
    assert alive(pid)
    user = next(iter(values))
    assert lookup(service, user) == values[user] and lookup(service, "absent-at-the-end") is None

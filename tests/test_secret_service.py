"""The launch path's direct Secret Service read agrees with the keyring library, and falls back to
it whenever it cannot answer."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from collections.abc import Callable

import keyring
import pytest

from ccswitch_tui.keys import secret_service
from ccswitch_tui.keys.dbus_wire import DBusError
from ccswitch_tui.keys.keyring import SERVICE, KeyStore


@pytest.mark.usefixtures("secret_service")
def test_direct_read_matches_keyring(key_id):
    assert secret_service.lookup(SERVICE, key_id) is None
    keyring.set_password(SERVICE, key_id, "sk-direct-0123456789 ünïcode")
    assert secret_service.lookup(SERVICE, key_id) == "sk-direct-0123456789 ünïcode"
    assert secret_service.lookup("another-service", key_id) is None


@pytest.mark.usefixtures("secret_service")
def test_a_batch_answers_in_the_order_of_its_calls_and_fails_on_an_error_answer(key_id):
    """The lookup sends its session and its search in one batch: each answer belongs to its call,
    and an error answer to any call fails the batch (the lookup then says UNAVAILABLE)."""
    keyring.set_password(SERVICE, key_id, "sk-batch-0123456789")
    search = ("SearchItems", "a{ss}", ({"service": SERVICE, "username": key_id},))
    with secret_service._service(5.0) as call:
        opened, (unlocked, locked) = call.batch([("OpenSession", "sv", ("plain", ("s", ""))), search])
        assert opened[1].startswith("/org/freedesktop/secrets/session/") and len(unlocked) == 1 and not locked
        with pytest.raises(DBusError, match="^OpenSession"):
            call.batch([search, ("OpenSession", "sv", ("no-such-algorithm", ("s", "")))])


def test_unreachable_bus_is_unavailable_not_none(monkeypatch):
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
    assert secret_service.lookup(SERVICE, "x") is secret_service.UNAVAILABLE


def test_usable_only_when_keyring_would_pick_secret_service(tmp_path):
    base = {"DBUS_SESSION_BUS_ADDRESS": "unix:path=/x", "HOME": str(tmp_path)}
    assert secret_service.usable(base)
    assert not secret_service.usable({**base, "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring"})
    assert not secret_service.usable({"HOME": str(tmp_path)})
    cfg = tmp_path / ".config" / "python_keyring" / "keyringrc.cfg"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("[backend]\ndefault-keyring=keyring.backends.null.Keyring\n")
    assert not secret_service.usable(base)


@pytest.mark.usefixtures("secret_service")
def test_keystore_falls_back_to_keyring_with_its_error(ccs_home, key_id, monkeypatch):
    from ccswitch_tui.errors import KeyringUnavailable

    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
    with pytest.raises(KeyringUnavailable, match="Secret Service"):
        KeyStore(ccs_home).get(key_id)


@pytest.mark.usefixtures("secret_service")
def test_launch_path_reads_the_key_without_the_keyring_library(ccs, key_id, tmp_path):
    assert ccs("new", "p", "--base-url", "https://p.invalid", "--key", key_id).returncode == 0
    assert ccs("key", "set", key_id, input="sk-fast-0123456789abcdef").returncode == 0
    code = (
        "import sys\n"
        "from ccswitch_tui.cli import run\n"
        "rc = run(['run', 'p', '--', 'sh', '-c', 'test -n \"$OPENAI_API_KEY\"'])\n"
        "print(rc, sorted(m for m in sys.modules if m == 'keyring' or m.startswith('secretstorage')))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "0 []", r.stdout + r.stderr


@pytest.mark.usefixtures("secret_service")
def test_a_lookup_closes_its_session_before_it_disconnects(key_id):
    """Found: the session the lookup opened is closed by a call the daemon answers, not left for the
    daemon to clean up when the connection drops (gnome-keyring has aborted on that race). Not found:
    no session is opened at all (the search comes first). Watched with dbus-monitor on the test's own
    session bus."""
    keyring.set_password(SERVICE, key_id, "sk-close-0123456789")
    monitor = subprocess.Popen(["dbus-monitor", "--session",
                                "type='method_call',interface='org.freedesktop.Secret.Session'",
                                "type='method_call',member='OpenSession'"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert monitor.stdout is not None
        fd = monitor.stdout.fileno()
        # the bus takes the monitor's name once it is a monitor: from then on it sees every call
        _read_until(fd, lambda text: "member=NameLost" in text, timeout=10)
        # the absent key first: whatever it sent reaches the monitor before the found one's Close
        assert secret_service.lookup(SERVICE, key_id + "-absent") is None
        assert secret_service.lookup(SERVICE, key_id) == "sk-close-0123456789"
        out = _read_until(fd, lambda text: "member=Close" in text, timeout=10)
    finally:
        monitor.kill()
        monitor.wait(timeout=10)
    assert out.count("member=OpenSession") == 1, out
    closes = [line for line in out.splitlines() if "member=Close" in line]
    assert len(closes) == 1 and all("/org/freedesktop/secrets/session/" in line for line in closes), out


def _read_until(fd: int, done: Callable[[str], bool], timeout: float) -> str:
    """What the descriptor ``fd`` says until ``done`` holds of it, or ``timeout`` seconds."""
    text, deadline = "", time.monotonic() + timeout
    while not done(text) and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        text += chunk.decode("utf-8", "replace")
    return text

"""Keys: fingerprints, masks, the key index, env:VAR keys, and the real Secret Service through `ccs key`."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ccswitch_tui.errors import KeyError_, KeyringUnavailable, UsageError
from ccswitch_tui.keys import secret_service
from ccswitch_tui.keys.keyring import SERVICE, KeyStore, fingerprint, load_salt
from ccswitch_tui.paths import Paths
from ccswitch_tui.policy import mask
from ccswitch_tui.profiles.schema import profile_from_data

FP_RE = re.compile(r"fp:[0-9a-f]{12}")


def paths_in(folder: Path) -> Paths:
    return Paths(profiles=folder / "profiles", state=folder / "state")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# --- masks ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("sk-0123456789abcdef9f3a", "sk-…9f3a"),
        ("abcdefghijklmnop", "abc…mnop"),  # exactly 16: masked with first 3 + last 4
        ("abcdefghijklmno", "****"),  # 15: too short to show anything
        ("short", "****"),
        ("", "****"),
        ("ключ-ключ-ключ-ключ", "клю…ключ"),
    ],
)
def test_mask_rules(value: str, shown: str):
    assert mask(value) == shown


def test_mask_never_reveals_the_middle():
    key = "sk-" + "SECRETMIDDLE" * 3 + "9f3a"
    assert "SECRET" not in mask(key)


# --- salt and fingerprints -------------------------------------------------------------------------

def test_salt_created_once_private_and_stable(tmp_path: Path):
    paths = paths_in(tmp_path)
    salt = load_salt(paths)
    assert len(salt) == 32
    assert paths.salt.read_text() == salt.hex() + "\n"
    assert mode(paths.salt) == 0o600
    assert mode(paths.state) == 0o700
    assert load_salt(paths) == salt


def test_fingerprint_is_truncated_hmac_sha256(tmp_path: Path):
    paths = paths_in(tmp_path)
    key = "sk-test-0123456789abcdef"
    fp = KeyStore(paths, environ={}, backend=object()).fingerprint(key)
    salt = bytes.fromhex(paths.salt.read_text())
    independent = hmac.new(salt, key.encode(), hashlib.sha256).hexdigest()[:12]
    assert FP_RE.fullmatch(fp)
    assert fp == "fp:" + independent
    assert fingerprint(key, salt) == fp
    assert KeyStore(paths, environ={}).fingerprint(key) == fp  # stable across calls and KeyStores
    assert KeyStore(paths, environ={}).fingerprint(key + "x") != fp


def test_fingerprints_differ_across_installs(tmp_path: Path):
    key = "sk-test-0123456789abcdef"
    a = KeyStore(paths_in(tmp_path / "a"), environ={}).fingerprint(key)
    b = KeyStore(paths_in(tmp_path / "b"), environ={}).fingerprint(key)
    assert a != b
    assert fingerprint(key, b"one") != fingerprint(key, b"two")


# --- the index, with an in-memory backend -------------------------------------------------------

class MemoryBackend:
    def __init__(self) -> None:
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, user: str) -> str | None:
        return self.items.get((service, user))

    def set_password(self, service: str, user: str, value: str) -> None:
        self.items[(service, user)] = value

    def delete_password(self, service: str, user: str) -> None:
        from keyring.errors import PasswordDeleteError

        if (service, user) not in self.items:
            raise PasswordDeleteError("not found")
        del self.items[(service, user)]


class Untouchable:
    def __getattr__(self, name: str):
        raise AssertionError(f"the keyring backend was used ({name})")


def test_index_tracks_set_and_delete(tmp_path: Path):
    paths = paths_in(tmp_path)
    backend = MemoryBackend()
    keys = KeyStore(paths, environ={}, backend=backend)
    assert keys.ids() == []
    keys.set("b-key", "  value-b \n")
    keys.set("a-key", "value-a")
    assert backend.items == {(SERVICE, "b-key"): "value-b", (SERVICE, "a-key"): "value-a"}
    assert keys.ids() == ["a-key", "b-key"]
    assert json.loads(paths.key_index.read_text()) == {"keys": ["a-key", "b-key"]}
    assert mode(paths.key_index) == 0o600
    assert b"value" not in paths.key_index.read_bytes()
    assert keys.get("a-key") == "value-a"
    assert keys.delete("a-key") is True
    assert keys.delete("a-key") is False
    assert keys.ids() == ["b-key"]
    assert keys.get("a-key") is None


@pytest.mark.parametrize("damaged", ["{not json", '"a string"', "[1, 2]", '{"keys": 5}', '{"keys": "abc"}', "null"])
def test_corrupt_index_reads_as_empty(tmp_path: Path, damaged: str):
    paths = paths_in(tmp_path)
    paths.state.mkdir(parents=True)
    paths.key_index.write_text(damaged)
    keys = KeyStore(paths, environ={}, backend=MemoryBackend())
    assert keys.ids() == []
    keys.set("k", "v")
    assert keys.ids() == ["k"]


def test_empty_key_and_bad_ids_refused_before_the_backend(tmp_path: Path):
    keys = KeyStore(paths_in(tmp_path), environ={}, backend=Untouchable())
    with pytest.raises(KeyError_, match="empty key"):
        keys.set("k", "  \n")
    for bad in ("", "a b", "../x", "env:X", "-x"):
        with pytest.raises(UsageError, match="invalid key id"):
            keys.get(bad)
    assert not paths_in(tmp_path).key_index.exists()


def test_backend_errors_become_one_readable_line(tmp_path: Path):
    from keyring.errors import KeyringLocked

    class Locked(MemoryBackend):
        def get_password(self, service: str, user: str) -> str | None:
            raise KeyringLocked("Failed to unlock the collection!")

    class Broken(MemoryBackend):
        def set_password(self, service: str, user: str, value: str) -> None:
            raise RuntimeError("org.freedesktop.DBus.Error.ServiceUnknown")

    with pytest.raises(KeyringUnavailable) as exc:
        KeyStore(paths_in(tmp_path), environ={}, backend=Locked()).get("k")
    msg = str(exc.value)
    assert "locked" in msg and "test_secrets.Locked" in msg and "env:VAR" in msg and "\n" not in msg
    with pytest.raises(KeyringUnavailable) as exc:
        KeyStore(paths_in(tmp_path), environ={}, backend=Broken()).set("k", "secret-value")
    assert "ServiceUnknown" in str(exc.value) and "secret-value" not in str(exc.value)
    assert KeyStore(paths_in(tmp_path), environ={}).ids() == []  # a failed store is not indexed


# --- env:VAR keys ---------------------------------------------------------------------------------

def _profile(key: str):
    return profile_from_data("p", {"provider": {"name": "P", "base_url": "https://h", "key": key}})


def test_env_keys_read_from_ccs_environment_only(tmp_path: Path):
    keys = KeyStore(paths_in(tmp_path), environ={"MY_KEY": "sk-from-env", "EMPTY": ""}, backend=Untouchable())
    assert keys.lookup("env:MY_KEY") == "sk-from-env"
    assert keys.lookup("env:EMPTY") is None
    assert keys.lookup("env:MISSING") is None
    assert keys.resolve(_profile("env:MY_KEY")) == "sk-from-env"
    with pytest.raises(KeyError_, match=r"MISSING is not set in ccs's environment; export MISSING="):
        keys.resolve(_profile("env:MISSING"))
    assert keys.present(["env:MY_KEY", "env:EMPTY", "env:MISSING"]) == {
        "env:MY_KEY": True, "env:EMPTY": False, "env:MISSING": False}


def test_missing_keyring_key_says_how_to_store_it(tmp_path: Path):
    keys = KeyStore(paths_in(tmp_path), environ={}, backend=MemoryBackend())
    with pytest.raises(KeyError_, match=r"no key stored for id 'kid'; store it with `ccs key set kid`"):
        keys.resolve(_profile("kid"))


# --- the real Secret Service through `ccs key` ----------------------------------------------------

def secret_tool(key_id: str) -> str:
    r = subprocess.run(["secret-tool", "lookup", "service", SERVICE, "username", key_id],
                       capture_output=True, text=True, timeout=20)
    return r.stdout


def no_traceback(r: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout


def one_error_line(r: subprocess.CompletedProcess) -> str:
    no_traceback(r)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("ccs: error: ")
    return lines[0]


KEY = "sk-live-" + "Q7xW2pL9" * 4 + "9f3a"


def test_key_lifecycle_in_the_real_keyring(ccs, ccs_home: Paths, key_id: str):
    import keyring

    r = ccs("key", "set", key_id, input=KEY + "\n")
    assert r.returncode == 0, r.stderr
    assert secret_tool(key_id) == KEY
    assert keyring.get_password(SERVICE, key_id) == KEY
    fp = "fp:" + hmac.new(bytes.fromhex(ccs_home.salt.read_text()), KEY.encode(), hashlib.sha256).hexdigest()[:12]
    assert r.stdout.strip() == f"stored {key_id}  sk-…9f3a  {fp}"

    shown = ccs("key", "show", key_id)
    assert shown.returncode == 0 and shown.stdout.strip() == f"{key_id}  sk-…9f3a  {fp}"
    as_json = ccs("key", "show", key_id, "--json")
    assert json.loads(as_json.stdout) == {"id": key_id, "mask": "sk-…9f3a", "fingerprint": fp}

    # a profile naming the key: presence in `list`, mask and fingerprint in `show`
    ccs_home.profiles.mkdir(parents=True)
    (ccs_home.profiles / "uses.toml").write_text(
        f'[provider]\nname = "P"\nbase_url = "https://h.example"\nkey = "{key_id}"\n')
    (ccs_home.profiles / "other.toml").write_text(
        '[provider]\nname = "P"\nbase_url = "https://h.example"\nkey = "never-stored-x1"\n')
    listed = ccs("key", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {row["id"]: row for row in json.loads(listed.stdout)["keys"]}
    assert rows[key_id] == {"id": key_id, "present": True, "profiles": ["uses"]}
    assert rows["never-stored-x1"] == {"id": "never-stored-x1", "present": False, "profiles": ["other"]}
    plist = ccs("list", "--json")
    present = {p["name"]: p["key_present"] for p in json.loads(plist.stdout)["profiles"]}
    assert present == {"uses": True, "other": False}
    pshow = json.loads(ccs("show", "uses", "--json").stdout)
    assert pshow["key"] == {"id": key_id, "present": True, "mask": "sk-…9f3a", "fingerprint": fp, "error": None}

    outputs = [r, shown, as_json, listed, plist]
    for out in outputs:
        assert KEY not in out.stdout + out.stderr
        assert KEY[3:-4] not in out.stdout + out.stderr
    for f in Path(os.environ["CCS_HOME"]).rglob("*"):
        if f.is_file():
            assert KEY.encode() not in f.read_bytes(), f

    refused = ccs("key", "rm", key_id)  # stdin is not a terminal and no --yes
    assert refused.returncode == 2
    assert "--yes" in one_error_line(refused)
    assert secret_tool(key_id) == KEY

    removed = ccs("key", "rm", key_id, "--yes")
    assert removed.returncode == 0 and removed.stdout.strip() == f"removed {key_id}"
    assert secret_tool(key_id) == ""
    assert keyring.get_password(SERVICE, key_id) is None
    assert key_id not in json.loads(ccs_home.key_index.read_text())["keys"]
    again = ccs("key", "rm", key_id, "--yes")
    assert again.returncode == 2 and "no key stored" in one_error_line(again)
    gone = ccs("key", "show", key_id)
    assert gone.returncode == 2 and f"ccs key set {key_id}" in one_error_line(gone)


def test_key_on_the_command_line_refused_without_echo(ccs, key_id: str):
    for args in ((key_id, KEY), (key_id, f"--value={KEY}")):
        r = ccs("key", "set", *args, input="")
        assert r.returncode == 2
        line = one_error_line(r)
        assert "stdin" in line
        assert KEY not in r.stdout + r.stderr and KEY[3:-4] not in r.stderr
    assert secret_tool(key_id) == ""


@pytest.mark.parametrize(("stdin", "message"), [("", "no key given"), ("line1\nline2\n", "spans several lines"),
                                              ("sk-nul\x00-0123456789abcdef\n", "control characters"),
                                              ("sk-esc\x1b[0m-0123456789abcdef\n", "control characters")])
def test_bad_stdin_refused(ccs, key_id: str, stdin: str, message: str):
    r = ccs("key", "set", key_id, input=stdin)
    assert r.returncode == 2 and message in one_error_line(r)
    assert secret_tool(key_id) == ""


@pytest.mark.parametrize("locale", ["C", "C.UTF-8"])
def test_undecodable_stdin_refused_as_bad_input(ccs_home: Paths, key_id: str, locale: str):
    r = subprocess.run([sys.executable, "-m", "ccswitch_tui", "key", "set", key_id],
                       input=b"sk-\xff\xfe-0123456789ab\n", capture_output=True, timeout=60,
                       env={**os.environ, "LANG": locale, "LC_ALL": locale})
    assert r.returncode == 2, r.stderr
    line = r.stderr.decode().strip()
    assert "\n" not in line and "not valid UTF-8" in line and "keyring" not in line
    assert secret_tool(key_id) == ""


@pytest.mark.parametrize("bus", ["unix:path=/nonexistent/ccs-test/bus", None])
def test_keyring_unreachable_is_one_line_exit_2(ccs, ccs_home: Paths, bus: str | None):
    env = {k: v for k, v in os.environ.items() if k != "DBUS_SESSION_BUS_ADDRESS"}
    if bus:
        env["DBUS_SESSION_BUS_ADDRESS"] = bus
    r = ccs("key", "set", "unreachable-x1", input=KEY + "\n", env=env)
    assert r.returncode == 2
    line = one_error_line(r)
    assert "keyring unavailable" in line and "backend " in line
    assert "Secret Service" in line and "env:VAR" in line
    assert KEY not in r.stdout + r.stderr
    assert not ccs_home.key_index.exists()

    shown = ccs("key", "show", "unreachable-x1", env=env)
    assert shown.returncode == 2 and "keyring unavailable" in one_error_line(shown)


def test_presence_search_agrees_with_the_keyring_library(ccs_home: Paths, key_id: str):
    import keyring
    from keyring.backends import SecretService

    keyring.set_password(SERVICE, key_id, KEY)
    refs = [key_id, key_id + "-absent", "env:CCS_TEST_PRESENT", "env:CCS_TEST_ABSENT"]
    env = dict(os.environ, CCS_TEST_PRESENT="v")
    env.pop("CCS_TEST_ABSENT", None)
    expected = {key_id: True, key_id + "-absent": False, "env:CCS_TEST_PRESENT": True, "env:CCS_TEST_ABSENT": False}
    assert secret_service.present(SERVICE, [key_id, key_id + "-absent"]) == {key_id: True, key_id + "-absent": False}
    assert KeyStore(ccs_home, env).present(refs) == expected
    assert KeyStore(ccs_home, env, backend=SecretService.Keyring()).present(refs) == expected


def test_presence_search_without_a_bus_falls_back(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/ccs-test/bus")
    assert secret_service.present(SERVICE, ["x"]) is secret_service.UNAVAILABLE


LIST_WITHOUT_KEYRING = """
import contextlib, io, json, sys
from ccswitch_tui import cli
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    rc = cli.run(["list", "--json"])
print(json.dumps({"rc": rc, "keyring": "keyring" in sys.modules, "list": json.loads(buf.getvalue())}))
"""


def test_list_asks_the_secret_service_without_the_keyring_library(ccs_home: Paths, key_id: str):
    import keyring

    keyring.set_password(SERVICE, key_id, KEY)
    ccs_home.profiles.mkdir(parents=True)
    (ccs_home.profiles / "a.toml").write_text(f'[provider]\nname = "P"\nbase_url = "https://h"\nkey = "{key_id}"\n')
    (ccs_home.profiles / "b.toml").write_text('[provider]\nname = "P"\nbase_url = "https://h"\nkey = "nope-x1"\n')
    r = subprocess.run([sys.executable, "-c", LIST_WITHOUT_KEYRING], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["rc"] == 0 and got["keyring"] is False
    assert {p["name"]: p["key_present"] for p in got["list"]["profiles"]} == {"a": True, "b": False}
    assert got["list"]["keyring_error"] is None


def test_damaged_salt_is_replaced_not_used(tmp_path):
    from ccswitch_tui.keys.keyring import load_salt
    from ccswitch_tui.paths import resolve_paths

    paths = resolve_paths({"CCS_HOME": str(tmp_path)})
    paths.state.mkdir(parents=True)
    paths.salt.write_text("\n")
    salt = load_salt(paths)
    assert len(salt) == 32 and load_salt(paths) == salt
    assert paths.salt.read_text().strip() == salt.hex()


KILLED_SET = """
import os, signal, sys
from pathlib import Path
import keyring.backends.SecretService as ss
from ccswitch_tui.keys.keyring import KeyStore
from ccswitch_tui.paths import Paths

where = sys.argv[2]
if where == "store":  # killed before the keyring stored it
    ss.Keyring.set_password = lambda *a: os.kill(os.getpid(), signal.SIGKILL)
else:  # killed once it was stored, while reading it back
    real = ss.Keyring.get_password
    calls = []
    def get(self, service, user):
        calls.append(user)
        if len(calls) > 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(self, service, user)
    ss.Keyring.get_password = get
folder = Path(sys.argv[1])
store = KeyStore(Paths(profiles=folder / "profiles", state=folder / "state"), dict(os.environ))
store.set(sys.argv[3], "sk-killed-0123456789abcdef")
"""


@pytest.mark.parametrize("where,stored", [("store", False), ("read-back", True)])
def test_a_key_set_killed_midway_leaves_no_id_without_its_key(tmp_path, secret_service, key_id, where, stored):
    """A kill -9 during `ccs key set` left the id in keys.json with no key behind it."""
    import keyring

    keys = KeyStore(paths_in(tmp_path), dict(os.environ))
    keys.set(f"{key_id}-other", "sk-other-0123456789abcdef")
    try:
        r = subprocess.run([sys.executable, "-c", KILLED_SET, str(tmp_path), where, key_id], capture_output=True,
                           text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
        assert r.returncode == -9, r.stderr
        assert (keyring.get_password(SERVICE, key_id) is not None) is stored
        assert (key_id in keys.ids()) is stored  # listed exactly when the keyring holds it
        keys.set(f"{key_id}-third", "sk-third-0123456789abcdef")  # the next write settles the index
        index = json.loads(keys.paths.key_index.read_text())
        assert (key_id in index["keys"]) is stored and "pending" not in index
        assert f"{key_id}-other" in index["keys"]
    finally:
        for kid in (f"{key_id}-other", f"{key_id}-third"):
            keys.delete(kid)

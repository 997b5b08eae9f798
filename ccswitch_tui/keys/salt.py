"""The salt of key fingerprints: this install's own, or a salt shared on purpose between machines.

A fingerprint is HMAC-SHA256(salt, key). With this install's salt (``state/salt``, random, made on
first use) fingerprints compare across runs on one machine only. A round of reruns spread over
machines (CI runners) needs the same salt on each, given on purpose:

- ``CCS_FINGERPRINT_SALT`` in ccs's environment (a CI secret), or
- ``ccs key salt set`` (``state/shared-salt``, 0600),

the variable first. A shared salt is any text of 16 characters or more; text that is all hex (an even
count of digits) is read as the bytes it spells, so the content of one machine's ``state/salt`` makes
another machine fingerprint keys as that one does.

Each fingerprint is recorded with the id of its salt (``Salt.id``: 12 hex of a hash of the salt,
which tells salts apart without revealing them), so that fingerprints taken under different salts
are reported as such, never as a rotated key.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping

from ccswitch_tui.atomic import atomic_write, locked
from ccswitch_tui.errors import UsageError
from ccswitch_tui.paths import Paths, ensure_private_dir
from ccswitch_tui.safe_read import read_text
from ccswitch_tui.tempfiles import sweep_temp_files
from ccswitch_tui.valueclass import field, valueclass

SHARED_SALT_VAR = "CCS_FINGERPRINT_SALT"
MIN_SHARED_SALT = 16  # characters
INSTALL, SHARED_VARIABLE, SHARED_STATE = "install", "variable", "state"
_ID_CONTEXT = b"ccs fingerprint salt id\0"


def salt_id(salt: bytes) -> str:
    """12 hex naming a salt: equal salts have equal ids; the id does not give the salt away."""
    return hashlib.sha256(_ID_CONTEXT + salt).hexdigest()[:12]


@valueclass(frozen=True)
class Salt:
    value: bytes = field(repr=False)
    source: str  # INSTALL, SHARED_VARIABLE or SHARED_STATE

    @property
    def id(self) -> str:
        return salt_id(self.value)

    @property
    def shared(self) -> bool:
        return self.source != INSTALL

    def describe(self) -> str:
        where = {INSTALL: "this install's own (state/salt); fingerprints compare on this machine only",
                 SHARED_VARIABLE: f"shared, from {SHARED_SALT_VAR}",
                 SHARED_STATE: "shared, stored with `ccs key salt set`"}[self.source]
        return f"salt {self.id}: {where}"


def fingerprint(value: str, salt: bytes) -> str:
    """``fp:`` + the first 12 hex of HMAC-SHA256(salt, key)."""
    return "fp:" + hmac.new(salt, value.encode("utf-8"), hashlib.sha256).hexdigest()[:12]


def shared_salt_bytes(text: str, where: str) -> bytes:
    """A shared salt as given: hex is read as bytes, other text as its UTF-8. UsageError when too short."""
    text = text.strip()
    if len(text) < MIN_SHARED_SALT or any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise UsageError(f"{where}: a shared fingerprint salt must be one line of {MIN_SHARED_SALT} characters or "
                         "more; give a long random value (e.g. the output of `openssl rand -hex 32`)")
    if len(text) % 2 == 0 and all(c in "0123456789abcdefABCDEF" for c in text):
        return bytes.fromhex(text)
    return text.encode("utf-8")


def _read_install_salt(paths: Paths) -> bytes | None:
    try:
        salt = bytes.fromhex(read_text(paths.salt, limit=4096).strip())
    except (OSError, ValueError):  # missing, not a regular file (a FIFO would hang a plain read), damaged
        return None
    return salt if len(salt) >= 16 else None  # an empty or truncated file is no salt


def install_salt(paths: Paths) -> bytes:
    """The per-install salt (state/salt, 0600), created on first use (or when the file is damaged)."""
    salt = _read_install_salt(paths)
    if salt is not None:
        return salt
    ensure_private_dir(paths.state)
    with locked(paths.state / ".salt.lock"):
        salt = _read_install_salt(paths)
        if salt is None:
            sweep_temp_files(paths.state, paths.salt.name)  # a killed writer's; under the lock none is live
            salt = os.urandom(32)
            atomic_write(paths.salt, salt.hex() + "\n", mode=0o600)
        return salt


def install_salt_id(paths: Paths) -> str | None:
    """The id of this install's salt when it has one (never creates it)."""
    salt = _read_install_salt(paths)
    return salt_id(salt) if salt is not None else None


def _stored_shared(paths: Paths) -> bytes | None:
    try:
        text = read_text(paths.shared_salt, limit=4096)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{paths.shared_salt}: not a readable shared salt ({exc}); set it again with "
                         "`ccs key salt set` or remove it with `ccs key salt rm`") from None
    return shared_salt_bytes(text, str(paths.shared_salt))


def current_salt(paths: Paths, environ: Mapping[str, str] | None = None) -> Salt:
    """The salt fingerprints are taken under now: the variable, else the stored shared salt, else this
    install's own."""
    env = os.environ if environ is None else environ
    text = env.get(SHARED_SALT_VAR, "")
    if text.strip():
        return Salt(shared_salt_bytes(text, SHARED_SALT_VAR), SHARED_VARIABLE)
    stored = _stored_shared(paths)
    if stored is not None:
        return Salt(stored, SHARED_STATE)
    return Salt(install_salt(paths), INSTALL)


def store_shared_salt(paths: Paths, text: str) -> Salt:
    salt = Salt(shared_salt_bytes(text, "the shared salt"), SHARED_STATE)
    ensure_private_dir(paths.state)
    with locked(paths.state / ".salt.lock"):
        sweep_temp_files(paths.state, paths.shared_salt.name)
        atomic_write(paths.shared_salt, text.strip() + "\n", mode=0o600)
    return salt


def remove_shared_salt(paths: Paths) -> bool:
    try:
        paths.shared_salt.unlink()
    except FileNotFoundError:
        return False
    return True

"""Keys: in the OS keyring (service ``ccswitch-tui``, username = key id) or, for ``env:VAR``, in
ccs's own environment. Also the index of stored key ids, fingerprints and masks.

Nothing here writes a key anywhere but the keyring.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ccswitch_tui.atomic import atomic_write, locked
from ccswitch_tui.errors import CcsError, KeyError_, KeyringUnavailable, StoreKey
from ccswitch_tui.keys.salt import Salt, current_salt, fingerprint
from ccswitch_tui.model import Profile
from ccswitch_tui.paths import Paths, ensure_private_dir
from ccswitch_tui.policy.redact import remember
from ccswitch_tui.safe_read import loads_json, read_text
from ccswitch_tui.tempfiles import sweep_temp_files
from ccswitch_tui.tools.checker import check_key_id

if TYPE_CHECKING:
    from keyring.backend import KeyringBackend

SERVICE = "ccswitch-tui"
FAST_BACKEND = "SecretService.Keyring"  # the name keyring gives the backend the fast path stands in for


def has_control_chars(value: str) -> bool:
    return any(ord(c) < 0x20 or ord(c) == 0x7F for c in value)


# --- fingerprints (keys/salt.py) ----------------------------------------------------

def load_salt(paths: Paths, environ: Mapping[str, str] | None = None) -> bytes:
    """The salt fingerprints are taken under now (a shared one when given, else this install's own)."""
    return current_salt(paths, environ).value


# --- the keyring --------------------------------------------------------------------------------

_WAYS_OUT = (
    "start a Secret Service (e.g. gnome-keyring-daemon --unlock --components=secrets) and unlock it, "
    'or set key = "env:VAR" in the profile to read the key from the environment'
)


def _backend_name(backend: KeyringBackend) -> str:
    cls = type(backend)
    return f"{cls.__module__.replace('keyring.backends.', '')}.{cls.__name__}"


def _load_backend() -> Any:
    """The keyring backend, found quickly.

    keyring's own discovery imports every installed backend through entry points and asks each
    for its priority; on Linux that costs far more than the lookup itself. When nothing overrides
    the choice (PYTHON_KEYRING_BACKEND, a keyringrc.cfg) and a session bus is there, try the
    Secret Service backend directly and fall back to full discovery only if it is not viable.
    """
    import keyring  # lazy: the keyring library loads only when the Secret Service fast path cannot answer

    if os.environ.get("PYTHON_KEYRING_BACKEND") or not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        return keyring.get_keyring()
    # lazy: the keyring library loads only when the Secret Service fast path cannot answer
    from keyring.util import platform_ as platform_dirs

    if os.path.exists(os.path.join(platform_dirs.config_root(), "keyringrc.cfg")):
        return keyring.get_keyring()
    try:
        # lazy: the keyring library loads only when the Secret Service fast path cannot answer
        from keyring.backends import SecretService

        backend = SecretService.Keyring()
        backend.priority  # noqa: B018 — raises when no Secret Service answers
        return backend
    except Exception:
        return keyring.get_keyring()


class _ItemGone(Exception):
    """The keyring item vanished between the search and the use (another process removed it)."""


class KeyStore:
    """Keys for profiles. The backend is looked up lazily, once."""

    def __init__(self, paths: Paths, environ: Mapping[str, str] | None = None, backend: KeyringBackend | None = None):
        self.paths = paths
        self.environ = os.environ if environ is None else environ
        self._backend = backend
        self._lock_depth = 0
        self._salt: Salt | None = None
        self._answered_fast = False  # the Secret Service answered without the keyring library (secret_service)

    # backend access, with every KeyringError turned into one readable line
    @property
    def backend(self) -> Any:
        if self._backend is None:
            try:
                self._backend = _load_backend()
            except Exception as exc:  # noqa: BLE001 — e.g. PYTHON_KEYRING_BACKEND names no backend
                chosen = self.environ.get("PYTHON_KEYRING_BACKEND")
                origin = f"PYTHON_KEYRING_BACKEND={chosen!r}" if chosen else "the keyring configuration"
                raise KeyringUnavailable(
                    f"keyring unavailable: {origin} cannot be loaded ({type(exc).__name__}: {exc}); "
                    "unset it or name an installed backend, e.g. keyring.backends.SecretService.Keyring"
                ) from None
        return self._backend

    def backend_name(self) -> str:
        """The backend's name (``SecretService.Keyring``). When the Secret Service answered on the fast
        path, which runs only where keyring would pick it too, that is its name: the keyring library is
        not loaded to say so."""
        if self._backend is None and self._answered_fast:
            return FAST_BACKEND
        return _backend_name(self.backend)

    def _call(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        # lazy: the keyring library loads only when the Secret Service fast path cannot answer
        from keyring.errors import InitError, KeyringError, KeyringLocked, NoKeyringError, PasswordDeleteError

        try:
            return fn(*args)
        except PasswordDeleteError:
            raise
        except UnicodeDecodeError:  # another program stored bytes that are not text under this id
            key_id = str(args[1]) if len(args) > 1 else "ID"  # every per-key call passes (SERVICE, key_id, …)
            raise KeyError_(f"the keyring entry for {key_id!r} is not UTF-8 text (another program "
                            f"stored it?)", StoreKey(key_id, again=True)) from None
        except KeyringError as exc:
            if isinstance(exc, NoKeyringError):
                detail = "no keyring backend found; no Secret Service answered on the session D-Bus"
            elif isinstance(exc, (KeyringLocked, InitError)):
                detail = f"the keyring is locked or its unlock prompt was dismissed ({exc})"
            else:
                detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise KeyringUnavailable(
                f"keyring unavailable while trying to {what} (backend {self.backend_name()}: {detail}); "
                + _WAYS_OUT
            ) from None
        except Exception as exc:  # dbus errors and the like surface as plain exceptions
            if type(exc).__name__ == "ItemNotFoundException":  # removed meanwhile by another process
                raise _ItemGone() from None
            raise KeyringUnavailable(
                f"keyring error while trying to {what} (backend {self.backend_name()}: "
                f"{type(exc).__name__}: {exc}); " + _WAYS_OUT
            ) from None

    def get(self, key_id: str) -> str | None:
        check_key_id(key_id)
        if self._backend is None:
            # lazy: keeps ccswitch_tui.keys.secret_service off `ccs run`'s imports
            from ccswitch_tui.keys import secret_service

            if secret_service.usable(self.environ):
                value = secret_service.lookup(SERVICE, key_id)
                if value is None or isinstance(value, str):  # else UNAVAILABLE: ask keyring
                    self._answered_fast = True
                    return value or None
        try:
            return self._call(f"read key {key_id!r}", self.backend.get_password, SERVICE, key_id) or None
        except _ItemGone:
            return None

    def set(self, key_id: str, value: str) -> str | None:
        """Store a key; return the value it replaced (None when there was none).

        The index is written first and taken back when the keyring refuses, so the two never disagree
        about a key this call stored; a backend that silently keeps nothing (the null backend) is
        found by reading the key back."""
        check_key_id(key_id)
        if not value or not value.strip():
            raise KeyError_(f"refusing to store an empty key for {key_id!r}")
        value = value.strip()
        with self.index_lock():
            previous = self._previous(key_id)
            was_indexed = key_id in self._index()[0]
            if not was_indexed:  # pending until the keyring holds it: a kill in between leaves no stale id
                self._update_index(pending=key_id)
            try:
                self._call(f"store key {key_id!r}", self.backend.set_password, SERVICE, key_id, value)
                kept = self._call(f"read key {key_id!r} back", self.backend.get_password, SERVICE, key_id)
                if kept != value:
                    raise KeyringUnavailable(
                        f"the keyring backend {self.backend_name()} did not keep key {key_id!r} "
                        "(it stores nothing); " + _WAYS_OUT)
            except BaseException:
                if not was_indexed:
                    with contextlib.suppress(Exception):
                        self._update_index(remove=key_id)
                raise
            if not was_indexed:
                self._update_index(add=key_id)
        return previous

    def _previous(self, key_id: str) -> str | None:
        """The value a ``set`` replaces (errors named as part of storing the key)."""
        try:
            return self._call(f"store key {key_id!r}", self.backend.get_password, SERVICE, key_id) or None
        except (_ItemGone, KeyError_):  # gone meanwhile, or not text: nothing to put back
            return None

    def undo_set(self, key_id: str, stored: str, previous: str | None) -> None:
        """Take back a ``set`` of ``stored``: put ``previous`` back, or remove the key when there was
        none. A key someone else changed meanwhile is left alone."""
        with self.index_lock():
            try:
                if self.get(key_id) != stored:
                    return
                if previous is None:
                    self.delete(key_id)
                else:
                    self._call(f"restore key {key_id!r}", self.backend.set_password, SERVICE, key_id, previous)
            except _ItemGone:
                return

    def delete(self, key_id: str) -> bool:
        """Remove a key; False when there was none (or another process removed it first)."""
        # lazy: the keyring library loads only when the Secret Service fast path cannot answer
        from keyring.errors import PasswordDeleteError

        check_key_id(key_id)
        with self.index_lock():
            try:
                self._call(f"remove key {key_id!r}", self.backend.delete_password, SERVICE, key_id)
                found = True
            except (PasswordDeleteError, _ItemGone):
                found = False
            self._update_index(remove=key_id)
        return found

    # the index of stored ids (the keyring cannot list entries)
    def _index(self) -> tuple[builtins.set[str], builtins.set[str]]:  # ``set`` here is KeyStore.set
        """(the ids stored, the ids a ``set`` was storing): ``keys.json``'s ``keys`` and ``pending``."""
        try:
            data = loads_json(read_text(self.paths.key_index))
        except (OSError, ValueError):  # missing, not a regular file, not UTF-8, not JSON, too deep
            return set(), set()
        if not isinstance(data, dict):
            return set(), set()

        def strings(field: str) -> set[str]:
            value = data.get(field)  # a damaged index reads as empty, like an unparsable one
            return {k for k in value if isinstance(k, str)} if isinstance(value, list) else set()

        return strings("keys"), strings("pending")

    def ids(self) -> list[str]:
        """The ids ccs stored keys under. An id a ``set`` was killed while storing counts only when
        the keyring holds its key (the store happened); the next write settles it either way."""
        keys, pending = self._index()
        return sorted(keys | {p for p in pending - keys if self._holds(p)})

    def _holds(self, key_id: str) -> bool:
        try:
            return self.get(key_id) is not None
        except CcsError:
            return True  # cannot tell: keep it listed rather than lose a key nobody could list again

    @contextlib.contextmanager
    def index_lock(self) -> Iterator[None]:
        """Held across a whole key write (keyring and index), so that a `set` and an `rm` of one id in
        two processes cannot leave the index and the keyring disagreeing. Re-entrant within one
        KeyStore; temp files of a killed index writer are swept under it."""
        if self._lock_depth:
            self._lock_depth += 1
            try:
                yield
            finally:
                self._lock_depth -= 1
            return
        ensure_private_dir(self.paths.state)
        with locked(self.paths.state / ".keys.lock"):
            sweep_temp_files(self.paths.state, self.paths.key_index.name)
            self._lock_depth = 1
            try:
                yield
            finally:
                self._lock_depth = 0

    def _update_index(self, add: str | None = None, remove: str | None = None, pending: str | None = None) -> None:
        """Under the lock every ``set`` holds from start to end, an id still pending is a killed
        writer's: kept when the keyring holds its key, dropped otherwise."""
        with self.index_lock():
            keys, waiting = self._index()
            keys |= {p for p in waiting - keys - {add, remove, pending} if self._holds(p)}
            if add:
                keys.add(add)
            if remove:
                keys.discard(remove)
            data: dict[str, list[str]] = {"keys": sorted(keys)}
            if pending and pending not in keys:
                data["pending"] = [pending]
            atomic_write(self.paths.key_index, json.dumps(data, indent=1) + "\n")

    # keys for profiles
    def lookup(self, key_ref: str) -> str | None:
        """The key value for ``provider.key`` (a keyring id or ``env:VAR``), or None when absent. From
        now on ccs's output filter masks it in every form."""
        value = self.environ.get(key_ref[4:]) if key_ref.startswith("env:") else self.get(key_ref)
        remember(value)
        return value or None

    def resolve(self, profile: Profile) -> str:
        """The profile's key, or a KeyError_ saying how to provide it."""
        ref = profile.key_id
        value = self.lookup(ref)
        if value and not value.strip():
            if ref.startswith("env:"):
                raise KeyError_(f"profile {profile.name!r}: the key in {ref[4:]} is blank (only spaces); "
                                f"set it with export {ref[4:]}=… with the key")
            raise KeyError_(f"profile {profile.name!r}: the key in the keyring entry {ref!r} is blank (only spaces)",
                            StoreKey(ref, again=True))
        if value:
            if has_control_chars(value):  # an environment variable cannot carry it (a NUL ends execve)
                if ref.startswith("env:"):
                    raise KeyError_(f"profile {profile.name!r}: the key in {ref[4:]} holds control characters; "
                                    f"export {ref[4:]} again")
                raise KeyError_(f"profile {profile.name!r}: the key in the keyring entry {ref!r} holds control "
                                "characters", StoreKey(ref, again=True))
            return value
        if ref.startswith("env:"):
            raise KeyError_(
                f"profile {profile.name!r}: key = {ref!r} but {ref[4:]} is not set in ccs's environment; "
                f"export {ref[4:]}=… before running ccs"
            )
        raise KeyError_(f"profile {profile.name!r}: no key stored for id {ref!r}", StoreKey(ref))

    def presence(self, refs: list[str]) -> tuple[dict[str, bool], str | None]:
        """Key presence for the refs, or (what ``env:`` refs tell, the reason) when the keyring
        cannot be asked: every listing (list, doctor, the TUI) degrades the same way."""
        try:
            return (self.present(refs) if refs else {}), None
        except CcsError as exc:
            return {r: bool(self.environ.get(r[4:])) for r in refs if r.startswith("env:")}, str(exc)

    def present(self, refs: list[str]) -> dict[str, bool]:
        """Which of these key refs have a value. Straight searches on the Secret Service when it
        answers (no secret is read and keyring is not imported); else one keyring query for all ids."""
        out: dict[str, bool] = {}
        ids = sorted({r for r in refs if not r.startswith("env:")})
        for r in refs:
            if r.startswith("env:"):
                out[r] = bool(self.environ.get(r[4:]))
        if not ids:
            return out
        if self._backend is None:
            # lazy: keeps ccswitch_tui.keys.secret_service off `ccs run`'s imports
            from ccswitch_tui.keys import secret_service

            if secret_service.usable(self.environ):
                found = secret_service.present(SERVICE, ids)
                if isinstance(found, dict):  # else UNAVAILABLE: ask keyring
                    self._answered_fast = True
                    return out | found
        stored = self._stored_ids()
        for r in ids:
            out[r] = (r in stored) if stored is not None else self.get(r) is not None
        return out

    def _stored_ids(self) -> builtins.set[str] | None:  # ``set`` in this class is KeyStore.set
        backend = self.backend
        if not hasattr(backend, "get_preferred_collection"):
            return None

        def search() -> set[str]:
            collection = backend.get_preferred_collection()
            items = collection.search_items({"service": SERVICE})
            return {item.get_attributes().get("username", "") for item in items}

        return self._call("list stored keys", search)

    def salt(self) -> Salt:
        """The salt fingerprints are taken under (``keys.salt``), looked up once."""
        if self._salt is None:
            self._salt = current_salt(self.paths, self.environ)
        return self._salt

    def fingerprint(self, value: str) -> str:
        return fingerprint(value, self.salt().value)

"""What a command runs with: the environment, the folders, the profile store, the keys and the client
registry, each built when first asked for (so `--help` stays instant). Click-free: the launch path
(`ccs launch`, `ccs run`, the shims) uses it without loading click."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ccswitch_tui import tools
from ccswitch_tui.paths import Paths, resolve_paths
from ccswitch_tui.valueclass import field, valueclass

if TYPE_CHECKING:
    from ccswitch_tui.keys.keyring import KeyStore
    from ccswitch_tui.profiles.store import Store
    from ccswitch_tui.tools.registry import Registry


@valueclass
class Context:
    """Built once per invocation; everything is looked up lazily. ``_registry``: the client specs the
    command works with (default: every spec, loaded once; the launch path passes one that loaded
    only the client it launches)."""

    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    _paths: Paths | None = None
    _store: Store | None = None
    _keys: KeyStore | None = None
    _registry: Registry | None = None
    from_shim: bool = False  # started by a shim (`ccs use`): a one-prompt run prints no resume hint

    @property
    def paths(self) -> Paths:
        if self._paths is None:
            self._paths = resolve_paths(self.environ)
        return self._paths

    @property
    def registry(self) -> Registry:
        if self._registry is None:
            self._registry = tools.load()
        return self._registry

    @property
    def store(self) -> Store:
        if self._store is None:
            from ccswitch_tui.profiles.store import Store  # lazy: `ccs --version` and `--help` read no profile

            self._store = Store(self.paths, self._registry)
        return self._store

    @property
    def keys(self) -> KeyStore:
        if self._keys is None:
            from ccswitch_tui.keys.keyring import KeyStore  # lazy: only a command that reads keys

            self._keys = KeyStore(self.paths, self.environ)
        return self._keys

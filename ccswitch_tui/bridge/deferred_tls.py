"""aiohttp without its import-time TLS set-up: the bridge's server loads ~45 ms sooner.

``aiohttp.connector`` builds two SSL contexts when it is imported (a verified one, which reads and
parses the system's CA bundle, and an unverified one, which does the same), about 45 ms before the
bridge can answer its first request, although a loopback child talking to an ``http://`` upstream
never needs them. ``import_aiohttp()`` imports it with those two contexts replaced, during the
import only, by empty ones, then builds the real ones (with aiohttp's own function, so they are
exactly what aiohttp would have made) in a thread of their own, in parallel with the rest of the
server's loading: OpenSSL reads the bundle without holding the interpreter. A request to an
``https://`` upstream or through a proxy waits for them (``wait()``); in practice they are ready
long before a child's first request.

Fails closed: an empty context has no CA to trust, so even a request that did not wait could never
talk TLS to anyone unverified. If aiohttp's source does not build its contexts the way this module
expects, it is imported as it is. The ssl module is patched only while aiohttp imports, in the
bridge's loading thread; nothing else in a launch makes a TLS context meanwhile (the launch path
imports no HTTP client).
"""

from __future__ import annotations

import importlib.util
import os
import ssl
import sys
import threading
from types import ModuleType

# What aiohttp.connector does at import (aiohttp 3.9 to 3.14); anything else: import it as it is.
_EXPECTED = ("_SSL_CONTEXT_VERIFIED = _make_ssl_context(True)", "_SSL_CONTEXT_UNVERIFIED = _make_ssl_context(False)")

_ready = threading.Event()
_ready.set()  # cleared while the real contexts are being built
_lock = threading.Lock()


def _defers(source: str | None) -> bool:
    return source is not None and all(line in source for line in _EXPECTED)


def _source() -> str | None:
    """aiohttp.connector's source, found without importing aiohttp (``find_spec`` of a submodule
    would import its package, and so the connector, before it can be deferred)."""
    try:
        spec = importlib.util.find_spec("aiohttp")
        if spec is None or not spec.submodule_search_locations:
            return None
        with open(os.path.join(list(spec.submodule_search_locations)[0], "connector.py"), encoding="utf-8") as f:
            return f.read()
    except (OSError, ImportError, ValueError):
        return None


def import_aiohttp() -> None:
    """Import aiohttp (and its connector) with the connector's SSL contexts built in the background."""
    with _lock:
        if "aiohttp.connector" in sys.modules:
            return
        if not _defers(_source()):
            import aiohttp  # noqa: F401  # lazy: as it is, only on the bridge's loading thread

            return
        context_class = ssl.SSLContext
        create = ssl.create_default_context
        own = context_class.__dict__.get("set_default_verify_paths")

        def empty_default_context(*args: object, **kwargs: object) -> ssl.SSLContext:
            return context_class(ssl.PROTOCOL_TLS_CLIENT)  # verifies, and trusts no CA yet

        def no_verify_paths(self: ssl.SSLContext) -> None:
            return None

        ssl.create_default_context = empty_default_context  # type: ignore[assignment]  # for one import only
        context_class.set_default_verify_paths = no_verify_paths  # type: ignore[method-assign]  # likewise
        try:
            import aiohttp.connector as connector  # lazy: on the bridge's loading thread, ssl patched
        finally:
            ssl.create_default_context = create
            if own is None:
                del context_class.set_default_verify_paths
            else:
                context_class.set_default_verify_paths = own  # type: ignore[method-assign]  # put back
        _ready.clear()
        threading.Thread(target=_build, args=(connector,), name="ccs-bridge-tls", daemon=True).start()


def _build(connector: ModuleType) -> None:
    try:
        verified = connector._make_ssl_context(True)
        unverified = connector._make_ssl_context(False)
        connector._SSL_CONTEXT_VERIFIED = verified
        connector._SSL_CONTEXT_UNVERIFIED = unverified
    finally:
        _ready.set()


def ready() -> bool:
    return _ready.is_set()


def wait(timeout: float = 30.0) -> bool:
    """Block until the real contexts are in place (at once when they were never deferred)."""
    return _ready.wait(timeout)

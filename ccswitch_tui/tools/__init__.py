"""One module per client; the registry (``registry.Registry``) maps a tool name to its spec.

Adding a client is one new module whose ``TOOL`` is a ``spec.ToolSpec``, and one line in
``_MODULES``: profile validation, routing families, ``ps``/``inspect``, ``doctor``, ``check``,
export, the CLI and the TUI all ask the registry. Client modules never import each other, nor the
registry. Importing this package loads no spec: the faces (the CLI, the TUI, the shims) build the
registry they need (``load()``: every spec; ``for_launch(name)``: one) and pass it down.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the registry is imported when a face asks for one: a client module imports it never
    from ccswitch_tui.tools.registry import Registry
    from ccswitch_tui.tools.spec import AnySpec

# name → module, in the order every listing shows them; `run` (any command) comes last
_MODULES = {
    "claude": "claude",
    "codex": "codex",
    "gemini": "gemini",
    "opencode": "opencode",
    "kilo": "kilo",
    "qwen": "qwen",
    "aider": "aider",
    "run": "run",
}

# name → full module name of clients registered from Python with ``register`` (tests, plugins).
# Nothing ccs reads (no variable, no file) adds to it: code that calls ``register`` already runs
# inside ccs's interpreter (the tests put a sitecustomize on PYTHONPATH).
_EXTRA: dict[str, str] = {}
_DEFAULT: list[Registry] = []  # the registry of every spec, once built (``load``)


def modules() -> dict[str, str]:
    """Every registered name with its full module name, `run` (the last of ``_MODULES``) still last."""
    *clients_, last = _MODULES
    return {**{n: f"{__name__}.{_MODULES[n]}" for n in clients_}, **_EXTRA, last: f"{__name__}.{_MODULES[last]}"}


def names() -> tuple[str, ...]:
    """Every registered name, without loading a spec."""
    return tuple(modules())


def load() -> Registry:
    """The registry of every spec, loaded and checked once per process (until ``register``)."""
    from ccswitch_tui.tools.registry import Registry  # lazy: importing tools/ loads no registry (client modules do)

    if not _DEFAULT:
        _DEFAULT.append(Registry.load(modules()))
    return _DEFAULT[0]


def known() -> Registry:
    """A registry that knows every client from the index and loads a spec only when asked for what the
    index does not hold (the TUI's first frame: its launch keys and labels). Once ``load`` ran, or with
    a client added by ``register`` (not in the index), it is the registry of every spec."""
    from ccswitch_tui.tools.index import INDEX  # lazy: see for_launch()
    from ccswitch_tui.tools.registry import Registry  # lazy: see load()

    return load() if _DEFAULT or _EXTRA else Registry(modules(), INDEX)


def for_launch(name: str) -> Registry:
    """A registry that loads and checks only ``name``'s spec (the launch path); the other clients
    are known from the index. A name that is not registered gets the whole registry (whose error
    names the choices)."""
    from ccswitch_tui.tools.index import INDEX  # lazy: only a launch reads the index
    from ccswitch_tui.tools.registry import Registry  # lazy: see load()

    return Registry.for_launch(modules(), name, INDEX)


def register(name: str, module: str) -> AnySpec:
    """Add the client whose spec is ``module``'s ``TOOL`` (a full module name) after the built-in
    ones; it passes the same checks (tools/registry.py) or is not added."""
    from ccswitch_tui.tools.registry import RegistrationError, Registry  # lazy: see load()

    if name in _MODULES or name in _EXTRA:
        raise RegistrationError(f"client {name!r} ({module}) is already registered")
    _EXTRA[name] = module
    try:
        checked = Registry.load(modules())
    except BaseException:
        del _EXTRA[name]
        raise
    _DEFAULT[:] = [checked]
    return checked.get(name)


def unregister(name: str) -> None:
    """Remove a client ``register`` added (a test's, at its end)."""
    from ccswitch_tui.tools.registry import RegistrationError  # lazy: see load()

    if name not in _EXTRA:
        raise RegistrationError(f"client {name!r} was not added with register()")
    del _EXTRA[name]
    _DEFAULT.clear()

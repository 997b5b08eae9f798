"""The launch path's imports do not grow: `ccs run P -- true`, `ccs launch P codex -- --version` and a
shim started by name (`codex --version` after `ccs use P`) import exactly ccs's modules listed here,
no third-party package but jeepney (the Secret Service) and no standard-library package beyond those
listed (tested as the user runs them: ``python -I``, a real keyring). A change that adds one fails
here: take the import off the path, or add it to the list on purpose (and say why in the commit)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ccswitch_tui.keys.keyring import KeyStore
from ccswitch_tui.paths import Paths

KEY = "sk-modules-0123456789abcdefXYZ"
MAIN = ("import atexit, sys\n"
        "atexit.register(lambda: open(OUT, 'w').write('\\n'.join(sorted(sys.modules))))\n"
        "sys.argv[0] = 'ccs'\n"
        "from ccswitch_tui.cli import main\n"
        "main()\n")

# ccs's own modules (besides the launched client's spec and its helpers, listed per client below)
CCS = {
    "ccswitch_tui", "ccswitch_tui.atomic", "ccswitch_tui.cli", "ccswitch_tui.commands",
    "ccswitch_tui.commands.context", "ccswitch_tui.commands.launching", "ccswitch_tui.errors", "ccswitch_tui.keys",
    "ccswitch_tui.keys.dbus_wire", "ccswitch_tui.keys.extra",
    "ccswitch_tui.keys.keyring", "ccswitch_tui.keys.salt", "ccswitch_tui.keys.secret_service", "ccswitch_tui.launch",
    "ccswitch_tui.launch.environment", "ccswitch_tui.launch.isolation", "ccswitch_tui.launch.launcher",
    "ccswitch_tui.launch.launches", "ccswitch_tui.launch.layer_files", "ccswitch_tui.launch.layers",
    "ccswitch_tui.launch.liveness", "ccswitch_tui.launch.ownership", "ccswitch_tui.launch.plan",
    "ccswitch_tui.launch.shims", "ccswitch_tui.launch.spawn", "ccswitch_tui.model", "ccswitch_tui.paths",
    "ccswitch_tui.policy",
    "ccswitch_tui.policy.families", "ccswitch_tui.policy.ids", "ccswitch_tui.policy.loaders",
    "ccswitch_tui.policy.redact",
    "ccswitch_tui.policy.secret_forms",  # what ccs prints is filtered for every form of the key (patterns built lazily)
    "ccswitch_tui.policy.shapes", "ccswitch_tui.procfs", "ccswitch_tui.profiles", "ccswitch_tui.profiles.digest",
    "ccswitch_tui.profiles.pricing", "ccswitch_tui.profiles.schema", "ccswitch_tui.profiles.store",
    "ccswitch_tui.runs", "ccswitch_tui.runs.inplace", "ccswitch_tui.runs.manifests", "ccswitch_tui.runs.origin",
    "ccswitch_tui.safe_read", "ccswitch_tui.tempfiles", "ccswitch_tui.terminal_text", "ccswitch_tui.tools",
    "ccswitch_tui.tools.capabilities", "ccswitch_tui.tools.checker", "ccswitch_tui.tools.environment",
    "ccswitch_tui.tools.fields", "ccswitch_tui.tools.index", "ccswitch_tui.tools.layers", "ccswitch_tui.tools.quiet",
    "ccswitch_tui.tools.registry", "ccswitch_tui.tools.share", "ccswitch_tui.tools.spec", "ccswitch_tui.toml_cache",
    "ccswitch_tui.valueclass",  # @valueclass: the path's value classes without dataclasses (and inspect)
    "ccswitch_tui.launch.supervise",  # the child's supervision, which a resident launch's client runs alone
    # the resident launcher's client: asked first (it answers "not on" with one open of its folder)
    "ccswitch_tui.resident", "ccswitch_tui.resident.client", "ccswitch_tui.resident.wire",
    "ccswitch_tui.folders",  # where ccs's folders are, as strings: the resident's client and paths read it
}
# what each launch loads of the clients: `run` exports the URLs of [codex] and [claude] (reads_tables)
CLIENTS = {
    "run": {"ccswitch_tui.tools.run", "ccswitch_tui.tools.export_names", "ccswitch_tui.tools.codex",
            "ccswitch_tui.tools.codex.config", "ccswitch_tui.tools.claude"},
    "codex": {"ccswitch_tui.tools.codex", "ccswitch_tui.tools.codex.config", "ccswitch_tui.tools.codex.daemons"},
}
CLIENTS["shim"] = CLIENTS["codex"] | {"ccswitch_tui.shims"}  # `codex` typed by name after `ccs use p`

THIRD_PARTY: set[str] = set()  # the Secret Service is read by keys/dbus_wire.py, not jeepney
# the standard library's top-level packages (private ones aside, which move between Python versions)
STDLIB = {
    "abc", "array", "atexit", "binascii", "builtins", "codecs", "collections", "contextlib", "contextvars",
    "copyreg", "encodings", "enum", "errno", "fcntl", "fnmatch", "functools", "genericpath", "hashlib",
    "hmac", "importlib", "io", "ipaddress", "itertools", "json", "keyword", "marshal", "math", "ntpath", "operator",
    "os", "pathlib", "posix", "posixpath", "re", "reprlib", "select", "selectors", "signal", "site", "socket",
    "stat", "struct", "sys", "time", "types", "typing", "urllib", "warnings", "zipimport",
}
# what stays off the path: dataclasses (@valueclass instead: dataclasses compiles each class's methods,
# and loads inspect, ast, dis and tokenize to do it), subprocess (launch/spawn.py: with selectors,
# locale and threading, a twentieth of a launch) and the TOML parser (toml_cache.py: a launch finds
# its texts parsed; with datetime and string, a tenth)
NEVER = {"dataclasses", "inspect", "ast", "dis", "tokenize", "subprocess", "threading", "locale", "tomllib",
         "datetime", "string"}


def launched_modules(tmp_path: Path, env: dict[str, str], *args: str) -> set[str]:
    """The modules of a second launch: the first writes the Codex config.toml, every later one finds
    it and the profile parsed (toml_cache.py)."""
    warm = subprocess.run([sys.executable, "-I", "-c", "import sys; sys.argv[0] = 'ccs'\n" + MAIN.split("\n", 2)[2],
                           *args], env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert warm.returncode == 0, warm.stderr
    out = tmp_path / "modules.txt"
    code = f"OUT = {str(out)!r}\n" + MAIN
    r = subprocess.run([sys.executable, "-I", "-c", code, *args], env=env, capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    return set(out.read_text().split())


@pytest.fixture
def launch_env(tmp_path: Path, ccs_home: Paths, key_id: str) -> dict[str, str]:
    """A profile from a preset (every client's table) whose key is in the real keyring, and a `codex`
    that only says its version."""
    from ccswitch_tui.profiles.presets import new_profile_text
    from ccswitch_tui.profiles.store import Store

    Store(ccs_home).save_text("p", new_profile_text("p", "taotoken", key=key_id), create=True)
    KeyStore(ccs_home, os.environ).set(key_id, KEY)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "codex").write_text("#!/bin/sh\necho codex-cli 0.0.0\n")
    (bin_dir / "codex").chmod(0o755)
    return {**os.environ, "CCS_HOME": str(ccs_home.profiles.parent), "PATH": f"{bin_dir}:{os.environ['PATH']}"}


SHIM = ("import atexit, sys\n"  # what a shim's Python runs (launch/shim_setup.py), the modules written at exit
        "atexit.register(lambda: open(OUT, 'w').write('\\n'.join(sorted(sys.modules))))\n"
        "import ccswitch_tui.shims as s\n"
        "s.main()\n")


def shim_modules(tmp_path: Path, env: dict[str, str]) -> set[str]:
    """`codex --version` through the shim `ccs use p` wrote, as the shim starts ccs's Python."""
    home = Path(env["CCS_HOME"])
    used = subprocess.run([sys.executable, "-I", "-c", "import sys; sys.argv[0] = 'ccs'\n" + MAIN.split("\n", 2)[2],
                           "use", "p"], env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert used.returncode == 0, used.stderr
    out = tmp_path / "modules.txt"
    for _ in range(2):  # the second: the first wrote the Codex config.toml (see launched_modules)
        r = subprocess.run([sys.executable, "-I", "-c", f"OUT = {str(out)!r}\n" + SHIM, str(home / "profiles"),
                            str(home / "state"), "codex", "codex", "--version"], env=env, capture_output=True,
                           text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert r.returncode == 0 and "codex-cli 0.0.0" in r.stdout, r.stderr
    return set(out.read_text().split())


@pytest.mark.parametrize(("tool", "args"), [("run", ["run", "p", "--", "true"]),
                                            ("codex", ["launch", "p", "codex", "--", "--version"]),
                                            ("shim", [])])
def test_the_launch_path_imports_no_more_than_it_did(tmp_path, launch_env, tool, args):
    loaded = shim_modules(tmp_path, launch_env) if tool == "shim" else launched_modules(tmp_path, launch_env, *args)
    ours = {m for m in loaded if m.split(".")[0] == "ccswitch_tui"}
    assert ours == CCS | CLIENTS[tool], (f"added: {sorted(ours - CCS - CLIENTS[tool])}; "
                                         f"gone (take them off the list): {sorted((CCS | CLIENTS[tool]) - ours)}")
    # what site loads from the environment itself (setuptools' distutils shim) is not the launch path's
    others = {m.split(".")[0] for m in loaded} - {"ccswitch_tui", "__main__", "_distutils_hack", "sitecustomize"}
    stdlib = {m for m in others if m in sys.stdlib_module_names}
    assert others - stdlib == THIRD_PARTY  # no jeepney, click, textual, httpx, aiohttp
    new = {m for m in stdlib if not m.startswith("_")} - STDLIB
    assert not new, f"the launch path imports more of the standard library: {sorted(new)}"
    assert not stdlib & NEVER, f"the launch path imports {sorted(stdlib & NEVER)}: declare its classes with @valueclass"


# A recorded launch (`ccs run --record p -- true`) up to its child's fork: the bridge's socket, token
# and guard, not its server (the loading thread imports that, asyncio with it, once the child is forked:
# bridge/loading.py). Taken in the fork's first "after" hook, before the loading thread is woken, so
# the list does not race it.
RECORDED_MAIN = ("import atexit, os, sys\n"
                 "seen = []\n"
                 "os.register_at_fork(after_in_parent=lambda: seen or seen.append(sorted(sys.modules)))\n"
                 "atexit.register(lambda: open(OUT, 'w').write('\\n'.join(seen[0] if seen else ['no-fork'])))\n"
                 "sys.argv[0] = 'ccs'\n"
                 "from ccswitch_tui.cli import main\n"
                 "main()\n")
BRIDGE = {"ccswitch_tui.bridge", "ccswitch_tui.bridge.guard", "ccswitch_tui.bridge.handler",
          "ccswitch_tui.bridge.loading", "ccswitch_tui.bridge.records", "ccswitch_tui.bridge.reroute",
          "ccswitch_tui.bridge.routes", "ccswitch_tui.bridge.session", "ccswitch_tui.bridge.tally",
          "ccswitch_tui.bridge.usage_cells", "ccswitch_tui.fast_json", "ccswitch_tui.helper_spawn"}
RECORDED_STDLIB = STDLIB | {"threading"}  # the server's loading thread (it waits for the fork)
# the guard is started with posix_spawn (helper_spawn.py), the token made from os.urandom, the
# records' dates parsed only when there are records: none of these is on the path to the child
RECORDED_NEVER = NEVER - {"threading"} | {"secrets", "random", "base64", "logging", "traceback", "linecache",
                                          "ssl", "asyncio", "concurrent", "http", "_posixsubprocess"}


def test_a_recorded_launch_imports_no_more_than_it_did_until_its_child_starts(tmp_path, launch_env):
    launched_modules(tmp_path, launch_env, "run", "--record", "p", "--", "true")  # the config written, as above
    out = tmp_path / "recorded.txt"
    r = subprocess.run([sys.executable, "-I", "-c", f"OUT = {str(out)!r}\n" + RECORDED_MAIN, "run", "--record", "p",
                        "--", "true"], env=launch_env, capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    loaded = set(out.read_text().split())
    assert "no-fork" not in loaded
    ours = {m for m in loaded if m.split(".")[0] == "ccswitch_tui"}
    wanted = CCS | CLIENTS["run"] | BRIDGE
    assert ours == wanted, f"added: {sorted(ours - wanted)}; gone (take them off the list): {sorted(wanted - ours)}"
    others = {m.split(".")[0] for m in loaded} - {"ccswitch_tui", "__main__", "_distutils_hack", "sitecustomize"}
    stdlib = {m for m in others if m in sys.stdlib_module_names}
    assert others - stdlib == THIRD_PARTY
    new = {m for m in stdlib if not m.startswith("_")} - RECORDED_STDLIB
    assert not new, f"a recorded launch imports more of the standard library before its child: {sorted(new)}"
    assert not stdlib & RECORDED_NEVER, f"a recorded launch imports {sorted(stdlib & RECORDED_NEVER)} before its child"

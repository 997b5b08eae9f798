"""The client registry is a value (tools/registry.py): the faces build it, the launch path loads and
checks only the spec it launches, the policy's families come from it, and no client module imports it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ccswitch_tui import tools
from ccswitch_tui.policy.families import SHARED_ONLY, Families
from ccswitch_tui.tools.capabilities import TuiFace
from ccswitch_tui.tools.index import INDEX
from ccswitch_tui.tools.registry import RegistrationError, Registry, facts

ROOT = Path(__file__).resolve().parent.parent
CLIENT_MODULES = [f"ccswitch_tui.tools.{m}" for m in tools._MODULES.values()]


def fresh(code: str) -> str:
    """What ``code`` prints in a fresh interpreter (nothing of this process's imports)."""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_the_index_is_what_the_specs_say():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "registry_index.py"), "--check"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    full = tools.load()
    assert {s.name: facts(s) for s in full.specs()} == INDEX


def test_the_tuis_launch_keys_and_import_labels_from_the_index_are_the_specs():
    """The TUI's footer reads the launch keys from the index (``tools.known``), loading no spec: they are
    the ones the specs give, and a client added with ``register`` (not in the index) makes it load them."""
    full = tools.load()
    assert tools.known().launch_keys() == tuple((s.name, s.tui_key, s.short, s.label) for s in full.clients()
                                                if isinstance(s, TuiFace))
    for last in ("and", "/"):
        assert tools.known().importable_labels(last) == full.client_labels(last, full.importable())
    out = fresh("import sys\nfrom ccswitch_tui import tools\n"
                "keys = tools.known().launch_keys()\n"
                "print(len(keys), [m for m in sys.modules if m in ('ccswitch_tui.tools.spec', "
                "'ccswitch_tui.tools.claude')])")
    assert out.split() == [str(len(tools.known().launch_keys())), "[]"]


@pytest.mark.parametrize("module", CLIENT_MODULES)
def test_a_client_module_imports_neither_the_registry_nor_another_client(module):
    """Importing a client's module runs no registry (no import loop through importlib, no checks of
    the others) and loads no other client."""
    out = fresh(f"import sys, {module}\n"
                f"print(sorted(m for m in sys.modules if m == 'ccswitch_tui.tools.registry' or "
                f"(m in {CLIENT_MODULES!r} and m != {module!r})))")
    assert out.strip() == "[]"


def test_the_policy_holds_no_families_of_its_own():
    """Asked before any registry exists, the policy answers for the shared families, and raises for
    nothing; the clients' families are a value, two registries two values."""
    out = fresh("from ccswitch_tui import policy\n"
                "from ccswitch_tui.policy.families import SHARED_ONLY\n"
                "print(hasattr(policy, 'register_client_families'), hasattr(policy, 'routing_family'),\n"
                "      SHARED_ONLY.routing_family('OPENAI_API_KEY'), SHARED_ONLY.routing_family('ANTHROPIC_API_KEY'))")
    assert out.split() == ["False", "False", "openai", "None"]
    assert SHARED_ONLY.kind("HTTPS_PROXY") == "proxy" and Families().names() == ("openai", "proxy", "cloud")
    assert tools.load().families.routing_family("ANTHROPIC_API_KEY") == "claude"


SPEC = '''
from ccswitch_tui.valueclass import valueclass
from collections.abc import Mapping
from ccswitch_tui.tools import fields
from ccswitch_tui.tools.fields import string
from ccswitch_tui.tools.capabilities import TuiFace
from ccswitch_tui.tools.spec import ToolSpec


@valueclass(frozen=True, kw_only=True)
class Side:
    model: str = string("model", required=True)
    env: Mapping[str, str] = fields.env()


class Spec(ToolSpec[Side], TuiFace):
    name = "probe"
    label = "Probe"
    short = "Probe"
    program = "probe"
    tui_key = {key!r}
    side = Side
    families = {{"probe": r"PROBE_.*"}}
    layers = ()
    layers_reason = "a probe reads nothing"

    def plan(self, *args, **kwargs):
        raise AssertionError


TOOL = Spec()
'''


def probe_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str, name: str) -> dict[str, str]:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(SPEC.format(key=key)))
    monkeypatch.syspath_prepend(str(tmp_path))
    modules = tools.modules()
    return {**{n: m for n, m in modules.items() if n != "run"}, "probe": name, "run": modules["run"]}


def test_two_registries_are_two_values(tmp_path, monkeypatch):
    modules = probe_modules(tmp_path, monkeypatch, "y", "probe_value")
    with_probe, without = Registry.load(modules), tools.load()
    assert "probe" in with_probe.families.names() and "probe" not in without.families.names()
    assert with_probe.families.routing_family("PROBE_KEY") == "probe"
    assert without.families.routing_family("PROBE_KEY") is None


def test_the_launch_path_loads_only_the_spec_it_launches():
    out = fresh("import json, sys\n"
                "from ccswitch_tui import tools\n"
                "r = tools.for_launch('codex')\n"
                "loaded = sorted(m for m in sys.modules if m.startswith('ccswitch_tui.tools.'))\n"
                "names, labels = r.families.names(), [r.label(n) for n in r.names()]\n"
                "full = tools.load()\n"
                "print(json.dumps([r.complete, loaded, names == full.families.names(),\n"
                "                  labels == [full.label(n) for n in full.names()], r.launchable()]))")
    complete, loaded, same_families, same_labels, launchable = json.loads(out)
    clients = [m for m in loaded if m in CLIENT_MODULES]
    assert not complete and clients == ["ccswitch_tui.tools.codex"], loaded
    assert same_families and same_labels and launchable == [s.name for s in tools.load().clients()]


def test_the_launch_path_checks_the_spec_it_launches(tmp_path, monkeypatch):
    """A spec the registry would refuse is refused on the launch path too, by itself (its TUI key is
    one of the TUI's own), whether the index knows it or not."""
    modules = probe_modules(tmp_path, monkeypatch, "q", "probe_bad_key")
    entry = {**facts(tools.load().get("codex")), "label": "Probe", "families": {"probe": r"PROBE_.*"},
             "family_effects": {}}
    for index in ({**INDEX, "probe": entry}, INDEX):
        with pytest.raises(RegistrationError, match="tui_key 'q' is the TUI's own key"):
            Registry.for_launch(modules, "probe", index)


def test_an_index_that_disagrees_with_the_spec_is_not_trusted():
    stale = {**INDEX, "codex": {**INDEX["codex"], "families": {"codex": r"CODEX_NOT_.*"}}}
    r = Registry.for_launch(tools.modules(), "codex", stale)
    assert r.complete and r.families.routing_family("CODEX_HOME") == "codex"


# --- profiles read on the launch path ---------------------------------------------------------------

PROFILE = """schema = 1
[provider]
name = "P"
base_url = "https://p.example/v1"
key = "env:P_KEY"
[codex]
model = "m"
[run]
export = ["openai"]
"""


def run_ccs(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CCS_HOME": str(home), "P_KEY": "sk-registry-0123456789abcdefXYZ"}
    return subprocess.run([sys.executable, "-m", "ccswitch_tui", *args], capture_output=True, text=True, env=env,
                          timeout=60)


def test_a_launch_checks_the_tables_it_uses(tmp_path):
    """`ccs run` reads [run] and the [codex] table it exports the URL of: a mistake there stops it as
    before. A mistake in a table it does not use ([gemini]) is reported by every command that reads the
    whole profile, and by a launch of that client, but does not stop this one."""
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "p.toml").write_text(PROFILE + '[gemini]\nmodel = "g"\nbogus = 1\n')
    r = run_ccs(tmp_path, "run", "p", "--", "sh", "-c", "echo $OPENAI_BASE_URL")
    assert (r.returncode, r.stdout) == (0, "https://p.example/v1\n"), r.stderr
    listed = run_ccs(tmp_path, "list")
    assert "[gemini].bogus" in listed.stdout + listed.stderr
    r = run_ccs(tmp_path, "launch", "p", "gemini")
    assert r.returncode == 2 and "unknown field [gemini].bogus" in r.stderr
    (profiles / "p.toml").write_text(PROFILE.replace('model = "m"', 'model = "m"\nbogus = 1'))
    r = run_ccs(tmp_path, "run", "p", "--", "true")
    assert r.returncode == 2 and "unknown field [codex].bogus" in r.stderr and len(r.stderr.splitlines()) == 1


def test_the_profile_digest_counts_the_tables_the_launch_uses(tmp_path):
    from ccswitch_tui.profiles.digest import profile_digest
    from ccswitch_tui.profiles.store import profile_from_text

    base = profile_from_text("p", PROFILE + '[gemini]\nmodel = "g"\n')
    other_client = profile_from_text("p", PROFILE + '[gemini]\nmodel = "g2"\n')
    run_table = profile_from_text("p", PROFILE.replace('model = "m"', 'model = "m2"') + '[gemini]\nmodel = "g"\n')
    used = ("run", *tools.load().get("run").reads_tables)
    assert profile_digest(base, used) == profile_digest(other_client, used)
    assert profile_digest(base, used) != profile_digest(run_table, used)  # [codex] is what `ccs run` exports
    assert profile_digest(base, ("gemini",)) != profile_digest(other_client, ("gemini",))

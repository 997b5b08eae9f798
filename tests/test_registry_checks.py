"""The registry refuses a client spec that would collide with another or with the TUI, or whose
routing families would miss or overreach, with one line naming the spec; the registry is unchanged
after a refusal. The checks run whenever the registry loads, so every command and the TUI are
covered."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from ccswitch_tui import tools
from ccswitch_tui.tools.capabilities import Doctoring, Probing, Resuming
from ccswitch_tui.tools.registry import RESERVED_KEYS, RegistrationError

SPEC = '''
from ccswitch_tui.valueclass import valueclass
from collections.abc import Mapping
from ccswitch_tui.tools import fields
from ccswitch_tui.tools.fields import string
from ccswitch_tui.tools.capabilities import Doctoring, Probing, Resuming
from ccswitch_tui.tools.spec import ToolSpec


@valueclass(frozen=True, kw_only=True)
class Side:
    model: str = string("model", required=True)
    env: Mapping[str, str] = fields.env()


class Spec(ToolSpec[Side]{bases}):
    name = {name!r}
    label = "Probe"
    short = {short!r}
    program = "probe"
    tui_key = {key!r}
    side = Side
    families = {families!r}
    exe_names = {exes!r}
    layers = {layers}
    layers_reason = {reason!r}

    def plan(self, *args, **kwargs):
        raise AssertionError
{extra}


TOOL = Spec()
'''


def register(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, name: str = "probe",
             short: str = "Probe", key: str | None = "y", families: dict[str, str] | None = None,
             exes: tuple[str, ...] = (), layers: str = "()", reason: str = "a probe reads nothing",
             bases: str = "", extra: str = "") -> None:
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(SPEC.format(
        name=name, short=short, key=key, families=families if families is not None else {"probe": r"PROBE_.*"},
        exes=exes, layers=layers, reason=reason, bases=bases, extra=extra)))
    monkeypatch.syspath_prepend(str(tmp_path))
    tools.register(name, module)


CASES = [
    ("dup_key", {"key": "c"}, "tui_key 'c' is claude's launch key; pick one of the free keys: f"),
    ("quit_key", {"key": "q"}, "tui_key 'q' is the TUI's own key"),
    ("long_key", {"key": "ctrl+y"}, "tui_key 'ctrl+y' must be one lower-case letter or digit"),
    ("long_short", {"short": "ProbeProbeProbe"}, "short = 'ProbeProbeProbe' must be 1-10 characters"),
    ("no_family", {"families": {}}, "declares no routing family"),
    ("empty_family", {"families": {"probe": ""}}, "routing family 'probe' has an empty regex"),
    ("bad_family", {"families": {"probe": "PROBE_(.*"}}, "routing family 'probe' regex 'PROBE_(.*' is invalid"),
    ("all_family", {"families": {"probe": ".*"}}, "matches the empty name"),
    ("group_family", {"families": {"probe": "PROBE_KEY|(A|B)_URL"}}, "alternative '(A' does not start with a literal"),
    ("path_family", {"families": {"probe": "P.*"}}, "reaches PATH, PWD, which every launch needs"),
    ("optional_family", {"families": {"probe": "X?"}}, "matches the empty name"),
    # a family that takes over a shared one, or another client's: routing_family would answer with it
    ("openai_family", {"families": {"probe": r"PROBE_.*|OPENAI_.*"}}, "overlaps the policy's shared family 'openai'"),
    ("openai_base", {"families": {"probe": r"OPENAI_BASE_URL"}}, "overlaps the policy's shared family 'openai'"),
    ("proxy_family", {"families": {"probe": r"HTTPS_PROXY|PROBE_.*"}}, "overlaps the policy's shared family 'proxy'"),
    ("claude_family", {"families": {"probe": r"ANTHROPIC_BASE_URL"}}, "overlaps claude's family 'claude'"),
    ("wide_family", {"families": {"probe": r"CODEX_H.*"}}, "overlaps codex's family 'codex'"),
    ("same_family", {"families": {"gemini": r"PROBE_.*"}}, "overlaps gemini's family 'gemini'"),
    # an executable or script another client's processes have: ps could not tell them apart
    ("dup_exe", {"exes": ("claude",)}, "executable or script 'claude' is claude's too"),
    ("dup_script", {"exes": ("@openai/codex/bin/codex.js",)}, "is codex's too"),
    # its layers: declared, or an empty list with the reason
    ("no_layers", {"layers": "None"}, "declares no layers"),
    ("no_reason", {"reason": ""}, "declares an empty list of layers without layers_reason"),
    # an optional capability: claimed or begun, it is implemented completely
    ("claimed_probing", {"bases": ", Probing"}, "claims Probing but lacks probes"),
    ("claimed_doctoring", {"bases": ", Doctoring, Probing", "extra": "    def probes(self, plan, profile):\n"
                           "        return []\n"}, "claims Doctoring but lacks doctor"),
    ("half_resuming", {"extra": "    def batch(self, args):\n        return False\n"},
     "implements part of Resuming but lacks resume_command"),
    ("half_claimed", {"bases": ", Resuming", "extra": "    def resume_command(self, plan, since):\n"
                      "        return None\n"}, "claims Resuming but lacks batch"),
]


@pytest.mark.parametrize(("module", "attrs", "message"), CASES, ids=[c[0] for c in CASES])
def test_a_bad_spec_is_refused_with_one_line_naming_it(tmp_path, monkeypatch, module, attrs, message):
    before = tools.names()
    with pytest.raises(RegistrationError) as err:
        register(tmp_path, monkeypatch, module, name=module, **attrs)
    text = str(err.value)
    assert f"client spec Spec ({module!r})" in text and message in text and "\n" not in text
    assert tools.names() == before and module not in tools.load().families.names()


def test_a_name_registered_twice_or_under_another_name_is_refused(tmp_path, monkeypatch):
    with pytest.raises(RegistrationError, match="'claude' .*already registered"):
        tools.register("claude", "ccswitch_tui.tools.gemini")
    (tmp_path / "misnamed.py").write_text(textwrap.dedent(SPEC.format(
        name="other", short="O", key="y", families={"probe": r"PROBE_.*"}, exes=(), layers="()", reason="none",
        bases="", extra="")))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RegistrationError, match="says name = 'other'; register it under its own name"):
        tools.register("misnamed", "misnamed")
    assert "misnamed" not in tools.names()


def test_a_good_spec_joins_every_listing_and_leaves_cleanly(tmp_path, monkeypatch):
    register(tmp_path, monkeypatch, "goodprobe", name="goodprobe", families={"goodprobe": r"GOODPROBE_.*"})
    try:
        assert tools.names()[-2:] == ("goodprobe", "run")  # `run` stays last
        assert tools.load().get("goodprobe").label == "Probe" and "goodprobe" in tools.load().families.names()
        assert tools.load().families.routing_prefilter().search(b"\0GOODPROBE_KEY=x")
    finally:
        tools.unregister("goodprobe")
    assert "goodprobe" not in tools.names() and "goodprobe" not in tools.load().families.names()


def test_a_spec_asks_for_a_capability_by_implementing_or_claiming_it(tmp_path, monkeypatch):
    """The faces ask ``isinstance(spec, Probing)``: a spec has a capability when it implements its
    methods (claimed among its bases or not), and lacks it otherwise."""
    register(tmp_path, monkeypatch, "plainprobe", name="plainprobe", families={"plainprobe": r"PLAINPROBE_.*"})
    register(tmp_path, monkeypatch, "fullprobe", name="fullprobe", key="z", families={"fullprobe": r"FULLPROBE_.*"},
             bases=", Resuming", extra="    def probes(self, plan, profile):\n        return []\n"
             "    def resume_command(self, plan, since):\n        return None\n"
             "    def batch(self, args):\n        return True\n")
    try:
        plain, full = tools.load().get("plainprobe"), tools.load().get("fullprobe")
        assert not any(isinstance(plain, c) for c in (Probing, Resuming, Doctoring))
        assert isinstance(full, Probing) and isinstance(full, Resuming) and not isinstance(full, Doctoring)
    finally:
        tools.unregister("plainprobe")
        tools.unregister("fullprobe")


def test_the_built_in_clients_pass_and_their_keys_are_free():
    keys = [s.tui_key for s in tools.load().clients() if s.tui_key]
    assert len(keys) == len(set(keys)) and not set(keys) & RESERVED_KEYS
    assert sys.modules["ccswitch_tui.tools.registry"]  # loaded with the registry, checks included


def test_nothing_outside_python_can_add_a_client():
    """Only code already running in ccs's interpreter adds a client (``tools.register``): the registry
    reads no variable and no file that could name a module, so a hostile repository or environment
    cannot make ccs import its code (PYTHONPATH aside, which runs code in any Python anyway)."""
    from test_new_clients import code_words

    root = Path(tools.__file__).parent
    for module in ("__init__.py", "registry.py"):
        words = code_words(root / module)
        assert not words & {"environ", "getenv", "open", "read", "glob", "entry", "points"}, module

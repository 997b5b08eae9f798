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
from ccswitch_tui.tools.capabilities import Doctoring, Probing, Resuming, TuiFace
from ccswitch_tui.tools.registry import RESERVED_KEYS, RegistrationError

SPEC = '''
from ccswitch_tui.valueclass import valueclass
from collections.abc import Mapping
from ccswitch_tui.tools import fields
from ccswitch_tui.tools.fields import string
from ccswitch_tui.tools.capabilities import Doctoring, Probing, Resuming, TuiFace
from ccswitch_tui.tools.spec import ToolSpec


@valueclass(frozen=True, kw_only=True)
class Side:
    model: str = string("model", required=True)
    env: Mapping[str, str] = fields.env()


class Spec(ToolSpec[Side]{bases}):
    name = {name!r}
    label = "Probe"
    program = "probe"
{face}    side = Side
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
        name=name, face=face(short, key), families=families if families is not None else {"probe": r"PROBE_.*"},
        exes=exes, layers=layers, reason=reason, bases=(", TuiFace" if key else "") + bases, extra=extra)))
    monkeypatch.syspath_prepend(str(tmp_path))
    tools.register(name, module)


def face(short: str, key: str | None) -> str:
    """The spec's TUI face (its key and footer word, claimed among its bases), or none without a key."""
    return f"    tui_key = {key!r}\n    short = {short!r}\n" if key is not None else ""


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
    # its TUI face: claimed or begun, both its key and its footer word
    ("claimed_face", {"key": None, "bases": ", TuiFace"}, "claims TuiFace but lacks tui_key, short"),
    ("half_face", {"key": None, "extra": "    short = 'Probe'\n"}, "implements part of TuiFace but lacks tui_key"),
    ("empty_short", {"short": ""}, "claims TuiFace but lacks short"),
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
        name="other", face=face("O", "y"), families={"probe": r"PROBE_.*"}, exes=(), layers="()", reason="none",
        bases=", TuiFace", extra="")))
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


def test_a_spec_without_a_tui_face_registers_and_has_no_launch_key(tmp_path, monkeypatch):
    """The TUI face is optional: a spec without one joins the registry (and the launch path) and has no
    key a later spec's could collide with; the TUI lists it in its launch menu by its label
    (tests/test_adding_a_client.py launches one from the CLI and from that menu)."""
    register(tmp_path, monkeypatch, "facelessprobe", name="facelessprobe", key=None,
             families={"facelessprobe": r"FACELESSPROBE_.*"})
    try:
        spec = tools.load().get("facelessprobe")
        assert spec in tools.load().clients() and not isinstance(spec, TuiFace)
        assert not hasattr(spec, "tui_key") and not hasattr(spec, "short")
        assert tools.for_launch("facelessprobe").get("facelessprobe").label == "Probe"
        # its key is not taken: a later spec may use the one a faceless spec could have had
        register(tmp_path, monkeypatch, "keyedprobe", name="keyedprobe", key="y",
                 families={"keyedprobe": r"KEYEDPROBE_.*"})
        assert isinstance(tools.load().get("keyedprobe"), TuiFace)
    finally:
        tools.unregister("facelessprobe")
        if "keyedprobe" in tools.names():
            tools.unregister("keyedprobe")


def test_two_specs_with_one_tui_key_are_refused(tmp_path, monkeypatch):
    """Two specs from outside the package, each fine alone, cannot share a launch key."""
    register(tmp_path, monkeypatch, "firstkey", name="firstkey", key="y", families={"firstkey": r"FIRSTKEY_.*"})
    try:
        with pytest.raises(RegistrationError, match="tui_key 'y' is firstkey's launch key"):
            register(tmp_path, monkeypatch, "secondkey", name="secondkey", key="y",
                     families={"secondkey": r"SECONDKEY_.*"})
        assert "secondkey" not in tools.names()
    finally:
        tools.unregister("firstkey")


def test_the_built_in_clients_pass_and_their_keys_are_free():
    keys = [s.tui_key for s in tools.load().clients() if isinstance(s, TuiFace)]
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

"""The type check stays on: the test script runs mypy before pytest, and the strict packages stay strict."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
STRICT = {"ccswitch_tui.model", "ccswitch_tui.policy", "ccswitch_tui.tools", "ccswitch_tui.runs"}
# mypy's --strict flags that an override can set (the global ones are set once, for every module)
STRICT_FLAGS = ("disallow_any_generics", "disallow_subclassing_any", "disallow_untyped_calls", "disallow_untyped_defs",
                "disallow_incomplete_defs", "disallow_untyped_decorators", "warn_return_any", "no_implicit_reexport",
                "strict_equality", "extra_checks")


def test_the_strict_packages_get_every_strict_flag():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["packages"] == ["ccswitch_tui"] and config["warn_unused_ignores"] is True
    strict = [o for o in config["overrides"] if all(o.get(flag) is True for flag in STRICT_FLAGS)]
    covered = {m.removesuffix(".*") for o in strict for m in o["module"]}
    assert STRICT <= covered


def test_the_test_script_type_checks_before_the_tests():
    script = (ROOT / "scripts" / "test.sh").read_text()
    assert "if ! .venv/bin/mypy; then" in script
    assert script.index(".venv/bin/mypy") < script.index("pytest")

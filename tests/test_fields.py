"""A client's table is declared once (tools/fields.py): the allowed names, validation, ``show --json``,
the editor's form, export's secret fields and the env tables all come from the side dataclass, and a
spec that lacks a required piece fails when it is built (its module's import), not at launch."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ccswitch_tui import tools
from ccswitch_tui import valueclass as vc
from ccswitch_tui.errors import ProfileError
from ccswitch_tui.model import LaunchPlan, Profile, Provider
from ccswitch_tui.paths import Paths
from ccswitch_tui.tools import fields
from ccswitch_tui.tools.checker import Checker
from ccswitch_tui.tools.fields import boolean, declare, integer, select, string, string_list, url
from ccswitch_tui.tools.spec import ToolSpec
from ccswitch_tui.valueclass import valueclass

PROVIDER = Provider(name="P", base_url="https://gw.example/api", key="env:PKEY")


@valueclass(frozen=True, kw_only=True)
class ToySide:
    base_url: str = url(hint="default: the provider's")
    model: str = string("model", required=True)
    token: str | None = string("token", secret=True)
    mode: str = select("mode", ("fast", "slow"), default="fast")
    verbose: bool | None = boolean("verbose")
    retries: int | None = integer("retries")
    tags: tuple[str, ...] = string_list("tags")
    slug: str = string("slug", default_from=lambda provider, name: name.upper())
    env: Mapping[str, str] = fields.env()
    derived: str = ""  # not a table field: refine fills it


class ToySpec(ToolSpec[ToySide]):
    name = "toy"
    label = "Toy"
    side = ToySide

    def refine(self, values: dict[str, Any], t: Mapping[str, Any], c: Checker, provider: Provider,
               profile_name: str) -> None:
        if values.get("mode") == "slow" and values.get("retries"):
            raise c.fail("[toy].retries needs mode = \"fast\"", "[toy].retries")
        values["derived"] = f"{values['model']}@{values['base_url']}"

    def plan(self, profile: Profile, key: str, parent_env: Mapping[str, str], cwd: Path, *,
             paths: Paths, args: tuple[str, ...] = (), launch_id: str | None = None,
             isolate: bool = False) -> LaunchPlan:
        raise AssertionError("not launched here")


def parse(table: dict[str, Any]) -> ToySide:
    spec = ToySpec()
    c = Checker("p.toml", tools.load().families)
    return spec.parse(c.table(table, "[toy]", spec.field_names), c, PROVIDER, "p")


def test_everything_about_the_table_comes_from_the_one_declaration():
    spec = ToySpec()
    assert spec.field_names == ("base_url", "model", "token", "mode", "verbose", "retries", "tags", "slug", "env")
    assert spec.secret_fields == ("token",)
    editor = {f.key: f for f in fields.editor_form(spec.name, spec.fields)}
    assert set(editor) == set(spec.field_names)
    assert editor["mode"].choices == (("default (fast)", ""), ("fast", "fast"), ("slow", "slow"))
    assert editor["verbose"].kind == "bool" and editor["retries"].kind == "int"
    assert (editor["env"].kind, editor["env"].label) == ("env", "[toy.env]")
    assert editor["base_url"].placeholder == "default: the provider's"

    side = parse({"model": "m", "retries": 2, "verbose": True, "tags": ["a"], "env": {"X": "1"}})
    assert side == ToySide(base_url=PROVIDER.base_url, model="m", retries=2, verbose=True, tags=("a",), slug="P",
                           env={"X": "1"}, derived=f"m@{PROVIDER.base_url}")
    assert spec.side_dict(side) == {"base_url": PROVIDER.base_url, "model": "m", "token": None, "mode": "fast",
                                    "verbose": True, "retries": 2, "tags": ["a"], "slug": "P", "env": {"X": "1"}}
    assert spec.env_tables(side) == {"[toy.env]": {"X": "1"}}


@pytest.mark.parametrize(("table", "message", "place"), [
    ({}, "p.toml: [toy].model is required", "[toy].model"),
    ({"model": "m", "mode": "medium"}, "[toy].mode 'medium' must be one of: fast, slow", "[toy].mode"),
    ({"model": "m", "retries": "3"}, "[toy].retries must be a whole number", "[toy].retries"),
    ({"model": "m", "retries": True}, "[toy].retries must be a whole number", "[toy].retries"),
    ({"model": "m", "verbose": "yes"}, "[toy].verbose must be true or false", "[toy].verbose"),
    ({"model": "m", "base_url": "ftp://x"}, "is not an http(s) URL", "[toy].base_url"),
    ({"model": "m", "env": {"A B": "1"}}, "[toy.env].A B is not a valid environment variable name", "[toy.env].A B"),
    ({"model": "m", "mode": "slow", "retries": 1}, "[toy].retries needs mode", "[toy].retries"),
    ({"model": "m", "retires": 1}, "unknown field [toy].retires; did you mean 'retries'?", "[toy].retires"),
])
def test_bad_values_name_their_field(table, message, place):
    with pytest.raises(ProfileError) as err:
        parse(table)
    assert message in str(err.value) and err.value.field == place


def test_a_spec_missing_a_piece_fails_when_built_not_at_launch():
    class NoPlan(ToolSpec[ToySide]):
        name, label, side = "noplan", "No plan", ToySide

    with pytest.raises(TypeError, match="abstract"):
        NoPlan()

    class NoSide(ToySpec):
        name = "noside"
        side = None  # type: ignore[assignment]

    with pytest.raises(TypeError, match="NoSide .*has no side"):
        NoSide()

    class NoLabel(ToySpec):
        label = ""

    with pytest.raises(TypeError, match="NoLabel has no label"):
        NoLabel()

    with pytest.raises(TypeError, match="kind 'number'"):
        declare("number")
    with pytest.raises(TypeError, match="choices"):
        declare("select")
    with pytest.raises(TypeError, match="default 'medium' is not one of its choices"):
        declare("select", choices=("fast", "slow"), default="medium")

    @valueclass(frozen=True, kw_only=True)
    class VarsSide:
        variables: Mapping[str, str] = fields.env()

    class Vars(ToySpec):
        side = VarsSide  # type: ignore[assignment]

    with pytest.raises(TypeError, match="Vars .*name the field env, not 'variables'"):
        Vars()


def test_every_registered_spec_declares_its_table_in_its_side():
    """No spec keeps a hand-written list beside its side: the table's names are the side's fields."""
    for spec in tools.load().specs():
        assert vc.is_valueclass(spec.side), spec.name
        declared = [f.name for f in vc.fields(spec.side) if "ccs.field" in f.metadata]
        assert list(spec.field_names) == declared, spec.name
        form = fields.editor_form(spec.name, spec.fields)
        assert [f.key for f in form] == [f.name for f in spec.fields if f.editor], spec.name

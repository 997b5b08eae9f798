"""A client's profile table, declared once.

The side value class (``@valueclass``) a client module writes *is* the declaration: each attribute that is a field of
the table is made with one of the helpers below (``string``, ``url``, ``select``, ``boolean``,
``integer``, ``env``, ``string_list``, ``declare``), which store a ``Field`` in the attribute's
metadata. From that one declaration ccs derives

- the field names a table may hold (anything else gets a did-you-mean),
- validation and the side itself (``parse_values``; a spec adds cross-field rules in ``refine``),
- ``ccs show --json`` (``side_dict``),
- the TUI editor's form (``editor_form``),
- the fields an export empties (``secret=True``),
- the variable tables checked for credentials (``env`` fields).

An attribute made without a helper (plain ``field`` or a default) is not part of the
table: the spec fills it in ``refine`` (e.g. a value derived from two fields).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ccswitch_tui import valueclass as _vc
from ccswitch_tui.model import Provider
from ccswitch_tui.policy import mask
from ccswitch_tui.tools.checker import Checker
from ccswitch_tui.valueclass import valueclass

_META = "ccs.field"
KINDS = ("string", "url", "select", "bool", "int", "env", "list", "exports")


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # no static default: absent means None, the ``default_from``, or an error

# The value of an absent field, computed from the profile: (its provider, the profile's name) → value.
DefaultFrom = Callable[[Provider, str], Any]
# A field whose check the kinds above do not cover: (the table, the checker, "[tool]", the field's name) → value.
Parse = Callable[[Mapping[str, Any], Checker, str, str], Any]


def provider_url(provider: Provider, profile_name: str) -> str:
    """``default_from`` of a base URL that falls back to the profile's provider."""
    return provider.base_url


@valueclass(frozen=True)
class Field:
    """One field of a client's table."""

    kind: str = "string"  # one of KINDS
    label: str = ""  # the editor's label; default: the name
    hint: str = ""  # the editor's placeholder: what the field does, its default, an example
    choices: tuple[str, ...] = ()  # the values a select (or the exports checkboxes) may take
    default: Any = MISSING  # the side's value when the table leaves the field out
    default_from: DefaultFrom | None = None  # … or that value computed from the profile
    required: bool = False  # the table must hold it ("[tool].name is required")
    secret: bool = False  # an export empties it
    editor: bool = True  # shown in the TUI's form
    parse: Parse | None = None  # a check of its own instead of the kind's
    name: str = ""  # the attribute's name (filled in by ``table_fields``)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise TypeError(f"field kind {self.kind!r} is not one of: {', '.join(KINDS)}")
        if self.kind == "select" and not self.choices:
            raise TypeError("a select field needs its choices")
        if self.kind == "select" and self.default not in (None, MISSING) and self.default not in self.choices:
            raise TypeError(f"a select field's default {self.default!r} is not one of its choices")


def declare(kind: str = "string", label: str = "", *, hint: str = "", choices: tuple[str, ...] = (),
            default: Any = MISSING, default_from: DefaultFrom | None = None, required: bool = False,
            secret: bool = False, editor: bool = True, parse: Parse | None = None) -> Any:
    """A side attribute that is a field of the table (use it as the attribute's default)."""
    f = Field(kind, label, hint, choices, default, default_from, required, secret, editor, parse)
    meta = {_META: f}
    if kind == "env":
        return _vc.field(default_factory=dict, metadata=meta)
    if kind in ("list", "exports") and default is MISSING:
        return _vc.field(default=(), metadata=meta)
    if default is not MISSING:
        return _vc.field(default=default, metadata=meta)
    if required or default_from is not None:
        return _vc.field(metadata=meta)  # the side cannot be built without it
    return _vc.field(default=None, metadata=meta)


def string(label: str = "", *, hint: str = "", required: bool = False, default: Any = MISSING,
           default_from: DefaultFrom | None = None, secret: bool = False, parse: Parse | None = None) -> Any:
    return declare("string", label, hint=hint, required=required, default=default, default_from=default_from,
                   secret=secret, parse=parse)


def url(label: str = "base URL", *, hint: str = "", required: bool = False,
        default_from: DefaultFrom | None = provider_url) -> Any:
    """An http(s) URL; by default it falls back to the provider's base URL."""
    return declare("url", label, hint=hint, required=required, default_from=default_from)


def select(label: str, choices: tuple[str, ...], *, default: Any = None, hint: str = "") -> Any:
    return declare("select", label, hint=hint, choices=choices, default=default)


def boolean(label: str = "", *, default: Any = None, hint: str = "") -> Any:
    return declare("bool", label, hint=hint, default=default)


def integer(label: str = "", *, default: Any = None, hint: str = "") -> Any:
    return declare("int", label, hint=hint, default=default)


def env(label: str = "") -> Any:
    """The table's variable sub-table (``[tool.env]``): checked for names, values and credentials."""
    return declare("env", label)


def string_list(label: str = "", *, hint: str = "") -> Any:
    return declare("list", label, hint=hint)


def table_fields(side: type) -> tuple[Field, ...]:
    """The table's fields, in the order the side declares them."""
    if not _vc.is_valueclass(side):
        raise TypeError(f"{side!r} is not a value class (decorate it with @valueclass)")
    out = tuple(_vc.replace(f.metadata[_META], name=f.name)
                for f in _vc.fields(side) if _META in f.metadata)
    for f in out:
        if f.kind == "env" and f.name != "env":
            raise TypeError(f"the variable table is the [tool.env] sub-table: name the field env, not {f.name!r}")
    return out


def read_field(f: Field, table: Mapping[str, Any], c: Checker, tool: str) -> Any:
    """The field's value as written (checked), or None when the table leaves it out."""
    where = f"[{tool}]"
    if f.parse is not None:
        return f.parse(table, c, where, f.name)
    if f.kind == "url":
        return c.url(table, f.name, where, required=f.required)
    if f.kind == "select":
        value = c.choice(table, f.name, where, f.choices)
        if value is None and f.required:
            raise c.fail(f"{where}.{f.name} is required", f"{where}.{f.name}")
        return value
    if f.kind == "bool":
        return c.boolean(table, f.name, where)
    if f.kind == "int":
        return c.integer(table, f.name, where)
    if f.kind == "env":
        return c.env_table(table.get(f.name), f"[{tool}.{f.name}]")
    if f.kind in ("list", "exports"):
        return tuple(c.string_list(table, f.name, where)) if f.name in table else None
    return c.string(table, f.name, where, required=f.required)


def parse_values(fields: tuple[Field, ...], table: Mapping[str, Any], c: Checker, tool: str,
                 provider: Provider, profile_name: str) -> dict[str, Any]:
    """Every field's value: as written, else its ``default_from``; fields left out with a static
    default are left out here too (the side's class supplies it)."""
    values: dict[str, Any] = {}
    for f in fields:
        value = read_field(f, table, c, tool)
        if value is None and f.default_from is not None:
            value = f.default_from(provider, profile_name)
        if value is not None:
            values[f.name] = value
    return values


def side_dict(fields: tuple[Field, ...], side: object) -> dict[str, Any]:
    """The side's fields as ``ccs show --json`` prints them (tables as objects, tuples as lists,
    a secret field masked)."""
    out: dict[str, Any] = {}
    for f in fields:
        value = getattr(side, f.name)
        if f.secret and isinstance(value, str):
            value = mask(value)
        elif isinstance(value, Mapping):
            value = dict(value)
        elif isinstance(value, tuple):
            value = list(value)
        out[f.name] = value
    return out


def env_tables(fields: tuple[Field, ...], tool: str, side: object) -> dict[str, Mapping[str, str]]:
    """The side's variable tables by their place in the file (``[claude.env]``)."""
    return {f"[{tool}.{f.name}]": getattr(side, f.name) for f in fields if f.kind == "env"}


@valueclass(frozen=True)
class EditorField:
    """One field of the client's table in the TUI editor's form (derived from its ``Field``)."""

    key: str  # the field in the table, or "env" for its env sub-table
    label: str
    kind: str = "text"  # text | select | env | list | exports | bool | int
    choices: tuple[tuple[str, str], ...] = ()  # (shown, value) for a select; "" is the default
    placeholder: str = ""


def editor_field(tool: str, f: Field) -> EditorField:
    """How the editor shows a field: a select offers "default" (the field left out) first."""
    label = f.label or f.name.replace("_", " ")
    if f.kind == "env":
        return EditorField(f.name, f.label or f"[{tool}.{f.name}]", "env")
    if f.kind in ("select", "bool"):
        values = f.choices if f.kind == "select" else ("true", "false")
        shown_default = f.default if f.default not in (None, MISSING) else None
        if isinstance(shown_default, bool):
            shown_default = str(shown_default).lower()
        first = f"default ({shown_default})" if shown_default is not None else "default"
        return EditorField(f.name, label, "select" if f.kind == "select" else "bool",
                           ((first, ""), *((v, v) for v in values)), f.hint)
    if f.kind == "exports":
        return EditorField(f.name, label, "exports", tuple((v, v) for v in f.choices), f.hint)
    kind = {"list": "list", "int": "int"}.get(f.kind, "text")
    return EditorField(f.name, label, kind, (), f.hint)


def editor_form(tool: str, fields: Sequence[Field]) -> tuple[EditorField, ...]:
    """The TUI editor's form for a client's table (every field its declaration shows in the editor)."""
    return tuple(editor_field(tool, f) for f in fields if f.editor)

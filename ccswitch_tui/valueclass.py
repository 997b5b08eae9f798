"""Value classes without the cost of ``dataclasses``: ``@valueclass`` in place of ``@dataclass``.

ccs starts in front of every client it launches, so what its modules do when they are imported is
paid on every launch. On the Python ccs runs on, ``@dataclass`` compiles each generated method
(``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__`` …) from source text: about
0.5 ms a class, and importing ``dataclasses`` loads ``inspect`` (with ``ast``, ``dis`` and
``tokenize``). The launch path declares dozens of such classes. ``@valueclass`` gives the same classes
the same behaviour with methods shared by every value class (closures over the class's field table, no
code compiled), so declaring one costs a few microseconds; creating an instance costs about as much
as a dataclass's.

What it does, as ``dataclasses`` does it:

- the fields are the class's annotations, in order, after those of its value-class bases (a field a
  subclass declares again keeps its place); a ``ClassVar`` annotation is not a field;
- ``__init__`` takes them positionally (fields after a ``kw_only`` one, or all with
  ``kw_only=True``, by keyword only), fills defaults and default factories, refuses an unknown,
  repeated or missing argument with dataclasses' ``TypeError`` messages, then calls
  ``__post_init__`` when the class has one;
- ``__repr__`` is ``Name(a=1, b='x')`` (``field(repr=False)`` left out); ``__eq__`` compares the
  fields of two instances of the same class (``field(compare=False)`` left out);
- ``frozen=True``: assigning or deleting a field raises ``FrozenInstanceError`` (an
  ``AttributeError``), and instances hash by their compared fields; an ``eq`` value class that is not
  frozen is unhashable, unless the class defines ``__hash__`` itself;
- a default that is a ``list``, ``dict`` or ``set`` is refused (use ``default_factory``);
- ``fields(x)``, ``replace(x, **changes)`` and ``is_valueclass(x)`` stand for dataclasses' ``fields``,
  ``replace`` and ``is_dataclass``.

Not supported (ccs does not use them): ``order``, ``slots``, ``InitVar``, ``KW_ONLY`` and
``unsafe_hash``. Type checkers see ``@valueclass`` as a dataclass (``dataclass_transform``).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: a shim's start pays for every module
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, TypeVar, overload

    from typing_extensions import dataclass_transform

    T = TypeVar("T")


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # typed Any: it stands for any field's default


class FrozenInstanceError(AttributeError):
    """Assigning to or deleting a field of a frozen value class."""


class Field:
    """One field of a value class: its name, annotation (as written) and how ``__init__`` fills it."""

    __slots__ = ("name", "type", "default", "default_factory", "init", "repr", "compare", "kw_only", "metadata")

    def __init__(self, default: object = MISSING, default_factory: Callable[[], object] = MISSING, init: bool = True,
                 repr: bool = True, compare: bool = True, kw_only: bool | None = None,  # noqa: A002
                 metadata: Mapping[str, Any] | None = None) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.type: object = None
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.compare = compare
        self.kw_only = kw_only
        self.metadata: Mapping[str, Any] = metadata if metadata is not None else {}

    def _named(self, name: str, annotation: object, kw_only: bool) -> Field:
        f = Field(self.default, self.default_factory, self.init, self.repr, self.compare,
                  self.kw_only if self.kw_only is not None else kw_only, self.metadata)
        f.name, f.type = name, annotation
        return f

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r}, default_factory={self.default_factory!r})"


def _field(*, default: object = MISSING, default_factory: Callable[[], object] = MISSING, init: bool = True,
          repr: bool = True, compare: bool = True, kw_only: bool | None = None,  # noqa: A002
          metadata: Mapping[str, Any] | None = None) -> Any:
    """A field with a default factory, left out of ``repr``/``==``/``__init__``, or carrying metadata."""
    return Field(default, default_factory, init, repr, compare, kw_only, metadata)


def _is_classvar(annotation: object) -> bool:
    """``ClassVar[...]`` as written (ccs's modules use postponed annotations) or evaluated."""
    if isinstance(annotation, str):
        return annotation.strip().startswith(("ClassVar", "typing.ClassVar"))
    import typing  # lazy: only a class without postponed annotations gets here; typing costs a shim start
    return annotation is typing.ClassVar or getattr(annotation, "__origin__", None) is typing.ClassVar


def _collect(cls: type, kw_only: bool) -> dict[str, Field]:
    found: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for f in base.__dict__.get("__valueclass_fields__", ()):
            found[f.name] = f
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if _is_classvar(annotation):
            continue
        value = cls.__dict__.get(name, MISSING)
        declared = value if isinstance(value, Field) else Field(default=value)
        if isinstance(declared.default, (list, dict, set)):
            raise ValueError(f"mutable default {type(declared.default)} for field {name} is not allowed:"
                             " use default_factory")
        found[name] = declared._named(name, annotation, kw_only)
        if isinstance(value, Field):  # the class attribute is the plain default, or nothing
            if value.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, value.default)
    return found


def _refuse(qualname: str, names: frozenset[str], given: Mapping[str, object], kwargs: Mapping[str, object]) -> None:
    for key in kwargs:
        if key not in names:
            raise TypeError(f"{qualname}.__init__() got an unexpected keyword argument {key!r}")
        if key in given:
            raise TypeError(f"{qualname}.__init__() got multiple values for argument {key!r}")


def _names(names: list[str]) -> str:
    """Names as Python's own argument errors list them: 'a', 'a' and 'b', 'a', 'b', and 'c'."""
    quoted = [repr(n) for n in names]
    if len(quoted) < 3:
        return " and ".join(quoted)
    return ", ".join(quoted[:-1]) + ", and " + quoted[-1]


def _refuse_missing(qualname: str, init: list[Field], given: Mapping[str, object]) -> None:
    missing = [f for f in init if f.name not in given and f.default is MISSING and f.default_factory is MISSING]
    positional = [f.name for f in missing if not f.kw_only]
    names, kind = (positional, "positional") if positional else ([f.name for f in missing], "keyword-only")
    raise TypeError(f"{qualname}.__init__() missing {len(names)} required {kind} argument"
                    f"{'s' if len(names) > 1 else ''}: {_names(names)}")


def _refuse_extra(qualname: str, init: list[Field], given: int) -> None:
    positional = [f for f in init if not f.kw_only]
    most = len(positional) + 1  # self, as Python counts
    least = sum(1 for f in positional if f.default is MISSING and f.default_factory is MISSING) + 1
    takes = f"{most} positional argument{'s' if most > 1 else ''}" if least == most else \
        f"from {least} to {most} positional arguments"
    raise TypeError(f"{qualname}.__init__() takes {takes} but {given + 1} {'was' if given == 0 else 'were'} given")


def _check_order(init: list[Field]) -> None:
    """dataclasses' rule: a positional field without a default cannot follow one with a default."""
    defaulted = False
    for f in init:
        if f.kw_only:
            continue
        has_default = f.default is not MISSING or f.default_factory is not MISSING
        if defaulted and not has_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
        defaulted = defaulted or has_default


def _make_init(cls: type, table: tuple[Field, ...]) -> Callable[..., None]:
    qualname = cls.__qualname__
    init = [f for f in table if f.init]
    positional = tuple(f.name for f in init if not f.kw_only)
    names = frozenset(f.name for f in init)
    # what is filled when not given, in field order: (name, default, factory, in __init__?)
    rest = tuple((f.name, f.default, f.default_factory, f.init) for f in table
                 if f.default is not MISSING or f.default_factory is not MISSING)
    # the attributes __init__ sets, in field order (a field left out of __init__ without a default is
    # left for __post_init__ to set, as dataclasses leave it)
    order = tuple(f.name for f in table if f.init or f.default is not MISSING or f.default_factory is not MISSING)
    _check_order(init)
    post_init = getattr(cls, "__post_init__", None) is not None
    npos, nfilled = len(positional), len(order)

    def __init__(self: Any, *args: object, **kwargs: object) -> None:
        if len(args) > npos:
            _refuse_extra(qualname, init, len(args))
        values = dict(zip(positional, args, strict=False))  # (their number is checked above)
        if kwargs:
            if not names.issuperset(kwargs) or not values.keys().isdisjoint(kwargs):
                _refuse(qualname, names, values, kwargs)
            values.update(kwargs)
        if len(values) < nfilled:
            for name, default, factory, in_init in rest:
                if not in_init or name not in values:
                    values[name] = factory() if factory is not MISSING else default
            if len(values) < nfilled:
                _refuse_missing(qualname, init, values)
        vars(self).update(values)  # (in the order given: nothing in ccs reads vars() of a value class)
        if post_init:
            self.__post_init__()

    __init__.__qualname__ = f"{qualname}.__init__"
    return __init__


def _valueclass(cls: type[T] | None = None, /, *, frozen: bool = False, kw_only: bool = False, eq: bool = True,
                repr: bool = True) -> Any:  # noqa: A002
    """``@dataclass`` for ccs's value classes: same fields, ``__init__``, ``repr``, ``==`` and hashing
    (see the module's docstring), declared without compiling code."""

    def wrap(c: type[T]) -> type[T]:
        return _process(c, frozen=frozen, kw_only=kw_only, eq=eq, repr_=repr)

    return wrap if cls is None else wrap(cls)


def _put(cls: type, name: str, value: object) -> None:
    setattr(cls, name, value)


def _process(cls: type[T], *, frozen: bool, kw_only: bool, eq: bool, repr_: bool) -> type[T]:
    found = _collect(cls, kw_only)
    table = tuple(found.values())
    _put(cls, "__valueclass_fields__", table)
    _put(cls, "__init__", _make_init(cls, table))
    _put(cls, "__match_args__", tuple(f.name for f in table if f.init and not f.kw_only))
    own = cls.__dict__
    if repr_ and "__repr__" not in own:
        _put(cls, "__repr__", _make_repr(cls.__qualname__, tuple(f.name for f in table if f.repr)))
    compared = tuple(f.name for f in table if f.compare)
    if eq and "__eq__" not in own:
        _put(cls, "__eq__", _make_eq(compared))
    if eq and ("__hash__" not in own or own["__hash__"] is None):  # None: what defining __eq__ leaves
        _put(cls, "__hash__", _make_hash(compared) if frozen else None)
    if frozen:
        _freeze(cls, frozenset(found))
    return cls


def _make_repr(qualname: str, shown: tuple[str, ...]) -> Callable[[object], str]:
    def __repr__(self: object) -> str:
        return f"{qualname}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in shown) + ")"
    return __repr__


def _make_eq(compared: tuple[str, ...]) -> Callable[[object, object], bool]:
    def __eq__(self: object, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        # as tuples, as dataclasses compare: an attribute that is the same object is equal (a NaN too)
        return tuple(getattr(self, n) for n in compared) == tuple(getattr(other, n) for n in compared)
    return __eq__


def _make_hash(compared: tuple[str, ...]) -> Callable[[object], int]:
    def __hash__(self: object) -> int:
        return hash(tuple(getattr(self, n) for n in compared))
    return __hash__


def _freeze(cls: type, guarded: frozenset[str]) -> None:
    def __setattr__(self: object, name: str, value: object) -> None:
        if type(self) is cls or name in guarded:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self: object, name: str) -> None:
        if type(self) is cls or name in guarded:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        object.__delattr__(self, name)

    _put(cls, "__setattr__", __setattr__)
    _put(cls, "__delattr__", __delattr__)


def is_valueclass(obj: object) -> bool:
    """Whether ``obj`` is a value class class or an instance of one."""
    return hasattr(obj if isinstance(obj, type) else type(obj), "__valueclass_fields__")


def fields(obj: object) -> tuple[Field, ...]:
    """The fields of a value class or of an instance of one, in order."""
    cls = obj if isinstance(obj, type) else type(obj)
    table: tuple[Field, ...] | None = getattr(cls, "__valueclass_fields__", None)
    if table is None:
        raise TypeError(f"{obj!r} is not a value class")
    return table


def replace(obj: T, /, **changes: object) -> T:
    """A copy of the value ``obj`` with ``changes``, made through its ``__init__`` (so
    ``__post_init__`` checks the copy too)."""
    for f in fields(obj):
        if not f.init:
            if f.name in changes:
                raise ValueError(f"field {f.name} is declared with init=False, it cannot be specified with replace()")
            continue
        if f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return obj.__class__(**changes)


if TYPE_CHECKING:  # what type checkers see: ``field`` and ``valueclass`` as dataclasses' own
    @overload
    def field(*, default: T, init: bool = ..., repr: bool = ..., compare: bool = ...,  # noqa: A002
              kw_only: bool = ..., metadata: Mapping[str, Any] | None = ...) -> T: ...
    @overload
    def field(*, default_factory: Callable[[], T], init: bool = ..., repr: bool = ...,  # noqa: A002
              compare: bool = ..., kw_only: bool = ..., metadata: Mapping[str, Any] | None = ...) -> T: ...
    @overload
    def field(*, init: bool = ..., repr: bool = ..., compare: bool = ..., kw_only: bool = ...,  # noqa: A002
              metadata: Mapping[str, Any] | None = ...) -> Any: ...
    def field(*, default: Any = ..., default_factory: Any = ..., init: bool = ..., repr: bool = ...,  # noqa: A002
              compare: bool = ..., kw_only: bool = ..., metadata: Mapping[str, Any] | None = ...) -> Any: ...

    @overload
    def valueclass(cls: type[T], /) -> type[T]: ...
    @overload
    def valueclass(*, frozen: bool = ..., kw_only: bool = ..., eq: bool = ...,
                   repr: bool = ...) -> Callable[[type[T]], type[T]]: ...  # noqa: A002
    @dataclass_transform(field_specifiers=(field, Field))
    def valueclass(cls: type[T] | None = None, /, *, frozen: bool = ..., kw_only: bool = ..., eq: bool = ...,
                   repr: bool = ...) -> Any: ...  # noqa: A002
else:
    field = _field
    valueclass = _valueclass

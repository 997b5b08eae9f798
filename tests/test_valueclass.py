"""``@valueclass`` behaves as ``@dataclass`` for everything ccs declares with it: each case builds the
same class with both decorators and compares what the instances do (fields, ``__init__`` and its
errors, ``repr``, ``==``, hashing, freezing, ``replace``), so a difference fails here rather than in
some module that relied on it."""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

import pytest

from ccswitch_tui import valueclass as vc


def both(build: Callable[[Any, Any], type]) -> tuple[type, type]:
    """The class ``build`` makes, once with dataclasses' (decorator, field), once with ours."""
    return build(dataclasses.dataclass, dataclasses.field), build(vc.valueclass, vc.field)


def outcome(call: Callable[[], Any]) -> tuple[str, str]:
    try:
        value = call()
    except Exception as exc:  # noqa: BLE001 - the exception itself is what is compared
        return type(exc).__name__ if not isinstance(exc, AttributeError) else "AttributeError", str(exc)
    return "ok", repr(value)


def plain(build: Callable[[Any, Any], type]) -> list[type]:
    return list(both(build))


def profile_like(decorator: Any, field: Any) -> type:
    @decorator(frozen=True)
    class Side:
        name: str
        url: str = "https://api.example.com"
        models: tuple[str, ...] = ()
        env: tuple[tuple[str, str], ...] = field(default_factory=tuple)
        note: str = field(default="", compare=False, repr=False)
        kind: ClassVar[str] = "side"
    return Side


def keyword_only(decorator: Any, field: Any) -> type:
    @decorator(frozen=True, kw_only=True)
    class Spec:
        base_url: str = "u"
        model: str
        extras: list[str] = field(default_factory=list)
    return Spec


def mutable(decorator: Any, field: Any) -> type:
    @decorator
    class Counter:
        hits: int = 0
        seen: list[str] = field(default_factory=list)
    return Counter


def checked(decorator: Any, field: Any) -> type:
    @decorator(frozen=True)
    class Port:
        number: int
        label: str = field(init=False, default="")

        def __post_init__(self) -> None:
            if not 0 < self.number < 65536:
                raise ValueError(f"port {self.number} out of range")
            object.__setattr__(self, "label", f"port {self.number}")
    return Port


def derived(decorator: Any, field: Any) -> type:
    @decorator(frozen=True)
    class Base:
        a: int
        b: str = "b"

    @decorator(frozen=True)
    class Child(Base):
        c: float = 1.0
        a: int = 7  # declared again: keeps its place
    return Child


def derived_required(decorator: Any, field: Any) -> type:
    @decorator
    class Three:
        a: int
        b: int
        c: int
        d: int = 0
    return Three


CASES = {
    "positional and default": (profile_like, [lambda C: C("p"), lambda C: C("p", "https://x", ("m",))]),
    "missing argument": (profile_like, [lambda C: C()]),
    "missing arguments": (derived_required, [lambda C: C(), lambda C: C(1)]),
    "too many": (profile_like, [lambda C: C("p", "u", (), {}, "n", "extra")]),
    "unknown keyword": (profile_like, [lambda C: C("p", colour="red")]),
    "repeated argument": (profile_like, [lambda C: C("p", name="q")]),
    "keyword only": (keyword_only, [lambda C: C(model="m"), lambda C: C("m"), lambda C: C()]),
    "mutable": (mutable, [lambda C: C(), lambda C: C(3, ["a"])]),
    "post_init": (checked, [lambda C: C(8080), lambda C: C(0), lambda C: C(1, "x")]),
    "inherited": (derived, [lambda C: C(), lambda C: C(1, "x", 2.0)]),
}


@pytest.mark.parametrize("case", CASES)
def test_init_repr_and_errors_as_dataclasses(case):
    build, calls = CASES[case]
    theirs, ours = both(build)
    for call in calls:
        assert outcome(partial(call, ours)) == outcome(partial(call, theirs))


def test_fields_in_the_same_order_with_the_same_attributes():
    for build, _ in CASES.values():
        theirs, ours = both(build)
        mine = [(f.name, f.init, f.repr, f.compare) for f in vc.fields(ours)]
        assert mine == [(f.name, f.init, f.repr, f.compare) for f in dataclasses.fields(theirs)]
        assert ours.__match_args__ == theirs.__match_args__


def test_equality_hashing_and_freezing_as_dataclasses():
    theirs, ours = both(profile_like)
    for C in (theirs, ours):
        a, b = C("p", note="one"), C("p", note="two")
        assert a == b and hash(a) == hash(b)  # note is left out of == and the hash
        assert a != C("q") and C("p") != ("p",)
        assert C.kind == "side" and "kind" not in [f.name for f in (vc.fields(C) if C is ours else
                                                                     dataclasses.fields(C))]
    assert outcome(lambda: setattr(ours("p"), "name", "q"))[0] == "AttributeError"
    assert isinstance(_raised(lambda: setattr(ours("p"), "name", "q")), vc.FrozenInstanceError)
    assert outcome(lambda: delattr(ours("p"), "url"))[0] == "AttributeError"
    counter_theirs, counter_ours = both(mutable)
    with pytest.raises(TypeError):
        hash(counter_ours())  # an eq class that is not frozen is unhashable, as a dataclass is
    with pytest.raises(TypeError):
        hash(counter_theirs())
    c = counter_ours()
    c.hits += 1  # a class that is not frozen can be changed
    assert c.hits == 1 and counter_ours().seen is not counter_ours().seen  # a fresh list each time


def _raised(call: Callable[[], Any]) -> BaseException | None:
    try:
        call()
    except BaseException as exc:  # noqa: BLE001
        return exc
    return None


def test_replace_goes_through_init_as_dataclasses():
    theirs, ours = both(checked)
    assert repr(vc.replace(ours(80), number=443)) == repr(dataclasses.replace(theirs(80), number=443))
    assert outcome(lambda: vc.replace(ours(80), number=0)) == outcome(lambda: dataclasses.replace(theirs(80), number=0))
    with pytest.raises(ValueError, match="init=False"):
        vc.replace(ours(80), label="x")


def test_refused_declarations():
    with pytest.raises(ValueError, match="mutable default"):
        @vc.valueclass
        class Bad:
            items: list[str] = []  # noqa: RUF012

    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        @vc.valueclass
        class Order:
            a: int = 1
            b: int

    with pytest.raises(TypeError, match="not a value class"):
        vc.fields(object())


def test_explicit_methods_are_kept_and_instances_pickle():
    @vc.valueclass(frozen=True)
    class Named:
        name: str

        def __repr__(self) -> str:
            return f"<{self.name}>"

        def __hash__(self) -> int:
            return 42

    assert repr(Named("x")) == "<x>" and hash(Named("x")) == 42
    assert vc.is_valueclass(Named) and vc.is_valueclass(Named("x")) and not vc.is_valueclass(object())
    global Pickled  # pickling needs the class at module level

    @vc.valueclass(frozen=True)
    class Pickled:
        a: int
        b: tuple[str, ...] = ()

    Pickled.__qualname__ = "Pickled"
    assert pickle.loads(pickle.dumps(Pickled(1, ("x",)))) == Pickled(1, ("x",))

"""fast_init: the cheaper __init__ of the lowering's frozen dataclasses makes the same object
the generated one does, and refuses a class it cannot stand in for."""

from __future__ import annotations

import dataclasses
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from pypto_build.lowering.diagnostics import SYNTHETIC, Span
from pypto_build.lowering.fast_init import fast_init
from pypto_build.lowering.ir import INDEX, Call, ReturnStmt, Var


@dataclass(frozen=True)
class _Plain:
    name: str
    values: tuple[int, ...]
    extra: int = 3
    span: Span = field(default=SYNTHETIC, compare=False)


def test_the_object_is_the_one_the_generated_init_makes() -> None:
    @fast_init
    @dataclass(frozen=True)
    class Fast:
        name: str
        values: tuple[int, ...]
        extra: int = 3
        span: Span = field(default=SYNTHETIC, compare=False)

    for args, kwargs in [(("a", (1,)), {}), (("a", (1,), 4), {"span": Span("f", 1, 2)})]:
        fast, plain = Fast(*args, **kwargs), _Plain(*args, **kwargs)  # type: ignore[arg-type]
        assert list(fast.__dict__.items()) == list(plain.__dict__.items())
        assert dataclasses.astuple(fast) == dataclasses.astuple(plain)
    with pytest.raises(dataclasses.FrozenInstanceError):
        Fast("a", ()).name = "b"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Fast("a")  # type: ignore[call-arg]


def test_an_object_costs_no_more_memory_than_the_generated_inits() -> None:
    # The fields stay where CPython keeps them without a dict per instance.
    @fast_init
    @dataclass(frozen=True)
    class Fast:
        name: str
        values: tuple[int, ...]
        extra: int = 3

    def allocated(make: Callable[[int], object]) -> int:
        tracemalloc.start()
        try:
            kept = [make(index) for index in range(2000)]
            size = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        del kept
        return size

    plain = allocated(lambda index: _Plain("a", (), index))
    assert allocated(lambda index: Fast("a", (), index)) <= plain * 1.1


def test_the_ir_keeps_its_fields_equality_and_hash() -> None:
    x = Var("x", INDEX, Span("f", 1, 0))
    assert x == Var("x", INDEX) and hash(x) == hash(Var("x", INDEX))
    assert x.span == Span("f", 1, 0) and Var("x", INDEX).span is SYNTHETIC
    call = Call("op", (x,), INDEX)
    assert (call.kwargs, call.attrs) == ((), ())
    assert ReturnStmt((x,)).values == (x,)  # a field named like a local of an __init__

    @fast_init
    @dataclass(frozen=True)
    class Fieldless:
        pass

    assert Fieldless() == Fieldless()


def test_refuses_what_it_cannot_stand_in_for() -> None:
    @dataclass
    class Mutable:
        x: int

    @dataclass(frozen=True)
    class Checked:
        x: int

        def __post_init__(self) -> None: ...

    @dataclass(frozen=True)
    class Factory:
        x: list[int] = field(default_factory=list)

    @dataclass(frozen=True)
    class Derived:
        x: int = field(init=False, default=1)

    @dataclass(frozen=True)
    class Clashing:
        _set: int

    for cls in (Mutable, Checked, Factory, Derived, Clashing, int):
        with pytest.raises(TypeError):
            fast_init(cls)

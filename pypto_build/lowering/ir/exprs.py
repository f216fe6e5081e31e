"""IR expressions.

Variables are named as in the source (orchestration bodies rebind names, e.g. ``data =
all_to_all_v(..., data, ...)``); each use carries the type of the definition that reaches it.
``span`` never takes part in equality, so ``==`` on two trees is structural equality.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pypto_build.lowering.diagnostics import SYNTHETIC, Span
from pypto_build.lowering.fast_init import fast_init
from pypto_build.lowering.ir.types import (
    BOOL,
    FP32,
    INDEX,
    DataType,
    Layout,
    ParamDirection,
    ReduceOp,
    TupleType,
    Type,
)

#: A literal keyword/attribute value that is not an expression.
Literal = int | float | bool | str | DataType | Layout | ParamDirection | ReduceOp | None
#: The exact types of the literals: most attr values of most calls are one, or a tuple of them.
LITERAL_TYPES = frozenset(
    {int, float, bool, str, DataType, Layout, ParamDirection, ReduceOp, type(None)}
)


class Expr:
    """Base of all expressions; ``type`` is fixed at construction (deduced by the op table).

    Not a dataclass itself, so that every subclass can declare ``type`` where its fields need it.
    """

    __slots__ = ()

    if TYPE_CHECKING:

        @property
        def type(self) -> Type: ...


@fast_init
@dataclass(frozen=True)
class Var(Expr):
    name: str
    type: Type
    span: Span = field(default=SYNTHETIC, compare=False, repr=False)


@fast_init
@dataclass(frozen=True)
class ConstInt(Expr):
    value: int
    type: Type = INDEX
    span: Span = field(default=SYNTHETIC, compare=False, repr=False)


@fast_init
@dataclass(frozen=True)
class ConstFloat(Expr):
    value: float
    type: Type = FP32
    span: Span = field(default=SYNTHETIC, compare=False, repr=False)


@fast_init
@dataclass(frozen=True)
class ConstBool(Expr):
    value: bool
    type: Type = BOOL
    span: Span = field(default=SYNTHETIC, compare=False, repr=False)


@fast_init
@dataclass(frozen=True)
class BinaryOp(Expr):
    """Scalar arithmetic or comparison; ``op`` is the operator text (``+``, ``//``, ``<``)."""

    op: str
    lhs: Expr
    rhs: Expr
    type: Type
    span: Span = field(default=SYNTHETIC, compare=False, repr=False)


@fast_init
@dataclass(frozen=True)
class UnaryOp(Expr):
    """``-x`` or ``not x`` on scalars."""

    op: str
    operand: Expr
    type: Type
    span: Span = field(default=SYNTHETIC, compare=False, repr=False)


@fast_init
@dataclass(frozen=True)
class MakeTuple(Expr):
    """A literal list/tuple of expressions (shapes, offsets, device lists)."""

    items: tuple[Expr, ...]
    span: Span = field(default=SYNTHETIC, compare=False, repr=False)

    @property
    def type(self) -> Type:
        return TupleType(tuple(item.type for item in self.items))


@fast_init
@dataclass(frozen=True)
class TupleGetItem(Expr):
    tuple: Expr
    index: int
    type: Type
    span: Span = field(default=SYNTHETIC, compare=False, repr=False)


@fast_init
@dataclass(frozen=True)
class GlobalVar:
    """Reference to a function of the same program (``self.f`` in the DSL)."""

    name: str


#: Keyword arguments of op calls and attributes of calls/functions: name -> value.
AttrValue = Expr | Literal | tuple["AttrValue", ...]
Attrs = tuple[tuple[str, AttrValue], ...]


def get_attr(attrs: Attrs, key: str, default: AttrValue = None) -> AttrValue:
    for name, value in attrs:
        if name == key:
            return value
    return default


def set_attr(attrs: Attrs, key: str, value: AttrValue) -> Attrs:
    """Return ``attrs`` with ``key`` set (replacing an existing entry in place, else appended)."""
    if any(name == key for name, _ in attrs):
        return tuple((name, value if name == key else old) for name, old in attrs)
    return (*attrs, (key, value))


def set_attrs(attrs: Attrs, values: Mapping[str, AttrValue]) -> Attrs:
    """Return ``attrs`` with every key of ``values`` set (an existing entry replaced in place,
    the others appended in the order of ``values``): one copy of the attrs for what a pass
    records of a call, not one per key."""
    updated = [(name, values.get(name, old)) for name, old in attrs]
    present = {name for name, _ in attrs}
    updated += [(key, value) for key, value in values.items() if key not in present]
    return tuple(updated)


@fast_init
@dataclass(frozen=True)
class Call(Expr):
    """A call of an op (``op`` is its registered name, e.g. ``"pld.tensor.all_to_all_v"``) or
    of a program function (``op`` is a :class:`GlobalVar`).

    ``kwargs`` are the op's keyword operands (``core_num=``, ``dtype=``); ``attrs`` are
    properties of the call site that are not operands (``device``, ``core_num``/``sync_start``
    launch specs, ``arg_directions``)."""

    op: str | GlobalVar
    args: tuple[Expr, ...]
    type: Type
    kwargs: Attrs = ()
    attrs: Attrs = ()
    span: Span = field(default=SYNTHETIC, compare=False, repr=False)

    @property
    def callee_name(self) -> str:
        return self.op.name if isinstance(self.op, GlobalVar) else self.op

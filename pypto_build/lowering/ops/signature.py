"""Op signatures and the bound view of a call's operands that deducers read.

An op is described by data (:class:`OpDef`): its IR name, extra DSL spellings, its operands, a
deducer, and its effects on storage (:class:`Effects`), which the analyses query instead of
listing ops by name. Binding (``optable/binding.py``) and re-deduction of an existing ``Call`` both
produce the same :class:`Operands` view, so a deducer cannot tell whether it runs in the front
end or in the verifier, and the two always agree.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import NoReturn

from pypto_build.lowering.diagnostics import SYNTHETIC, InternalError, ProgramError, Span
from pypto_build.lowering.ir import AttrValue, DataType, Expr, Layout, Type


class Kind(enum.Enum):
    """What an operand's value is. ``EXPR`` operands are IR expressions; the others are literals
    the front end resolves at parse time (``pl.FP32``, a layout, a name string)."""

    EXPR = "an expression"
    DTYPE = "a data type (e.g. pl.FP32)"
    LAYOUT = "a tensor layout (ND, DN or NZ)"
    STR = "a string literal"
    REDUCE_OP = "a reduction (pld.ReduceOp.Sum, Max, Min or Prod)"
    ANY = "any value"


@dataclass(frozen=True)
class Operand:
    """One parameter of an op. Required ``EXPR`` operands become ``Call.args``; every other
    operand becomes a ``Call.kwargs`` entry when the call gives it."""

    name: str
    kind: Kind = Kind.EXPR
    required: bool = True
    keyword_only: bool = False
    default: AttrValue = None
    #: Whether an explicit ``None`` means "omitted" (``valid_shape=None``); where None is not a
    #: value the operand can have (``core_num``, an integer), it is refused instead.
    none_omits: bool = True
    #: Whether an explicit ``None`` reaches the deducer as a null operand (given, value None),
    #: for an op whose own rules report it (the MC2 op's aclnn null-pointer check). The deducer
    #: must refuse it: a built call never holds one.
    nullable: bool = False

    @property
    def is_arg(self) -> bool:
        return self.kind is Kind.EXPR and self.required


def optional(
    name: str,
    kind: Kind = Kind.EXPR,
    *,
    keyword_only: bool = False,
    default: AttrValue = None,
    none_omits: bool = True,
) -> Operand:
    """An operand the call may omit; it lands in ``Call.kwargs`` only when given."""
    return Operand(
        name,
        kind,
        required=False,
        keyword_only=keyword_only,
        default=default,
        none_omits=none_omits,
    )


#: Computes the result type of a bound call, raising ProgramError on an ill-typed one.
Deducer = Callable[["Operands"], Type]


@dataclass(frozen=True)
class Effects:
    """What an op does to storage, as the dataflow analyses see it (provenance, dependency
    derivation, directions, contiguity). The defaults describe a pure op on scalars."""

    #: The result shares storage with this operand: a view of it, or the operand itself
    #: written in place and returned.
    view_of: int | None = None
    #: The result is new storage.
    allocates: bool = False
    #: Operands the op writes in place.
    writes: tuple[int, ...] = ()
    #: The result is dense row-major whatever the operands are (fresh storage or a fresh
    #: view of a window buffer).
    dense: bool = False
    #: The result is dense row-major when the operand it views is (a change of metadata only).
    keeps_density: bool = False


#: A view of operand 0 that only changes metadata.
METADATA_VIEW = Effects(view_of=0, keeps_density=True)


@dataclass(frozen=True)
class OpDef:
    """An op of the program model: IR name, parameters, type deducer, effects on storage and
    extra DSL spellings."""

    name: str
    operands: tuple[Operand, ...]
    deduce: Deducer
    effects: Effects = Effects()
    spellings: tuple[str, ...] = ()

    def operand(self, name: str) -> Operand | None:
        return next((spec for spec in self.operands if spec.name == name), None)

    @property
    def positional(self) -> tuple[Operand, ...]:
        return tuple(spec for spec in self.operands if not spec.keyword_only)


def expr_span(value: object, fallback: Span) -> Span:
    """The span an operand value was written at; literals (which have none) use ``fallback``."""
    span = getattr(value, "span", None)
    return span if isinstance(span, Span) else fallback


def span_of(node: object, fallback: Span = SYNTHETIC) -> Span:
    """The source span of an IR node (the Expr base class does not declare one), or
    ``fallback`` for a node written by a pass or for a literal."""
    span = expr_span(node, fallback)
    return fallback if span == SYNTHETIC else span


def fail(message: str, span: Span) -> NoReturn:
    """Raise a front-end :class:`ProgramError` (op misuse is caught where the call is built)."""
    raise ProgramError(message, span, phase="frontend")


@dataclass(frozen=True)
class Operands:
    """The operands given to one call of ``opdef``, by name, with the call's span."""

    opdef: OpDef
    values: Mapping[str, AttrValue]
    span: Span

    @property
    def op(self) -> str:
        return self.opdef.name

    def given(self, name: str) -> bool:
        return name in self.values

    def value(self, name: str) -> AttrValue:
        """The given value, else the operand's declared default."""
        if name in self.values:
            return self.values[name]
        spec = self.opdef.operand(name)
        if spec is None:
            raise InternalError(f"{self.op} has no operand '{name}'")
        return spec.default

    def expr(self, name: str) -> Expr:
        value = self.value(name)
        if not isinstance(value, Expr):
            raise InternalError(f"{self.op} operand '{name}' is not an expression: {value!r}")
        return value

    def optional_expr(self, name: str) -> Expr | None:
        return self.expr(name) if self.given(name) else None

    def dtype(self, name: str) -> DataType | None:
        value = self.value(name)
        if value is not None and not isinstance(value, DataType):
            raise InternalError(f"{self.op} operand '{name}' is not a DataType: {value!r}")
        return value

    def layout(self, name: str) -> Layout | None:
        value = self.value(name)
        if value is not None and not isinstance(value, Layout):
            raise InternalError(f"{self.op} operand '{name}' is not a Layout: {value!r}")
        return value

    def span_of(self, name: str) -> Span:
        """Where operand ``name`` was written: its expression's span, else the call's."""
        return expr_span(self.values.get(name), self.span)

    def error(self, name: str, detail: str) -> NoReturn:
        """Fail with ``"<op> <name> <detail>"`` at operand ``name``."""
        fail(f"{self.op} {name} {detail}", self.span_of(name))

    def error_at(self, span: Span, detail: str) -> NoReturn:
        """Fail with ``"<op> <detail>"`` at ``span`` (an element of a list operand)."""
        fail(f"{self.op} {detail}", span)

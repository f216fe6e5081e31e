"""Binding a call's operands to an op's signature, and (re-)deducing its type.

The binding fixes one normal form for every op call, so structurally equal programs print and
compare equal however the user spelled the call: required expression operands go to
``Call.args`` in signature order; literal and optional operands go to ``Call.kwargs`` in
signature order, only when given (an explicit ``None`` is the same as omitting the operand,
except for an operand that None cannot stand for, such as ``core_num``, and a nullable one,
whose ``None`` the op's deducer refuses by its own rule).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from pypto_build.lowering.diagnostics import InternalError, Span
from pypto_build.lowering.ir import (
    AttrValue,
    Call,
    ConstInt,
    DataType,
    Expr,
    GlobalVar,
    Layout,
    ReduceOp,
    Type,
)
from pypto_build.lowering.ops.signature import (
    Kind,
    OpDef,
    Operand,
    Operands,
    expr_span,
    fail,
)
from pypto_build.lowering.ops.validation import expr_text
from pypto_build.lowering.optable.table import lookup

_LITERAL_TYPES: dict[Kind, type] = {
    Kind.DTYPE: DataType,
    Kind.LAYOUT: Layout,
    Kind.STR: str,
    Kind.REDUCE_OP: ReduceOp,
}


def _value_text(value: AttrValue) -> str:
    if isinstance(value, Expr):
        return expr_text(value)
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    return repr(value)


def _coerce(opdef: OpDef, spec: Operand, value: AttrValue, span: Span) -> AttrValue:
    """Check ``value`` against the operand's kind; a plain ``int`` for an expression operand
    (``core_num=4`` given as a literal) becomes a ``ConstInt`` at the call's span."""
    if spec.kind is Kind.ANY:
        return value
    if spec.kind is Kind.EXPR:
        if isinstance(value, Expr):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return ConstInt(value, span=span)
    elif isinstance(value, _LITERAL_TYPES[spec.kind]):
        return value
    fail(
        f"{opdef.name}() argument '{spec.name}' must be {spec.kind.value}, "
        f"got {_value_text(value)}",
        expr_span(value, span),
    )


def _arity_text(opdef: OpDef, given: int) -> str:
    positional = opdef.positional
    required = sum(1 for spec in positional if spec.required)
    count = f"{len(positional)}"
    if required != len(positional):
        count = f"from {required} to {count}"
    noun = "argument" if len(positional) == 1 else "arguments"
    verb = "was" if given == 1 else "were"
    return f"{opdef.name}() takes {count} positional {noun} but {given} {verb} given"


def _bind(
    opdef: OpDef,
    args: Sequence[AttrValue],
    kwargs: Sequence[tuple[str, AttrValue]],
    span: Span,
) -> dict[str, AttrValue]:
    positional = opdef.positional
    if len(args) > len(positional):
        fail(_arity_text(opdef, len(args)), expr_span(args[len(positional)], span))
    given: dict[str, AttrValue] = {
        spec.name: value for spec, value in zip(positional, args, strict=False)
    }
    for key, value in kwargs:
        if opdef.operand(key) is None:
            fail(
                f"{opdef.name}() got an unexpected keyword argument '{key}'",
                expr_span(value, span),
            )
        if key in given:
            fail(
                f"{opdef.name}() got multiple values for argument '{key}'",
                expr_span(value, span),
            )
        given[key] = value
    values: dict[str, AttrValue] = {}
    for spec in opdef.operands:
        value = given.get(spec.name)
        if spec.name in given and value is None and not spec.none_omits:
            fail(
                f"{opdef.name}() argument '{spec.name}' cannot be None: leave it out for its "
                "default",
                span,
            )
        if spec.name in given and value is None and spec.nullable:
            values[spec.name] = None
            continue
        if spec.name not in given or (value is None and not spec.required):
            if spec.required:
                fail(f"{opdef.name}() missing required argument '{spec.name}'", span)
            continue
        values[spec.name] = _coerce(opdef, spec, value, span)
    return values


def make_call(
    op: str,
    args: Sequence[AttrValue],
    kwargs: Sequence[tuple[str, AttrValue]],
    span: Span,
) -> Call:
    """Bind positional and keyword operands to op ``op``, deduce the result type and return the
    normalized :class:`Call`. Positional operands are normally expressions; a literal given
    positionally (``pl.create_tensor([4], pl.FP32)``) is accepted where the signature allows.
    Every misuse raises a front-end ``ProgramError`` at the offending operand (or the call)."""
    opdef = lookup(op)
    operands = Operands(opdef, _bind(opdef, args, kwargs, span), span)
    result = opdef.deduce(operands)
    return Call(
        op,
        tuple(operands.expr(spec.name) for spec in opdef.operands if spec.is_arg),
        result,
        kwargs=tuple(
            (spec.name, operands.values[spec.name])
            for spec in opdef.operands
            if not spec.is_arg and spec.name in operands.values
        ),
        span=span,
    )


def spelled_operands(call: Call) -> tuple[tuple[Expr, ...], tuple[tuple[str, AttrValue], ...]]:
    """The operands of op call ``call`` as a program must write them for :func:`make_call` to
    bind them back (the printer's round trip): its args positionally and its other operands by
    keyword, except that every operand from the first optional one a program may pass by
    position (the MC2 op's bias) on goes by keyword: a positional list cannot skip that slot,
    whether the operand is given or not."""
    opdef = lookup(str(call.op))
    specs = opdef.operands
    cut = next(
        (index for index, spec in enumerate(specs) if not spec.required and not spec.keyword_only),
        len(specs),
    )
    late = {spec.name for spec in specs[cut:]}
    arg_names = [spec.name for spec in specs if spec.is_arg]
    if not late.intersection(arg_names):
        return call.args, call.kwargs
    values: dict[str, AttrValue] = dict(zip(arg_names, call.args, strict=True))
    values.update(call.kwargs)
    positional = tuple(
        arg for name, arg in zip(arg_names, call.args, strict=True) if name not in late
    )
    keywords = tuple(
        (spec.name, values[spec.name])
        for spec in specs
        if spec.name in values and (spec.name in late or not spec.is_arg)
    )
    return positional, keywords


def deduce_type(call: Call) -> Type:
    """Re-deduce the type of an already built op call (the verifier compares it with
    ``call.type``). A call that is not in the normal form ``make_call`` produces is a bug in
    whatever built it."""
    if isinstance(call.op, GlobalVar):
        raise InternalError(f"deduce_type needs an op call, got a call of '{call.op.name}'")
    opdef = lookup(call.op)
    arg_specs = [spec for spec in opdef.operands if spec.is_arg]
    if len(call.args) != len(arg_specs):
        raise InternalError(
            f"{opdef.name} call has {len(call.args)} args, its signature {len(arg_specs)}"
        )
    values: dict[str, AttrValue] = {
        spec.name: arg for spec, arg in zip(arg_specs, call.args, strict=True)
    }
    for key, value in call.kwargs:
        spec = opdef.operand(key)
        if spec is None or spec.is_arg or key in values:
            raise InternalError(f"{opdef.name} call has a misplaced kwarg '{key}'")
        values[key] = _coerce(opdef, spec, value, call.span)
    missing = [s.name for s in opdef.operands if s.required and s.name not in values]
    if missing:
        raise InternalError(f"{opdef.name} call lacks required operands {missing}")
    return opdef.deduce(Operands(opdef, values, call.span))

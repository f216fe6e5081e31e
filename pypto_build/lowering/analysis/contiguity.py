"""Compile-time contiguity proof for the tensor operands of a builtin collective kernel.

The builtin kernels move each operand as one dense row-major block. Whether an operand really is
dense is only known per rank at run time, and a rank that refuses to submit while its peers
launch leaves them waiting in the kernel's exchange barrier: a hang, not an error. So the CHIP
rail proves contiguity at compile time, with a whitelist, and rejects whatever it cannot prove.

Every value is traced back through the chain of views it is made of:

* **roots** (dense row-major by construction): function parameters and the ops whose effects
  say their result is dense (``tensor.create``, ``pld.window``). A ``pl.submit`` Out result is
  the tensor the caller allocated for that Out (every argument of a submitted kernel is passed
  explicitly), so it ends at one of these roots;
* **traced through** to their source: ops that only change metadata of the operand they view
  (``tensor.reshape``, ``tensor.view``, ``tensor.set_validshape``, ``tensor.assemble``'s target,
  a collective's window result), a kernel call or ``pl.submit`` result and its tuple elements
  (the argument bound to the parameter the callee returns, :func:`returned_params`), and a
  ``tensor.slice`` that narrows only the leading dimension of its parent, with a literal offset
  tuple whose other entries are 0 (the one op-specific rule here);
* **everything else is rejected**, including ``tensor.transpose`` and any other slice.

Every value on a chain must also have ND layout and a compact stride: each step above assumes a
compact row-major source (a slice drops its parent's stride, so a leading-dim slice of a DN or
padded tensor is not contiguous). Some safe programs are rejected too — a ``tensor.write``
result, a ``[1, N]`` slice of a ``[1, W]`` tensor, a slice at a computed offset tuple, a callee
whose ``return`` is not a parameter — because a missed acceptance is safe and a wrong one is not.

The value of a name is the set of first violations on the chains that may reach it (empty:
proven dense), computed by the forward driver: an ``if`` joins both branches, a loop is iterated
to a fixpoint whose state includes its entry. A use reports the violation written first in the
source.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

from pypto_build.lowering.analysis.dataflow import FlowState, ForwardAnalysis, Value
from pypto_build.lowering.analysis.returns import returned_params
from pypto_build.lowering.diagnostics import InternalError, ProgramError, Span
from pypto_build.lowering.ir import (
    Call,
    ConstInt,
    Expr,
    ForStmt,
    Function,
    Layout,
    MakeTuple,
    Param,
    Program,
    TensorType,
    TupleType,
    Type,
    Var,
    compact_strides,
)
from pypto_build.lowering.ir.names import Op, is_submit
from pypto_build.lowering.ops.signature import span_of
from pypto_build.lowering.optable.table import lookup


@dataclass(frozen=True)
class Violation:
    """A construct that may make a value non-contiguous, and where it is written."""

    construct: str
    span: Span


Verdict: TypeAlias = frozenset[Violation]
_DENSE: Verdict = frozenset()
_State: TypeAlias = FlowState[Verdict]


def _violation(construct: str, span: Span) -> Verdict:
    return frozenset({Violation(construct, span)})


class ContiguityAnalysis(ForwardAnalysis[Verdict, _State]):
    """The contiguity verdict of every name of one function, at each statement."""

    def __init__(self, program: Program, func: Function) -> None:
        super().__init__(program, func)
        #: The verdicts of each op call's operands (by the call's identity), as last seen.
        #: The verdict of each tensor operand of each op call (both by identity), as last seen.
        self._operands: dict[int, dict[int, Value[Verdict]]] = {}
        self.run(FlowState({}))

    def violation(self, call: Call, operand: Expr) -> Violation | None:
        """Why ``operand`` of op call ``call`` (a call of the analysed function) may not be
        dense row-major, or None: the violation written first, when several chains may reach
        it."""
        found_operands = self._operands.get(id(call), {})
        if id(operand) not in found_operands:
            raise InternalError(f"contiguity: the operand at {call.span} was not analysed")
        found = self.collapse(found_operands[id(operand)])
        return min(found, key=lambda v: (v.span.line, v.span.col), default=None)

    def join_leaves(self, a: Verdict, b: Verdict) -> Verdict:
        return a | b

    def bottom(self) -> Verdict:
        return _DENSE

    def param(self, param: Param) -> Value[Verdict]:
        problem = _layout_problem(param.var.type)
        if problem is not None:
            return _violation(f"'{param.var.name}' with {problem}", param.var.span)
        return _DENSE

    def loop_index(self, stmt: ForStmt) -> Value[Verdict]:
        return _violation(f"the loop index '{stmt.var.name}'", stmt.var.span)

    def unbound(self, var: Var) -> Value[Verdict]:
        return _violation(f"'{var.name}', which no definition reaches", var.span)

    def scalar(self, expr: Expr, state: _State) -> Value[Verdict]:
        return _violation(f"the expression {type(expr).__name__}", span_of(expr))

    def op_call(self, call: Call, args: tuple[Value[Verdict], ...], state: _State) -> Verdict:
        operands = {id(expr): value for expr, value in zip(call.args, args, strict=True)}
        for _, given in call.kwargs:
            if isinstance(given, Expr) and isinstance(given.type, TensorType):
                operands[id(given)] = self.eval(given, state)
        self._operands[id(call)] = operands
        op = call.callee_name
        effects = lookup(op).effects
        traced = effects.keeps_density and effects.view_of is not None
        if not (effects.dense or traced or op == Op.TENSOR_SLICE):
            return _violation(op, call.span)
        problem = _layout_problem(call.type)
        if problem is not None:
            return _violation(f"a {op} result with {problem}", call.span)
        if effects.dense:
            return _DENSE
        if op == Op.TENSOR_SLICE:
            problem = _slice_problem(call)
            if problem is not None:
                return _violation(f"a {op} {problem}", call.span)
            return self.collapse(args[0])
        assert effects.view_of is not None
        return self.collapse(args[effects.view_of])

    def function_call(
        self, call: Call, args: tuple[Value[Verdict], ...], state: _State
    ) -> Value[Verdict]:
        callee = self.callee(call)
        result_type = call.type
        if is_submit(call) and isinstance(result_type, TupleType):
            result_type = result_type.items[0]
        positions = returned_params(callee)
        if not positions:
            # A callee that returns none of its parameters (a HOST orchestrator called from a
            # CHIP one: CheckLegality refuses the call) proves nothing about its result.
            return _violation(
                f"the result of '{callee.name}', which returns no parameter", call.span
            )
        several = len(positions) > 1
        results = tuple(
            self._result(
                call,
                args,
                position,
                _element(result_type, index) if several else result_type,
            )
            for index, position in enumerate(positions)
        )
        return results if several else results[0]

    def _result(
        self,
        call: Call,
        args: tuple[Value[Verdict], ...],
        position: int | None,
        result_type: Type | None,
    ) -> Verdict:
        name = call.callee_name
        if position is None or position >= len(args):
            return _violation(
                f"the result of self.{name}, whose return value is not one of its parameters",
                call.span,
            )
        problem = _layout_problem(result_type)
        if problem is not None:
            return _violation(f"a self.{name} result with {problem}", call.span)
        return self.collapse(args[position])

    def task_id(self, call: Call) -> Value[Verdict]:
        return _violation(f"the task id of pl.submit(self.{call.callee_name})", call.span)


def check_contiguous_operands(
    analysis: ContiguityAnalysis,
    call: Call,
    operands: Sequence[tuple[str, Expr]],
    phase: str,
) -> None:
    """Reject the first of ``operands`` (name, expression) of op call ``call`` not provably
    contiguous."""
    for name, operand in operands:
        found = analysis.violation(call, operand)
        if found is not None:
            raise ProgramError(
                f"{call.callee_name} {name} is not provably contiguous: it may come from "
                f"{found.construct} at line {found.span.line}; the builtin kernel needs dense "
                "row-major operands (make a contiguous copy with a kernel, or pass a "
                "parameter/window)",
                span_of(operand, call.span),
                phase=phase,
            )


def _slice_problem(call: Call) -> str | None:
    """Why a ``tensor.slice`` is not a leading-dimension narrowing (None if it is)."""
    parent = call.args[0].type
    result = call.type
    offset = call.args[2]
    if not isinstance(parent, TensorType) or not isinstance(result, TensorType):
        raise InternalError(f"contiguity: {Op.TENSOR_SLICE} of a non-tensor, typed {result}")
    if not isinstance(offset, MakeTuple):
        return "whose offset is not a literal tuple"
    if result.shape[1:] != parent.shape[1:]:  # the deducer keeps the rank
        return "that narrows a non-leading dimension"
    if not all(isinstance(item, ConstInt) and item.value == 0 for item in offset.items[1:]):
        return "whose offset in a non-leading dimension is not a literal 0"
    return None


def _layout_problem(value_type: Type | None) -> str | None:
    if not isinstance(value_type, TensorType):
        return None
    if value_type.layout is not Layout.ND:
        return f"layout {value_type.layout.value}"
    if value_type.stride is not None and value_type.stride != compact_strides(value_type.shape):
        return f"non-compact stride {list(value_type.stride)}"
    return None


def _element(value_type: Type, index: int) -> Type | None:
    if not isinstance(value_type, TupleType) or index >= len(value_type.items):
        return None
    return value_type.items[index]

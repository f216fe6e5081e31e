"""Which parameter a function returns: the link from a call's result to one of its arguments.

A kernel cannot allocate, so what it returns is one of the tensors it was given; a call of it is
then a new name for that argument (``data = self.k(a, data)``). Dependency derivation, CommCtx
materialization, the contiguity proof and the orchestration codegen all follow that link, and
all must agree on it, so it is computed here once.

A result is a parameter only when every ``return`` names that same parameter still holding its
entry value (a parameter name rebound in the body is not the parameter). An external kernel has
no body; by the DSL convention it returns its written (``Out``/``InOut``) parameters: matched to
the declared results in order when the counts agree, else by type where exactly one written
parameter has the result's type.
"""

from __future__ import annotations

from pypto_build.lowering.analysis.dataflow import FlowState, ForwardAnalysis, Value
from pypto_build.lowering.ir import (
    Call,
    Expr,
    ForStmt,
    Function,
    Param,
    ParamDirection,
    ReturnStmt,
    Stmt,
    Var,
)
from pypto_build.lowering.ir.memo import per_node

#: The parameters a name may still hold unchanged; None stands for any other value.
_Held = frozenset[int | None]
_OTHER: _Held = frozenset({None})


class _ParamIdentity(ForwardAnalysis[_Held, FlowState[_Held]]):
    """Tracks which parameter, unchanged, each name holds, and what each ``return`` returns."""

    def __init__(self, func: Function) -> None:
        super().__init__(None, func)
        self._index = {p.var.name: i for i, p in enumerate(func.params)}
        #: Per return statement (by identity), what each returned value may be.
        self.returns: dict[int, tuple[_Held, ...]] = {}

    def join_leaves(self, a: _Held, b: _Held) -> _Held:
        return a | b

    def bottom(self) -> _Held:
        return _OTHER

    def param(self, param: Param) -> Value[_Held]:
        return frozenset({self._index[param.var.name]})

    def loop_index(self, stmt: ForStmt) -> Value[_Held]:
        return _OTHER

    def unbound(self, var: Var) -> Value[_Held]:
        return _OTHER

    def scalar(self, expr: Expr, state: FlowState[_Held]) -> Value[_Held]:
        return _OTHER

    def op_call(
        self, call: Call, args: tuple[Value[_Held], ...], state: FlowState[_Held]
    ) -> Value[_Held]:
        return _OTHER

    def function_call(
        self, call: Call, args: tuple[Value[_Held], ...], state: FlowState[_Held]
    ) -> Value[_Held]:
        return _OTHER

    def at_stmt(self, stmt: Stmt, state: FlowState[_Held]) -> None:
        if isinstance(stmt, ReturnStmt):
            self.returns[id(stmt)] = tuple(self._returned(value, state) for value in stmt.values)

    def _returned(self, value: Expr, state: FlowState[_Held]) -> _Held:
        """The parameter a returned value is: a parameter's own name, holding its entry
        value on every path here."""
        index = self._index.get(value.name) if isinstance(value, Var) else None
        if index is None or self.collapse(self.eval(value, state)) != {index}:
            return _OTHER
        return frozenset({index})


@per_node
def returned_params(callee: Function) -> tuple[int | None, ...]:
    """For each value ``callee`` returns, the index of the parameter it returns, or None
    (asked at every call of ``callee``, answered once per function: :mod:`~..ir.memo`)."""
    count = len(callee.return_types)
    if not callee.body.stmts:
        return _written_params(callee)
    analysis = _ParamIdentity(callee)
    analysis.run(FlowState({}))
    found: list[_Held] = [frozenset()] * count
    for values in analysis.returns.values():
        if len(values) != count:
            return (None,) * count
        found = [held | value for held, value in zip(found, values, strict=True)]
    return tuple(_single(held) for held in found)


def _single(held: _Held) -> int | None:
    return next(iter(held)) if len(held) == 1 else None


def _written_params(callee: Function) -> tuple[int | None, ...]:
    written = [i for i, p in enumerate(callee.params) if p.direction is not ParamDirection.In]
    if len(written) == len(callee.return_types):
        return tuple(written)
    by_type = [
        [i for i in written if callee.params[i].var.type == ty] for ty in callee.return_types
    ]
    return tuple(found[0] if len(found) == 1 else None for found in by_type)

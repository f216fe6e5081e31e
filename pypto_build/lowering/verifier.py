"""Structural invariants of IR programs, checked between passes in tests.

Every program the verifier sees was built by our own front end and passes, so a violation is a
bug in this tool: it raises :class:`InternalError` naming the function and the construct, never
a :class:`ProgramError`. The checks are the ones later passes and the backend rely on without
re-checking: names defined on every path before use, self-calls that match their callee, op
calls whose type is the one the op table deduces, returns that match the signature, unique
function names and tuple assignments of the right arity. Argument and return types are held to
the front end's own rule (:func:`~pypto_build.lowering.frontend.typecheck.compatible`), so every
program the front end accepts verifies and a pass may not loosen it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple, NoReturn

from pypto_build.lowering.diagnostics import InternalError, ProgramError
from pypto_build.lowering.frontend.typecheck import compatible
from pypto_build.lowering.ir import (
    AssignStmt,
    AttrValue,
    BinaryOp,
    Call,
    CommDomainScopeStmt,
    ConstBool,
    ConstFloat,
    ConstInt,
    EvalStmt,
    Expr,
    ForStmt,
    Function,
    GlobalVar,
    IfStmt,
    MakeTuple,
    Program,
    ReturnStmt,
    SeqStmts,
    Stmt,
    TupleGetItem,
    TupleType,
    UnaryOp,
    Var,
    WhileStmt,
)
from pypto_build.lowering.optable import deduce_type
from pypto_build.lowering.printer import format_expr, format_type


def verify(program: Program) -> None:
    """Raise :class:`InternalError` at the first broken invariant of ``program``."""
    counts = Counter(func.name for func in program.functions)
    duplicates = sorted(name for name, count in counts.items() if count > 1)
    if duplicates:
        raise InternalError(
            f"verifier: program '{program.name}': function name '{duplicates[0]}' is defined "
            f"{counts[duplicates[0]]} times"
        )
    for func in program.functions:
        _FunctionVerifier(program, func).run()


class _Flow(NamedTuple):
    """What holds after a statement: the names defined on every path reaching the next
    statement, and whether every path through it returned (so it reaches nothing)."""

    defined: frozenset[str]
    returns: bool = False


class _FunctionVerifier:
    def __init__(self, program: Program, func: Function) -> None:
        self._program = program
        self._func = func
        self._callees = {f.name: f for f in program.functions}
        # Names assigned anywhere so far (in walk order): tells "maybe undefined" from "undefined".
        self._assigned: set[str] = set()

    def run(self) -> None:
        self._block(self._func.body, frozenset(p.var.name for p in self._func.params))

    def _fail(self, construct: str, detail: str) -> NoReturn:
        raise InternalError(
            f"verifier: program '{self._program.name}', function '{self._func.name}': "
            f"{construct}: {detail}"
        )

    # --- statements -----------------------------------------------------------------------

    def _block(self, body: SeqStmts, defined: frozenset[str]) -> _Flow:
        flow = _Flow(defined)
        for stmt in body.stmts:
            after = self._stmt(stmt, flow.defined)
            flow = _Flow(after.defined, flow.returns or after.returns)
        return flow

    def _stmt(self, stmt: Stmt, defined: frozenset[str]) -> _Flow:
        match stmt:
            case SeqStmts():
                return self._block(stmt, defined)
            case AssignStmt():
                return self._assign(stmt, defined)
            case EvalStmt():
                self._expr(stmt.expr, defined)
                return _Flow(defined)
            case ReturnStmt():
                self._return(stmt, defined)
                return _Flow(defined, returns=True)
            case IfStmt():
                return self._if(stmt, defined)
            case ForStmt():
                return self._for(stmt, defined)
            case WhileStmt():
                self._expr(stmt.cond, defined)
                self._block(stmt.body, defined)
                return _Flow(defined)
            case CommDomainScopeStmt():
                return self._block(stmt.body, defined)
            case _:
                self._fail("statement", f"unknown statement kind {type(stmt).__name__}")

    def _define(self, defined: frozenset[str], names: Sequence[str]) -> frozenset[str]:
        self._assigned.update(names)
        return defined | frozenset(names)

    def _assign(self, stmt: AssignStmt, defined: frozenset[str]) -> _Flow:
        self._expr(stmt.value, defined)
        names = [target.name for target in stmt.targets]
        value_type = stmt.value.type
        if len(names) > 1 and not (
            isinstance(value_type, TupleType) and len(value_type.items) == len(names)
        ):
            self._fail(
                f"assignment to {', '.join(names)}",
                f"{len(names)} targets for a value of type {format_type(value_type)}",
            )
        return _Flow(self._define(defined, names))

    def _return(self, stmt: ReturnStmt, defined: frozenset[str]) -> None:
        for value in stmt.values:
            self._expr(value, defined)
        declared = self._func.return_types
        actual = tuple(value.type for value in stmt.values)
        if len(actual) == 1 and len(declared) != 1 and isinstance(actual[0], TupleType):
            actual = actual[0].items  # ``return self.f(...)`` of a callee returning several values
        if len(actual) != len(declared):
            self._fail("return", f"returns {len(actual)} values, {len(declared)} declared")
        for index, (got, want) in enumerate(zip(actual, declared, strict=True)):
            if not compatible(want, got):
                self._fail(
                    "return",
                    f"value {index} has type {format_type(got)}, declared {format_type(want)}",
                )

    def _if(self, stmt: IfStmt, defined: frozenset[str]) -> _Flow:
        self._expr(stmt.cond, defined)
        then = self._block(stmt.then_body, defined)
        orelse = _Flow(defined) if stmt.else_body is None else self._block(stmt.else_body, defined)
        if then.returns or orelse.returns:
            # Only a branch that falls through reaches the next statement.
            reaching = orelse.defined if then.returns else then.defined
            return _Flow(reaching, then.returns and orelse.returns)
        return _Flow(then.defined & orelse.defined)

    def _for(self, stmt: ForStmt, defined: frozenset[str]) -> _Flow:
        for bound in (stmt.start, stmt.stop, stmt.step):
            self._expr(bound, defined)
        self._block(stmt.body, self._define(defined, [stmt.var.name]))
        # The body may run zero times: nothing it assigns (nor the loop variable) is definite.
        return _Flow(defined)

    # --- expressions ----------------------------------------------------------------------

    def _expr(self, expr: Expr, defined: frozenset[str]) -> None:
        match expr:
            case Var():
                self._use(expr, defined)
            case ConstInt() | ConstFloat() | ConstBool():
                pass
            case BinaryOp():
                self._expr(expr.lhs, defined)
                self._expr(expr.rhs, defined)
            case UnaryOp():
                self._expr(expr.operand, defined)
            case MakeTuple():
                for item in expr.items:
                    self._expr(item, defined)
            case TupleGetItem():
                self._expr(expr.tuple, defined)
            case Call():
                self._call(expr, defined)
            case _:
                self._fail("expression", f"unknown expression kind {type(expr).__name__}")

    def _use(self, var: Var, defined: frozenset[str]) -> None:
        if var.name in defined:
            return
        if var.name in self._assigned:
            self._fail(f"use of '{var.name}'", "may be undefined: only some paths assign it")
        self._fail(f"use of '{var.name}'", "used before it is defined")

    def _attr_value(self, value: AttrValue, defined: frozenset[str]) -> None:
        if isinstance(value, Expr):
            self._expr(value, defined)
        elif isinstance(value, tuple):
            for item in value:
                self._attr_value(item, defined)

    def _call(self, call: Call, defined: frozenset[str]) -> None:
        for arg in call.args:
            self._expr(arg, defined)
        for _, value in call.kwargs + call.attrs:
            self._attr_value(value, defined)
        if isinstance(call.op, GlobalVar):
            self._self_call(call, call.op.name)
        else:
            self._op_call(call, call.op)

    def _self_call(self, call: Call, name: str) -> None:
        construct = f"call of 'self.{name}'"
        callee = self._callees.get(name)
        if callee is None:
            self._fail(construct, f"no function '{name}' in the program")
        if len(call.args) != len(callee.params):
            self._fail(
                construct,
                f"{len(call.args)} arguments for {len(callee.params)} parameters",
            )
        for index, (arg, param) in enumerate(zip(call.args, callee.params, strict=True)):
            if not compatible(param.var.type, arg.type):
                self._fail(
                    construct,
                    f"argument {index} ({format_expr(arg)}) has type {format_type(arg.type)}, "
                    f"parameter '{param.var.name}' is {format_type(param.var.type)}",
                )

    def _op_call(self, call: Call, op: str) -> None:
        construct = f"call of '{op}'"
        try:
            deduced = deduce_type(call)
        except (ProgramError, InternalError) as error:
            self._fail(construct, f"the op table rejects it: {error.args[0]}")
        if deduced != call.type:
            self._fail(
                construct,
                f"has type {format_type(call.type)}, the op deduces {format_type(deduced)}",
            )

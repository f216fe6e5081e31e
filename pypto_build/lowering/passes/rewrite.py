"""Generic IR rewriting for passes: one rebuilding mapper (the read-only walks live in
:mod:`pypto_build.lowering.ir.walk`).

Passes override only the hooks for the nodes they change and inherit the structural recursion
for everything else, so no pass re-implements tree walking (and none forgets a node kind, e.g.
expressions inside call attrs such as ``device=r``).

The :class:`Mutator` preserves identity: a node none of whose children changed is returned as
the same object. ``rewritten is original`` therefore means "the pass left it untouched", which
keeps passes cheap and lets tests and callers detect a no-op without a structural comparison.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from pypto_build.lowering.ir import (
    AssignStmt,
    AttrValue,
    BinaryOp,
    Call,
    CommDomainScopeStmt,
    EvalStmt,
    Expr,
    ForStmt,
    Function,
    IfStmt,
    MakeTuple,
    Program,
    ReturnStmt,
    SeqStmts,
    Stmt,
    TupleGetItem,
    UnaryOp,
    Var,
    WhileStmt,
)
from pypto_build.lowering.ir.rebuild import replaced
from pypto_build.lowering.ir.walk import call_extras

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

#: What a statement hook may return: a replacement, or several statements (none to delete).
StmtResult = Stmt | Sequence[Stmt]

_Node = TypeVar("_Node", bound="DataclassInstance")


def _replace(node: _Node, **changes: object) -> _Node:
    """``dataclasses.replace`` only when some field really changed (identity otherwise)."""
    fields = node.__dict__
    for name, value in changes.items():
        if fields[name] is not value:
            return replaced(node, **changes)
    return node


def _same_items(old: Sequence[object], new: Sequence[object]) -> bool:
    return len(old) == len(new) and all(map(operator.is_, old, new))


class Mutator:
    """Rebuilds a function bottom-up in program order.

    Override ``visit_<node>`` hooks; call the base implementation (or :meth:`expr` /
    :meth:`stmt` / :meth:`body` on the children) to keep recursing. Definitions (assignment
    targets, loop variables, parameters) go through :meth:`define`, uses through
    :meth:`visit_var`, so a renaming pass overrides exactly those two. Statements are visited in
    program order and an assignment's value before its targets, so a stateful subclass sees
    uses before the definition they precede.
    """

    # -- entry points ---------------------------------------------------------------------

    def function(self, func: Function) -> Function:
        params = tuple(_replace(p, var=self.define(p.var)) for p in func.params)
        body = self.body(func.body)
        return _replace(
            func, params=func.params if _same_items(func.params, params) else params, body=body
        )

    def body(self, seq: SeqStmts) -> SeqStmts:
        new: list[Stmt] = []
        for stmt in seq.stmts:
            new.extend(self.stmt(stmt))
        return seq if _same_items(seq.stmts, new) else _replace(seq, stmts=tuple(new))

    def stmt(self, stmt: Stmt) -> tuple[Stmt, ...]:
        """Visit one statement; the result is the (possibly empty) replacement sequence."""
        result = self._dispatch_stmt(stmt)
        return (result,) if isinstance(result, Stmt) else tuple(result)

    def expr(self, expr: Expr) -> Expr:
        if isinstance(expr, Var):
            return self.visit_var(expr)
        if isinstance(expr, Call):
            return self.visit_call(expr)
        if isinstance(expr, BinaryOp):
            return self.visit_binary(expr)
        if isinstance(expr, UnaryOp):
            return self.visit_unary(expr)
        if isinstance(expr, MakeTuple):
            return self.visit_make_tuple(expr)
        if isinstance(expr, TupleGetItem):
            return self.visit_tuple_get_item(expr)
        return expr  # constants

    def attr_value(self, value: AttrValue) -> AttrValue:
        """Map the expressions inside an attribute / keyword value (literals pass through)."""
        if isinstance(value, Expr):
            return self.expr(value)
        if isinstance(value, tuple):
            items = tuple(self.attr_value(item) for item in value)
            return value if _same_items(value, items) else items
        return value

    # -- expression hooks -----------------------------------------------------------------

    def visit_var(self, var: Var) -> Expr:
        return var

    def define(self, var: Var) -> Var:
        """A variable being defined (assignment target, loop variable, parameter)."""
        return var

    def visit_call(self, call: Call) -> Expr:
        expr = self.expr
        if type(self).visit_var is Mutator.visit_var:
            # Names map to themselves unless a pass renames: most operands are passed over.
            args = tuple([a if type(a) is Var else expr(a) for a in call.args])
        else:
            args = tuple([expr(a) for a in call.args])
        if call_extras(call):
            kwargs = self._attrs(call.kwargs)
            attrs = self._attrs(call.attrs)
        else:  # literals only (directions, task ids): nothing in them to map
            kwargs, attrs = call.kwargs, call.attrs
        return _replace(
            call,
            args=call.args if _same_items(call.args, args) else args,
            kwargs=kwargs,
            attrs=attrs,
        )

    def visit_binary(self, expr: BinaryOp) -> Expr:
        return _replace(expr, lhs=self.expr(expr.lhs), rhs=self.expr(expr.rhs))

    def visit_unary(self, expr: UnaryOp) -> Expr:
        return _replace(expr, operand=self.expr(expr.operand))

    def visit_make_tuple(self, expr: MakeTuple) -> Expr:
        items = tuple(self.expr(item) for item in expr.items)
        return expr if _same_items(expr.items, items) else _replace(expr, items=items)

    def visit_tuple_get_item(self, expr: TupleGetItem) -> Expr:
        return _replace(expr, tuple=self.expr(expr.tuple))

    # -- statement hooks ------------------------------------------------------------------

    def visit_assign(self, stmt: AssignStmt) -> StmtResult:
        value = self.expr(stmt.value)
        targets = tuple(self.define(t) for t in stmt.targets)
        return _replace(
            stmt,
            value=value,
            targets=stmt.targets if _same_items(stmt.targets, targets) else targets,
        )

    def visit_eval(self, stmt: EvalStmt) -> StmtResult:
        return _replace(stmt, expr=self.expr(stmt.expr))

    def visit_return(self, stmt: ReturnStmt) -> StmtResult:
        values = tuple(self.expr(v) for v in stmt.values)
        return stmt if _same_items(stmt.values, values) else _replace(stmt, values=values)

    def visit_if(self, stmt: IfStmt) -> StmtResult:
        cond = self.expr(stmt.cond)
        then_body = self.body(stmt.then_body)
        else_body = None if stmt.else_body is None else self.body(stmt.else_body)
        return _replace(stmt, cond=cond, then_body=then_body, else_body=else_body)

    def visit_for(self, stmt: ForStmt) -> StmtResult:
        start, stop, step = self.expr(stmt.start), self.expr(stmt.stop), self.expr(stmt.step)
        var = self.define(stmt.var)
        return _replace(stmt, start=start, stop=stop, step=step, var=var, body=self.body(stmt.body))

    def visit_while(self, stmt: WhileStmt) -> StmtResult:
        return _replace(stmt, cond=self.expr(stmt.cond), body=self.body(stmt.body))

    def visit_scope(self, stmt: CommDomainScopeStmt) -> StmtResult:
        return _replace(stmt, body=self.body(stmt.body))

    def visit_seq(self, stmt: SeqStmts) -> StmtResult:
        return self.body(stmt)

    # -- internals ------------------------------------------------------------------------

    def _attrs(self, attrs: tuple[tuple[str, AttrValue], ...]) -> tuple[tuple[str, AttrValue], ...]:
        mapped = None
        for index, (key, value) in enumerate(attrs):
            if not isinstance(value, Expr | tuple):
                continue  # a literal (a task id, a dtype): nothing to map
            new = self.attr_value(value)
            if new is not value:
                if mapped is None:
                    mapped = list(attrs)
                mapped[index] = (key, new)
        return attrs if mapped is None else tuple(mapped)

    def _dispatch_stmt(self, stmt: Stmt) -> StmtResult:
        if isinstance(stmt, AssignStmt):
            return self.visit_assign(stmt)
        if isinstance(stmt, EvalStmt):
            return self.visit_eval(stmt)
        if isinstance(stmt, ReturnStmt):
            return self.visit_return(stmt)
        if isinstance(stmt, IfStmt):
            return self.visit_if(stmt)
        if isinstance(stmt, ForStmt):
            return self.visit_for(stmt)
        if isinstance(stmt, WhileStmt):
            return self.visit_while(stmt)
        if isinstance(stmt, CommDomainScopeStmt):
            return self.visit_scope(stmt)
        if isinstance(stmt, SeqStmts):
            return self.visit_seq(stmt)
        raise TypeError(f"unknown statement kind {type(stmt).__name__}")


class CallMapper(Mutator):
    """A :class:`Mutator` that maps every call (after its operands) through one function."""

    def __init__(self, fn: Callable[[Call], Expr]) -> None:
        self._fn = fn

    def visit_call(self, call: Call) -> Expr:
        rebuilt = super().visit_call(call)
        return self._fn(rebuilt) if isinstance(rebuilt, Call) else rebuilt


def map_functions(program: Program, fn: Callable[[Function], Function]) -> Program:
    """Apply ``fn`` to every function; the same program object if nothing changed."""
    functions = tuple(fn(f) for f in program.functions)
    if _same_items(program.functions, functions):
        return program
    return _replace(program, functions=functions)

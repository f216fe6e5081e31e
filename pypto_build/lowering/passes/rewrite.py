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
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

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
from pypto_build.lowering.ir.walk import NESTING, call_extras

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


#: The expressions :meth:`Mutator.expr` maps to themselves whatever the pass (they have no hook).
_CONSTANTS = frozenset({ConstInt, ConstFloat, ConstBool})


def _same_items(old: Sequence[object], new: Sequence[object]) -> bool:
    return len(old) == len(new) and all(map(operator.is_, old, new))


def _holds_expr(value: AttrValue) -> bool:
    """Whether an attr value is or holds an expression: most attrs of most calls (directions,
    dependencies, task ids) are literals, and tuples of them need no mapping item by item."""
    if isinstance(value, Expr):
        return True
    return isinstance(value, tuple) and any(isinstance(item, NESTING) for item in value)


class Mutator:
    """Rebuilds a function bottom-up in program order.

    Override ``visit_<node>`` hooks; call the base implementation (or :meth:`expr` /
    :meth:`stmt` / :meth:`body` on the children) to keep recursing. Definitions (assignment
    targets, loop variables, parameters) go through :meth:`define`, uses through
    :meth:`visit_var`, so a renaming pass overrides exactly those two. Statements are visited in
    program order and an assignment's value before its targets, so a stateful subclass sees
    uses before the definition they precede.
    """

    #: The hook of each node type (:meth:`__init_subclass__`): the nodes are told apart by their
    #: exact type (no IR node type is subclassed), one lookup instead of a chain of
    #: ``isinstance`` tests, on every node of every function, in every pass.
    _stmt_hooks: ClassVar[dict[type, Callable[[Mutator, Any], StmtResult]]]
    _expr_hooks: ClassVar[dict[type, Callable[[Mutator, Any], Expr]]]
    #: Whether the class keeps the default :meth:`visit_var` and :meth:`define`: names then
    #: map to themselves, and the hooks pass operands and targets over without a call each.
    _keeps_names: ClassVar[bool]

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls._bind_hooks()

    @classmethod
    def _bind_hooks(cls) -> None:
        cls._stmt_hooks = {
            AssignStmt: cls.visit_assign,
            EvalStmt: cls.visit_eval,
            ReturnStmt: cls.visit_return,
            IfStmt: cls.visit_if,
            ForStmt: cls.visit_for,
            WhileStmt: cls.visit_while,
            CommDomainScopeStmt: cls.visit_scope,
            SeqStmts: cls.visit_seq,
        }
        cls._expr_hooks = {
            Var: cls.visit_var,
            Call: cls.visit_call,
            BinaryOp: cls.visit_binary,
            UnaryOp: cls.visit_unary,
            MakeTuple: cls.visit_make_tuple,
            TupleGetItem: cls.visit_tuple_get_item,
        }
        cls._keeps_names = cls.visit_var is Mutator.visit_var and cls.define is Mutator.define

    # -- entry points ---------------------------------------------------------------------

    def function(self, func: Function) -> Function:
        params = func.params
        if not self._keeps_names:
            defined = tuple(_replace(p, var=self.define(p.var)) for p in params)
            if not _same_items(params, defined):
                params = defined
        body = self.body(func.body)
        return _replace(func, params=params, body=body)

    def body(self, seq: SeqStmts) -> SeqStmts:
        new: list[Stmt] = []
        dispatch = self._dispatch_stmt
        for stmt in seq.stmts:
            result = dispatch(stmt)
            if isinstance(result, Stmt):
                new.append(result)
            else:
                new.extend(result)
        return seq if _same_items(seq.stmts, new) else replaced(seq, stmts=tuple(new))

    def stmt(self, stmt: Stmt) -> tuple[Stmt, ...]:
        """Visit one statement; the result is the (possibly empty) replacement sequence."""
        result = self._dispatch_stmt(stmt)
        return (result,) if isinstance(result, Stmt) else tuple(result)

    def expr(self, expr: Expr) -> Expr:
        hook = self._expr_hooks.get(type(expr))
        return expr if hook is None else hook(self, expr)  # constants map to themselves

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
        old = call.args
        if self._keeps_names:
            # Names map to themselves unless a pass renames: most operands are passed over.
            args = [a if type(a) is Var else expr(a) for a in old]
        else:
            args = [expr(a) for a in old]
        changes: dict[str, object] = {}
        if not _same_items(old, args):
            changes["args"] = tuple(args)
        extras = call_extras(call)
        # Constants map to themselves, and so do names unless the pass renames: a call whose
        # keyword operands and attrs hold nothing else (``core_num=CORES``) has none to map.
        if extras and not all(
            type(e) in _CONSTANTS or (type(e) is Var and self._keeps_names) for e in extras
        ):
            kwargs = self._attrs(call.kwargs)
            attrs = self._attrs(call.attrs)
            if kwargs is not call.kwargs:
                changes["kwargs"] = kwargs
            if attrs is not call.attrs:
                changes["attrs"] = attrs
        # else: literals only (directions, task ids), nothing in them to map
        return replaced(call, **changes) if changes else call

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
        targets = stmt.targets
        if not self._keeps_names:
            defined = tuple(self.define(t) for t in targets)
            if not _same_items(targets, defined):
                targets = defined
        if value is stmt.value and targets is stmt.targets:
            return stmt
        return replaced(stmt, value=value, targets=targets)

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
            if not _holds_expr(value):
                continue  # literals (a task id, directions, dependencies): nothing to map
            new = self.attr_value(value)
            if new is not value:
                if mapped is None:
                    mapped = list(attrs)
                mapped[index] = (key, new)
        return attrs if mapped is None else tuple(mapped)

    def _dispatch_stmt(self, stmt: Stmt) -> StmtResult:
        hook = self._stmt_hooks.get(type(stmt))
        if hook is None:
            raise TypeError(f"unknown statement kind {type(stmt).__name__}")
        return hook(self, stmt)


Mutator._bind_hooks()


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

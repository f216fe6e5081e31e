"""Read-only walks over the IR: the sub-expressions, nested bodies and bound names of a node.

Passes, analyses and the backends all need the same structural recursion; keeping it next to the
node definitions means no consumer re-implements it (and none forgets a node kind, e.g.
expressions inside call attrs such as ``device=r``), and a backend reads the IR without
depending on the passes that transform it.
"""

from __future__ import annotations

from collections.abc import Iterator

from pypto_build.lowering.ir.exprs import (
    AttrValue,
    BinaryOp,
    Call,
    Expr,
    MakeTuple,
    TupleGetItem,
    UnaryOp,
)
from pypto_build.lowering.ir.stmts import (
    AssignStmt,
    CommDomainScopeStmt,
    EvalStmt,
    ForStmt,
    IfStmt,
    ReturnStmt,
    SeqStmts,
    Stmt,
    WhileStmt,
)


def child_exprs(expr: Expr) -> tuple[Expr, ...]:
    """Direct sub-expressions of ``expr`` in evaluation order (call attrs included)."""
    if isinstance(expr, Call):
        extras = tuple(_attr_exprs(v) for _, v in (*expr.kwargs, *expr.attrs))
        return (*expr.args, *(e for group in extras for e in group))
    if isinstance(expr, BinaryOp):
        return (expr.lhs, expr.rhs)
    if isinstance(expr, UnaryOp):
        return (expr.operand,)
    if isinstance(expr, MakeTuple):
        return expr.items
    if isinstance(expr, TupleGetItem):
        return (expr.tuple,)
    return ()


def _attr_exprs(value: AttrValue) -> tuple[Expr, ...]:
    if isinstance(value, Expr):
        return (value,)
    if isinstance(value, tuple):
        return tuple(e for item in value for e in _attr_exprs(item))
    return ()


def stmt_exprs(stmt: Stmt) -> tuple[Expr, ...]:
    """The expressions a statement evaluates itself (not those of nested bodies)."""
    if isinstance(stmt, AssignStmt):
        return (stmt.value,)
    if isinstance(stmt, EvalStmt):
        return (stmt.expr,)
    if isinstance(stmt, ReturnStmt):
        return stmt.values
    if isinstance(stmt, IfStmt | WhileStmt):
        return (stmt.cond,)
    if isinstance(stmt, ForStmt):
        return (stmt.start, stmt.stop, stmt.step)
    return ()


def child_bodies(stmt: Stmt) -> tuple[SeqStmts, ...]:
    """Nested statement bodies of ``stmt`` (branches, loop bodies, scope bodies)."""
    if isinstance(stmt, IfStmt):
        return (stmt.then_body,) if stmt.else_body is None else (stmt.then_body, stmt.else_body)
    if isinstance(stmt, ForStmt | WhileStmt | CommDomainScopeStmt):
        return (stmt.body,)
    if isinstance(stmt, SeqStmts):
        return (stmt,)
    return ()


def walk_exprs(node: Stmt | Expr) -> Iterator[Expr]:
    """Every expression under ``node``, each after its sub-expressions (evaluation order),
    statements in program order."""
    if isinstance(node, Expr):
        for child in child_exprs(node):
            yield from walk_exprs(child)
        yield node
        return
    if isinstance(node, SeqStmts):
        for stmt in node.stmts:
            yield from walk_exprs(stmt)
        return
    for expr in stmt_exprs(node):
        yield from walk_exprs(expr)
    for body in child_bodies(node):
        yield from walk_exprs(body)


def walk_calls(node: Stmt | Expr) -> Iterator[Call]:
    """Every call under ``node`` in evaluation order."""
    return (e for e in walk_exprs(node) if isinstance(e, Call))


def walk_stmts(node: Stmt) -> Iterator[Stmt]:
    """``node`` and every statement nested in it, pre-order (``SeqStmts`` containers omitted)."""
    if not isinstance(node, SeqStmts):
        yield node
    for body in child_bodies(node):
        for stmt in body.stmts:
            yield from walk_stmts(stmt)


def defined_names(stmt: Stmt) -> frozenset[str]:
    """Names ``stmt`` (or any statement nested in it) binds."""
    names: set[str] = set()
    for s in walk_stmts(stmt):
        if isinstance(s, AssignStmt):
            names.update(t.name for t in s.targets)
        elif isinstance(s, ForStmt):
            names.add(s.var.name)
    return frozenset(names)

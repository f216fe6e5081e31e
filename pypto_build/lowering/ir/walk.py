"""Read-only walks over the IR: the sub-expressions, nested bodies and bound names of a node.

Passes, analyses and the backends all need the same structural recursion; keeping it next to the
node definitions means no consumer re-implements it (and none forgets a node kind, e.g.
expressions inside call attrs such as ``device=r``), and a backend reads the IR without
depending on the passes that transform it.
"""

from __future__ import annotations

from collections.abc import Iterator

from pypto_build.lowering.ir.exprs import (
    LITERAL_TYPES,
    AttrValue,
    BinaryOp,
    Call,
    ConstBool,
    ConstFloat,
    ConstInt,
    Expr,
    MakeTuple,
    TupleGetItem,
    UnaryOp,
    Var,
)
from pypto_build.lowering.ir.memo import per_node
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
    kind = type(expr)
    if kind is Call:
        assert isinstance(expr, Call)
        return _call_children(expr)
    if kind in _LEAVES:
        return ()
    if isinstance(expr, BinaryOp):
        return (expr.lhs, expr.rhs)
    if isinstance(expr, UnaryOp):
        return (expr.operand,)
    if isinstance(expr, MakeTuple):
        return expr.items
    if isinstance(expr, TupleGetItem):
        return (expr.tuple,)
    return ()


#: Expressions without sub-expressions: every walk reaches them, so they are told apart first.
_LEAVES = frozenset({Var, ConstInt, ConstFloat, ConstBool})

# The classes the walks test nodes against, as tuples: ``isinstance(x, A | B)`` makes the union
# anew at every test, which costs five times the test itself, on every node of every walk.
#: What an attr value may hold an expression in: an expression, or a tuple of values.
NESTING = (Expr, tuple)
_CONDITIONAL = (IfStmt, WhileStmt)
_ONE_BODY = (ForStmt, WhileStmt, CommDomainScopeStmt)


def _call_children(call: Call) -> tuple[Expr, ...]:
    """A call's operands, then the expressions inside its keyword operands and attrs."""
    extras = call_extras(call)
    return (*call.args, *extras) if extras else call.args


def call_extras(call: Call) -> tuple[Expr, ...]:
    """The expressions inside a call's keyword operands and attrs (a ``device=r``), in order:
    what :func:`child_exprs` gives after the operands. Most attrs are literals (task ids,
    dependencies, directions), passed over without building anything."""
    if not (call.kwargs or call.attrs):
        return ()
    return _attr_exprs(call)


@per_node
def _attr_exprs(call: Call) -> tuple[Expr, ...]:
    """:func:`call_extras` of a call with kwargs or attrs: every walk, analysis and rewrite
    of its function asks (once the passes have added directions, task ids and dependencies,
    every call has attrs), so it is found once per call (:mod:`.memo`)."""
    extras: list[Expr] = []
    for _, value in (*call.kwargs, *call.attrs):
        # The first level here, without a call per value: each pass asks of the calls it made.
        # A literal is told apart by its exact type first (directions, task ids, dependencies).
        if type(value) in LITERAL_TYPES:
            continue
        if isinstance(value, Expr):
            extras.append(value)
        elif isinstance(value, tuple):
            for item in value:
                if type(item) not in LITERAL_TYPES and isinstance(item, NESTING):
                    _attr_exprs_into(item, extras)
    return tuple(extras)


def _attr_exprs_into(value: AttrValue, found: list[Expr]) -> None:
    if isinstance(value, Expr):
        found.append(value)
    elif isinstance(value, tuple):
        for item in value:
            if isinstance(item, NESTING):
                _attr_exprs_into(item, found)


def stmt_exprs(stmt: Stmt) -> tuple[Expr, ...]:
    """The expressions a statement evaluates itself (not those of nested bodies)."""
    if isinstance(stmt, AssignStmt):
        return (stmt.value,)
    if isinstance(stmt, EvalStmt):
        return (stmt.expr,)
    if isinstance(stmt, ReturnStmt):
        return stmt.values
    if isinstance(stmt, _CONDITIONAL):
        return (stmt.cond,)
    if isinstance(stmt, ForStmt):
        return (stmt.start, stmt.stop, stmt.step)
    return ()


def child_bodies(stmt: Stmt) -> tuple[SeqStmts, ...]:
    """Nested statement bodies of ``stmt`` (branches, loop bodies, scope bodies)."""
    if isinstance(stmt, IfStmt):
        return (stmt.then_body,) if stmt.else_body is None else (stmt.then_body, stmt.else_body)
    if isinstance(stmt, _ONE_BODY):
        return (stmt.body,)
    if isinstance(stmt, SeqStmts):
        return (stmt,)
    return ()


def walk_exprs(node: Stmt | Expr) -> Iterator[Expr]:
    """Every expression under ``node``, each after its sub-expressions (evaluation order),
    statements in program order."""
    found: list[Expr] = []
    _exprs_into(node, found)
    return iter(found)


def walk_calls(node: Stmt | Expr) -> Iterator[Call]:
    """Every call under ``node`` in evaluation order."""
    if type(node) is SeqStmts:
        return iter(_body_calls(node))
    found: list[Call] = []
    _calls_into(node, found)
    return iter(found)


@per_node
def _body_calls(body: SeqStmts) -> tuple[Call, ...]:
    """The calls of a function body, which the passes, the checks and each chip's render all
    ask for: found once per body (:mod:`.memo`)."""
    found: list[Call] = []
    _calls_into(body, found)
    return tuple(found)


def _exprs_into(node: Stmt | Expr, found: list[Expr]) -> None:
    """Append the expressions under ``node`` to ``found``, in the order :func:`walk_exprs`
    gives them. Every pass, analysis and backend walks whole bodies, many times over for a
    large program, so this is a plain recursion filling one list rather than nested
    generators, which cost a frame switch per node and level."""
    if isinstance(node, Expr):
        if type(node) not in _LEAVES:
            for child in child_exprs(node):
                if type(child) in _LEAVES:  # most operands: taken here, without a call
                    found.append(child)
                else:
                    _exprs_into(child, found)
        found.append(node)
        return
    if type(node) is SeqStmts:
        for stmt in node.stmts:
            _exprs_into(stmt, found)
        return
    for expr in stmt_exprs(node):
        _exprs_into(expr, found)
    for body in child_bodies(node):
        _exprs_into(body, found)


def _calls_into(node: Stmt | Expr, found: list[Call]) -> None:
    """Append the calls under ``node`` to ``found``, in the order :func:`walk_calls` gives
    them: :func:`_exprs_into` keeping calls only, with the common nodes (calls, names and
    constants, statement lists, assignments) told apart by their exact type first, and a
    call's operands read directly rather than gathered into a tuple."""
    kind = type(node)
    if kind is Call:
        assert isinstance(node, Call)
        _call_into(node, found)
    elif kind in _LEAVES:
        return
    elif kind is SeqStmts:
        assert isinstance(node, SeqStmts)
        for stmt in node.stmts:
            # Most statements assign a call: its calls are taken here, one level down.
            if type(stmt) is AssignStmt and type(stmt.value) is Call:
                _call_into(stmt.value, found)
            else:
                _calls_into(stmt, found)
    elif kind is AssignStmt:
        assert isinstance(node, AssignStmt)
        _calls_into(node.value, found)
    elif isinstance(node, Expr):
        for child in child_exprs(node):
            _calls_into(child, found)
        if isinstance(node, Call):
            found.append(node)
    else:
        for expr in stmt_exprs(node):
            _calls_into(expr, found)
        for body in child_bodies(node):
            _calls_into(body, found)


def _call_into(call: Call, found: list[Call]) -> None:
    """:func:`_calls_into` of a call: the calls in its operands and attrs, then itself."""
    for arg in call.args:
        if type(arg) not in _LEAVES:
            _calls_into(arg, found)
    if call.kwargs or call.attrs:
        for extra in _attr_exprs(call):
            if type(extra) not in _LEAVES:
                _calls_into(extra, found)
    found.append(call)


def walk_stmts(node: Stmt) -> Iterator[Stmt]:
    """``node`` and every statement nested in it, pre-order (``SeqStmts`` containers omitted)."""
    found: list[Stmt] = []
    _stmts_into(node, found)
    return iter(found)


def _stmts_into(node: Stmt, found: list[Stmt]) -> None:
    if type(node) is not SeqStmts:
        found.append(node)
    for body in child_bodies(node):
        for stmt in body.stmts:
            _stmts_into(stmt, found)


def defined_names(stmt: Stmt) -> frozenset[str]:
    """Names ``stmt`` (or any statement nested in it) binds."""
    names: set[str] = set()
    for s in walk_stmts(stmt):
        if isinstance(s, AssignStmt):
            names.update(t.name for t in s.targets)
        elif isinstance(s, ForStmt):
            names.add(s.var.name)
    return frozenset(names)

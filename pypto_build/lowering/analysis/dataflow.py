"""One forward dataflow driver for the analyses of a function body.

Provenance (which storage a tensor name refers to), the contiguity proof of builtin operands and
the HOST window binding all ask the same question — what abstract value does each name hold at
each point of a structured body — and differ only in the values and in what each op or call
does to them. :class:`ForwardAnalysis` owns the walk; an analysis supplies the lattice (a join
of two values) and the transfer functions, and queries op effects (:class:`Effects`) rather
than listing ops by name.

The walk is over the structured body: an ``if`` joins its branches, a loop is iterated to a
fixpoint whose state includes the loop's entry (zero iterations), so every value a use can see is
accounted for. A ``return`` is not taken to end its path, which can only add values, never lose
one. Hooks observe each statement with its entry state and each self-call with its operand
values; within a loop the last observation is made with the fixpoint state, so an analysis that
overwrites per-node results keeps the final ones.

A value is an analysis' leaf value, or a tuple of values for a tuple-valued expression (a call
returning several results, ``pl.submit``), so unpacking ``a, b = ...`` keeps each element's own
value.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Self, TypeAlias, TypeVar, Union

from pypto_build.lowering.diagnostics import InternalError
from pypto_build.lowering.ir import (
    AssignStmt,
    Call,
    CommDomainScopeStmt,
    EvalStmt,
    Expr,
    ForStmt,
    Function,
    GlobalVar,
    IfStmt,
    MakeTuple,
    Param,
    Program,
    ReturnStmt,
    SeqStmts,
    Stmt,
    TupleGetItem,
    Var,
    WhileStmt,
)
from pypto_build.lowering.ir.names import is_submit
from pypto_build.lowering.ir.walk import call_extras, child_exprs

L = TypeVar("L")

#: What ``dict.get`` answers for a name no definition reaches (a value may be None).
_UNBOUND = object()

#: An abstract value: a leaf, or one value per element of a tuple-valued expression.
Value: TypeAlias = Union[L, tuple["Value[L]", ...]]  # noqa: UP007 (a runtime generic alias)


def leaves(value: Value[L]) -> list[L]:
    """Every leaf of ``value``, in order."""
    if type(value) is not tuple:
        return [value]  # type: ignore[list-item]
    return [leaf for item in value for leaf in leaves(item)]


@dataclass
class FlowState(Generic[L]):
    """What the walk knows at one program point: the value of every bound name. An analysis
    that tracks more (the tasks that wrote a storage, say) extends it and its join."""

    env: dict[str, Value[L]]

    def copy(self) -> Self:
        return dataclasses.replace(self, env=dict(self.env))

    def join(self, other: Self, join: Callable[[Value[L], Value[L]], Value[L]]) -> Self:
        """The state at a merge point of two paths (each name may hold either value)."""
        env = dict(self.env)
        for name, value in other.env.items():
            env[name] = join(env[name], value) if name in env else value
        return dataclasses.replace(self, env=env)


S = TypeVar("S", bound=FlowState)  # type: ignore[type-arg]


class ForwardAnalysis(ABC, Generic[L, S]):
    """A forward walk of one function body, generic in the leaf value ``L`` and state ``S``."""

    def __init__(self, program: Program | None, func: Function) -> None:
        self.program = program
        self.func = func
        # An analysis that observes each evaluated name overrides eval(); for the others, the
        # names among a call's operands (most operands) are looked up without a call each.
        self._inline_names = type(self).eval is ForwardAnalysis.eval
        # Most statements assign a call. An analysis that observes no statement as such (no
        # own exec_stmt, at_stmt or stmt_expr) has them evaluated without those calls each.
        kind = type(self)
        self._plain_assigns = (
            kind.exec_stmt is ForwardAnalysis.exec_stmt
            and kind.at_stmt is ForwardAnalysis.at_stmt
            and kind.stmt_expr is ForwardAnalysis.stmt_expr
        )

    # -- the lattice ------------------------------------------------------------------------

    @abstractmethod
    def join_leaves(self, a: L, b: L) -> L:
        """The value of a name that holds ``a`` on one path and ``b`` on another."""

    @abstractmethod
    def bottom(self) -> L:
        """The value of a tuple collapsed to one leaf when it has no elements."""

    def join(self, a: Value[L], b: Value[L]) -> Value[L]:
        if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
            return tuple(self.join(x, y) for x, y in zip(a, b, strict=True))
        return self.join_leaves(self.collapse(a), self.collapse(b))

    def collapse(self, value: Value[L]) -> L:
        """``value`` as one leaf (a tuple read where one value is expected)."""
        found = leaves(value)
        result = found[0] if found else self.bottom()
        for leaf in found[1:]:
            result = self.join_leaves(result, leaf)
        return result

    # -- transfer functions -------------------------------------------------------------------

    @abstractmethod
    def param(self, param: Param) -> Value[L]:
        """The value a parameter holds on entry."""

    @abstractmethod
    def loop_index(self, stmt: ForStmt) -> Value[L]:
        """The value of a ``for`` loop's index inside the loop."""

    @abstractmethod
    def unbound(self, var: Var) -> Value[L]:
        """The value of a name no definition reaches."""

    @abstractmethod
    def scalar(self, expr: Expr, state: S) -> Value[L]:
        """The value of a constant or an arithmetic expression (its operands are evaluated)."""

    @abstractmethod
    def op_call(self, call: Call, args: tuple[Value[L], ...], state: S) -> Value[L]:
        """The value of a call of an op (not of a function of the program)."""

    @abstractmethod
    def function_call(self, call: Call, args: tuple[Value[L], ...], state: S) -> Value[L]:
        """The value of a call of a function of the program (:meth:`callee`), without
        ``pl.submit``'s task id."""

    def task_id(self, call: Call) -> Value[L]:
        """The value of the task id ``pl.submit`` returns beside the call's result."""
        return self.bottom()

    # -- observers ----------------------------------------------------------------------------

    def at_stmt(self, stmt: Stmt, state: S) -> None:
        """Called with the state on entry to each statement (before it runs)."""

    def stmt_expr(self, stmt: Stmt, expr: Expr, state: S) -> Value[L]:
        """Evaluate ``expr``, an expression of ``stmt`` itself (a value, a condition, a loop
        bound), when ``stmt`` evaluates it."""
        return self.eval(expr, state)

    def after_iteration(self, stmt: ForStmt | WhileStmt, head: S, after: S) -> None:
        """Called after each pass over a loop body: the head state it started from and the
        state at the end of the body."""

    # -- the walk -----------------------------------------------------------------------------

    def run(self, state: S) -> S:
        """Walk the body from ``state`` (the parameters are bound first)."""
        for param in self.func.params:
            state.env[param.var.name] = self.param(param)
        return self.exec_body(self.func.body, state)

    def exec_body(self, body: SeqStmts, state: S) -> S:
        plain = self._plain_assigns
        calls = plain and self._inline_names
        for stmt in body.stmts:
            if plain and type(stmt) is AssignStmt:
                assert isinstance(stmt, AssignStmt)
                value = stmt.value
                if calls and type(value) is Call:
                    assert isinstance(value, Call)
                    self.bind(stmt.targets, self._eval_call(value, state), state)
                else:
                    self.bind(stmt.targets, self.eval(value, state), state)
            else:
                state = self.exec_stmt(stmt, state)
        return state

    def exec_stmt(self, stmt: Stmt, state: S) -> S:
        self.at_stmt(stmt, state)
        if isinstance(stmt, AssignStmt):
            self.bind(stmt.targets, self.stmt_expr(stmt, stmt.value, state), state)
        elif isinstance(stmt, EvalStmt):
            self.stmt_expr(stmt, stmt.expr, state)
        elif isinstance(stmt, ReturnStmt):
            for value in stmt.values:
                self.stmt_expr(stmt, value, state)
        elif isinstance(stmt, SeqStmts):
            return self.exec_body(stmt, state)
        elif isinstance(stmt, IfStmt):
            self.stmt_expr(stmt, stmt.cond, state)
            then = self.exec_body(stmt.then_body, state.copy())
            other = state if stmt.else_body is None else self.exec_body(stmt.else_body, state)
            return then.join(other, self.join)
        elif isinstance(stmt, ForStmt):
            for bound in (stmt.start, stmt.stop, stmt.step):
                self.stmt_expr(stmt, bound, state)
            return self._loop(stmt, state)
        elif isinstance(stmt, WhileStmt):
            return self._loop(stmt, state)
        elif isinstance(stmt, CommDomainScopeStmt):
            return self.exec_body(stmt.body, state)
        else:
            raise InternalError(f"dataflow: unknown statement kind {type(stmt).__name__}")
        return state

    def _loop(self, stmt: ForStmt | WhileStmt, entry: S) -> S:
        """Iterate the body to a fixpoint: the head state joins the entry with the state at the
        end of an iteration, so the body sees values from earlier iterations too."""
        head = entry.copy()
        while True:
            state = head.copy()
            if isinstance(stmt, ForStmt):
                state.env[stmt.var.name] = self.loop_index(stmt)
            else:
                self.stmt_expr(stmt, stmt.cond, state)
            after = self.exec_body(stmt.body, state)
            self.after_iteration(stmt, head, after)
            joined = entry.join(after, self.join)
            if joined == head:
                return head
            head = joined

    def bind(self, targets: tuple[Var, ...], value: Value[L], state: S) -> None:
        if len(targets) == 1:
            state.env[targets[0].name] = value
        elif isinstance(value, tuple) and len(value) == len(targets):
            for target, item in zip(targets, value, strict=True):
                state.env[target.name] = item
        else:
            for target in targets:
                state.env[target.name] = self.collapse(value)

    def eval(self, expr: Expr, state: S) -> Value[L]:
        """The value of ``expr``, running the hooks for the calls inside it."""
        # Names and calls are most of what a body evaluates: they are told apart first (by
        # exact type: no IR node type is subclassed).
        kind = type(expr)
        if kind is Var:
            assert isinstance(expr, Var)
            found = state.env.get(expr.name, _UNBOUND)
            return self.unbound(expr) if found is _UNBOUND else found
        if kind is Call:
            assert isinstance(expr, Call)
            return self._eval_call(expr, state)
        if isinstance(expr, TupleGetItem):
            inner = self.eval(expr.tuple, state)
            if isinstance(inner, tuple) and 0 <= expr.index < len(inner):
                return inner[expr.index]
            return self.collapse(inner)
        if isinstance(expr, MakeTuple):
            return tuple(self.eval(item, state) for item in expr.items)
        for child in child_exprs(expr):
            self.eval(child, state)
        return self.scalar(expr, state)

    def _eval_call(self, call: Call, state: S) -> Value[L]:
        if self._inline_names:
            env = state.env
            args = tuple(
                [
                    (env[arg.name] if arg.name in env else self.unbound(arg))
                    if type(arg) is Var
                    else self.eval(arg, state)
                    for arg in call.args
                ]
            )
        else:
            args = tuple([self.eval(arg, state) for arg in call.args])
        for extra in call_extras(call):
            self.eval(extra, state)
        if not isinstance(call.op, GlobalVar):
            return self.op_call(call, args, state)
        result = self.function_call(call, args, state)
        if is_submit(call):
            return (result, self.task_id(call))
        return result

    def callee(self, call: Call) -> Function:
        """The function a self-call calls."""
        assert isinstance(call.op, GlobalVar)
        callee = None if self.program is None else self.program.function(call.op.name)
        if callee is None:
            raise InternalError(f"dataflow: call of unknown function '{call.op.name}'")
        return callee

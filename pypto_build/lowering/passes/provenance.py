"""Which storage a tensor value of an orchestration body may refer to.

Orchestration code rebinds names freely (``data = self.collective(stage, data, ...)``), passes
views (``pl.reshape``, ``pl.slice``, ``pld.window``) and receives tensors back from kernels that
return one of their arguments. Dependency derivation and CommCtx materialization both need to
see through that to the *root* a value lives in: a parameter, or an allocation
(``tensor.create``, ``pld.alloc_window_buffer``, a result of a non-kernel callee).

:class:`ProvenanceWalker` computes, for each name at each point, the set of roots it may refer
to. It is a forward analysis over the structured body: an ``if`` joins its branches, a loop is
iterated to a fixpoint whose state includes the loop's entry (zero iterations), so every value a
use can see is accounted for. Subclasses extend the state and observe each self-call through
:meth:`ProvenanceWalker.on_call`; within a loop the last observation of a call is the one made
with the fixpoint state, so a subclass that overwrites per-call results keeps the final ones.

It is deliberately conservative where it does not know better: an op other than an allocation
or an assemble is assumed to alias every tensor operand (a view of ``t`` may be ``t``), and a
callee result that is not provably one of its arguments is any argument it writes (a kernel)
or a fresh root (any other callee). Distinct parameters are assumed not to alias each other, as
everywhere else in the pipeline, and a ``return`` is not taken to end its path (which can only
add values, never lose one).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Generic, Self, TypeVar

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
    ParamDirection,
    Program,
    ReturnStmt,
    SeqStmts,
    Stmt,
    TupleGetItem,
    Var,
    WhileStmt,
    get_attr,
)
from pypto_build.lowering.passes.rewrite import child_exprs

#: Ops whose result is new storage rather than a view of an operand.
ALLOCATING_OPS = frozenset({"tensor.create", "pld.alloc_window_buffer"})

ASSEMBLE = "tensor.assemble"

_PARAM_SITE = -1


@dataclass(frozen=True)
class Root:
    """One piece of storage: parameter ``name``, or the allocation made at ``site``.

    ``site`` identifies the allocating node for the duration of one analysis (it is never
    printed), ``index`` tells apart the results of one call.
    """

    name: str
    site: int = _PARAM_SITE
    index: int = 0

    @property
    def is_param(self) -> bool:
        return self.site == _PARAM_SITE


def allocation_root(call: Call) -> Root:
    """The storage an allocating op call (``tensor.create``, ...) makes."""
    return Root(call.callee_name, id(call))


#: The roots a value may refer to: a set for a tensor or scalar (empty for scalars), a tuple
#: of origins for a tuple-valued expression (a call returning several values, ``pl.submit``).
Origin = frozenset[Root] | tuple["Origin", ...]

NOTHING: frozenset[Root] = frozenset()


def roots(origin: Origin) -> frozenset[Root]:
    """Every root anywhere in ``origin``."""
    if isinstance(origin, frozenset):
        return origin
    return frozenset(r for item in origin for r in roots(item))


def join_origins(a: Origin, b: Origin) -> Origin:
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return tuple(join_origins(x, y) for x, y in zip(a, b, strict=True))
    return roots(a) | roots(b)


def returned_params(callee: Function) -> tuple[int | None, ...]:
    """For each value ``callee`` returns, the index of the parameter it returns, or ``None``.

    A body that ends in ``return`` says so directly (a returned name that is a parameter). An
    external kernel has no body, but a kernel cannot allocate: it returns written
    (``Out``/``InOut``) parameters. They are matched to the declared results in order when the
    counts agree, else by type where exactly one written parameter has the result's type.
    """
    count = len(callee.return_types)
    final = callee.body.stmts[-1] if callee.body.stmts else None
    if isinstance(final, ReturnStmt):
        index = {p.var.name: i for i, p in enumerate(callee.params)}
        if len(final.values) != count:
            return (None,) * count
        return tuple(index.get(v.name) if isinstance(v, Var) else None for v in final.values)
    if callee.body.stmts:
        return (None,) * count
    written = [i for i, p in enumerate(callee.params) if p.direction is not ParamDirection.In]
    if len(written) == count:
        return tuple(written)
    by_type = [
        [i for i in written if callee.params[i].var.type == ty] for ty in callee.return_types
    ]
    return tuple(found[0] if len(found) == 1 else None for found in by_type)


@dataclass
class FlowState:
    """What the walk knows at one program point: the origin of every bound name."""

    env: dict[str, Origin]

    def copy(self) -> Self:
        return dataclasses.replace(self, env=dict(self.env))

    def join(self, other: Self) -> Self:
        """The state at a merge point of two paths (each name may hold either value)."""
        env = dict(self.env)
        for name, origin in other.env.items():
            env[name] = join_origins(env[name], origin) if name in env else origin
        return dataclasses.replace(self, env=env)


S = TypeVar("S", bound=FlowState)


class ProvenanceWalker(Generic[S]):
    """Forward walk of one function body tracking the origin of every name."""

    def __init__(self, program: Program, func: Function) -> None:
        self.program = program
        self.func = func

    def run(self, state: S) -> S:
        """Walk the body from ``state`` (parameters are bound to their own roots first)."""
        for param in self.func.params:
            state.env[param.var.name] = frozenset({Root(param.var.name)})
        return self.exec_body(self.func.body, state)

    def on_call(self, call: Call, callee: Function, args: tuple[Origin, ...], state: S) -> None:
        """Called for each self-call once its operands are evaluated; may update ``state``."""

    def op_result(self, call: Call, args: tuple[Origin, ...]) -> Origin:
        """The origin of an op call's result: new storage for an allocation; the target for an
        assemble (its source is copied in, not aliased); otherwise possibly any operand (a
        view, a window of a buffer, a collective's window result)."""
        if call.op in ALLOCATING_OPS:
            return frozenset({allocation_root(call)})
        if call.op == ASSEMBLE:
            return args[0]
        return frozenset(r for arg in args for r in roots(arg))

    # -- statements -----------------------------------------------------------------------

    def exec_body(self, body: SeqStmts, state: S) -> S:
        for stmt in body.stmts:
            state = self.exec_stmt(stmt, state)
        return state

    def exec_stmt(self, stmt: Stmt, state: S) -> S:
        if isinstance(stmt, AssignStmt):
            self._bind(stmt.targets, self.eval(stmt.value, state), state)
        elif isinstance(stmt, EvalStmt):
            self.eval(stmt.expr, state)
        elif isinstance(stmt, ReturnStmt):
            for value in stmt.values:
                self.eval(value, state)
        elif isinstance(stmt, SeqStmts):
            return self.exec_body(stmt, state)
        elif isinstance(stmt, IfStmt):
            self.eval(stmt.cond, state)
            then = self.exec_body(stmt.then_body, state.copy())
            other = state if stmt.else_body is None else self.exec_body(stmt.else_body, state)
            return then.join(other)
        elif isinstance(stmt, ForStmt):
            for bound in (stmt.start, stmt.stop, stmt.step):
                self.eval(bound, state)
            state.env[stmt.var.name] = NOTHING
            return self._loop(stmt.body, None, state)
        elif isinstance(stmt, WhileStmt):
            return self._loop(stmt.body, stmt.cond, state)
        elif isinstance(stmt, CommDomainScopeStmt):
            return self.exec_body(stmt.body, state)
        else:
            raise InternalError(f"provenance: unknown statement kind {type(stmt).__name__}")
        return state

    def _loop(self, body: SeqStmts, cond: Expr | None, entry: S) -> S:
        """Iterate the body to a fixpoint: the head state joins the entry with the state at the
        end of an iteration, so the body sees values from earlier iterations too."""
        head = entry.copy()
        while True:
            if cond is not None:
                self.eval(cond, head)
            after = self.exec_body(body, head.copy())
            joined = entry.join(after)
            if joined == head:
                return head
            head = joined

    @staticmethod
    def _bind(targets: tuple[Var, ...], origin: Origin, state: S) -> None:
        if len(targets) == 1:
            state.env[targets[0].name] = origin
        elif isinstance(origin, tuple) and len(origin) == len(targets):
            for target, item in zip(targets, origin, strict=True):
                state.env[target.name] = item
        else:
            for target in targets:
                state.env[target.name] = roots(origin)

    # -- expressions ----------------------------------------------------------------------

    def eval(self, expr: Expr, state: S) -> Origin:
        """The origin of ``expr``, running :meth:`on_call` for the self-calls inside it."""
        if isinstance(expr, Var):
            return state.env.get(expr.name, NOTHING)
        if isinstance(expr, TupleGetItem):
            inner = self.eval(expr.tuple, state)
            if isinstance(inner, tuple) and 0 <= expr.index < len(inner):
                return inner[expr.index]
            return roots(inner)
        if isinstance(expr, MakeTuple):
            return tuple(self.eval(item, state) for item in expr.items)
        if isinstance(expr, Call):
            return self._eval_call(expr, state)
        for child in child_exprs(expr):
            self.eval(child, state)
        return NOTHING

    def _eval_call(self, call: Call, state: S) -> Origin:
        args = tuple(self.eval(arg, state) for arg in call.args)
        for extra in child_exprs(call)[len(call.args) :]:
            self.eval(extra, state)
        if not isinstance(call.op, GlobalVar):
            return self.op_result(call, args)
        callee = self.program.function(call.op.name)
        if callee is None:
            raise InternalError(f"provenance: call of unknown function '{call.op.name}'")
        self.on_call(call, callee, args, state)
        results = tuple(
            args[position]
            if position is not None and position < len(args)
            else self._unknown_result(call, callee, args, index)
            for index, position in enumerate(returned_params(callee))
        )
        result: Origin = results[0] if len(results) == 1 else results
        if get_attr(call.attrs, "submit") is True:
            return (result, NOTHING)
        return result

    @staticmethod
    def _unknown_result(
        call: Call, callee: Function, args: tuple[Origin, ...], index: int
    ) -> Origin:
        """A result not provably one particular argument. A kernel cannot allocate, so it is
        one of the arguments the kernel writes; any other callee may return new storage."""
        if callee.func_type.is_kernel:
            written = frozenset(
                r
                for param, arg in zip(callee.params, args, strict=False)
                if param.direction is not ParamDirection.In
                for r in roots(arg)
            )
            if written:
                return written
        return frozenset({Root(callee.name, id(call), index)})

"""MaterializeCommDomainScopes: make the communication domains of HOST orchestrators explicit.

A window buffer belongs to one communication domain: the set of devices that exchange windows
of it. The HOST rail needs that domain at every collective, to fan the collective out into one
builtin dispatch per participating device, and the HOST codegen needs it to create the domain
and exchange window addresses. This pass turns the domains into ``CommDomainScopeStmt`` nodes:

* A user's ``with pld.comm_domain(devices=[...]):`` already is a scope (unnamed, no buffers).
* Window buffers allocated outside any such block form the implicit world domain: the pass
  wraps the statements from the first allocation to the end of the enclosing body in a scope
  with ``devices=None`` (every rank). Allocations in an ``if`` branch before that point get a
  domain of their own, ending with the branch.

Scopes are then named ``d0``, ``d1``, ... in source order, and each records the window buffers
allocated in it (not in a nested scope), in order.

The pass also rejects what would give a window no single, fixed domain:

* an allocation or a collective inside a ``for``/``while`` loop (the domain and the per-device
  fan-out are set up once per run, not per iteration). Only the collectives the HOST rail lowers
  are checked here; LowerHostTensorCollectives rejects every other one wherever it appears, with
  the reason that is decisive for it;
* a window (or its buffer) used outside the scope that allocated the buffer;
* a collective whose window operands were allocated in different scopes (an outer domain's
  window used inside a nested one);
* a window buffer variable assigned twice: windows name the buffer they view, so the name must
  denote one allocation;
* two window buffers of one orchestrator with the same name (``name=`` when given, else the
  variable's; :func:`~pypto_build.lowering.analysis.host_windows.buffer_name`): a domain
  creates its buffers, and a run reads them back, by that name.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from pypto_build.lowering.analysis.host_windows import buffer_name
from pypto_build.lowering.builtin_ops import HOST_RAIL
from pypto_build.lowering.builtin_registry import public_builtin
from pypto_build.lowering.diagnostics import ProgramError, Span
from pypto_build.lowering.ir import (
    AssignStmt,
    Call,
    CommDomainScopeStmt,
    DistributedTensorType,
    Expr,
    ForStmt,
    Function,
    Program,
    SeqStmts,
    Stmt,
    Var,
    WhileStmt,
    WindowBufferType,
)
from pypto_build.lowering.ir.names import Op
from pypto_build.lowering.ir.walk import child_bodies, stmt_exprs, walk_calls, walk_exprs
from pypto_build.lowering.ops.signature import expr_span
from pypto_build.lowering.pass_names import MATERIALIZE_COMM_DOMAIN_SCOPES
from pypto_build.lowering.passes.base import Pass, Property
from pypto_build.lowering.passes.rewrite import Mutator, StmtResult, map_functions

PHASE = MATERIALIZE_COMM_DOMAIN_SCOPES
ALLOC_WINDOW_BUFFER = Op.ALLOC_WINDOW_BUFFER


@dataclass(frozen=True)
class MaterializeCommDomainScopes(Pass):
    name: ClassVar[str] = PHASE
    requires: ClassVar[frozenset[Property]] = frozenset({Property.TASK_DEPENDENCIES_DERIVED})
    produces: ClassVar[frozenset[Property]] = frozenset({Property.COMM_DOMAIN_SCOPES_MATERIALIZED})

    def apply(self, program: Program) -> Program:
        return map_functions(program, lambda f: _materialize(f) if f.is_host_orchestrator else f)


def _materialize(func: Function) -> Function:
    _reject_in_loops(func.body, None)
    body = _NameScopes().body(_WrapWorldDomains().body(func.body))
    _ScopeChecker().block(body)
    return func if body is func.body else dataclasses.replace(func, body=body)


def allocation(stmt: Stmt) -> AssignStmt | None:
    """``stmt`` if it allocates a window buffer (``buf = pld.alloc_window_buffer(...)``)."""
    if (
        isinstance(stmt, AssignStmt)
        and len(stmt.targets) == 1
        and isinstance(stmt.value, Call)
        and stmt.value.op == ALLOC_WINDOW_BUFFER
    ):
        return stmt
    return None


def allocated_buffer(stmt: Stmt) -> str | None:
    """The window buffer ``stmt`` allocates, if any."""
    found = allocation(stmt)
    return None if found is None else found.targets[0].name


# --- loops -----------------------------------------------------------------------------------


def _reject_in_loops(body: SeqStmts, loop: ForStmt | WhileStmt | None) -> None:
    """Reject an allocation or a HOST-rail collective evaluated inside ``loop`` (or any loop
    nested in it). A loop's own bounds are evaluated by the enclosing code, not by the loop."""
    for stmt in body.stmts:
        if loop is not None:
            for expr in stmt_exprs(stmt):
                for call in walk_calls(expr):
                    _reject_call_in_loop(call, loop)
        inner = stmt if isinstance(stmt, ForStmt | WhileStmt) else loop
        for child in child_bodies(stmt):
            _reject_in_loops(child, inner)


def _reject_call_in_loop(call: Call, loop: ForStmt | WhileStmt) -> None:
    where = f"inside the {'for' if isinstance(loop, ForStmt) else 'while'} loop at line "
    where += str(loop.span.line)
    if call.op == ALLOC_WINDOW_BUFFER:
        raise ProgramError(
            f"{ALLOC_WINDOW_BUFFER} {where}: a window buffer belongs to a comm domain that is "
            "set up once per run, so an allocation nested in a for/while is rejected on the "
            "HOST rail: hoist it out of the loop",
            call.span,
            PHASE,
        )
    if isinstance(call.op, str) and public_builtin(call.op, HOST_RAIL) is not None:
        raise ProgramError(
            f"{call.op} {where}: the HOST rail fans a collective out into one builtin "
            "dispatch per device of its comm domain, once per run, so a collective nested in "
            "a for/while is rejected on the HOST rail: hoist it out of the loop",
            call.span,
            PHASE,
        )


# --- building the scopes ---------------------------------------------------------------------


class _WrapWorldDomains(Mutator):
    """Wraps, in every body outside an explicit scope, the statements from the first window
    allocation to the end of the body in an implicit world-domain scope."""

    def body(self, seq: SeqStmts) -> SeqStmts:
        allocations = ((i, found) for i, s in enumerate(seq.stmts) if (found := allocation(s)))
        first = next(allocations, None)
        if first is None:
            return super().body(seq)
        index, span = first[0], first[1].span
        head = super().body(SeqStmts(seq.stmts[:index], seq.span))
        scope = CommDomainScopeStmt("", (), None, SeqStmts(seq.stmts[index:], span), span)
        return dataclasses.replace(seq, stmts=(*head.stmts, scope))

    def visit_scope(self, stmt: CommDomainScopeStmt) -> StmtResult:
        return stmt  # an explicit domain: what it allocates is already in a scope


class _NameScopes(Mutator):
    """Names the scopes ``d0``, ``d1``, ... in source order (an outer scope before the scopes
    nested in it) and records in each the buffers allocated directly in it."""

    def __init__(self) -> None:
        self._count = 0
        self._open: list[list[str]] = []

    def visit_scope(self, stmt: CommDomainScopeStmt) -> StmtResult:
        name = f"d{self._count}"
        self._count += 1
        self._open.append([])
        body = self.body(stmt.body)
        buffers = tuple(self._open.pop())
        return dataclasses.replace(stmt, name=name, buffers=buffers, body=body)

    def visit_assign(self, stmt: AssignStmt) -> StmtResult:
        buffer = allocated_buffer(stmt)
        if buffer is not None:
            self._open[-1].append(buffer)  # every allocation is in a scope by now
        return super().visit_assign(stmt)


# --- checking window uses --------------------------------------------------------------------


@dataclass(frozen=True)
class _Allocation:
    scope: str
    span: Span


class _ScopeChecker:
    """Walks a materialized body with the stack of enclosing scopes, checking every use of a
    window or window buffer against the scope that allocated the buffer."""

    def __init__(self) -> None:
        self._open: list[str] = []
        self._allocations: dict[str, _Allocation] = {}
        #: Where the buffer of each given name (:func:`buffer_name`) is allocated.
        self._names: dict[str, Span] = {}

    def block(self, body: SeqStmts) -> None:
        for stmt in body.stmts:
            self._stmt(stmt)

    def _stmt(self, stmt: Stmt) -> None:
        for expr in stmt_exprs(stmt):
            self._expr(expr)
        if isinstance(stmt, AssignStmt):
            self._define(stmt)
        if isinstance(stmt, CommDomainScopeStmt):
            self._open.append(stmt.name)
            self.block(stmt.body)
            self._open.pop()
            return
        for body in child_bodies(stmt):
            self.block(body)

    def _define(self, stmt: AssignStmt) -> None:
        for target in stmt.targets:
            earlier = self._allocations.get(target.name)
            if earlier is not None:
                raise ProgramError(
                    f"window buffer '{target.name}' (allocated at line {earlier.span.line}) "
                    "is assigned again: windows name the buffer they view, so each "
                    f"{ALLOC_WINDOW_BUFFER} needs a variable of its own",
                    target.span,
                    PHASE,
                )
        found = allocation(stmt)
        if found is not None:
            self._allocations[found.targets[0].name] = _Allocation(self._open[-1], stmt.span)
            self._name(found)

    def _name(self, stmt: AssignStmt) -> None:
        name = buffer_name(stmt)
        earlier = self._names.get(name)
        if earlier is not None:
            raise ProgramError(
                f"window buffer name '{name}' is already given to the buffer allocated at line "
                f"{earlier.line}: a comm domain creates its window buffers, and a run "
                f"reads them back, by name, so give each {ALLOC_WINDOW_BUFFER} a name of its own",
                stmt.span,
                PHASE,
            )
        self._names[name] = stmt.span

    def _expr(self, expr: Expr) -> None:
        for node in walk_exprs(expr):
            if isinstance(node, Var):
                self._use(node)
            elif isinstance(node, Call) and isinstance(node.op, str):
                builtin = public_builtin(node.op, HOST_RAIL)
                if builtin is not None:
                    self._same_domain(node, builtin.names)

    def _use(self, var: Var) -> None:
        buffer, what = _viewed_buffer(var)
        allocation = None if buffer is None else self._allocations.get(buffer)
        if allocation is None or allocation.scope in self._open:
            return
        raise ProgramError(
            f"{what} is used outside the comm domain that allocated window buffer '{buffer}' "
            f"(line {allocation.span.line}): a window exists only in its buffer's comm "
            "domain, so use it inside that domain",
            var.span,
            PHASE,
        )

    def _same_domain(self, call: Call, roles: tuple[str, ...]) -> None:
        first: tuple[str, str, _Allocation] | None = None
        for role, arg in zip(roles, call.args, strict=False):
            buffer = _window_of(arg)
            allocation = None if buffer is None else self._allocations.get(buffer)
            if buffer is None or allocation is None:
                continue
            if first is None:
                first = (role, buffer, allocation)
            elif allocation.scope != first[2].scope:
                raise ProgramError(
                    f"{call.op} {role} views window buffer '{buffer}' (allocated at line "
                    f"{allocation.span.line}) of a different comm domain than {first[0]} "
                    f"('{first[1]}', line {first[2].span.line}): all window operands of a "
                    "collective must be allocated in the same comm domain",
                    expr_span(arg, call.span),
                    PHASE,
                )


def _window_of(expr: Expr) -> str | None:
    ty = expr.type
    return ty.window if isinstance(ty, DistributedTensorType) else None


def _viewed_buffer(var: Var) -> tuple[str | None, str]:
    """The window buffer ``var`` is (a buffer variable) or views (a window), and how a
    diagnostic names it."""
    if isinstance(var.type, WindowBufferType):
        return var.name, f"window buffer '{var.name}'"
    return _window_of(var), f"window '{var.name}'"

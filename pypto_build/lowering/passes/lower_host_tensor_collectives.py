"""LowerHostTensorCollectives: the HOST rail of the managed collectives.

A ``pld.tensor.all_to_all_v`` written in a HOST orchestrator is fanned out into one internal
``builtin.tensor.all_to_all_v`` call per participating device of its communication domain. Each
such call is a whole chip dispatch whose only work is to launch the builtin AIV kernel (the same
kernel the CHIP rail calls in-pipeline), so a compute -> collective -> consume sequence costs
three L3 -> L2 round trips per card here, against one on the CHIP rail.

The pass runs after MaterializeCommDomainScopes: every window buffer then lives in a
``CommDomainScopeStmt``, and the scope holding all five operands' buffers gives the devices.

* explicit ``devices`` -> a ``SeqStmts`` of one ``EvalStmt`` per device, in list order, each
  call with attr ``device=<d>``;
* the world (``devices=None``) -> ``for r in pl.range(pld.world_size()):`` around one call with
  ``device=r``.

Every builtin call carries the operands in role order, kwargs ``dtype`` (the payload's, which
selects the kernel variant) and ``core_num`` (the requested block limit, forwarded: the HOST
entry folds it against the rank count at run time, so a runtime value is accepted here), and
attrs ``dtype``, ``device`` and ``arg_directions`` (In, InOut, InOut, In, InOut). An assigned
result is rebound to ``target`` afterwards (the window is the result), preserving the user's
``data = pld.tensor.all_to_all_v(stage, data, ...)`` idiom.

Before emitting, the rail checks what only it can see: every operand is a view of a window
allocated here, no two operands view the same allocation (CheckPairwiseDistinctWindows), the
payload dtype has a kernel variant, and, for an explicit device list, the signal has a row per
participating device (CheckStaticSignalCapacity). Other managed collectives are rejected in HOST
orchestrators: the HOST rail of this tool lowers only ``all_to_all_v``, and
``indexed_all_to_all_v`` runs only on the CHIP rail.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import ClassVar

from pypto_build.lowering.builtin_kernels import ALL_TO_ALL_V, require_supported_dtype
from pypto_build.lowering.diagnostics import InternalError, ProgramError, Span
from pypto_build.lowering.ir import (
    INDEX,
    AssignStmt,
    Call,
    CommDomainScopeStmt,
    ConstInt,
    DataType,
    DistributedTensorType,
    EvalStmt,
    Expr,
    ForStmt,
    Function,
    Program,
    SeqStmts,
    Stmt,
    TensorType,
    Type,
    Var,
    get_attr,
)
from pypto_build.lowering.launch_width import INT32_MAX
from pypto_build.lowering.ops import is_managed_collective, make_call
from pypto_build.lowering.ops.collectives import BUILTIN_ALL_TO_ALL_V
from pypto_build.lowering.ops.signature import expr_span
from pypto_build.lowering.passes.base import Pass, Property
from pypto_build.lowering.passes.derive_call_directions import ARG_DIRECTIONS
from pypto_build.lowering.passes.rewrite import (
    Mutator,
    StmtResult,
    defined_names,
    map_functions,
    stmt_exprs,
    walk_calls,
    walk_stmts,
)
from pypto_build.lowering.passes.window_aliases import (
    WindowOperand,
    check_pairwise_distinct_windows,
)

PHASE = "LowerHostTensorCollectives"
INDEXED_ALL_TO_ALL_V = "pld.tensor.indexed_all_to_all_v"
WORLD_SIZE = "pld.world_size"

#: Per-argument directions of the builtin dispatch, in role order.
DIRECTIONS: tuple[str, ...] = tuple(operand.direction.value for operand in ALL_TO_ALL_V.operands)

INDEXED_MESSAGE = (
    f"{INDEXED_ALL_TO_ALL_V} is not supported in a HOST orchestrator: it runs only on the CHIP "
    "rail (call it from a CHIP Orchestration function)"
)


@dataclass(frozen=True)
class LowerHostTensorCollectives(Pass):
    name: ClassVar[str] = PHASE
    requires: ClassVar[frozenset[Property]] = frozenset({Property.COMM_DOMAIN_SCOPES_MATERIALIZED})
    produces: ClassVar[frozenset[Property]] = frozenset({Property.HOST_COLLECTIVES_LOWERED})

    def apply(self, program: Program) -> Program:
        return map_functions(program, lambda f: _lower(f) if f.is_host_orchestrator else f)


def _lower(func: Function) -> Function:
    _check_collectives(func)
    taken = {p.var.name for p in func.params} | defined_names(func.body)
    body = _HostLowering(_fresh_name("r", taken)).body(func.body)
    return func if body is func.body else replace(func, body=body)


def _fresh_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base`` with the smallest numeric suffix that no name of the function has
    (the fan-out loop variable must not rebind a name the user's code reads)."""
    candidates = itertools.chain([base], (f"{base}{n}" for n in itertools.count(1)))
    return next(name for name in candidates if name not in taken)


def _check_collectives(func: Function) -> None:
    """Reject, in source order, every managed collective this rail cannot lower: any other
    than all_to_all_v, and an all_to_all_v that is not a statement of its own (the rail
    replaces the whole statement with the per-device dispatches)."""
    for stmt in walk_stmts(func.body):
        direct = _direct_call(stmt)
        for expr in stmt_exprs(stmt):
            for call in walk_calls(expr):
                if not (isinstance(call.op, str) and is_managed_collective(call.op)):
                    continue
                if call.op == INDEXED_ALL_TO_ALL_V:
                    raise ProgramError(INDEXED_MESSAGE, call.span, PHASE)
                if call.op != ALL_TO_ALL_V.op:
                    raise ProgramError(
                        f"{call.op} is not supported in a HOST orchestrator: the HOST rail of "
                        f"pypto-build lowers only {ALL_TO_ALL_V.op}",
                        call.span,
                        PHASE,
                    )
                if call is not direct:
                    raise ProgramError(
                        f"{call.op} in a HOST orchestrator must be a statement of its own "
                        f"('x = {call.op}(...)' or a bare call): the HOST rail replaces the "
                        "statement with one builtin dispatch per device",
                        call.span,
                        PHASE,
                    )


def _direct_call(stmt: Stmt) -> Expr | None:
    """The value an assignment of one name or an expression statement evaluates."""
    if isinstance(stmt, AssignStmt) and len(stmt.targets) == 1:
        return stmt.value
    if isinstance(stmt, EvalStmt):
        return stmt.expr
    return None


def _all_to_all_v(expr: Expr) -> Call | None:
    return expr if isinstance(expr, Call) and expr.op == ALL_TO_ALL_V.op else None


class _HostLowering(Mutator):
    """Replaces each all_to_all_v statement of one HOST orchestrator with its fan-out, tracking
    the enclosing comm-domain scopes (innermost last)."""

    def __init__(self, rank_name: str) -> None:
        self._rank_name = rank_name
        self._scopes: list[CommDomainScopeStmt] = []

    def visit_scope(self, stmt: CommDomainScopeStmt) -> StmtResult:
        self._scopes.append(stmt)
        result = super().visit_scope(stmt)
        self._scopes.pop()
        return result

    def visit_assign(self, stmt: AssignStmt) -> StmtResult:
        call = _all_to_all_v(stmt.value)
        if call is None:
            return super().visit_assign(stmt)
        # The window is the result: rebind the assigned name to the target operand.
        target = call.args[ALL_TO_ALL_V.role_index("target")]
        return (self._lower(call, stmt.span), AssignStmt(stmt.targets, target, stmt.span))

    def visit_eval(self, stmt: EvalStmt) -> StmtResult:
        call = _all_to_all_v(stmt.expr)
        return super().visit_eval(stmt) if call is None else self._lower(call, stmt.span)

    def _lower(self, call: Call, span: Span) -> Stmt:
        windows = tuple(
            WindowOperand(role, _host_bound_window(call, role, arg), expr_span(arg, call.span))
            for role, arg in zip(ALL_TO_ALL_V.roles, call.args, strict=True)
        )
        check_pairwise_distinct_windows(ALL_TO_ALL_V.op, windows, PHASE)
        dtype = _payload_dtype(call)
        core_num = _core_num(call)
        devices = self._find_scope(call, {w.buffer for w in windows}).devices
        signal = call.args[ALL_TO_ALL_V.role_index("signal")]
        check_static_signal_capacity(
            signal.type, 0 if devices is None else len(devices), expr_span(signal, call.span)
        )
        kwargs = (("dtype", dtype), ("core_num", core_num))
        builtin = make_call(BUILTIN_ALL_TO_ALL_V, call.args, kwargs, call.span)
        return self._fan_out(builtin, dtype, devices, span)

    def _fan_out(
        self, builtin: Call, dtype: DataType, devices: tuple[int, ...] | None, span: Span
    ) -> Stmt:
        """One dispatch of ``builtin`` per device: listed in order, or a loop over the world."""

        def dispatch(device: Expr) -> EvalStmt:
            attrs = (("dtype", dtype), ("device", device), (ARG_DIRECTIONS, DIRECTIONS))
            return EvalStmt(replace(builtin, attrs=attrs), span)

        if devices is not None:
            return SeqStmts(tuple(dispatch(ConstInt(d, span=span)) for d in devices), span)
        rank = Var(self._rank_name, INDEX, span)
        world_size = make_call(WORLD_SIZE, (), (), span)
        body = SeqStmts((dispatch(rank),), span)
        return ForStmt(rank, ConstInt(0, span=span), world_size, ConstInt(1, span=span), body, span)

    def _find_scope(self, call: Call, buffers: set[str]) -> CommDomainScopeStmt:
        """FindScopeForBuffers: the innermost enclosing scope that allocated every buffer.
        MaterializeCommDomainScopes guarantees one exists, so none is a bug."""
        if not self._scopes:
            raise InternalError(f"{call.op} must appear inside a CommDomainScopeStmt")
        for scope in reversed(self._scopes):
            if buffers <= set(scope.buffers):
                return scope
        raise InternalError(f"{call.op} window buffers must resolve to the same comm-domain scope")


def _host_bound_window(call: Call, role: str, arg: Expr) -> str:
    """The buffer ``arg`` views; it must view one (be window-bound) on the HOST rail."""
    ty = arg.type
    if isinstance(ty, DistributedTensorType) and ty.window is not None:
        return ty.window
    raise ProgramError(
        f"{call.op} {role} must be a window-bound DistributedTensor (a view of an "
        "alloc_window_buffer) when called from a HOST orchestrator; a plain Tensor or an "
        "unbound DistributedTensor parameter is only supported on the InCore composite path",
        expr_span(arg, call.span),
        PHASE,
    )


def _payload_dtype(call: Call) -> DataType:
    """The target's dtype, which must have a kernel variant (the same allowlist as the CHIP
    rail, since both rails render the same template)."""
    target = call.type
    if not isinstance(target, TensorType):
        raise InternalError(f"{PHASE}: {call.op} result must be a tensor, got {target}")
    require_supported_dtype(call.callee_name, target.dtype, call.span, PHASE)
    return target.dtype


def _core_num(call: Call) -> Expr:
    """The requested block limit L, forwarded to the entry (1 when not given). A runtime value
    is range-checked by the entry; a constant one is checked here, before any narrowing."""
    value = get_attr(call.kwargs, "core_num")
    if value is None:
        return ConstInt(1, span=call.span)
    if not isinstance(value, Expr):
        raise InternalError(f"{PHASE}: {call.op} core_num must be an expression, got {value!r}")
    if isinstance(value, ConstInt) and not 1 <= value.value <= INT32_MAX:
        raise ProgramError(
            f"HOST {call.op}: core_num must be in [1, {INT32_MAX}], got {value.value}",
            expr_span(value, call.span),
            PHASE,
        )
    return value


def check_static_signal_capacity(signal: Type, required_slots: int, span: Span) -> None:
    """CheckStaticSignalCapacity: the signal of a collective has one row per participating
    device. ``required_slots`` is that count for an explicit device list and 0 for the world,
    whose size is known only at run time (trusted here).

    Dims are compile-time in this IR, so upstream's "shape[1] must be constant" holds by
    construction; the lane count ``shape[1]`` is checked against the admitted block count by the
    HOST entry at run time, because ``core_num`` may be a runtime value on this rail.
    """
    if not isinstance(signal, TensorType) or len(signal.shape) not in (1, 2):
        raise ProgramError(
            "collective signal must be rank-1 [world_size] or rank-2 [world_size, signal_stride]",
            span,
            PHASE,
        )
    rows = signal.shape[0]
    if rows < required_slots:
        raise ProgramError(
            f"collective signal shape[0] ({rows}) must be at least the participating device "
            f"count ({required_slots})",
            span,
            PHASE,
        )

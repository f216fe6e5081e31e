"""LowerHostTensorCollectives: the HOST rail of the managed collectives.

A collective of a builtin package with a HOST rail (``pld.tensor.all_to_all_v``) written in a
HOST orchestrator is fanned out into one call of the package's internal op
(``builtin.tensor.all_to_all_v``) per participating device of its communication domain. Each
such call is a whole chip dispatch whose only work is to launch the builtin AIV kernel (the same
kernel the CHIP rail calls in-pipeline), so a compute -> collective -> consume sequence costs
three L3 -> L2 round trips per card here, against one on the CHIP rail.

The pass runs after MaterializeCommDomainScopes: every window buffer then lives in a
``CommDomainScopeStmt``, and the scope holding all operands' buffers gives the devices.

* explicit ``devices`` -> a ``SeqStmts`` of one ``EvalStmt`` per device, in list order, each
  call with attr ``device=<d>``;
* the world (``devices=None``) -> ``for r in pl.range(pld.world_size()):`` around one call with
  ``device=r``.

Every builtin call carries the operands in the manifest's order, kwargs ``dtype`` (the
payload's, which selects the kernel variant) and ``core_num`` (the requested block limit,
forwarded: the HOST entry folds it against the rank count at run time, so a runtime value is
accepted here), and attrs ``dtype``, ``device`` and ``arg_directions`` (the manifest's operand
directions). An assigned result is rebound to the result operand afterwards (the window is the
result), preserving the user's ``data = pld.tensor.all_to_all_v(stage, data, ...)`` idiom.

Before emitting, the rail checks what only it can see: every operand is a view of a window
allocated here, no two operands view the same allocation (CheckPairwiseDistinctWindows), the
payload dtype has a kernel variant, and, for an explicit device list, the signal has exactly
one row per participating device (CheckStaticSignalCapacity). Other managed collectives are
rejected in HOST orchestrators, naming the rails that do run them.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import ClassVar

from pypto_build.lowering.builtin_ops import HOST_RAIL, SIGNAL, BuiltinOp
from pypto_build.lowering.builtin_registry import builtin_op, builtin_ops, public_builtin
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
    ParamDirection,
    Program,
    SeqStmts,
    Stmt,
    TensorType,
    Type,
    Var,
)
from pypto_build.lowering.ir.names import CallAttr, Kwarg, Op, kwarg
from pypto_build.lowering.ir.walk import defined_names, stmt_exprs, walk_calls, walk_stmts
from pypto_build.lowering.ops.signature import expr_span
from pypto_build.lowering.ops.validation import check_rank_count
from pypto_build.lowering.optable import is_managed_collective, make_call
from pypto_build.lowering.pass_names import LOWER_HOST_TENSOR_COLLECTIVES
from pypto_build.lowering.passes.base import Pass, Property
from pypto_build.lowering.passes.rewrite import Mutator, StmtResult, map_functions
from pypto_build.lowering.passes.window_aliases import (
    WindowOperand,
    check_pairwise_distinct_windows,
)
from pypto_build.lowering.runtime_facts import INT32_MAX

PHASE = LOWER_HOST_TENSOR_COLLECTIVES


@dataclass(frozen=True)
class LowerHostTensorCollectives(Pass):
    """Fan HOST-orchestrator collectives out into per-device builtin dispatches.

    ``chips`` are the build's target chips; an op whose package does not support one of them
    is refused. Empty means "not known here" and refuses nothing.
    """

    name: ClassVar[str] = PHASE
    requires: ClassVar[frozenset[Property]] = frozenset({Property.COMM_DOMAIN_SCOPES_MATERIALIZED})
    produces: ClassVar[frozenset[Property]] = frozenset({Property.HOST_COLLECTIVES_LOWERED})

    chips: tuple[str, ...] = ()

    def apply(self, program: Program) -> Program:
        return map_functions(
            program, lambda f: _lower(f, self.chips) if f.is_host_orchestrator else f
        )


def _lower(func: Function, chips: tuple[str, ...]) -> Function:
    _check_collectives(func)
    taken = {p.var.name for p in func.params} | defined_names(func.body)
    lowering = _HostLowering(_fresh_name("r", taken), chips)
    body = lowering.body(func.body)
    lowering.check_world()
    return func if body is func.body else replace(func, body=body)


def _fresh_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base`` with the smallest numeric suffix that no name of the function has
    (the fan-out loop variable must not rebind a name the user's code reads)."""
    candidates = itertools.chain([base], (f"{base}{n}" for n in itertools.count(1)))
    return next(name for name in candidates if name not in taken)


def _check_collectives(func: Function) -> None:
    """Reject, in source order, every managed collective this rail cannot lower: one whose
    package has no HOST rail (or that has no package), and one that is not a statement of its
    own (the rail replaces the whole statement with the per-device dispatches)."""
    for stmt in walk_stmts(func.body):
        direct = _direct_call(stmt)
        for expr in stmt_exprs(stmt):
            for call in walk_calls(expr):
                if not (isinstance(call.op, str) and is_managed_collective(call.op)):
                    continue
                if public_builtin(call.op, HOST_RAIL) is None:
                    raise ProgramError(_unsupported_message(call.op), call.span, PHASE)
                if call is not direct:
                    raise ProgramError(
                        f"{call.op} in a HOST orchestrator must be a statement of its own "
                        f"('x = {call.op}(...)' or a bare call): the HOST rail replaces the "
                        "statement with one builtin dispatch per device",
                        call.span,
                        PHASE,
                    )


def _unsupported_message(op: str) -> str:
    builtin = builtin_op(op)
    if builtin is not None:
        rails = " and ".join(rail.upper() for rail in builtin.package.rails)
        return (
            f"{op} is not supported in a HOST orchestrator: it runs only on the {rails} rail "
            "(call it from a CHIP Orchestration function)"
        )
    lowered = " and ".join(b.op for b in builtin_ops() if b.supports(HOST_RAIL))
    return (
        f"{op} is not supported in a HOST orchestrator: the HOST rail of pypto-build lowers "
        f"only {lowered or 'builtin collectives'}"
    )


def _direct_call(stmt: Stmt) -> Expr | None:
    """The value an assignment of one name or an expression statement evaluates."""
    if isinstance(stmt, AssignStmt) and len(stmt.targets) == 1:
        return stmt.value
    if isinstance(stmt, EvalStmt):
        return stmt.expr
    return None


def _host_collective(expr: Expr) -> tuple[Call, BuiltinOp] | None:
    if isinstance(expr, Call) and isinstance(expr.op, str):
        builtin = public_builtin(expr.op, HOST_RAIL)
        if builtin is not None:
            return expr, builtin
    return None


class _HostLowering(Mutator):
    """Replaces each collective statement of one HOST orchestrator with its fan-out, tracking
    the enclosing comm-domain scopes (innermost last)."""

    def __init__(self, rank_name: str, chips: tuple[str, ...]) -> None:
        self._rank_name = rank_name
        self._chips = chips
        self._scopes: list[CommDomainScopeStmt] = []
        #: The collectives over the world (its size is their NR), and the explicit domains.
        self._world: list[tuple[int, Span]] = []
        self._subsets: list[CommDomainScopeStmt] = []

    def check_world(self) -> None:
        """A domain over explicit devices must lie inside the world: when a collective over the
        world fixes its size (its signal's NR, the device count PyPTO's runtime runs the program
        on), a device at or past it would never run, and the subset's collectives would wait for
        it forever."""
        if not self._world:
            return
        size, at = min(self._world, key=lambda world: world[0])
        for scope in self._subsets:
            assert scope.devices is not None
            outside = [d for d in scope.devices if d >= size]
            if outside:
                raise ProgramError(
                    f"pld.comm_domain(devices={list(scope.devices)}) names device "
                    f"{outside[0]}, but this program's world has {size} devices: the collective "
                    f"over every device at {at.line}:{at.col} has windows sized for NR = "
                    f"{size} (its signal's shape[0]), so PyPTO's runtime runs the program on "
                    f"devices 0 to {size - 1}; name devices below {size}, or size that "
                    f"collective's windows for {max(outside) + 1} devices",
                    scope.span,
                    PHASE,
                )

    def visit_scope(self, stmt: CommDomainScopeStmt) -> StmtResult:
        if stmt.devices is not None:
            self._subsets.append(stmt)
        self._scopes.append(stmt)
        result = super().visit_scope(stmt)
        self._scopes.pop()
        return result

    def visit_assign(self, stmt: AssignStmt) -> StmtResult:
        found = _host_collective(stmt.value)
        if found is None:
            return super().visit_assign(stmt)
        call, builtin = found
        # The window is the result: rebind the assigned name to the result operand.
        result = call.args[builtin.result_index]
        return (self._lower(call, builtin, stmt.span), AssignStmt(stmt.targets, result, stmt.span))

    def visit_eval(self, stmt: EvalStmt) -> StmtResult:
        found = _host_collective(stmt.expr)
        return super().visit_eval(stmt) if found is None else self._lower(*found, stmt.span)

    def _lower(self, call: Call, builtin: BuiltinOp, span: Span) -> Stmt:
        builtin.require_chips(self._chips, call.span, PHASE)
        windows = tuple(
            WindowOperand(name, _host_bound_window(call, name, arg), expr_span(arg, call.span))
            for name, arg in zip(builtin.names, call.args, strict=True)
        )
        check_pairwise_distinct_windows(call.callee_name, windows, PHASE)
        dtype = _payload_dtype(call, builtin)
        core_num = _core_num(call)
        devices = self._find_scope(call, {w.buffer for w in windows}).devices
        signal = builtin.role_index(SIGNAL)
        if signal is not None and devices is None:
            signal_type = call.args[signal].type
            if isinstance(signal_type, TensorType) and signal_type.shape:
                self._world.append((signal_type.shape[0], call.span))
        if signal is not None:
            check_static_signal_capacity(
                call.args[signal].type,
                0 if devices is None else len(devices),
                expr_span(call.args[signal], call.span),
            )
        kwargs = ((Kwarg.DTYPE, dtype), (Kwarg.CORE_NUM, core_num))
        dispatch = make_call(builtin.builtin_op, call.args, kwargs, call.span)
        directions = tuple(builtin.direction(i) for i in range(len(builtin.names)))
        return self._fan_out(dispatch, dtype, directions, devices, span)

    def _fan_out(
        self,
        dispatch: Call,
        dtype: DataType,
        directions: tuple[ParamDirection, ...],
        devices: tuple[int, ...] | None,
        span: Span,
    ) -> Stmt:
        """One ``dispatch`` per device: listed in order, or a loop over the world."""

        def on(device: Expr) -> EvalStmt:
            attrs = (
                (CallAttr.DTYPE, dtype),
                (CallAttr.DEVICE, device),
                (CallAttr.ARG_DIRECTIONS, directions),
            )
            return EvalStmt(replace(dispatch, attrs=attrs), span)

        if devices is not None:
            return SeqStmts(tuple(on(ConstInt(d, span=span)) for d in devices), span)
        rank = Var(self._rank_name, INDEX, span)
        world_size = make_call(Op.WORLD_SIZE, (), (), span)
        body = SeqStmts((on(rank),), span)
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


def _payload_dtype(call: Call, builtin: BuiltinOp) -> DataType:
    """The result's dtype, which must have a kernel variant (the same allowlist as the CHIP
    rail, since both rails render the same template)."""
    result = call.type
    if not isinstance(result, TensorType):
        raise InternalError(f"{PHASE}: {call.op} result must be a tensor, got {result}")
    builtin.require_supported_dtype(result.dtype, call.span, PHASE)
    return result.dtype


def _core_num(call: Call) -> Expr:
    """The requested block limit L, forwarded to the entry (1 when not given). A runtime value
    is range-checked by the entry; a constant one is checked here, before any narrowing."""
    value = kwarg(call, Kwarg.CORE_NUM)
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
    """CheckStaticSignalCapacity: the signal of a collective has exactly one row per
    participating device (NR must equal the run-time comm domain size, because the kernel
    reads the rank count from the CommContext; the counts' leading dimension is NR as well, by
    the manifest's shapes). ``required_slots`` is that count for an explicit device list and 0
    for the world, whose size is known only at run time (trusted here).

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
    check_rank_count(rows, span, PHASE)
    if required_slots and rows != required_slots:
        raise ProgramError(
            f"collective signal shape[0] (NR = {rows}) must equal the comm domain's device "
            f"count ({required_slots}): the kernel takes the rank count from the CommContext, "
            "so the signal and the counts have one row per device of the domain",
            span,
            PHASE,
        )

"""LowerL2TensorCollectives: the CHIP/L2 rail of the managed collectives.

A ``pld.tensor.all_to_all_v`` (or, on a5, ``pld.tensor.indexed_all_to_all_v``) written in a CHIP
orchestration body becomes a call of a synthesized AIV kernel, so the collective is one more task
of the caller's own pipeline: compute -> collective -> consume costs one L3 -> L2 round trip per
card instead of the HOST rail's three.

The pass must run before DeriveCallDirections and AutoDeriveTaskDependencies: those turn the
synthesized kernel's parameter directions into the TensorMap edges that order the collective
between its producer and consumer. It also runs before MaterializeDistTensorCtx, which appends
the kernel's CommCtx arguments (one per DistributedTensor parameter, hence the canonical
parameter kinds in :mod:`pypto_build.lowering.builtin_kernels`).

The launch width is folded here, at compile time: ``core_num`` (L) must be a constant, the
admitted block count is ``B = CalAllToAllVBlocks(NR, L)`` with NR the signal's static rank
count, and the call carries ``core_num=B, sync_start=True`` when B > 1 (all admitted blocks must
be resident together for the block-aware barrier). The signal stride S is checked against B, not
L. The indexed exchange launches exactly L blocks (blocks beyond NR only gather locally), so its
B is L, and S >= L is required: a stricter check than the kernel may need, never a looser one.

Every tensor operand must be provably dense row-major at compile time (see
:mod:`pypto_build.lowering.passes.contiguity`): a per-rank runtime refusal would leave the peers
hanging in the kernel's barrier. The kernel still carries ``require_contiguous_operands`` so
that orchestration codegen adds the runtime check for tensors the caller builds at run time.

After the rewrite, any managed collective left in a non-HOST orchestration body is an error
(also when nothing changed). HOST orchestrators belong to LowerHostTensorCollectives, InCore
bodies to LowerCompositeOps; neither is touched or checked here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from pypto_build.lowering.builtin_kernels import (
    ALL_TO_ALL_V,
    INDEXED_ALL_TO_ALL_V,
    BuiltinCollective,
    require_supported_dtype,
    synthesize_kernel,
)
from pypto_build.lowering.diagnostics import InternalError, ProgramError
from pypto_build.lowering.ir import (
    AssignStmt,
    Attrs,
    Call,
    ConstBool,
    ConstInt,
    DistributedTensorType,
    EvalStmt,
    Expr,
    Function,
    GlobalVar,
    Level,
    Program,
    ReturnStmt,
    Stmt,
    get_attr,
)
from pypto_build.lowering.launch_width import INT32_MAX, cal_all_to_all_v_blocks
from pypto_build.lowering.ops import is_managed_collective
from pypto_build.lowering.passes.base import Pass, Property
from pypto_build.lowering.passes.contiguity import (
    ContiguityTracer,
    check_contiguous_operands,
    span_of,
)
from pypto_build.lowering.passes.rewrite import Mutator, StmtResult, walk_calls

PHASE = "LowerL2TensorCollectives"

#: The collectives this rail lowers, by op name.
LOWERED = {builtin.op: builtin for builtin in (ALL_TO_ALL_V, INDEXED_ALL_TO_ALL_V)}

SEND_COUNTS_MESSAGE = (
    f"CHIP {ALL_TO_ALL_V.op} send_counts must be a DistributedTensor: peers read this rank's "
    "send vector through CommRemotePtr, so a plain Tensor (accepted only on the InCore composite "
    "path) is not supported on this rail"
)

#: The only chip with the URMA PER_PEER transport the indexed exchange relies on.
INDEXED_CHIP = "a5"


@dataclass(frozen=True)
class LowerL2TensorCollectives(Pass):
    """Rewrite CHIP-orchestration collectives into calls of synthesized builtin AIV kernels.

    ``chips`` are the build's target chips; ``indexed_all_to_all_v`` is refused when any of them
    is not a5. Empty means "not known here" and refuses nothing.
    """

    name: ClassVar[str] = "LowerL2TensorCollectives"
    requires: ClassVar[frozenset[Property]] = frozenset(
        {Property.COMPOSITE_OPS_LOWERED, Property.CREATE_ASSEMBLE_FUSED}
    )
    produces: ClassVar[frozenset[Property]] = frozenset({Property.L2_COLLECTIVES_LOWERED})

    chips: tuple[str, ...] = ()

    def apply(self, program: Program) -> Program:
        # One kernel per variant for the whole program, in first-use order.
        kernels: dict[str, Function] = {}
        functions = tuple(
            _FunctionLowering(self.chips, program, func, kernels).function(func)
            if func.is_chip_orchestration
            else func
            for func in program.functions
        )
        lowered = Program(program.name, (*functions, *kernels.values()), program.span)
        check_no_residual_collectives(lowered)
        return lowered


class _FunctionLowering(Mutator):
    """Lowers the collectives of one CHIP orchestration function, adding the kernels it needs
    to ``kernels`` (shared by all functions of the program)."""

    def __init__(
        self,
        chips: tuple[str, ...],
        program: Program,
        func: Function,
        kernels: dict[str, Function],
    ) -> None:
        self.chips = chips
        self.program = program
        self.kernels = kernels
        self.tracer = ContiguityTracer(program, func)

    def visit_assign(self, stmt: AssignStmt) -> StmtResult:
        # The call keeps the target's type, so the assigned name is rebound unchanged.
        value = self._value(stmt.value, stmt)
        return stmt if value is stmt.value else replace(stmt, value=value)

    def visit_eval(self, stmt: EvalStmt) -> StmtResult:
        expr = self._value(stmt.expr, stmt)
        return stmt if expr is stmt.expr else replace(stmt, expr=expr)

    def visit_return(self, stmt: ReturnStmt) -> StmtResult:
        values = tuple(self._value(value, stmt) for value in stmt.values)
        unchanged = all(new is old for new, old in zip(values, stmt.values, strict=True))
        return stmt if unchanged else replace(stmt, values=values)

    def _value(self, value: Expr, at: Stmt) -> Expr:
        """``value`` lowered if it is directly a collective this rail handles."""
        if isinstance(value, Call) and isinstance(value.op, str) and value.op in LOWERED:
            return self._lower(value, LOWERED[value.op], at)
        return value

    def _lower(self, call: Call, builtin: BuiltinCollective, at: Stmt) -> Call:
        if builtin is INDEXED_ALL_TO_ALL_V:
            self._check_chips(call)
        if len(call.args) != len(builtin.operands):
            raise InternalError(
                f"{PHASE}: {call.op} must have {len(builtin.operands)} tensor args, "
                f"got {len(call.args)}"
            )
        core_num_expr, core_num = _core_num(call, builtin)
        target = call.args[builtin.role_index("target")].type
        if not isinstance(target, DistributedTensorType):
            raise InternalError(f"{PHASE}: {call.op} target must be DistributedTensorType")
        nranks, stride = _signal_shape(call, builtin)
        blocks = cal_all_to_all_v_blocks(nranks, core_num) if builtin is ALL_TO_ALL_V else core_num
        if stride < blocks:
            raise ProgramError(
                f"CHIP {call.op}: signal stride ({stride}) is smaller than the admitted block "
                f"count ({blocks}) for core_num={core_num}, nranks={nranks}",
                span_of(call.args[builtin.role_index("signal")], call.span),
                phase=PHASE,
            )
        send_counts = call.args[builtin.role_index("send_counts")]
        # The op accepts a local send_counts (the InCore composite rail reads it locally); this
        # kernel's peers read it remotely. The indexed op's deducer already demands a window.
        if not isinstance(send_counts.type, DistributedTensorType):
            raise ProgramError(SEND_COUNTS_MESSAGE, span_of(send_counts, call.span), PHASE)
        require_supported_dtype(call.callee_name, target.dtype, call.span, PHASE)
        check_contiguous_operands(self.tracer, call, builtin.roles, at, PHASE)
        kernel = self._kernel(call, builtin, target)
        attrs: Attrs = ()
        if blocks > 1:
            attrs = (
                ("core_num", ConstInt(blocks, core_num_expr.type, core_num_expr.span)),
                ("sync_start", ConstBool(True, span=core_num_expr.span)),
            )
        return Call(GlobalVar(kernel.name), call.args, target, attrs=attrs, span=call.span)

    def _check_chips(self, call: Call) -> None:
        for chip in self.chips:
            if chip != INDEXED_CHIP:
                raise ProgramError(
                    f"{call.op} requires chip {INDEXED_CHIP} (URMA PER_PEER transport); "
                    f"the build targets {chip}",
                    call.span,
                    phase=PHASE,
                )

    def _kernel(
        self, call: Call, builtin: BuiltinCollective, target: DistributedTensorType
    ) -> Function:
        name = builtin.kernel_name(target.dtype)
        kernel = self.kernels.get(name)
        if kernel is None:
            if self.program.function(name) is not None:
                raise ProgramError(
                    f"{PHASE}: synthesized builtin kernel name '{name}' collides with an "
                    "existing function",
                    call.span,
                    phase=PHASE,
                )
            kernel = synthesize_kernel(builtin, target.dtype, [arg.type for arg in call.args])
            self.kernels[name] = kernel
        return kernel


def _core_num(call: Call, builtin: BuiltinCollective) -> tuple[ConstInt, int]:
    """The compile-time ``core_num`` (L) of ``call``, range-checked before any narrowing."""
    value = get_attr(call.kwargs, "core_num")
    if value is None:
        return ConstInt(1, span=call.span), 1
    if not isinstance(value, ConstInt):
        if builtin is ALL_TO_ALL_V:
            message = (
                f"CHIP {call.op}: a runtime core_num is not supported on this rail yet; pass a "
                "compile-time core_num (the HOST rail accepts a runtime value)"
            )
        else:
            message = (
                f"CHIP {call.op}: a runtime core_num is not supported; pass a compile-time "
                "core_num (it is the exact number of AIV launched)"
            )
        raise ProgramError(message, span_of(value, call.span), phase=PHASE)
    if not 1 <= value.value <= INT32_MAX:
        raise ProgramError(
            f"CHIP {call.op}: core_num must be in [1, {INT32_MAX}], got {value.value}",
            span_of(value, call.span),
            phase=PHASE,
        )
    return value, value.value


def _signal_shape(call: Call, builtin: BuiltinCollective) -> tuple[int, int]:
    """The signal's static ``[NR, S]`` (the deducer guarantees it; anything else is a bug)."""
    signal = call.args[builtin.role_index("signal")].type
    if not isinstance(signal, DistributedTensorType) or len(signal.shape) != 2:
        raise InternalError(f"{PHASE}: {call.op} signal must be a 2D DistributedTensor")
    nranks, stride = signal.shape
    if nranks < 1 or stride < 1:
        raise InternalError(
            f"{PHASE}: {call.op} signal [NR, S] must be positive, got [{nranks}, {stride}]"
        )
    return nranks, stride


def check_no_residual_collectives(program: Program) -> None:
    """Reject a managed collective left in any non-HOST orchestration body.

    Runs on every program, changed or not, so that a collective this rail cannot lower (or one
    nested inside another expression) fails here, naming the rails that do handle it.
    """
    for func in program.functions:
        if not func.func_type.is_orchestration_like or func.level is Level.HOST:
            continue
        for call in walk_calls(func.body):
            if isinstance(call.op, str) and is_managed_collective(call.op):
                raise ProgramError(
                    f"{call.op} in function '{func.name}' was not lowered. The managed CHIP/L2 "
                    "rail currently supports only pld.tensor.all_to_all_v with a compile-time "
                    "core_num; write any other collective in a HOST orchestrator (builtin "
                    "dispatch rail) or an InCore function (composite rail)",
                    call.span,
                    phase=PHASE,
                )

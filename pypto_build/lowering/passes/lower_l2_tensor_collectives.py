"""LowerL2TensorCollectives: the CHIP/L2 rail of the managed collectives.

A collective of a builtin package with a CHIP rail (``pld.tensor.all_to_all_v``, or, on a5,
``pld.tensor.indexed_all_to_all_v``) written in a CHIP orchestration body becomes a call of a
synthesized AIV kernel, so the collective is one more task of the caller's own pipeline: compute
-> collective -> consume costs one L3 -> L2 round trip per card instead of the HOST rail's three.
Which ops, operands, directions, chips and launch-width rule: the package manifest says
(:mod:`pypto_build.lowering.builtin_ops`).

The pass must run before DeriveCallDirections and AutoDeriveTaskDependencies: those turn the
synthesized kernel's parameter directions into the TensorMap edges that order the collective
between its producer and consumer. It also runs before MaterializeDistTensorCtx, which appends
the kernel's CommCtx arguments (one per DistributedTensor parameter, hence the canonical
parameter kinds the manifest declares: a DistributedTensor wherever the op takes a window).

The launch width is folded here, at compile time: ``core_num`` (L) must be a constant, the
admitted block count B follows from the package's launch-width rule (``all_to_all_v``:
``CalAllToAllVBlocks(NR, L)`` with NR the signal's static rank count; ``exact``: L), and the call
carries ``core_num=B, sync_start=True`` when B > 1 (all admitted blocks must be resident together
for the block-aware barrier). The signal stride S is checked against B, not L: for the exact
rule (the indexed exchange, whose blocks beyond NR only gather locally) S >= L is required, a
stricter check than the kernel may need, never a looser one. Every operand a peer reaches
remotely must be a window view on this rail, even where the public op accepts a local tensor.

Every tensor operand must be provably dense row-major at compile time (see
:mod:`pypto_build.lowering.analysis.contiguity`): a per-rank runtime refusal would leave the peers
hanging in the kernel's barrier. The kernel still carries ``require_contiguous_operands`` so
that orchestration codegen adds the runtime check for tensors the caller builds at run time.

After the rewrite, any managed collective left in a non-HOST orchestration body is an error
(also when nothing changed). HOST orchestrators belong to LowerHostTensorCollectives, InCore
bodies to LowerCompositeOps; neither is touched or checked here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import ClassVar

from pypto_build.lowering.analysis.constants import constant_bindings
from pypto_build.lowering.analysis.contiguity import (
    ContiguityAnalysis,
    check_contiguous_operands,
    span_of,
)
from pypto_build.lowering.builtin_ops import (
    CHIP_RAIL,
    HOST_RAIL,
    INCORE_RAIL,
    SIGNAL,
    BuiltinOp,
    builtin_ops,
    public_builtin,
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
    Var,
)
from pypto_build.lowering.ir.names import CallAttr, Kwarg, kwarg
from pypto_build.lowering.ir.walk import walk_calls
from pypto_build.lowering.launch_width import INT32_MAX
from pypto_build.lowering.legality.runtime import check_rank_count
from pypto_build.lowering.ops import is_managed_collective
from pypto_build.lowering.passes.base import Pass, Property
from pypto_build.lowering.passes.rewrite import Mutator, StmtResult

PHASE = "LowerL2TensorCollectives"


@dataclass(frozen=True)
class LowerL2TensorCollectives(Pass):
    """Rewrite CHIP-orchestration collectives into calls of synthesized builtin AIV kernels.

    ``chips`` are the build's target chips; an op whose package does not support one of them
    is refused. Empty means "not known here" and refuses nothing.
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
        check_no_residual_collectives(lowered, self.chips)
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
        self.func = func
        self._contiguity: ContiguityAnalysis | None = None
        self._constants: dict[str, ConstInt] | None = None

    @property
    def constants(self) -> dict[str, ConstInt]:
        """The function's names bound once to a constant (folded into ``core_num``)."""
        if self._constants is None:
            self._constants = constant_bindings(self.func)
        return self._constants

    @property
    def contiguity(self) -> ContiguityAnalysis:
        """The contiguity of the function's values, computed when a collective needs it."""
        if self._contiguity is None:
            self._contiguity = ContiguityAnalysis(self.program, self.func)
        return self._contiguity

    def visit_assign(self, stmt: AssignStmt) -> StmtResult:
        # The call keeps the target's type, so the assigned name is rebound unchanged.
        value = self._value(stmt.value)
        return stmt if value is stmt.value else replace(stmt, value=value)

    def visit_eval(self, stmt: EvalStmt) -> StmtResult:
        expr = self._value(stmt.expr)
        return stmt if expr is stmt.expr else replace(stmt, expr=expr)

    def visit_return(self, stmt: ReturnStmt) -> StmtResult:
        values = tuple(self._value(value) for value in stmt.values)
        unchanged = all(new is old for new, old in zip(values, stmt.values, strict=True))
        return stmt if unchanged else replace(stmt, values=values)

    def _value(self, value: Expr) -> Expr:
        """``value`` lowered if it is directly a collective this rail handles."""
        if not (isinstance(value, Call) and isinstance(value.op, str)):
            return value
        builtin = public_builtin(value.op, CHIP_RAIL)
        return value if builtin is None else self._lower(value, builtin)

    def _lower(self, call: Call, builtin: BuiltinOp) -> Call:
        builtin.require_chips(self.chips, call.span, PHASE)
        if len(call.args) != len(builtin.names):
            raise InternalError(
                f"{PHASE}: {call.op} must have {len(builtin.names)} tensor args, "
                f"got {len(call.args)}"
            )
        core_num_expr, core_num = _core_num(call, builtin, self.constants)
        result = call.args[builtin.result_index].type
        if not isinstance(result, DistributedTensorType):
            raise InternalError(f"{PHASE}: {call.op} result must be DistributedTensorType")
        blocks = core_num
        signal = builtin.role_index(SIGNAL)
        if signal is not None:
            nranks, stride = _signal_shape(call, signal)
            check_rank_count(nranks, span_of(call.args[signal], call.span), PHASE)
            blocks = builtin.launch_width.blocks(nranks, core_num)
            if stride < blocks:
                raise ProgramError(
                    f"CHIP {call.op}: signal stride ({stride}) is smaller than the admitted "
                    f"block count ({blocks}) for core_num={core_num}, nranks={nranks}",
                    span_of(call.args[signal], call.span),
                    phase=PHASE,
                )
        _require_remote_windows(call, builtin)
        builtin.require_supported_dtype(result.dtype, call.span, PHASE)
        check_contiguous_operands(self.contiguity, call, builtin.names, PHASE)
        kernel = self._kernel(call, builtin, result)
        attrs: Attrs = ()
        if blocks > 1:
            attrs = (
                (CallAttr.CORE_NUM, ConstInt(blocks, core_num_expr.type, core_num_expr.span)),
                (CallAttr.SYNC_START, ConstBool(True, span=core_num_expr.span)),
            )
        return Call(GlobalVar(kernel.name), call.args, result, attrs=attrs, span=call.span)

    def _kernel(self, call: Call, builtin: BuiltinOp, result: DistributedTensorType) -> Function:
        name = builtin.kernel_name(result.dtype)
        kernel = self.kernels.get(name)
        if kernel is None:
            if self.program.function(name) is not None:
                raise ProgramError(
                    f"{PHASE}: synthesized builtin kernel name '{name}' collides with an "
                    "existing function",
                    call.span,
                    phase=PHASE,
                )
            kernel = builtin.synthesize_kernel(result.dtype, [arg.type for arg in call.args])
            self.kernels[name] = kernel
        return kernel


def _require_remote_windows(call: Call, builtin: BuiltinOp) -> None:
    """A peer reaches a remote operand through CommRemotePtr, so on this rail it must be a
    DistributedTensor even where the op accepts a local tensor (for the InCore composite path,
    which reads it locally)."""
    for position, operand in enumerate(builtin.package.operands):
        arg = call.args[position]
        if operand.remote and not isinstance(arg.type, DistributedTensorType):
            raise ProgramError(
                f"CHIP {call.op} {operand.name} must be a DistributedTensor: peers read this "
                f"rank's {operand.name} through CommRemotePtr, so a plain Tensor (accepted only "
                "on the InCore composite path) is not supported on this rail",
                span_of(arg, call.span),
                PHASE,
            )


def _core_num(
    call: Call, builtin: BuiltinOp, constants: Mapping[str, ConstInt]
) -> tuple[ConstInt, int]:
    """The compile-time ``core_num`` (L) of ``call``, range-checked before any narrowing; a
    name bound once to a constant (``constants``) is folded, as upstream's Simplify does."""
    value = kwarg(call, Kwarg.CORE_NUM)
    if value is None:
        return ConstInt(1, span=call.span), 1
    if isinstance(value, Var) and value.name in constants:
        value = replace(constants[value.name], span=value.span)
    if not isinstance(value, ConstInt):
        if builtin.supports(HOST_RAIL):
            reason = "is not supported on this rail yet; pass a compile-time core_num (the HOST "
            reason += "rail accepts a runtime value)"
        else:
            reason = (
                f"is not supported; pass a compile-time core_num ({builtin.launch_width.meaning})"
            )
        raise ProgramError(
            f"CHIP {call.op}: a runtime core_num {reason}", span_of(value, call.span), phase=PHASE
        )
    if not 1 <= value.value <= INT32_MAX:
        raise ProgramError(
            f"CHIP {call.op}: core_num must be in [1, {INT32_MAX}], got {value.value}",
            span_of(value, call.span),
            phase=PHASE,
        )
    return value, value.value


def _signal_shape(call: Call, position: int) -> tuple[int, int]:
    """The signal's static ``[NR, S]``; a rank-1 ``[NR]`` signal has one lane (S = 1), as the
    kernels read it (``signal_lanes``). The package's manifest admits one of the two forms and
    the deducer the manifest's shapes, so anything else is a bug."""
    signal = call.args[position].type
    if not isinstance(signal, DistributedTensorType) or len(signal.shape) not in (1, 2):
        raise InternalError(f"{PHASE}: {call.op} signal must be a 1D or 2D DistributedTensor")
    nranks, stride = (*signal.shape, 1)[:2]
    if nranks < 1 or stride < 1:
        raise InternalError(
            f"{PHASE}: {call.op} signal [NR, S] must be positive, got [{nranks}, {stride}]"
        )
    return nranks, stride


def check_no_residual_collectives(program: Program, chips: tuple[str, ...] = ()) -> None:
    """Reject a managed collective left in any non-HOST orchestration body.

    Runs on every program, changed or not, so that a collective this rail cannot lower (or one
    nested inside another expression) fails here, naming the collectives this rail does lower
    for the build's chips (every chip a CHIP-rail package names, when they are not known).
    """
    lowered = " and ".join(builtin.op for builtin in _chip_rail_ops(chips)) or "no collective"
    for func in program.functions:
        if not func.func_type.is_orchestration_like or func.level is Level.HOST:
            continue
        for call in walk_calls(func.body):
            if isinstance(call.op, str) and is_managed_collective(call.op):
                advice = (
                    _chip_only_advice(call.op)
                    or "write any other collective in a HOST orchestrator (builtin dispatch "
                    "rail) or an InCore function (composite rail)"
                )
                raise ProgramError(
                    f"{call.op} in function '{func.name}' was not lowered. The managed CHIP/L2 "
                    f"rail currently supports only {lowered} with a compile-time core_num; "
                    f"{advice}",
                    call.span,
                    phase=PHASE,
                )


def _chip_only_advice(op: str) -> str | None:
    """What works for a collective whose package runs on the CHIP rail alone (no HOST or
    InCore rail to send it to): a call of its own in a CHIP orchestration. None for others."""
    builtin = public_builtin(op, CHIP_RAIL)
    if builtin is None or builtin.supports(HOST_RAIL) or builtin.supports(INCORE_RAIL):
        return None
    chips = ", ".join(builtin.package.chips)
    return (
        f"{op} has no HOST or InCore rail: call it as a statement of its own in a CHIP "
        f"orchestration (result = {op}(...), not nested in another expression), with a "
        f"compile-time core_num, for chip {chips}"
    )


def _chip_rail_ops(chips: tuple[str, ...]) -> list[BuiltinOp]:
    """The CHIP-rail builtins that run on every one of ``chips``."""
    on_rail = [builtin for builtin in builtin_ops() if builtin.supports(CHIP_RAIL)]
    targets = set(chips) or {chip for builtin in on_rail for chip in builtin.package.chips}
    return [builtin for builtin in on_rail if targets <= set(builtin.package.chips)]

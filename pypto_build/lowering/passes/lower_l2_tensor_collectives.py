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
)
from pypto_build.lowering.builtin_ops import (
    CHIP_RAIL,
    HOST_RAIL,
    INCORE_RAIL,
    BuiltinOp,
    ChipVariant,
)
from pypto_build.lowering.builtin_registry import builtin_ops, public_builtin
from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.ir import (
    AssignStmt,
    Call,
    ConstInt,
    EvalStmt,
    Expr,
    Function,
    GlobalVar,
    Level,
    Program,
    ReturnStmt,
    Var,
)
from pypto_build.lowering.ir.names import Kwarg, kwarg
from pypto_build.lowering.ir.rebuild import replaced
from pypto_build.lowering.ir.walk import walk_calls
from pypto_build.lowering.optable import is_managed_collective
from pypto_build.lowering.pass_names import LOWER_L2_TENSOR_COLLECTIVES
from pypto_build.lowering.passes.base import Pass, Property
from pypto_build.lowering.passes.rewrite import Mutator, StmtResult

PHASE = LOWER_L2_TENSOR_COLLECTIVES

#: What identifies a synthesized kernel: the op, its template variables, the operands passed.
_VariantKey = tuple[str, str, tuple[int, ...]]


@dataclass(frozen=True)
class LowerL2TensorCollectives(Pass):
    """Rewrite CHIP-orchestration collectives into calls of synthesized builtin AIV kernels.

    ``chips`` are the build's target chips; an op whose package does not support one of them
    is refused. Empty means "not known here" and refuses nothing.
    """

    name: ClassVar[str] = LOWER_L2_TENSOR_COLLECTIVES
    requires: ClassVar[frozenset[Property]] = frozenset(
        {Property.COMPOSITE_OPS_LOWERED, Property.CREATE_ASSEMBLE_FUSED}
    )
    produces: ClassVar[frozenset[Property]] = frozenset({Property.L2_COLLECTIVES_LOWERED})

    chips: tuple[str, ...] = ()

    def apply(self, program: Program) -> Program:
        # One kernel per variant for the whole program, in first-use order.
        kernels: dict[_VariantKey, Function] = {}
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
        kernels: dict[_VariantKey, Function],
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
        return stmt if value is stmt.value else replaced(stmt, value=value)

    def visit_eval(self, stmt: EvalStmt) -> StmtResult:
        expr = self._value(stmt.expr)
        return stmt if expr is stmt.expr else replaced(stmt, expr=expr)

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
        # The contract sees core_num folded; the analyses keep the call they analysed.
        folded = _fold_core_num(call, self.constants)
        variant = builtin.chip_variant(folded, PHASE)
        operands = builtin.call_operands(call)
        named = [(builtin.names[position], expr) for position, expr in operands]
        check_contiguous_operands(self.contiguity, call, named, PHASE)
        args = tuple(expr for _, expr in operands)
        kernel = self._kernel(call, builtin, variant, operands)
        return Call(GlobalVar(kernel.name), args, call.type, attrs=variant.launch, span=call.span)

    def _kernel(
        self,
        call: Call,
        builtin: BuiltinOp,
        variant: ChipVariant,
        operands: tuple[tuple[int, Expr], ...],
    ) -> Function:
        """The kernel of ``variant`` for these operands, shared by every call with the same;
        the first of a dtype is ``__builtin_<stem>__<dtype>``, later configurations of the
        same dtype are numbered from 2."""
        template_vars = builtin.template_vars(variant.dtype, variant.config)
        key = (builtin.op, template_vars, tuple(position for position, _ in operands))
        kernel = self.kernels.get(key)
        if kernel is None:
            base = builtin.kernel_name(variant.dtype)
            taken = sum(
                1
                for known in self.kernels.values()
                if known.name == base or known.name.startswith(f"{base}__")
            )
            name = base if taken == 0 else f"{base}__{taken + 1}"
            if self.program.function(name) is not None:
                raise ProgramError(
                    f"{PHASE}: synthesized builtin kernel name '{name}' collides with an "
                    "existing function",
                    call.span,
                    phase=PHASE,
                )
            kernel = builtin.synthesize_kernel(
                name, template_vars, [(position, expr.type) for position, expr in operands]
            )
            self.kernels[key] = kernel
        return kernel


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


def _fold_core_num(call: Call, constants: Mapping[str, ConstInt]) -> Call:
    """``call`` with a ``core_num`` name bound once to a constant replaced by the constant, as
    upstream's Simplify folds it before its collective lowering (``c = 2`` then
    ``core_num=c``)."""
    value = kwarg(call, Kwarg.CORE_NUM)
    if not (isinstance(value, Var) and value.name in constants):
        return call
    folded = replace(constants[value.name], span=value.span)
    kwargs = tuple((key, folded if key == Kwarg.CORE_NUM else item) for key, item in call.kwargs)
    return replace(call, kwargs=kwargs)


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

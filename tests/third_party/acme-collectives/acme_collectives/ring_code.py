"""The code ring_shift's manifest names: its op contract and its launch-width rule.

Both are registered through the ``pypto_build.builtins`` entry-point group (``pyproject.toml``),
each under the name a manifest gives it, and loaded by pypto-build only when a registered
manifest names one of them.

``pld.tensor.ring_shift(input, target, signal, *, shift, core_num=1)`` sends this rank's
``input [M, W]`` into the ``target [M, W]`` window of rank ``(rank + shift) % NR``, where the
signal ``[NR, S]`` gives NR. ``shift`` is a compile-time integer in ``[1, NR)``; the kernel is
rendered for it (a template variable), so calls with different shifts get different kernels.
"""

from __future__ import annotations

from pypto_build.builtins.manifest import BuiltinPackage
from pypto_build.lowering.builtin_ops import BuiltinOp, ChipVariant, Contract, manifest_error
from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.ir import (
    Attrs,
    Call,
    ConstBool,
    ConstInt,
    DataType,
    Function,
    TensorType,
    Type,
)
from pypto_build.lowering.ir.names import CallAttr
from pypto_build.lowering.launch_width import LaunchWidthRule
from pypto_build.lowering.ops.signature import Effects, Kind, OpDef, Operand, Operands, optional
from pypto_build.lowering.ops.validation import (
    expr_text,
    require_distributed,
    require_dtype,
    require_full_valid_shape,
    require_layout_compact,
    require_rank,
    require_tensor,
)

INPUT, TARGET, SIGNAL = "input", "target", "signal"
SHIFT, CORE_NUM = "shift", "core_num"


def _one_per_peer(nranks: int, core_num: int) -> int:
    return min(core_num, nranks)


#: At most one block per peer: more would have no rows of their own to push.
ONE_PER_PEER = LaunchWidthRule(
    "acme_one_per_peer", _one_per_peer, "at most one block per rank is launched"
)


def _deduce(ops: Operands) -> Type:
    source = require_tensor(ops, INPUT)
    target = require_distributed(ops, TARGET)
    signal = require_distributed(ops, SIGNAL)
    for name, ty in ((INPUT, source), (TARGET, target), (SIGNAL, signal)):
        require_layout_compact(ops, name, ty)
        require_full_valid_shape(ops, name, ty)
    if tuple(source.shape) != tuple(target.shape) or source.dtype is not target.dtype:
        ops.error(
            TARGET, f"must have the input's shape and dtype, got {expr_text(ops.expr(TARGET))}"
        )
    require_dtype(ops, SIGNAL, signal, DataType.INT32)
    require_rank(ops, SIGNAL, signal, 2)
    nranks = signal.shape[0]
    shift = _shift(ops.value(SHIFT))
    if shift is None or not 1 <= shift < nranks:
        ops.error(SHIFT, f"must be a compile-time integer in [1, {nranks}) (NR, from the signal)")
    return ops.expr(TARGET).type


def _shift(value: object) -> int | None:
    """The compile-time integer ``shift`` is, if it is one."""
    if isinstance(value, ConstInt):
        return value.value
    return value if type(value) is int else None


class RingShiftContract(Contract):
    name: str = "acme_ring_shift"

    def validate(self, package: BuiltinPackage) -> None:
        names = tuple(operand.name for operand in package.operands)
        if names != (INPUT, TARGET, SIGNAL):
            raise manifest_error(package, "operands", "must be input, target, signal, in order")

    def public_op(self, builtin: BuiltinOp) -> OpDef:
        return OpDef(
            builtin.op,
            (
                Operand(INPUT),
                Operand(TARGET),
                Operand(SIGNAL),
                Operand(SHIFT, Kind.ANY, keyword_only=True),
                optional(CORE_NUM, Kind.EXPR, keyword_only=True, none_omits=False),
            ),
            _deduce,
            Effects(view_of=1, writes=(1, 2), keeps_density=True),
        )

    def ranks(self, builtin: BuiltinOp, kernel: Function) -> int | None:
        signal = next(param for param in kernel.params if param.var.name == SIGNAL)
        ty = signal.var.type
        return ty.shape[0] if isinstance(ty, TensorType) else None

    def chip_variant(self, builtin: BuiltinOp, call: Call, phase: str) -> ChipVariant:
        target, signal = call.args[1].type, call.args[2].type
        assert isinstance(target, TensorType) and isinstance(signal, TensorType)
        shift = _shift(dict(call.kwargs)[SHIFT])
        assert shift is not None, "the deducer accepted the call"
        core_num = dict(call.kwargs).get(CORE_NUM, ConstInt(1, span=call.span))
        if not isinstance(core_num, ConstInt) or core_num.value < 1:
            raise ProgramError(
                f"CHIP {call.op}: core_num must be a positive compile-time integer "
                f"({builtin.launch_width.meaning})",
                call.span,
                phase,
            )
        nranks, lanes = signal.shape
        blocks = builtin.launch_width.blocks(nranks, core_num.value)
        if lanes < blocks:
            raise ProgramError(
                f"CHIP {call.op}: signal has {lanes} lanes for {blocks} blocks", call.span, phase
            )
        launch: Attrs = ()
        if blocks > 1:
            launch = (
                (CallAttr.CORE_NUM, ConstInt(blocks, core_num.type, core_num.span)),
                (CallAttr.SYNC_START, ConstBool(True, span=core_num.span)),
            )
        return ChipVariant(target.dtype, config=((SHIFT, str(shift)),), launch=launch)


CONTRACT = RingShiftContract()

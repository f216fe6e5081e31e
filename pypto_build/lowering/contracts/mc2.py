"""The ``mc2`` contract: the fused operator ``batch_matmul_reduce_scatter_all_to_all``.

A program writes, in a CHIP orchestration::

    out = pld.tensor.batch_matmul_reduce_scatter_all_to_all(
        x, weight, bias, out, workspace,
        ep_world_size=4, tp_world_size=2, y_shard_type=1, transpose_weight=False)

``bias`` may be None; ``group_ep=`` and ``group_tp=`` (strings) may name the groups, and are then
checked as aclnn checks them. The op's rules are aclnn's (:mod:`pypto_build.lowering.aclnn.rules`,
in aclnn's order, each diagnostic naming the rule and the aclnn status); the operand types give
the shapes and dtypes, the keywords the static configuration, which must be compile-time
constants. The rules see what the program wrote: a ``None`` for x, weight or out is aclnn's
null pointer (161001), a keyword of the wrong type (``ep_world_size=4.0``, ``group_ep=3``) is
refused by the rule that checks it, as the host API refuses the same values.

``workspace`` is a window (the kernel exchanges partial products through it), of any
element type, holding at least the user part of the workspace the build-time tiling computes
(:mod:`pypto_build.lowering.aclnn.tiling`). The op returns ``out``, which it writes whole.

On the CHIP rail the kernel variant is the payload dtype and the tiling's template variables
(every call with the same configuration shares one kernel); the kernel is a MIX kernel of one
cluster, whose blocks loop over the tiles themselves.
"""

from __future__ import annotations

from pypto_build.builtins.manifest import BuiltinPackage
from pypto_build.lowering.aclnn.rules import Mc2Config, Mc2Error, Mc2Request, TensorSpec, check
from pypto_build.lowering.aclnn.tiling import Mc2Tiling, tile
from pypto_build.lowering.builtin_ops import (
    RESULT,
    BuiltinOp,
    ChipVariant,
    Contract,
    manifest_error,
    parse_template_vars,
)
from pypto_build.lowering.diagnostics import InternalError, ProgramError
from pypto_build.lowering.ir import (
    AttrValue,
    Call,
    ConstBool,
    ConstFloat,
    ConstInt,
    Expr,
    Function,
    Type,
)
from pypto_build.lowering.ir.names import template_vars
from pypto_build.lowering.ops.signature import (
    Effects,
    Kind,
    OpDef,
    Operand,
    Operands,
    optional,
)
from pypto_build.lowering.ops.validation import (
    expr_text,
    require_distributed,
    require_full_valid_shape,
    require_layout_compact,
    require_tensor,
)

#: The operands the contract reads, by manifest name.
X, WEIGHT, BIAS, OUT, WORKSPACE = "x", "weight", "bias", "out", "workspace"
TENSORS = (X, WEIGHT, BIAS, OUT, WORKSPACE)

#: The static configuration, given by keyword.
EP_WORLD_SIZE = "ep_world_size"
TP_WORLD_SIZE = "tp_world_size"
Y_SHARD_TYPE = "y_shard_type"
TRANSPOSE_WEIGHT = "transpose_weight"
GROUP_EP = "group_ep"
GROUP_TP = "group_tp"

#: The tiling's template variables that give the group sizes (``Mc2Tiling.template_vars``).
EP_GROUP_SIZE = "common_tiling_ep_group_size"
TP_GROUP_SIZE = "common_tiling_tp_group_size"


class Mc2Contract(Contract):
    name: str = "mc2"
    #: The simulated HCCL's state (``pypto_build/host_mix.h``: flag counters, a counter per
    #: group, a mailbox; ``64 + 8 * max(ep, tp)`` bytes, 576 for groups of COMM_MAX_RANK_NUM),
    #: which lives outside the workspace so that the workspace is the user part, as on the device.
    window_tail: int = 1024

    def validate(self, package: BuiltinPackage) -> None:
        """The manifest lists exactly the operands the op's rules read, in the kernel's
        argument order; only the bias is optional, the workspace is the one window, and the
        op returns ``out``."""
        names = tuple(operand.name for operand in package.operands)
        if names != TENSORS:
            raise manifest_error(package, "operands", f"must be {', '.join(TENSORS)}, in order")
        for position, operand in enumerate(package.operands):
            if operand.optional != (operand.name == BIAS):
                raise manifest_error(
                    package, f"operands[{position}].optional", "only the bias is optional"
                )
            if operand.window != (operand.name == WORKSPACE):
                raise manifest_error(
                    package, f"operands[{position}].window", "only the workspace is a window"
                )
            if (operand.role == RESULT) != (operand.name == OUT):
                raise manifest_error(
                    package, f"operands[{position}].role", f"the '{RESULT}' is {OUT}"
                )

    def public_op(self, builtin: BuiltinOp) -> OpDef:
        return OpDef(
            builtin.op,
            (
                Operand(X, nullable=True),
                Operand(WEIGHT, nullable=True),
                optional(BIAS),
                Operand(OUT, nullable=True),
                Operand(WORKSPACE),
                Operand(EP_WORLD_SIZE, Kind.ANY, keyword_only=True),
                Operand(TP_WORLD_SIZE, Kind.ANY, keyword_only=True),
                Operand(Y_SHARD_TYPE, Kind.ANY, keyword_only=True),
                optional(TRANSPOSE_WEIGHT, Kind.ANY, keyword_only=True, default=False),
                optional(GROUP_EP, Kind.ANY, keyword_only=True),
                optional(GROUP_TP, Kind.ANY, keyword_only=True),
            ),
            _deduce,
            # The call's positional arguments are x, weight, out, workspace (a given bias is a
            # keyword operand): it returns out, and writes out and the workspace.
            Effects(view_of=2, writes=(2, 3), keeps_density=True),
        )

    def ranks(self, builtin: BuiltinOp, kernel: Function) -> int | None:
        """ep * tp, from the group sizes the kernel's variant was rendered for."""
        variables = parse_template_vars(template_vars(kernel), kernel.name)
        sizes = [variables.get(key, "") for key in (EP_GROUP_SIZE, TP_GROUP_SIZE)]
        if not all(size.isdigit() for size in sizes):
            return None
        return int(sizes[0]) * int(sizes[1])

    def chip_variant(self, builtin: BuiltinOp, call: Call, phase: str) -> ChipVariant:
        """The payload dtype and the tiling name the variant; one cluster runs it."""
        tiling = self.tiling(builtin, call)
        return ChipVariant(tiling.config.dtype, config=tuple(tiling.template_vars().items()))

    def tiling(self, builtin: BuiltinOp, call: Call) -> Mc2Tiling:
        """The tiling of a call the op's deducer accepted."""
        opdef = self.public_op(builtin)
        values: dict[str, AttrValue] = dict(
            zip((spec.name for spec in opdef.operands if spec.is_arg), call.args, strict=True)
        )
        values.update(call.kwargs)
        try:
            return _tiling(Operands(opdef, values, call.span))
        except ProgramError as error:
            raise InternalError(f"{call.callee_name}: an accepted call fails: {error}") from None


def _deduce(ops: Operands) -> Type:
    tiling = _tiling(ops)
    workspace = require_distributed(ops, WORKSPACE)
    require_layout_compact(ops, WORKSPACE, workspace)
    have = _numel(workspace.shape) * workspace.dtype.byte_size
    if have < tiling.user_bytes:
        ops.error(
            WORKSPACE,
            f"holds {have} bytes; the kernel needs at least {tiling.user_bytes} bytes (the user "
            "part of the workspace the tiling computes for this configuration, without the "
            f"{tiling.system_bytes} bytes of the runtime's own part)",
        )
    return ops.expr(OUT).type


def _tiling(ops: Operands) -> Mc2Tiling:
    """The checked configuration of a call and its tiling; a diagnostic at the operand an aclnn
    rule is about when one fails."""
    tensors = {name: _spec(ops, name) for name in (X, WEIGHT, BIAS, OUT)}
    request = Mc2Request(
        x=tensors[X],
        weight=tensors[WEIGHT],
        bias=tensors[BIAS],
        out=tensors[OUT],
        group_ep=_constant(ops, GROUP_EP),
        group_tp=_constant(ops, GROUP_TP),
        ep_world_size=_constant(ops, EP_WORLD_SIZE),
        tp_world_size=_constant(ops, TP_WORLD_SIZE),
        y_shard_type=_constant(ops, Y_SHARD_TYPE),
        transpose_weight=_boolean(ops, TRANSPOSE_WEIGHT),
    )
    try:
        config: Mc2Config = check(request)
    except Mc2Error as error:
        name = error.operand if ops.opdef.operand(error.operand) is not None else OUT
        ops.error_at(ops.span_of(name), f"{error}")
    return tile(config)


def _spec(ops: Operands, name: str) -> TensorSpec | None:
    """The shape and dtype of tensor operand ``name`` (None: the call omits it or passes None),
    after the layout checks every operand of the kernel shares."""
    if not ops.given(name) or ops.value(name) is None:
        return None
    ty = require_tensor(ops, name)
    require_layout_compact(ops, name, ty)
    require_full_valid_shape(ops, name, ty)
    return TensorSpec(tuple(ty.shape), ty.dtype)


def _constant(ops: Operands, name: str) -> object:
    """The literal a keyword was given (a string, a number, None), for the rules to check."""
    value = ops.value(name)
    if isinstance(value, ConstInt | ConstBool | ConstFloat):
        return value.value
    if isinstance(value, Expr):
        ops.error(name, f"must be a compile-time constant, got {expr_text(value)}")
    return value


def _boolean(ops: Operands, name: str) -> bool:
    value = _constant(ops, name)
    if type(value) is not bool:
        ops.error(name, f"must be True or False, got {value!r}")
    return value


def _numel(shape: tuple[int, ...]) -> int:
    count = 1
    for extent in shape:
        count *= extent
    return count

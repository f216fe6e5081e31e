"""Builtin collective kernels: template handles, operand tables and the synthesized declaration.

A managed collective that runs as an AIV task is backed by a hand-written kernel template, not by
generated code. The compiler still needs a *function* for it, so that the call is an ordinary
kernel call that later passes give directions, dependency edges and CommCtx arguments to. This
module owns the facts both rails must agree on — the template package handle, the one template
variable (``dtype_cpp``), the operand roles and directions — and builds that declaration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pypto_build.lowering.diagnostics import InternalError, ProgramError, Span
from pypto_build.lowering.ir import (
    DataType,
    DistributedTensorType,
    Function,
    FunctionType,
    Level,
    Param,
    ParamDirection,
    ReturnStmt,
    SeqStmts,
    TensorType,
    Type,
    Var,
)

#: Payload element types with a kernel template variant (HOST and CHIP rails alike).
SUPPORTED_DTYPES: tuple[DataType, ...] = (DataType.FP32, DataType.INT8)

ALL_TO_ALL_V_TEMPLATE_DIR = ":pypto.runtime.builtins.collectives.all_to_all_v"
INDEXED_ALL_TO_ALL_V_TEMPLATE_DIR = ":pypto.runtime.builtins.collectives.indexed_all_to_all_v"

#: Function attrs of a synthesized builtin kernel (read by the backend's renderer and codegen).
ATTR_TEMPLATE_DIR = "builtin_template_dir"
ATTR_TEMPLATE_VARS = "builtin_template_vars"
ATTR_REQUIRE_CONTIGUOUS = "require_contiguous_operands"


@dataclass(frozen=True)
class BuiltinOperand:
    """One tensor operand of a builtin kernel.

    ``distributed`` fixes the *canonical* parameter kind: a DistributedTensor only where a peer
    reaches the operand remotely. MaterializeDistTensorCtx appends one CommCtx argument per
    DistributedTensor parameter, so this table is what pins the kernel's trailing-context ABI,
    whatever kind the call site happens to pass.
    """

    role: str
    direction: ParamDirection
    distributed: bool


@dataclass(frozen=True)
class BuiltinCollective:
    """A managed collective with a builtin kernel template."""

    op: str
    stem: str
    template_dir: str
    operands: tuple[BuiltinOperand, ...]
    #: The operand the op returns (window-as-result), which the kernel body returns too.
    result_role: str = "target"

    @property
    def roles(self) -> tuple[str, ...]:
        return tuple(operand.role for operand in self.operands)

    def role_index(self, role: str) -> int:
        return self.roles.index(role)

    def kernel_name(self, dtype: DataType) -> str:
        """Name of the synthesized CHIP-rail kernel of the ``dtype`` variant."""
        return f"__builtin_{self.stem}__{dtype.value}"


_IN = ParamDirection.In
_INOUT = ParamDirection.InOut

ALL_TO_ALL_V = BuiltinCollective(
    op="pld.tensor.all_to_all_v",
    stem="all_to_all_v",
    template_dir=ALL_TO_ALL_V_TEMPLATE_DIR,
    operands=(
        BuiltinOperand("input", _IN, distributed=False),
        BuiltinOperand("target", _INOUT, distributed=True),
        BuiltinOperand("signal", _INOUT, distributed=True),
        BuiltinOperand("send_counts", _IN, distributed=False),
        BuiltinOperand("recv_counts", _INOUT, distributed=True),
    ),
)

#: A5 URMA indexed exchange: peers pull ``send_counts`` and receive into ``target``; ``signal``
#: orders the exchange. ``input``, ``recv_counts`` and ``index`` are only touched locally.
INDEXED_ALL_TO_ALL_V = BuiltinCollective(
    op="pld.tensor.indexed_all_to_all_v",
    stem="indexed_all_to_all_v",
    template_dir=INDEXED_ALL_TO_ALL_V_TEMPLATE_DIR,
    operands=(
        BuiltinOperand("input", _IN, distributed=False),
        BuiltinOperand("target", _INOUT, distributed=True),
        BuiltinOperand("signal", _INOUT, distributed=True),
        BuiltinOperand("send_counts", _IN, distributed=True),
        BuiltinOperand("recv_counts", _INOUT, distributed=False),
        BuiltinOperand("index", _IN, distributed=False),
    ),
)


def require_supported_dtype(op: str, dtype: DataType, span: Span, phase: str) -> None:
    """Reject a payload ``dtype`` with no kernel variant; both rails render the same templates,
    so they admit the same dtypes."""
    if dtype not in SUPPORTED_DTYPES:
        names = " or ".join(supported.name for supported in SUPPORTED_DTYPES)
        raise ProgramError(
            f"managed {op} currently supports only dtype={names}, got {dtype.value}", span, phase
        )


def template_vars(dtype: DataType) -> str:
    """The ``builtin_template_vars`` value: ``k=v`` pairs joined by ``,``; ``dtype_cpp`` only.

    It is the only substitution either rail makes, which is why their renders are identical.
    """
    return f"dtype_cpp={dtype.c_type}"


def canonical_operand_type(builtin: BuiltinCollective, index: int, arg_type: Type) -> TensorType:
    """The declared type of parameter ``index`` for an argument of type ``arg_type``."""
    operand = builtin.operands[index]
    if operand.distributed:
        if not isinstance(arg_type, DistributedTensorType):
            raise InternalError(
                f"{builtin.op} {operand.role} must be a DistributedTensorType, got {arg_type}"
            )
        return arg_type.unbound()
    if not isinstance(arg_type, TensorType):
        raise InternalError(f"{builtin.op} {operand.role} must be a tensor, got {arg_type}")
    return arg_type.plain()


def synthesize_kernel(
    builtin: BuiltinCollective, dtype: DataType, arg_types: Sequence[Type]
) -> Function:
    """The AIV declaration of ``builtin``'s ``dtype`` variant, typed after one call site.

    The body is a single ``return target``: it is never compiled, but it keeps returns explicit
    and lets MaterializeDistTensorCtx map the returned DistributedTensor back to the parameter
    it writes. Baking the first call site's shapes into a variant shared by every call is safe:
    the kernel reads extents from the runtime descriptors and the name pins the dtype.
    """
    if len(arg_types) != len(builtin.operands):
        raise InternalError(
            f"{builtin.op} kernel signature has {len(builtin.operands)} tensor parameters, "
            f"got {len(arg_types)} arguments"
        )
    params = tuple(
        Param(Var(operand.role, canonical_operand_type(builtin, i, arg_type)), operand.direction)
        for i, (operand, arg_type) in enumerate(zip(builtin.operands, arg_types, strict=True))
    )
    result = params[builtin.role_index(builtin.result_role)].var
    return Function(
        name=builtin.kernel_name(dtype),
        params=params,
        return_types=(result.type,),
        body=SeqStmts((ReturnStmt((result,)),)),
        func_type=FunctionType.AIV,
        level=Level.CHIP,
        attrs=(
            (ATTR_TEMPLATE_DIR, builtin.template_dir),
            (ATTR_TEMPLATE_VARS, template_vars(dtype)),
            (ATTR_REQUIRE_CONTIGUOUS, True),
        ),
    )

"""Managed collectives ``pld.tensor.*``: operand contracts and type deduction.

Each lowered collective is described by a :class:`Contract`: one :class:`TensorRole` per tensor
operand giving its kind (any tensor or window only), its dtype (INT32 or the payload dtype of
``target``) and its accepted shapes as symbolic patterns. Symbols are bound by the first role
that mentions them, so roles are checked in an order where ``target`` and ``signal`` (which
define the geometry) come first and every later operand is checked against them.

Every contract also rejects what the operand types alone prove unsupported by the kernels:
non-ND layout, a non-packed stride vector, a valid_shape narrower than shape, and ``input``
being the same expression as ``target``. Range checks on ``core_num`` and dtype allowlists
belong to the lowering passes; here ``core_num`` only has to be an integer (constant or scalar
variable). The result is ``target``'s type: the window is the result (``data = ...(stage,
data, ...)`` rebinds the target's name).

The other managed collectives only parse, so the passes can reject them with their own
diagnostics; their result is likewise the type of their ``target`` operand.

``builtin.tensor.all_to_all_v`` is internal: only the HOST rail creates it (one call per
participating device), no DSL spelling resolves to it, and it is not a managed collective.
"""

from __future__ import annotations

from dataclasses import dataclass

from pypto_build.lowering.ir import (
    ConstInt,
    DataType,
    DistributedTensorType,
    Shape,
    TensorType,
    Type,
    Var,
)
from pypto_build.lowering.ops.checks import (
    dims_text,
    expr_text,
    is_integer_scalar,
    require_distributed,
    require_dtype,
    require_full_valid_shape,
    require_layout_compact,
    require_positive_dims,
    require_tensor,
)
from pypto_build.lowering.ops.signature import Deducer, Kind, OpDef, Operand, Operands, optional

#: A symbolic shape: integers are fixed extents, strings name extents shared between operands.
Pattern = tuple[int | str, ...]

NR = "NR"
ROWS = "NR*MAX_RECV"


@dataclass(frozen=True)
class TensorRole:
    """How one tensor operand of a collective is constrained. ``dtype`` None means the payload
    dtype, i.e. equal to ``target``'s."""

    name: str
    dtype: DataType | None
    shapes: tuple[Pattern, ...]
    window: bool = False


@dataclass(frozen=True)
class Contract:
    """The operand contract of one lowered collective. ``roles`` are in checking order:
    ``target`` (which binds the payload dtype and ``NR*MAX_RECV``) first, then ``signal``
    (which binds ``NR``; right after it, ``NR`` must divide the target's rows)."""

    op: str
    signature: tuple[str, ...]
    roles: tuple[TensorRole, ...]


@dataclass(frozen=True)
class _Binding:
    value: int
    role: str
    dim: int


def _pattern_text(pattern: Pattern) -> str:
    return "[" + ", ".join(str(dim) for dim in pattern) + "]"


def _match(pattern: Pattern, shape: Shape, symbols: dict[str, _Binding]) -> bool:
    if len(pattern) != len(shape):
        return False
    seen: dict[str, int] = {}
    for want, got in zip(pattern, shape, strict=True):
        if isinstance(want, int):
            if want != got:
                return False
            continue
        bound = symbols[want].value if want in symbols else seen.get(want)
        if bound is not None and bound != got:
            return False
        seen[want] = got
    return True


def _check_shape(
    ops: Operands, role: TensorRole, shape: Shape, symbols: dict[str, _Binding]
) -> None:
    """Match ``shape`` against the role's patterns and bind the symbols it introduces."""
    pattern = next((p for p in role.shapes if _match(p, shape, symbols)), None)
    if pattern is None:
        named = {dim for p in role.shapes for dim in p if isinstance(dim, str)}
        known = [
            f"{symbol} = {symbols[symbol].value} from {symbols[symbol].role} dim "
            f"{symbols[symbol].dim}"
            for symbol in sorted(named & symbols.keys())
        ]
        alternatives = " or ".join(_pattern_text(p) for p in role.shapes)
        context = f" ({', '.join(known)})" if known else ""
        ops.error(role.name, f"must have shape {alternatives}, got {dims_text(shape)}{context}")
    for dim, (want, got) in enumerate(zip(pattern, shape, strict=True)):
        if isinstance(want, str) and want not in symbols:
            symbols[want] = _Binding(got, role.name, dim)


def _check_role(ops: Operands, role: TensorRole, payload: DataType | None) -> TensorType:
    ty = require_distributed(ops, role.name) if role.window else require_tensor(ops, role.name)
    if role.dtype is not None:
        require_dtype(ops, role.name, ty, role.dtype)
    elif payload is not None and ty.dtype is not payload:
        ops.error(role.name, f"dtype {ty.dtype.value} does not match target dtype {payload.value}")
    require_layout_compact(ops, role.name, ty)
    require_full_valid_shape(ops, role.name, ty)
    require_positive_dims(ops, role.name, ty)
    return ty


def _check_core_num(ops: Operands) -> None:
    core_num = ops.optional_expr("core_num")
    if core_num is None or isinstance(core_num, ConstInt):
        return
    if not (isinstance(core_num, Var) and is_integer_scalar(core_num)):
        ops.error(
            "core_num",
            "must be a compile-time integer or an integer scalar variable, "
            f"got {expr_text(core_num)}",
        )


def _check_rows_divisible(ops: Operands, symbols: dict[str, _Binding]) -> None:
    rows, ranks = symbols[ROWS], symbols[NR]
    if rows.value % ranks.value != 0:
        ops.error(
            rows.role,
            f"dim {rows.dim} ({rows.value}) must be divisible by NR ({ranks.value}, "
            f"{ranks.role} dim {ranks.dim}): round the window's row count up to a multiple of NR",
        )


def _deducer(contract: Contract) -> Deducer:
    def deduce(ops: Operands) -> Type:
        symbols: dict[str, _Binding] = {}
        payload: DataType | None = None
        for role in contract.roles:
            ty = _check_role(ops, role, payload)
            if role.name == "target":
                payload = ty.dtype
            _check_shape(ops, role, ty.shape, symbols)
            if role.name == "signal":
                _check_rows_divisible(ops, symbols)
        if ops.expr("input") == ops.expr("target"):
            ops.error(
                "input",
                "must not be the same expression as target: peers write target while this "
                "rank still reads input",
            )
        _check_core_num(ops)
        return ops.expr("target").type

    return deduce


def _contract_op(contract: Contract) -> OpDef:
    operands = tuple(Operand(name) for name in contract.signature)
    return OpDef(contract.op, (*operands, optional("core_num")), _deducer(contract))


_TARGET_FIRST = (
    TensorRole("target", None, ((ROWS, "SIZE"),), window=True),
    TensorRole("signal", DataType.INT32, ((NR, "S"),), window=True),
)

ALL_TO_ALL_V = Contract(
    "pld.tensor.all_to_all_v",
    ("input", "target", "signal", "send_counts", "recv_counts"),
    (
        *_TARGET_FIRST,
        TensorRole("input", None, ((ROWS, "SIZE"),)),
        TensorRole("send_counts", DataType.INT32, ((NR,), (NR, 1))),
        TensorRole("recv_counts", DataType.INT32, ((NR, 1),), window=True),
    ),
)

INDEXED_ALL_TO_ALL_V = Contract(
    "pld.tensor.indexed_all_to_all_v",
    ("input", "target", "signal", "send_counts", "recv_counts", "index"),
    (
        *_TARGET_FIRST,
        TensorRole("input", None, (("N", "SIZE"),)),
        TensorRole("send_counts", DataType.INT32, ((NR,),), window=True),
        TensorRole("recv_counts", DataType.INT32, ((NR, 1),)),
        TensorRole("index", DataType.INT32, ((ROWS,),)),
    ),
)


def _target_type(ops: Operands) -> Type:
    return ops.expr("target").type


#: Collectives that only parse (a later pass rejects them), with their optional keywords.
_PARSE_ONLY: dict[str, tuple[str, ...]] = {
    "pld.tensor.allreduce": ("op",),
    "pld.tensor.allgather": (),
    "pld.tensor.reduce_scatter": ("op",),
    "pld.tensor.broadcast": ("root",),
    "pld.tensor.all_to_all": (),
}

COLLECTIVE_OPS: tuple[OpDef, ...] = (
    *(_contract_op(contract) for contract in (ALL_TO_ALL_V, INDEXED_ALL_TO_ALL_V)),
    *(
        OpDef(
            name,
            (
                Operand("input"),
                Operand("target"),
                Operand("signal"),
                *(optional(key, Kind.ANY, keyword_only=True) for key in keywords),
            ),
            _target_type,
        )
        for name, keywords in _PARSE_ONLY.items()
    ),
)


def _builtin_all_to_all_v(ops: Operands) -> Type:
    """The public contract, plus what a per-device dispatch relies on: it hands the chip the
    windows by their comm-domain handle, so ``input`` and ``send_counts`` (which the public op
    also accepts as local tensors) must be views of an allocated window, and the ``dtype``
    selecting the kernel variant must be the payload's."""
    result = _deducer(ALL_TO_ALL_V)(ops)
    for name in ("input", "send_counts"):
        ty = ops.expr(name).type
        if not (isinstance(ty, DistributedTensorType) and ty.window is not None):
            ops.error(
                name,
                "must be a window-bound DistributedTensor (a view of an alloc_window_buffer), "
                f"got {expr_text(ops.expr(name))}",
            )
    dtype = ops.dtype("dtype")
    assert dtype is not None, "a required operand"
    payload = require_tensor(ops, "target").dtype
    if dtype is not payload:
        ops.error("dtype", f"{dtype.value} does not match target dtype {payload.value}")
    return result


BUILTIN_ALL_TO_ALL_V = "builtin.tensor.all_to_all_v"

#: Internal ops, created only by passes (never resolved from a DSL name).
BUILTIN_OPS: tuple[OpDef, ...] = (
    OpDef(
        BUILTIN_ALL_TO_ALL_V,
        (
            *(Operand(name) for name in ALL_TO_ALL_V.signature),
            Operand("dtype", Kind.DTYPE),
            optional("core_num"),
        ),
        _builtin_all_to_all_v,
    ),
)

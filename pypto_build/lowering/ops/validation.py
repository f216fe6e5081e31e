"""Operand validation shared by the deducers and contracts: tensors, static shapes, index lists,
regions, rank counts.

Each helper checks one operand of a bound call and either returns the fact the deducer needs
(a tensor type, a static shape) or fails at that operand's span with a message that names the op
and the operand, so every deducer reports mistakes the same way.
"""

from __future__ import annotations

import math

from pypto_build.lowering.diagnostics import ProgramError, Span
from pypto_build.lowering.ir import (
    ConstInt,
    DataType,
    DistributedTensorType,
    Expr,
    Layout,
    MakeTuple,
    ScalarType,
    Shape,
    TensorType,
    TupleType,
    Type,
    Var,
    WindowBufferType,
    compact_strides,
)
from pypto_build.lowering.ops.signature import Operands, expr_span
from pypto_build.lowering.runtime_facts import COMM_MAX_RANK_NUM


def dims_text(dims: Shape) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def type_text(ty: Type) -> str:
    """A short DSL-like rendering of a type for diagnostics."""
    if isinstance(ty, DistributedTensorType):
        return f"DistributedTensor[{dims_text(ty.shape)}, {ty.dtype.value}]"
    if isinstance(ty, TensorType):
        return f"Tensor[{dims_text(ty.shape)}, {ty.dtype.value}]"
    if isinstance(ty, ScalarType):
        return f"Scalar[{ty.dtype.value}]"
    if isinstance(ty, WindowBufferType):
        return f"WindowBuffer[{ty.nbytes} bytes]"
    if isinstance(ty, TupleType):
        return "tuple[" + ", ".join(type_text(item) for item in ty.items) + "]"
    return type(ty).__name__.removesuffix("Type")


def expr_text(expr: Expr) -> str:
    """How a diagnostic refers to an expression it rejects."""
    if isinstance(expr, Var):
        return f"'{expr.name}' of type {type_text(expr.type)}"
    return f"an expression of type {type_text(expr.type)}"


def is_integer_scalar(expr: Expr) -> bool:
    return isinstance(expr.type, ScalarType) and expr.type.dtype.is_integer


def require_tensor(ops: Operands, name: str) -> TensorType:
    """Operand ``name`` is a tensor (local or window); returns its type."""
    ty = ops.expr(name).type
    if not isinstance(ty, TensorType):
        ops.error(name, f"must be a Tensor or DistributedTensor, got {type_text(ty)}")
    return ty


def require_distributed(ops: Operands, name: str) -> DistributedTensorType:
    """Operand ``name`` is a window tensor (a ``pld.window`` view or a DistributedTensor param)."""
    ty = require_tensor(ops, name)
    if not isinstance(ty, DistributedTensorType):
        ops.error(name, f"must be a DistributedTensor (a pld.window view), got {type_text(ty)}")
    return ty


def require_dtype(ops: Operands, name: str, ty: TensorType, dtype: DataType) -> None:
    if ty.dtype is not dtype:
        ops.error(name, f"must be {dtype.name}, got {ty.dtype.value}")


def require_layout_compact(ops: Operands, name: str, ty: TensorType) -> None:
    """ND layout with packed row-major strides: what a kernel addressing rows by
    ``base + row * width`` needs, and what the type alone can prove."""
    if ty.layout is not Layout.ND:
        ops.error(name, f"must have ND layout, got {ty.layout.value}")
    if not ty.is_compact_nd:
        assert ty.stride is not None
        ops.error(
            name,
            f"must be packed row-major: stride {dims_text(ty.stride)} is not the compact "
            f"stride {dims_text(compact_strides(ty.shape))} of shape {dims_text(ty.shape)}",
        )


def require_full_valid_shape(ops: Operands, name: str, ty: TensorType) -> None:
    if ty.valid_shape is not None and ty.valid_shape != ty.shape:
        ops.error(
            name,
            f"valid_shape {dims_text(ty.valid_shape)} is narrower than its shape "
            f"{dims_text(ty.shape)}; the collective moves whole tensors",
        )


def require_positive_dims(ops: Operands, name: str, ty: TensorType) -> None:
    if any(dim <= 0 for dim in ty.shape):
        ops.error(name, f"dims must be positive, got {dims_text(ty.shape)}")


def require_rank(ops: Operands, name: str, ty: TensorType, rank: int) -> None:
    if len(ty.shape) != rank:
        ops.error(name, f"must be {rank}D, got {type_text(ty)}")


def const_int(ops: Operands, name: str) -> int:
    value = ops.expr(name)
    if not isinstance(value, ConstInt):
        ops.error(name, f"must be a compile-time integer, got {expr_text(value)}")
    return value.value


def _tuple_items(ops: Operands, name: str, what: str) -> tuple[Expr, ...]:
    value = ops.expr(name)
    if not isinstance(value, MakeTuple):
        ops.error(name, f"must be a list of {what}, got {expr_text(value)}")
    return value.items


def static_shape(ops: Operands, name: str) -> Shape:
    """A shape operand: a list of positive compile-time integers."""
    dims: list[int] = []
    for index, item in enumerate(_tuple_items(ops, name, "compile-time integers")):
        if not isinstance(item, ConstInt):
            ops.error_at(
                expr_span(item, ops.span_of(name)),
                f"{name} dim {index} must be a compile-time integer, got {expr_text(item)}",
            )
        if item.value <= 0:
            ops.error_at(item.span, f"{name} dim {index} must be positive, got {item.value}")
        dims.append(item.value)
    return tuple(dims)


def index_list(ops: Operands, name: str, rank: int) -> tuple[Expr, ...]:
    """A list of ``rank`` integer expressions (offsets, indices, valid extents); may be dynamic."""
    items = _tuple_items(ops, name, "integers")
    if len(items) != rank:
        ops.error(name, f"has {len(items)} entries but the tensor has rank {rank}")
    for index, item in enumerate(items):
        if not is_integer_scalar(item):
            ops.error_at(
                expr_span(item, ops.span_of(name)),
                f"{name} dim {index} must be an integer, got {expr_text(item)}",
            )
    return items


def require_same_rank(ops: Operands, name: str, shape: Shape, ty: TensorType) -> None:
    if len(shape) != len(ty.shape):
        ops.error(
            name,
            f"{dims_text(shape)} has rank {len(shape)} but the tensor {type_text(ty)} "
            f"has rank {len(ty.shape)}",
        )


def check_region(
    ops: Operands, name: str, offsets: tuple[Expr, ...], sizes: Shape, extents: Shape
) -> None:
    """The region ``offsets + sizes`` lies inside ``extents`` wherever that is provable: a
    constant offset must satisfy ``0 <= offset`` and ``offset + size <= extent``; with a
    dynamic offset, ``size <= extent`` is still required."""
    for dim, (offset, size, extent) in enumerate(zip(offsets, sizes, extents, strict=True)):
        span = expr_span(offset, ops.span_of(name))
        if isinstance(offset, ConstInt):
            if offset.value < 0:
                ops.error_at(span, f"{name} dim {dim} must be non-negative, got {offset.value}")
            if offset.value + size > extent:
                ops.error_at(
                    span,
                    f"{name} dim {dim}: [{offset.value}, {offset.value + size}) exceeds "
                    f"the extent {extent}",
                )
        elif size > extent:
            ops.error_at(span, f"{name} dim {dim}: size {size} exceeds the extent {extent}")


def check_valid_extent(ops: Operands, item: Expr, label: str, value: int, dim: int) -> None:
    if not 0 <= value <= dim:
        ops.error_at(expr_span(item, ops.span), f"{label} ({value}) must be in [0, {dim}]")


def optional_valid_shape(ops: Operands, name: str, shape: Shape) -> Shape | None:
    """A ``valid_shape=`` operand over ``shape``: the static region when every entry is a
    constant, else ``None`` (the type records only what is known at compile time)."""
    if not ops.given(name):
        return None
    items = index_list(ops, name, len(shape))
    if not all(isinstance(item, ConstInt) for item in items):
        return None
    values = tuple(item.value for item in items if isinstance(item, ConstInt))
    for dim, (item, value, extent) in enumerate(zip(items, values, shape, strict=True)):
        check_valid_extent(ops, item, f"{name} dim {dim}", value, extent)
    return values


def carried_valid_shape(ops: Operands, src: TensorType, shape: Shape) -> Shape | None:
    """The valid region of ``src`` re-expressed over the same elements viewed as ``shape``.

    A region narrowed only along dim 0 is a prefix of the row-major elements, so it maps onto
    any shape whose rows divide that prefix; any other narrowed region has no static image and
    is rejected rather than silently widened."""
    valid = src.valid_shape
    if shape == src.shape:
        return valid
    if valid is None or valid == src.shape:
        return None
    valid_count = valid[0] * math.prod(src.shape[1:])
    row = math.prod(shape[1:])
    if valid[1:] != src.shape[1:] or valid_count % row != 0:
        ops.error(
            "tensor",
            f"valid_shape {dims_text(valid)} of shape {dims_text(src.shape)} cannot be "
            f"carried to shape {dims_text(shape)}: only a region narrowed along dim 0 that "
            "covers whole rows of the new shape keeps a static valid_shape",
        )
    return (valid_count // row, *shape[1:])


def check_rank_count(nranks: int, span: Span, phase: str) -> None:
    """A collective sized for ``nranks`` ranks (its signal's NR) fits one comm domain."""
    if nranks > COMM_MAX_RANK_NUM:
        raise ProgramError(
            f"collective signal shape[0] (NR = {nranks}) exceeds the {COMM_MAX_RANK_NUM} ranks "
            f"a comm domain holds (the CommContext's windowsIn[{COMM_MAX_RANK_NUM}])",
            span,
            phase,
        )

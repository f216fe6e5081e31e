"""``tensor.*`` ops: creation and metadata views of global-memory tensors.

Views (reshape, view, set_validshape, transpose, write, assemble) keep the operand's type class,
so a view of a window stays a ``DistributedTensorType`` bound to the same window. A slice is the
exception: it names a sub-region at an offset a window type cannot express, so its result is a
plain ``TensorType``, and (as upstream) a slice type carries no stride.
"""

from __future__ import annotations

import dataclasses
import math

from pypto_build.lowering.ir import (
    ConstInt,
    Layout,
    ScalarType,
    Shape,
    TensorType,
    Type,
    compact_strides,
)
from pypto_build.lowering.ir.names import Kwarg, Op
from pypto_build.lowering.ir.types import tensor_size_problem
from pypto_build.lowering.ops.signature import (
    METADATA_VIEW,
    Effects,
    Kind,
    OpDef,
    Operand,
    Operands,
    optional,
)
from pypto_build.lowering.ops.validation import (
    carried_valid_shape,
    check_region,
    check_valid_extent,
    const_int,
    dims_text,
    expr_text,
    index_list,
    is_integer_scalar,
    optional_valid_shape,
    require_rank,
    require_same_rank,
    require_tensor,
    static_shape,
    type_text,
)


def _create(ops: Operands) -> Type:
    shape = static_shape(ops, "shape")
    dtype, layout = ops.dtype("dtype"), ops.layout("layout")
    assert dtype is not None and layout is not None, "required dtype; layout defaults to ND"
    problem = tensor_size_problem(shape, dtype)
    if problem is not None:
        ops.error("shape", problem)
    return TensorType(shape, dtype, layout)


def _slice(ops: Operands) -> Type:
    src = require_tensor(ops, "tensor")
    shape = static_shape(ops, "shape")
    require_same_rank(ops, "shape", shape, src)
    offsets = index_list(ops, "offset", len(src.shape))
    check_region(ops, "offset", offsets, shape, src.shape)
    valid = optional_valid_shape(ops, "valid_shape", shape)
    return TensorType(shape, src.dtype, src.layout, None, valid)


def _require_same_count(ops: Operands, src: TensorType, shape: Shape) -> None:
    if math.prod(shape) != math.prod(src.shape):
        ops.error(
            "shape",
            f"{dims_text(shape)} has {math.prod(shape)} elements but the tensor "
            f"{type_text(src)} has {math.prod(src.shape)}",
        )


def _reshape(ops: Operands) -> Type:
    src = require_tensor(ops, "tensor")
    shape = static_shape(ops, "shape")
    _require_same_count(ops, src, shape)
    valid = carried_valid_shape(ops, src, shape)
    stride = src.stride if shape == src.shape else None
    return dataclasses.replace(src, shape=shape, stride=stride, valid_shape=valid)


def _view(ops: Operands) -> Type:
    """Replace the given metadata. A new shape reinterprets the same elements (so the element
    count must match) and drops an explicit stride, which described the old shape. Without a
    static ``valid_shape=``, the source's valid region is carried over (as for set_validshape,
    a runtime extent is not recorded)."""
    src = require_tensor(ops, "tensor")
    shape = src.shape
    if ops.given("shape"):
        shape = static_shape(ops, "shape")
        _require_same_count(ops, src, shape)
    stride = src.stride if shape == src.shape else None
    valid = optional_valid_shape(ops, "valid_shape", shape)
    if valid is None:
        valid = carried_valid_shape(ops, src, shape)
    layout = ops.layout("layout") or src.layout
    return dataclasses.replace(src, shape=shape, stride=stride, valid_shape=valid, layout=layout)


def _assemble(ops: Operands) -> Type:
    target = require_tensor(ops, "target")
    source = require_tensor(ops, "source")
    if source.dtype is not target.dtype:
        ops.error(
            "source",
            f"dtype {source.dtype.value} does not match target dtype {target.dtype.value}",
        )
    require_same_rank(ops, "source", source.shape, target)
    offsets = index_list(ops, "offset", len(target.shape))
    check_region(ops, "offset", offsets, source.shape, target.shape)
    return target


def _axis(ops: Operands, name: str, rank: int) -> int:
    axis = const_int(ops, name)
    if not -rank <= axis < rank:
        ops.error(name, f"{axis} is out of range for a rank-{rank} tensor")
    return axis % rank


def _swap(dims: Shape, a: int, b: int) -> Shape:
    swapped = list(dims)
    swapped[a], swapped[b] = swapped[b], swapped[a]
    return tuple(swapped)


def _transpose(ops: Operands) -> Type:
    """Swap two axes in place: the result keeps the source's memory, so its stride is the
    source's (explicit or packed) stride swapped: not compact row-major unless the axes coincide."""
    src = require_tensor(ops, "tensor")
    a = _axis(ops, "axis1", len(src.shape))
    b = _axis(ops, "axis2", len(src.shape))
    stride = _swap(src.stride or compact_strides(src.shape), a, b)
    valid = None if src.valid_shape is None else _swap(src.valid_shape, a, b)
    return dataclasses.replace(src, shape=_swap(src.shape, a, b), stride=stride, valid_shape=valid)


def _set_validshape(ops: Operands) -> Type:
    """Narrow the valid region of a 2D tensor. Constant extents are recorded in the type; a
    runtime extent is metadata the type cannot hold, so the type keeps the source's (static)
    valid region, an upper bound of the runtime one."""
    src = require_tensor(ops, "tensor")
    require_rank(ops, "tensor", src, 2)
    extents = []
    for name, dim in zip(("valid_rows", "valid_cols"), src.shape, strict=True):
        value = ops.expr(name)
        if not is_integer_scalar(value):
            ops.error(name, f"must be an integer, got {expr_text(value)}")
        if isinstance(value, ConstInt):
            check_valid_extent(ops, value, name, value.value, dim)
            extents.append(value.value)
    if len(extents) != len(src.shape):
        return src
    return dataclasses.replace(src, valid_shape=tuple(extents))


def _write(ops: Operands) -> Type:
    src = require_tensor(ops, "tensor")
    indices = index_list(ops, "indices", len(src.shape))
    check_region(ops, "indices", indices, (1,) * len(src.shape), src.shape)
    value = ops.expr("value")
    if not isinstance(value.type, ScalarType):
        ops.error("value", f"must be a scalar, got {expr_text(value)}")
    return src


TENSOR_OPS: tuple[OpDef, ...] = (
    OpDef(
        Op.TENSOR_CREATE,
        (
            Operand(Kwarg.SHAPE),
            Operand(Kwarg.DTYPE, Kind.DTYPE),
            optional("layout", Kind.LAYOUT, default=Layout.ND),
        ),
        _create,
        Effects(allocates=True, dense=True),
        spellings=("pl.create_tensor",),
    ),
    OpDef(
        Op.TENSOR_SLICE,
        (Operand("tensor"), Operand(Kwarg.SHAPE), Operand("offset"), optional("valid_shape")),
        _slice,
        Effects(view_of=0),
        spellings=("pl.slice",),
    ),
    OpDef(
        Op.TENSOR_RESHAPE,
        (Operand("tensor"), Operand(Kwarg.SHAPE)),
        _reshape,
        METADATA_VIEW,
        spellings=("pl.reshape",),
    ),
    OpDef(
        Op.TENSOR_VIEW,
        (
            Operand("tensor"),
            optional(Kwarg.SHAPE),
            optional("valid_shape"),
            optional("layout", Kind.LAYOUT, keyword_only=True),
        ),
        _view,
        METADATA_VIEW,
        spellings=("pl.view",),
    ),
    OpDef(
        Op.TENSOR_ASSEMBLE,
        (Operand("target"), Operand("source"), Operand("offset")),
        _assemble,
        Effects(view_of=0, writes=(0,), keeps_density=True),
        spellings=("pl.assemble",),
    ),
    OpDef(
        Op.TENSOR_TRANSPOSE,
        (Operand("tensor"), Operand("axis1"), Operand("axis2")),
        _transpose,
        Effects(view_of=0),
        spellings=("pl.transpose",),
    ),
    OpDef(
        Op.TENSOR_SET_VALIDSHAPE,
        (Operand("tensor"), Operand("valid_rows"), Operand("valid_cols")),
        _set_validshape,
        METADATA_VIEW,
        spellings=("pl.set_validshape",),
    ),
    OpDef(
        Op.TENSOR_WRITE,
        (Operand("tensor"), Operand("indices"), Operand("value")),
        _write,
        Effects(view_of=0, writes=(0,)),
        spellings=("pl.write",),
    ),
)

"""``pld.*`` window primitives: allocate a per-rank window slot, view it, ask the rank count.

A window view records the *name* of the buffer variable it views; the HOST rail traces operands
back to their allocation through that name, and the fit check here guarantees every view lies
inside its slot.
"""

from __future__ import annotations

import math

from pypto_build.lowering.ir import (
    INDEX,
    CommCtxType,
    ConstInt,
    DistributedTensorType,
    MakeTuple,
    Type,
    Var,
    WindowBufferType,
)
from pypto_build.lowering.ir.names import Kwarg, Op
from pypto_build.lowering.ops.signature import Effects, Kind, OpDef, Operand, Operands, optional
from pypto_build.lowering.ops.validation import dims_text, expr_text, static_shape


def _alloc_window_buffer(ops: Operands) -> Type:
    """``size`` is a byte count, or a shape whose element type ``dtype=`` gives."""
    size = ops.expr("size")
    dtype = ops.dtype("dtype")
    if isinstance(size, ConstInt):
        if dtype is not None:
            ops.error("dtype", "applies only to a shape size, but size is a byte count")
        if size.value <= 0:
            ops.error("size", f"must be positive, got {size.value}")
        return WindowBufferType(size.value)
    if not isinstance(size, MakeTuple):
        ops.error(
            "size",
            f"must be a byte count or a shape of compile-time integers, got {expr_text(size)}",
        )
    shape = static_shape(ops, "size")
    if dtype is None:
        ops.error("size", f"is a shape {dims_text(shape)}, so dtype= is required")
    return WindowBufferType(math.prod(shape) * dtype.byte_size)


def _window(ops: Operands) -> Type:
    buf = ops.expr("buf")
    if not (isinstance(buf, Var) and isinstance(buf.type, WindowBufferType)):
        ops.error("buf", f"must be a pld.alloc_window_buffer variable, got {expr_text(buf)}")
    shape = static_shape(ops, "shape")
    dtype = ops.dtype("dtype")
    assert dtype is not None
    nbytes = math.prod(shape) * dtype.byte_size
    if nbytes > buf.type.nbytes:
        ops.error(
            "shape",
            f"{dims_text(shape)} of {dtype.value} needs {nbytes} bytes but window buffer "
            f"'{buf.name}' has {buf.type.nbytes}",
        )
    return DistributedTensorType(shape, dtype, window=buf.name)


def _world_size(ops: Operands) -> Type:
    return INDEX


def _get_comm_ctx(ops: Operands) -> Type:
    """The CommContext of the domain a window view belongs to (MaterializeDistTensorCtx passes
    it where a HOST orchestrator hands a window view to a function with a CommCtx parameter)."""
    tensor = ops.expr("tensor")
    if not (isinstance(tensor.type, DistributedTensorType) and tensor.type.window is not None):
        ops.error("tensor", f"must be a pld.window view, got {expr_text(tensor)}")
    return CommCtxType()


DISTRIBUTED_OPS: tuple[OpDef, ...] = (
    OpDef(
        Op.ALLOC_WINDOW_BUFFER,
        (
            Operand("size"),
            optional(Kwarg.DTYPE, Kind.DTYPE, keyword_only=True),
            optional(Kwarg.NAME, Kind.STR, keyword_only=True, default=""),
        ),
        _alloc_window_buffer,
        Effects(allocates=True),
        spellings=("pld.tensor.alloc_window_buffer",),
    ),
    OpDef(
        Op.WINDOW,
        (
            Operand("buf"),
            Operand(Kwarg.SHAPE),
            Operand(Kwarg.DTYPE, Kind.DTYPE, keyword_only=True),
        ),
        _window,
        Effects(view_of=0, dense=True),
        spellings=("pld.tensor.window",),
    ),
    # Upstream's three-segment spellings (pld.system.*, pld.tensor.*) name the same ops.
    OpDef(Op.WORLD_SIZE, (), _world_size, spellings=("pld.system.world_size",)),
    OpDef(
        Op.GET_COMM_CTX,
        (Operand("tensor"),),
        _get_comm_ctx,
        spellings=("pld.system.get_comm_ctx",),
    ),
)

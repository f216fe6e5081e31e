"""Subscripts of a tensor (``inputs[r]``, ``x[0:4, :]``) -> ``tensor.slice`` views.

Upstream's DSL indexes tensors as NumPy does: a scalar index selects one position of its
dimension and drops that dimension, a ``start:stop`` slice keeps it, and dimensions past the
given indices are whole (``inputs[r]`` of an ``[NR, T, S]`` tensor is rank ``r``'s ``[T, S]``).
Here that is a ``tensor.slice`` of the region, followed by a ``tensor.reshape`` that drops the
scalar-indexed dimensions, so every analysis and codegen sees the two ops it already knows.
Extents must be compile-time integers, as every shape here is: ``a:b`` with both constant, or
``i:i + C`` with the same ``i`` on both sides. A full set of scalar indices reads one element
(upstream's ``tensor.read``), which no orchestration here can do: it is a diagnostic.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from pypto_build.lowering.frontend.source import text
from pypto_build.lowering.ir import ConstInt, Expr, MakeTuple, TensorType
from pypto_build.lowering.ir.names import Op
from pypto_build.lowering.optable import make_call

if TYPE_CHECKING:
    from pypto_build.lowering.frontend.exprs import ExprConverter


def tensor_subscript(conv: ExprConverter, node: ast.Subscript, base: Expr) -> Expr:
    """``base[...]`` as a slice of ``base`` (reshaped when scalar indices drop dimensions)."""
    ty = base.type
    assert isinstance(ty, TensorType)
    indices = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
    rank = len(ty.shape)
    if len(indices) > rank:
        conv.source.error(
            node, f"the subscript has {len(indices)} indices but the tensor has {rank} dimensions"
        )
    if len(indices) == rank and not any(isinstance(index, ast.Slice) for index in indices):
        conv.source.error(
            node,
            f"'{text(node)}' reads one element (upstream's tensor.read), which an orchestration "
            "here cannot do: read it in a kernel, or take a region with a slice (x[i:i + 1, j])",
        )
    span = conv.source.span(node)
    shape: list[Expr] = []
    offsets: list[Expr] = []
    kept: list[int] = []
    for dim, extent in enumerate(ty.shape):
        index = indices[dim] if dim < len(indices) else None
        if index is None or isinstance(index, ast.Slice):
            start, size = _range(conv, index, extent)
            kept.append(size)
        else:
            start, size = conv.scalar(index, "a tensor index"), 1
        offsets.append(start)
        shape.append(ConstInt(size, span=span))
    region = make_call(
        Op.TENSOR_SLICE,
        [base, MakeTuple(tuple(shape), span), MakeTuple(tuple(offsets), span)],
        [],
        span,
    )
    if len(kept) == rank:
        return region
    dims = MakeTuple(tuple(ConstInt(size, span=span) for size in kept), span)
    return make_call(Op.TENSOR_RESHAPE, [region, dims], [], span)


def _range(conv: ExprConverter, index: ast.Slice | None, extent: int) -> tuple[Expr, int]:
    """The start and the compile-time size of one sliced dimension (``:`` when ``index`` is
    None)."""
    if index is None:
        return ConstInt(0), extent
    if index.step is not None:
        conv.source.error(index.step, "a tensor subscript takes no step (write start:stop)")
    start = ConstInt(0) if index.lower is None else conv.scalar(index.lower, "a slice start")
    if index.upper is None:
        stop: Expr = ConstInt(extent)
    else:
        stop = conv.scalar(index.upper, "a slice stop")
    if isinstance(start, ConstInt) and isinstance(stop, ConstInt):
        return start, stop.value - start.value
    size = _offset_size(conv, index)
    if size is None:
        conv.source.error(
            index,
            f"the extent of '{text(index)}' must be a compile-time integer: write start:stop "
            "with constants, or i:i + SIZE",
        )
    return start, size


def _offset_size(conv: ExprConverter, index: ast.Slice) -> int | None:
    """``C`` for a slice written ``i:i + C`` (the same start on both sides), else None."""
    upper, lower = index.upper, index.lower
    if not (isinstance(upper, ast.BinOp) and isinstance(upper.op, ast.Add) and lower is not None):
        return None
    if ast.dump(upper.left) != ast.dump(lower):
        return None
    size = conv.expr(upper.right)
    return size.value if isinstance(size, ConstInt) else None

"""Type annotations: ``pl.Tensor[[M, N], pl.FP32]``, ``pld.DistributedTensor[...]``,
``pl.Scalar[pl.INDEX]``, the ``pl.Out`` / ``pl.InOut`` direction wrappers and ``tuple[...]``
returns.

Dimensions fold through module constants only: a shape is part of a function's signature and
must be known before any body is read. A third subscript element gives the layout (``pl.DN``) or,
as the printer writes tensors carrying explicit strides or a valid shape,
``pl.TensorView(layout=..., stride=[...], valid_shape=[...])``.
"""

from __future__ import annotations

import ast

from pypto_build.lowering.frontend.context import ModuleContext
from pypto_build.lowering.frontend.literals import DTYPES, LAYOUTS
from pypto_build.lowering.frontend.source import keyword_name, text
from pypto_build.lowering.ir import (
    DataType,
    DistributedTensorType,
    Layout,
    ParamDirection,
    ScalarType,
    Shape,
    TensorType,
    Type,
)
from pypto_build.lowering.ir.types import tensor_size_problem

_DIRECTIONS = {"pl.Out": ParamDirection.Out, "pl.InOut": ParamDirection.InOut}
_TENSOR_HEADS = ("pl.Tensor", "pld.DistributedTensor")
_EXPECTED = "expected pl.Tensor[...], pld.DistributedTensor[...] or pl.Scalar[...]"


def param_type(node: ast.expr, ctx: ModuleContext) -> tuple[Type, ParamDirection]:
    """A parameter annotation: a value type, optionally wrapped in ``pl.Out``/``pl.InOut``.

    The same text means the same annotation in one file (its imports and constants are the
    file's), so one written on one line is converted once (a refused one every time,
    for its diagnostic at its own place)."""
    key = ctx.source.segment(node)
    if key is None:
        return _param_type(node, ctx)
    found = ctx.param_types.get(key)
    if found is None:
        found = ctx.param_types[key] = _param_type(node, ctx)
    return found


def _param_type(node: ast.expr, ctx: ModuleContext) -> tuple[Type, ParamDirection]:
    if isinstance(node, ast.Subscript):
        direction = _DIRECTIONS.get(ctx.dsl_path(node.value) or "")
        if direction is not None:
            inner = value_type(node.slice, ctx)
            if not isinstance(inner, TensorType):
                ctx.source.error(node.slice, f"{text(node.value)}[...] must wrap a tensor type")
            return inner, direction
    return value_type(node, ctx), ParamDirection.In


def return_types(node: ast.expr | None, ctx: ModuleContext) -> tuple[Type, ...]:
    """A return annotation: none, ``None``, one value type or ``tuple[A, B, ...]``."""
    if node is None or (isinstance(node, ast.Constant) and node.value is None):
        return ()
    if isinstance(node, ast.Subscript) and _is_tuple(node.value, ctx):
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return tuple(value_type(item, ctx) for item in items)
    return (value_type(node, ctx),)


def value_type(node: ast.expr, ctx: ModuleContext) -> Type:
    """``pl.Tensor[...]``, ``pld.DistributedTensor[...]`` or ``pl.Scalar[...]``."""
    if not isinstance(node, ast.Subscript):
        path = ctx.dsl_path(node)
        if path in (*_TENSOR_HEADS, "pl.Scalar"):
            ctx.source.error(node, f"'{text(node)}' needs a subscript, e.g. {path}[...]")
        ctx.source.error(node, f"unsupported type annotation '{text(node)}' ({_EXPECTED})")
    head = ctx.dsl_path(node.value)
    if head in _TENSOR_HEADS:
        return _tensor_type(node, head == "pld.DistributedTensor", ctx)
    if head == "pl.Scalar":
        return ScalarType(_dtype(node.slice, ctx))
    if head in _DIRECTIONS:
        ctx.source.error(node, f"{text(node.value)}[...] is only allowed on a parameter")
    ctx.source.error(node.value, f"unsupported type annotation '{text(node.value)}' ({_EXPECTED})")


def _is_tuple(node: ast.expr, ctx: ModuleContext) -> bool:
    if isinstance(node, ast.Name) and node.id == "tuple":
        return not ctx.imports.is_bound("tuple")
    return ctx.imports.qualified(node) == "typing.Tuple"


def _tensor_type(node: ast.Subscript, distributed: bool, ctx: ModuleContext) -> TensorType:
    elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    if len(elements) not in (2, 3):
        ctx.source.error(
            node.slice,
            f"{text(node.value)}[...] takes a shape and a dtype, optionally a layout, "
            f"e.g. {text(node.value)}[[64, 64], pl.FP32]",
        )
    shape = _dims(elements[0], ctx, "tensor shape", minimum=1)
    dtype = _dtype(elements[1], ctx)
    problem = tensor_size_problem(shape, dtype)
    if problem is not None:
        ctx.source.error(elements[0], f"tensor {problem}")
    layout: Layout = Layout.ND
    stride: Shape | None = None
    valid_shape: Shape | None = None
    if len(elements) == 3:
        layout, stride, valid_shape = _view(elements[2], len(shape), ctx)
    if distributed:
        return DistributedTensorType(shape, dtype, layout, stride, valid_shape)
    return TensorType(shape, dtype, layout, stride, valid_shape)


def _dims(node: ast.expr, ctx: ModuleContext, what: str, minimum: int) -> Shape:
    if not isinstance(node, ast.List | ast.Tuple):
        ctx.source.error(node, f"{what} must be a list of dimensions, e.g. [64, 64]")
    if not node.elts:
        ctx.source.error(node, f"{what} must have at least one dimension")
    dims: list[int] = []
    for element in node.elts:
        dim = ctx.fold(element)
        if dim < minimum:
            bound = "positive" if minimum == 1 else "non-negative"
            ctx.source.error(element, f"{what} dimension must be {bound}, got {dim}")
        dims.append(dim)
    return tuple(dims)


def _dtype(node: ast.expr, ctx: ModuleContext) -> DataType:
    dtype = DTYPES.get(ctx.dsl_path(node) or "")
    if dtype is None:
        ctx.source.error(node, f"unknown data type '{ctx.dsl_path(node) or text(node)}'")
    return dtype


def _layout(node: ast.expr, ctx: ModuleContext) -> Layout:
    layout = LAYOUTS.get(ctx.dsl_path(node) or "")
    if layout is None:
        ctx.source.error(
            node, f"unknown tensor layout '{text(node)}' (expected pl.ND, pl.DN or pl.NZ)"
        )
    return layout


def _view(
    node: ast.expr, rank: int, ctx: ModuleContext
) -> tuple[Layout, Shape | None, Shape | None]:
    """The third subscript element: a layout, or
    ``pl.TensorView(layout=..., stride=[...], valid_shape=[...])``."""
    if not (isinstance(node, ast.Call) and ctx.dsl_path(node.func) == "pl.TensorView"):
        return _layout(node, ctx), None, None
    if node.args:
        ctx.source.error(node.args[0], "pl.TensorView takes keyword arguments only")
    layout = Layout.ND
    views: dict[str, Shape] = {}
    for keyword in node.keywords:
        if keyword.arg == "layout":
            layout = _layout(keyword.value, ctx)
        elif keyword.arg in ("stride", "valid_shape"):
            dims = _dims(keyword.value, ctx, keyword.arg, minimum=0)
            if len(dims) != rank:
                ctx.source.error(
                    keyword.value, f"{keyword.arg} must have {rank} dimensions, got {len(dims)}"
                )
            views[keyword.arg] = dims
        else:
            ctx.source.error(keyword, f"unknown pl.TensorView argument '{keyword_name(keyword)}'")
    return layout, views.get("stride"), views.get("valid_shape")

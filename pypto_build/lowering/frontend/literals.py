"""DSL names that denote literal values: data types, layouts, function types, levels, roles.

Keyed by canonical path (see :mod:`.imports`), so ``pl.FP32`` and ``pl.DataType.FP32`` written
through any alias resolve here.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping

from pypto_build.lowering.ir import DataType, FunctionType, Layout, Level, ReduceOp, Role

#: Element types a program may name (``TASK_ID`` is produced by ``pl.submit``, never written).
_USER_DTYPES = tuple(dtype for dtype in DataType if dtype is not DataType.TASK_ID)


DTYPES: Mapping[str, DataType] = {
    f"{prefix}.{dtype.name}": dtype for prefix in ("pl", "pl.DataType") for dtype in _USER_DTYPES
}
LAYOUTS: Mapping[str, Layout] = {
    f"{prefix}.{layout.name}": layout
    for prefix in ("pl", "pl.TensorLayout", "pl.Layout")
    for layout in Layout
}
FUNCTION_TYPES: Mapping[str, FunctionType] = {
    f"pl.FunctionType.{ftype.name}": ftype for ftype in FunctionType
}
LEVELS: Mapping[str, Level] = {f"pl.Level.{level.name}": level for level in Level}
ROLES: Mapping[str, Role] = {f"pl.Role.{role.name}": role for role in Role}


REDUCE_OPS: Mapping[str, ReduceOp] = {f"pld.ReduceOp.{op.name}": op for op in ReduceOp}


def literal_of(path: str) -> DataType | Layout | ReduceOp | None:
    """The data type, layout or reduction a canonical DSL path names, if any."""
    return DTYPES.get(path) or LAYOUTS.get(path) or REDUCE_OPS.get(path)


#: The method of a data type that folds to its element size in bytes (``pl.FP32.get_byte()``).
GET_BYTE = "get_byte"


def element_size_call(
    node: ast.expr, dsl_path: Callable[[ast.expr], str | None]
) -> DataType | None:
    """The data type of ``<dtype>.get_byte(...)`` (upstream's element size in bytes, which
    program files multiply into byte sizes), else None; the caller checks the arguments."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    if node.func.attr != GET_BYTE:
        return None
    return DTYPES.get(dsl_path(node.func.value) or "")

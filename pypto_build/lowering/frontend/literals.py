"""DSL names that denote literal values: data types, layouts, function types, levels, roles.

Keyed by canonical path (see :mod:`.imports`), so ``pl.FP32`` and ``pl.DataType.FP32`` written
through any alias resolve here.
"""

from __future__ import annotations

from collections.abc import Mapping

from pypto_build.lowering.ir import DataType, FunctionType, Layout, Level, Role

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


def literal_of(path: str) -> DataType | Layout | None:
    """The data type or layout a canonical DSL path names, if any."""
    return DTYPES.get(path) or LAYOUTS.get(path)

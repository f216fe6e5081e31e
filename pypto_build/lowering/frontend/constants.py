"""Module-level integer constants, folded at parse time.

Shapes are compile-time ints in the IR, and program files write them through module constants
(``SIZE = 64``, ``TOTAL = NR * MAX_RECV``). Only integer arithmetic over literals and earlier
constants folds; any other module assignment is remembered as *not* a constant, so that using it
where a compile-time integer is needed gets a message naming the constant instead of a generic
"not defined".
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pypto_build.errors import PyptoError
from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.frontend.literals import element_size_call
from pypto_build.lowering.frontend.source import Source
from pypto_build.lowering.ir import DataType

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1

#: Python operator node -> operator text used by the IR (``BinaryOp.op``).
INT_OPERATORS: Mapping[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
}


_INT_FUNCTIONS: Mapping[str, Callable[[int, int], int]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
}


class FoldError(PyptoError):
    """An integer operation that has no int64 result (division by zero, overflow)."""


def apply_int_op(op: str, lhs: int, rhs: int) -> int:
    """Evaluate ``lhs op rhs`` with Python semantics, refusing results outside int64."""
    if op in ("//", "%") and rhs == 0:
        raise FoldError("integer division by zero")
    if op == "**":
        if rhs < 0:
            raise FoldError("negative exponent in an integer expression")
        if abs(lhs) > 1 and rhs > 63:
            raise FoldError("integer constant out of the int64 range")
    result: int = _INT_FUNCTIONS[op](lhs, rhs)
    return check_int64(result)


def check_int64(value: int) -> int:
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise FoldError("integer constant out of the int64 range")
    return value


@dataclass(frozen=True)
class ConstantTable:
    """Folded module constants and the module names that are assigned but do not fold."""

    values: Mapping[str, int]
    unfoldable: frozenset[str]


#: Resolves a dotted name to its canonical DSL path (``pl.FP32``), or None.
DslPath = Callable[[ast.expr], str | None]


def collect_constants(module: ast.Module, source: Source, dsl_path: DslPath) -> ConstantTable:
    """Fold every module-level ``NAME = <int expr>`` in source order (later bindings win)."""
    values: dict[str, int] = {}
    unfoldable: set[str] = set()
    for stmt in module.body:
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        else:
            continue
        names = [target.id for target in targets if isinstance(target, ast.Name)]
        folded = _try_fold(value, ConstantTable(values, frozenset(unfoldable)), source, dsl_path)
        for name in names:
            if folded is None:
                values.pop(name, None)
                unfoldable.add(name)
            else:
                values[name] = folded
                unfoldable.discard(name)
    return ConstantTable(values, frozenset(unfoldable))


def _try_fold(
    node: ast.expr, table: ConstantTable, source: Source, dsl_path: DslPath
) -> int | None:
    try:
        return fold_int(node, table, source, dsl_path)
    except ProgramError:
        return None


def fold_int(node: ast.expr, table: ConstantTable, source: Source, dsl_path: DslPath) -> int:
    """Fold a compile-time integer expression (a shape dimension, a module constant), including
    ``pl.FP32.get_byte()``, the element size upstream's programs size buffers with."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return _checked(node, node.value, source)
    if isinstance(node, ast.Name):
        if node.id in table.values:
            return table.values[node.id]
        if node.id in table.unfoldable:
            source.error(node, f"module constant '{node.id}' is not a compile-time integer")
        source.error(node, f"'{node.id}' is not a compile-time integer constant")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = fold_int(node.operand, table, source, dsl_path)
        return _checked(node, -operand if isinstance(node.op, ast.USub) else operand, source)
    if isinstance(node, ast.BinOp) and type(node.op) in INT_OPERATORS:
        lhs = fold_int(node.left, table, source, dsl_path)
        rhs = fold_int(node.right, table, source, dsl_path)
        try:
            return apply_int_op(INT_OPERATORS[type(node.op)], lhs, rhs)
        except FoldError as exc:
            source.error(node, str(exc))
    dtype = element_size_call(node, dsl_path)
    if dtype is not None:
        assert isinstance(node, ast.Call)
        return element_size(node, dtype, source)
    source.error(node, f"'{ast.unparse(node)}' is not a compile-time integer expression")


def element_size(node: ast.Call, dtype: DataType, source: Source) -> int:
    """``dtype.get_byte()``: the element size of ``dtype`` in bytes; it takes no arguments."""
    if node.args or node.keywords:
        source.error(node, f"{ast.unparse(node.func)}() takes no arguments")
    return dtype.byte_size


def _checked(node: ast.expr, value: int, source: Source) -> int:
    try:
        return check_int64(value)
    except FoldError as exc:
        source.error(node, str(exc))

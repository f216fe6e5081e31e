"""Scalar names a function binds to one compile-time integer: what upstream's Simplify pass
folds before its collective lowering sees a ``core_num``.

``c = 2`` then ``core_num=c`` means ``core_num=2``: the name is bound once, to a constant, and
never rebound (not a parameter, a loop variable, nor assigned again anywhere in the function,
including a branch or a loop), so every use sees that value. Anything else stays a run-time
value.
"""

from __future__ import annotations

from collections import Counter

from pypto_build.lowering.ir import AssignStmt, ConstInt, ForStmt, Function
from pypto_build.lowering.ir.walk import walk_stmts


def constant_bindings(func: Function) -> dict[str, ConstInt]:
    """The names of ``func`` bound exactly once, to a :class:`ConstInt`, by name."""
    bindings: Counter[str] = Counter(param.var.name for param in func.params)
    constants: dict[str, ConstInt] = {}
    for stmt in walk_stmts(func.body):
        if isinstance(stmt, AssignStmt):
            bindings.update(target.name for target in stmt.targets)
            if len(stmt.targets) == 1 and isinstance(stmt.value, ConstInt):
                constants[stmt.targets[0].name] = stmt.value
        elif isinstance(stmt, ForStmt):
            bindings[stmt.var.name] += 1
    return {name: value for name, value in constants.items() if bindings[name] == 1}

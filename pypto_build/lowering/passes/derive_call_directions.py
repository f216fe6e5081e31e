"""DeriveCallDirections: record at every call site how each argument is passed.

The orchestration runtime's TensorMap orders tasks by what each one reads and writes, and the
orchestration codegen passes tensors as inputs, outputs or in-outs accordingly. Both read it
from one place: the call attr ``arg_directions``, one name per argument, derived here from the
callee's parameters — ``"In"``, ``"Out"`` or ``"InOut"`` for a tensor, ``"Scalar"`` for anything
passed by value (scalars, and the ``CommContext*`` arguments added later).

Every self-call in an orchestration-like body gets it, including the builtin kernel calls that
LowerL2TensorCollectives synthesized just before: that is why this pass must run after it (the
builtin kernel gets In, InOut, InOut, In, InOut like any other kernel). An ``arg_directions``
already on a call (e.g. a printed program parsed back) is replaced by the derived one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from pypto_build.lowering.diagnostics import InternalError
from pypto_build.lowering.ir import (
    Call,
    Expr,
    GlobalVar,
    Param,
    Program,
    TensorType,
    set_attr,
)
from pypto_build.lowering.passes.base import Pass, Property
from pypto_build.lowering.passes.rewrite import CallMapper, map_functions

ARG_DIRECTIONS = "arg_directions"
SCALAR = "Scalar"


def arg_direction(param: Param) -> str:
    """How an argument bound to ``param`` is passed: its direction for a tensor, else Scalar."""
    return param.direction.value if isinstance(param.var.type, TensorType) else SCALAR


@dataclass(frozen=True)
class DeriveCallDirections(Pass):
    name: ClassVar[str] = "DeriveCallDirections"
    requires: ClassVar[frozenset[Property]] = frozenset({Property.L2_COLLECTIVES_LOWERED})
    produces: ClassVar[frozenset[Property]] = frozenset({Property.CALL_DIRECTIONS_DERIVED})

    def apply(self, program: Program) -> Program:
        mapper = CallMapper(lambda call: _with_directions(program, call))
        return map_functions(
            program, lambda f: mapper.function(f) if f.func_type.is_orchestration_like else f
        )


def _with_directions(program: Program, call: Call) -> Expr:
    if not isinstance(call.op, GlobalVar):
        return call
    callee = program.function(call.op.name)
    if callee is None:
        raise InternalError(f"DeriveCallDirections: call of unknown function '{call.op.name}'")
    if len(call.args) != len(callee.params):
        raise InternalError(
            f"DeriveCallDirections: call of '{callee.name}' has {len(call.args)} arguments "
            f"for {len(callee.params)} parameters"
        )
    directions = tuple(arg_direction(p) for p in callee.params)
    return replace(call, attrs=set_attr(call.attrs, ARG_DIRECTIONS, directions))

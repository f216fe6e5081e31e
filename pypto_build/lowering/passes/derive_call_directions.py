"""DeriveCallDirections: record at every call site how each argument is passed.

The orchestration runtime's TensorMap orders tasks by what each one reads and writes, and the
orchestration codegen passes tensors as inputs, outputs or in-outs accordingly. Both read it
from one place: the call attr ``arg_directions``, one name per argument, derived here from the
callee's parameters — its :class:`ParamDirection` for a tensor, None for anything passed by value
(scalars, and the ``CommContext*`` arguments added later).

Every self-call in an orchestration-like body gets it, including the builtin kernel calls that
LowerL2TensorCollectives synthesized just before: that is why this pass must run after it (the
builtin kernel gets In, InOut, InOut, In, InOut like any other kernel). An ``arg_directions``
already on a call (e.g. a printed program parsed back) is replaced by the derived one.

The wrappers' own parameter directions are materialized first: an orchestration parameter
declared ``In`` whose storage a task writes (passed, directly or through a view or a kernel
result, to an ``Out``/``InOut`` parameter, or assembled or written into) becomes ``InOut``. The
runtime reads the orchestration's signature to decide what to copy back to the host, so an
``In`` that a kernel writes would silently lose the kernel's result.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, replace
from typing import ClassVar

from pypto_build.lowering.analysis.provenance import (
    Origin,
    ProvenanceState,
    ProvenanceWalker,
    roots,
)
from pypto_build.lowering.diagnostics import InternalError
from pypto_build.lowering.ir import (
    Call,
    Expr,
    Function,
    GlobalVar,
    Param,
    ParamDirection,
    Program,
    TensorType,
)
from pypto_build.lowering.ir.memo import per_node
from pypto_build.lowering.ir.names import ArgDirection, with_arg_directions
from pypto_build.lowering.ir.walk import walk_calls
from pypto_build.lowering.optable.table import lookup
from pypto_build.lowering.pass_names import DERIVE_CALL_DIRECTIONS
from pypto_build.lowering.passes.base import Pass, Property
from pypto_build.lowering.passes.rewrite import CallMapper, map_functions


def arg_direction(param: Param) -> ArgDirection:
    """How an argument bound to ``param`` is passed: its direction for a tensor, else None (by
    value)."""
    return param.direction if isinstance(param.var.type, TensorType) else None


@dataclass(frozen=True)
class DeriveCallDirections(Pass):
    name: ClassVar[str] = DERIVE_CALL_DIRECTIONS
    requires: ClassVar[frozenset[Property]] = frozenset({Property.L2_COLLECTIVES_LOWERED})
    produces: ClassVar[frozenset[Property]] = frozenset({Property.CALL_DIRECTIONS_DERIVED})

    def apply(self, program: Program) -> Program:
        program = _materialize_wrapper_directions(program)
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
    return with_arg_directions(call, _param_directions(callee))


@per_node
def _param_directions(callee: Function) -> tuple[ArgDirection, ...]:
    """How the arguments of a call of ``callee`` are passed: the same for its every call."""
    return tuple(arg_direction(p) for p in callee.params)


class _WrittenParams(ProvenanceWalker[ProvenanceState]):
    """Collects the parameters of one function whose storage some call of its body writes."""

    def __init__(self, program: Program, func: Function) -> None:
        super().__init__(program, func)
        self.written: set[str] = set()

    def on_call(
        self, call: Call, callee: Function, args: tuple[Origin, ...], state: ProvenanceState
    ) -> None:
        for param, origin in zip(callee.params, args, strict=True):
            if param.direction is not ParamDirection.In:
                self._write(origin)

    def op_result(self, call: Call, args: tuple[Origin, ...]) -> Origin:
        for position in lookup(call.callee_name).effects.writes:
            self._write(args[position])
        return super().op_result(call, args)

    def _write(self, origin: Origin) -> None:
        self.written.update(root.name for root in roots(origin) if root.is_param)


def _materialize_wrapper_directions(program: Program) -> Program:
    """Upgrade written ``In`` tensor parameters of orchestration-like functions to ``InOut``,
    until no caller changes (a HOST orchestrator passes its tensors to CHIP orchestrations
    whose directions this very step may upgrade).

    What a function writes depends on its body and on its callees' parameters only, so after
    the first round only the callers of a function upgraded in the round before are walked
    again (for a program of many pipelines, a second walk of every one found nothing new)."""
    upgraded: frozenset[str] | None = None  # None: every function, in the first round
    while upgraded is None or upgraded:
        changed: set[str] = set()
        functions: list[Function] = []
        for func in program.functions:
            new = func
            if func.func_type.is_orchestration_like and (
                upgraded is None or _calls_any(func, upgraded)
            ):
                new = _upgraded(program, func)
            if new is not func:
                changed.add(func.name)
            functions.append(new)
        if changed:
            program = Program(program.name, tuple(functions), program.span)
        upgraded = frozenset(changed)
    return program


def _calls_any(func: Function, names: frozenset[str]) -> bool:
    return any(
        isinstance(call.op, GlobalVar) and call.op.name in names for call in walk_calls(func.body)
    )


def _upgraded(program: Program, func: Function) -> Function:
    walker = _WrittenParams(program, func)
    walker.run(ProvenanceState({}))
    params = tuple(
        replace(p, direction=ParamDirection.InOut)
        if p.direction is ParamDirection.In
        and isinstance(p.var.type, TensorType)
        and p.var.name in walker.written
        else p
        for p in func.params
    )
    if all(map(operator.is_, params, func.params)):  # no parameter upgraded
        return func
    return replace(func, params=params)

"""AutoDeriveTaskDependencies: every ordering between the tasks of a CHIP orchestration, and the
part of it the runtime does not derive by itself.

Every kernel call of a CHIP orchestration (a self-call of an InCore/AIC/AIV function, plain or
through ``pl.submit``) is one task of the chip's runtime. Tasks are numbered in program order
(call attr ``task_id``) and each gets the sorted ids of the tasks it must wait for (call attr
``deps``):

* reading a tensor waits for its last writer (read after write);
* writing a tensor waits for its last writer (write after write) and for every task that read
  it since (write after read).

Which arguments a task reads and writes comes from ``arg_directions`` (DeriveCallDirections):
``In`` reads, ``Out`` writes, ``InOut`` does both, ``Scalar`` neither. "A tensor" is a storage
root from :mod:`provenance`, so renaming through kernel results and views does not hide an
edge: in ``stage -> all_to_all_v -> consume`` the collective waits for ``stage`` (which wrote
the stage and counts tensors it reads) and ``consume`` waits for the collective (which wrote
the data and recv_counts windows).

PyPTO's runtime enforces only part of that by itself. Its TensorMap (simpler 6ebaf77,
``runtime/pto_dep_compute.h``) orders a task after the producers of what it reads: an
``INPUT`` or ``INOUT`` argument looks up the tasks that last wrote an overlapping range as
``INOUT`` or ``OUTPUT_EXISTING``. It keeps no readers ("TensorMap only tracks producers
(OUTPUT/INOUT), not consumers that used the tensor as INPUT", ``pto_orchestration_api.h``), and
an ``OUTPUT_EXISTING`` argument (``add_output`` of an existing tensor, an ``Out`` parameter)
looks nothing up. So a write after read is never ordered by the runtime, and a write after
write only when the writer passes the tensor as ``INOUT``. Those edges are the call attr
``explicit_deps``: the orchestration hands them to the runtime with
``CoreTaskArgs::set_dependencies``, which orders a task after any task it names. Unlike
``deps``, ``explicit_deps`` keeps a task's edge to its own previous instance in a loop (a
kernel that overwrites its ``Out`` tensor on every iteration must not overlap its previous
run); the orchestration names the last instance submitted of each task it lists.

Control flow is treated conservatively. After an ``if`` a tensor's possible last writers are
those of both branches. A loop body is analysed at its fixpoint, so a task in a loop also waits
for the writers (and, when it writes, the readers) of the previous iteration; ``deps`` drops a
task's edge to itself from the previous iteration, since it names no other task. A write
through a value that may be one of several tensors counts as a write of each; that is still
sound, since the writing task itself waits for every prior writer and reader of all of them.
An explicit dependency only ever names a task submitted before, so it cannot deadlock.

HOST orchestrators are skipped: their ``device=`` dispatches are whole chip pipelines, not tasks
of one chip's TensorMap.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar, Self

from pypto_build.lowering.analysis.provenance import (
    Origin,
    ProvenanceState,
    ProvenanceWalker,
    Root,
    roots,
)
from pypto_build.lowering.diagnostics import InternalError
from pypto_build.lowering.ir import (
    AttrValue,
    Call,
    Expr,
    Function,
    ParamDirection,
    Program,
    set_attrs,
)
from pypto_build.lowering.ir.names import ArgDirection, CallAttr, Op, arg_directions
from pypto_build.lowering.ir.rebuild import replaced
from pypto_build.lowering.pass_names import AUTO_DERIVE_TASK_DEPENDENCIES
from pypto_build.lowering.passes.base import Pass, Property
from pypto_build.lowering.passes.rewrite import Mutator, map_functions

_IN, _OUT, _IN_OUT = ParamDirection.In, ParamDirection.Out, ParamDirection.InOut

_Tasks = frozenset[int]
_NO_TASKS: _Tasks = frozenset()


@dataclass(frozen=True)
class AutoDeriveTaskDependencies(Pass):
    name: ClassVar[str] = AUTO_DERIVE_TASK_DEPENDENCIES
    requires: ClassVar[frozenset[Property]] = frozenset({Property.CALL_DIRECTIONS_DERIVED})
    produces: ClassVar[frozenset[Property]] = frozenset({Property.TASK_DEPENDENCIES_DERIVED})

    def apply(self, program: Program) -> Program:
        return map_functions(
            program,
            lambda f: _derive(program, f) if f.is_chip_orchestration else f,
        )


def _derive(program: Program, func: Function) -> Function:
    tensor_map = _TensorMap(program, func)
    tensor_map.run(_TaskState({}))
    if not tensor_map.task_ids:
        return func
    return _Annotate(tensor_map.task_ids, tensor_map.deps, tensor_map.explicit).function(func)


def _union(a: dict[Root, _Tasks], b: dict[Root, _Tasks]) -> dict[Root, _Tasks]:
    merged = dict(a)
    for key, tasks in b.items():
        merged[key] = merged.get(key, frozenset()) | tasks
    return merged


@dataclass
class _TaskState(ProvenanceState):
    """Per storage root: the tasks that may have written it last, and those that read it since."""

    writers: dict[Root, _Tasks] = field(default_factory=dict)
    readers: dict[Root, _Tasks] = field(default_factory=dict)

    def copy(self) -> Self:
        return dataclasses.replace(
            super().copy(), writers=dict(self.writers), readers=dict(self.readers)
        )

    def join(self, other: Self, join: Callable[[Origin, Origin], Origin]) -> Self:
        return dataclasses.replace(
            super().join(other, join),
            writers=_union(self.writers, other.writers),
            readers=_union(self.readers, other.readers),
        )


class _TensorMap(ProvenanceWalker[_TaskState]):
    def __init__(self, program: Program, func: Function) -> None:
        super().__init__(program, func)
        #: The task number of each kernel call (by identity), in program order: the walk
        #: reaches the calls first in the order they are written (a loop body's on its first
        #: pass), so it numbers them as it goes.
        self.task_ids: dict[int, int] = {}
        #: Dependencies per task call (by identity), from the last visit of the call: all of
        #: them, and those the runtime's TensorMap does not derive.
        self.deps: dict[int, tuple[int, ...]] = {}
        self.explicit: dict[int, tuple[int, ...]] = {}

    def op_result(self, call: Call, args: tuple[Origin, ...]) -> Origin:
        """An assemble's result holds its source's data too: whoever reads it must wait for
        the source's writers, not only for the target's."""
        if call.op == Op.TENSOR_ASSEMBLE:
            return roots(args[0]) | roots(args[1])
        return super().op_result(call, args)

    def on_call(
        self, call: Call, callee: Function, args: tuple[Origin, ...], state: _TaskState
    ) -> None:
        if not callee.func_type.is_kernel:
            return
        task = self.task_ids.setdefault(id(call), len(self.task_ids))
        reads: set[Root] = set()
        writes: set[Root] = set()
        # Told apart by identity: an enum member's hash is a Python call, for every argument.
        for direction, origin in zip(_directions(call, callee), args, strict=True):
            if direction is _IN:
                reads |= roots(origin)
            elif direction is _OUT:
                writes |= roots(origin)
            elif direction is _IN_OUT:
                found = roots(origin)
                reads |= found
                writes |= found
        # The TensorMap orders a task after the last writers of what it reads (INPUT, INOUT).
        writers, readers = state.writers, state.readers
        derived: set[int] = set()
        for root in reads:
            derived |= writers.get(root, _NO_TASKS)
        deps = set(derived)
        for root in writes:
            deps |= writers.get(root, _NO_TASKS)
            deps |= readers.get(root, _NO_TASKS)
        self.explicit[id(call)] = tuple(sorted(deps - derived))
        deps.discard(task)
        self.deps[id(call)] = tuple(sorted(deps))
        only = frozenset((task,))
        for root in reads:
            readers[root] = readers.get(root, _NO_TASKS) | only
        for root in writes:
            writers[root] = only
            readers[root] = _NO_TASKS


def _directions(call: Call, callee: Function) -> tuple[ArgDirection, ...]:
    directions = arg_directions(call)
    if directions is None:
        raise InternalError(
            f"AutoDeriveTaskDependencies: call of '{callee.name}' lacks a valid "
            f"{CallAttr.ARG_DIRECTIONS} attr; DeriveCallDirections must run first"
        )
    return directions


class _Annotate(Mutator):
    """Attach ``task_id``, ``deps`` and ``explicit_deps`` to the task calls (looked up by
    original identity)."""

    def __init__(
        self,
        task_ids: dict[int, int],
        deps: dict[int, tuple[int, ...]],
        explicit: dict[int, tuple[int, ...]],
    ) -> None:
        self._task_ids = task_ids
        self._deps = deps
        self._explicit = explicit

    def visit_call(self, call: Call) -> Expr:
        key = id(call)
        rebuilt = super().visit_call(call)
        task = self._task_ids.get(key)
        if task is None or not isinstance(rebuilt, Call):
            return rebuilt
        values: dict[str, AttrValue] = {CallAttr.TASK_ID: task, CallAttr.DEPS: self._deps[key]}
        if self._explicit[key]:
            values[CallAttr.EXPLICIT_DEPS] = self._explicit[key]
        return replaced(rebuilt, attrs=set_attrs(rebuilt.attrs, values))

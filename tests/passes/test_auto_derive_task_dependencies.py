"""AutoDeriveTaskDependencies: TensorMap edges (RAW, WAW, WAR) between the kernel tasks of a
CHIP orchestration, seen through renaming, views, branches and loops."""

from __future__ import annotations

import textwrap

import pytest
from _support.passes import parse_one, run_verified, self_calls

from pypto_build.lowering.diagnostics import InternalError
from pypto_build.lowering.ir import Program, get_attr
from pypto_build.lowering.passes import (
    AutoDeriveTaskDependencies,
    DeriveCallDirections,
    PassManager,
    Property,
)

KERNELS = """\
import pypto.language as pl


@pl.program
class Deps:
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/produce.cpp")
    def produce(
        self, x: pl.Tensor[[4, 8], pl.FP32], t: pl.Out[pl.Tensor[[4, 8], pl.FP32]]
    ) -> pl.Tensor[[4, 8], pl.FP32]: ...

    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/update.cpp")
    def update(self, t: pl.InOut[pl.Tensor[[4, 8], pl.FP32]]) -> pl.Tensor[[4, 8], pl.FP32]: ...

    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/combine.cpp")
    def combine(
        self,
        a: pl.Tensor[[4, 8], pl.FP32],
        b: pl.Tensor[[4, 8], pl.FP32],
        c: pl.Out[pl.Tensor[[4, 8], pl.FP32]],
    ) -> pl.Tensor[[4, 8], pl.FP32]: ...

    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/swap.cpp")
    def swap(
        self, p: pl.InOut[pl.Tensor[[4, 8], pl.FP32]], q: pl.InOut[pl.Tensor[[4, 8], pl.FP32]]
    ) -> pl.Tensor[[4, 8], pl.FP32]: ...

    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/flat.cpp")
    def flat(
        self, v: pl.Tensor[[32], pl.FP32], c: pl.Out[pl.Tensor[[4, 8], pl.FP32]]
    ) -> pl.Tensor[[4, 8], pl.FP32]: ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip_orch(
        self,
        x: pl.Tensor[[4, 8], pl.FP32],
        a: pl.Out[pl.Tensor[[4, 8], pl.FP32]],
        b: pl.Out[pl.Tensor[[4, 8], pl.FP32]],
        c: pl.Out[pl.Tensor[[4, 8], pl.FP32]],
        n: pl.Scalar[pl.INDEX],
    ) -> pl.Tensor[[4, 8], pl.FP32]:
"""

HOST = """
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.HOST)
    def host_orch(
        self,
        x: pl.Tensor[[4, 8], pl.FP32],
        a: pl.Out[pl.Tensor[[4, 8], pl.FP32]],
        b: pl.Out[pl.Tensor[[4, 8], pl.FP32]],
        c: pl.Out[pl.Tensor[[4, 8], pl.FP32]],
    ):
        self.chip_orch(x, a, b, c, 1, device=0)
        self.chip_orch(x, a, b, c, 2, device=1)
"""

#: Everything up to DeriveCallDirections is established for these hand-written programs.
BEFORE_DIRECTIONS = frozenset(
    {
        Property.COMPOSITE_OPS_LOWERED,
        Property.CREATE_ASSEMBLE_FUSED,
        Property.L2_COLLECTIVES_LOWERED,
    }
)


def _derive(body: str, host: str = "") -> Program:
    source = KERNELS + textwrap.indent(textwrap.dedent(body), " " * 8) + host
    return run_verified(
        parse_one(source),
        DeriveCallDirections(),
        AutoDeriveTaskDependencies(),
        established=BEFORE_DIRECTIONS,
    )


def _tasks(program: Program, func: str = "chip_orch") -> list[tuple[str, object, object]]:
    """(callee, task_id, deps) of every self-call of ``func`` in program order."""
    return [
        (call.callee_name, get_attr(call.attrs, "task_id"), get_attr(call.attrs, "deps"))
        for call in self_calls(program, func)
    ]


@pytest.mark.parametrize(
    ("body", "tasks"),
    [
        pytest.param(
            """\
            a = self.produce(x, a)
            b = self.produce(x, b)
            c = self.combine(a, b, c)
            a = self.produce(x, a)
            c = self.combine(a, a, c)
            return c
            """,
            [
                ("produce", 0, ()),
                ("produce", 1, ()),
                ("combine", 2, (0, 1)),  # RAW on a and b
                ("produce", 3, (0, 2)),  # WAW on a (task 0), WAR on a (task 2 read it)
                ("combine", 4, (2, 3)),  # RAW on a (task 3), WAW on c (task 2)
            ],
            id="read-after-write-write-after-write-and-write-after-read",
        ),
        pytest.param(
            """\
            filled = self.produce(x, a)
            flat = pl.reshape(filled, [32])
            c = self.flat(flat, c)
            result, tid = pl.submit(self.update, b)
            b = self.combine(x, result, b)
            return c
            """,
            [
                ("produce", 0, ()),
                ("flat", 1, (0,)),  # reads a through the renamed result and a reshape
                ("update", 2, ()),
                ("combine", 3, (2,)),  # reads the submit's result (b), then writes b again
            ],
            id="renamed-results-views-and-submit-keep-their-storage",
        ),
        pytest.param(
            """\
            a = self.produce(x, a)
            r = self.swap(a, b)
            c = self.combine(r, x, c)
            b = self.produce(x, b)
            return c
            """,
            [
                ("produce", 0, ()),
                ("swap", 1, (0,)),
                ("combine", 2, (1,)),  # r is a or b: both last written by the swap
                ("produce", 3, (1, 2)),  # WAR: the combine may have read b through r
            ],
            id="a-result-of-unknown-origin-is-any-argument-the-kernel-wrote",
        ),
        pytest.param(
            """\
            if n > 0:
                a = self.produce(x, a)
            else:
                a = self.update(a)
            c = self.combine(a, x, c)
            return c
            """,
            [("produce", 0, ()), ("update", 1, ()), ("combine", 2, (0, 1))],
            id="branches-join-their-writers",
        ),
        pytest.param(
            """\
            a = self.produce(x, a)
            for i in pl.range(n):
                b = self.combine(a, x, b)
                a = self.update(a)
            c = self.combine(b, x, c)
            return c
            """,
            [
                ("produce", 0, ()),
                ("combine", 1, (0, 2)),  # a from before the loop or from the previous update
                ("update", 2, (0, 1)),  # its own previous iteration is not an edge
                ("combine", 3, (1,)),
            ],
            id="loop-tasks-also-depend-on-the-previous-iteration",
        ),
    ],
)
def test_task_dependencies(body: str, tasks: list[tuple[str, int, tuple[int, ...]]]) -> None:
    assert _tasks(_derive(body)) == tasks


def _explicit(program: Program) -> list[tuple[str, object]]:
    """(callee, explicit_deps) of every self-call of chip_orch, in program order."""
    return [
        (call.callee_name, get_attr(call.attrs, "explicit_deps"))
        for call in self_calls(program, "chip_orch")
    ]


@pytest.mark.parametrize(
    ("body", "explicit"),
    [
        pytest.param(
            """            a = self.produce(x, a)
            b = self.produce(x, b)
            c = self.combine(a, b, c)
            a = self.produce(x, a)
            c = self.combine(a, a, c)
            return c
            """,
            [
                ("produce", None),
                ("produce", None),
                ("combine", None),  # RAW: the TensorMap finds the producers of a and b
                ("produce", (0, 2)),  # an Out write looks up nothing: WAW on 0, WAR on 2
                ("combine", (2,)),  # RAW on a is found; the WAW on c (an Out) is not
            ],
            id="write-after-read-and-out-write-after-write",
        ),
        pytest.param(
            """            a = self.produce(x, a)
            a = self.update(a)
            c = self.combine(a, x, c)
            a = self.update(a)
            return c
            """,
            [
                ("produce", None),
                ("update", None),  # an InOut write after a write: its lookup finds task 0
                ("combine", None),
                ("update", (2,)),  # after the combine read a: no lookup finds a reader
            ],
            id="an-inout-write-after-write-is-the-runtime-s-own",
        ),
        pytest.param(
            """            for i in pl.range(n):
                c = self.combine(x, x, c)
                a = self.update(a)
            return c
            """,
            [
                ("combine", (0,)),  # overwrites its own Out on every iteration
                ("update", None),  # reads its own previous write: the TensorMap finds it
            ],
            id="a-task-follows-its-own-previous-instance",
        ),
    ],
)
def test_explicit_dependencies_are_the_orderings_the_tensor_map_misses(
    body: str, explicit: list[tuple[str, object]]
) -> None:
    assert _explicit(_derive(body)) == explicit


def test_host_orchestrators_are_not_tensor_map_tasks() -> None:
    derived = _derive("c = self.combine(x, x, c)\nreturn c\n", host=HOST)
    dispatches = _tasks(derived, "host_orch")
    assert dispatches == [("chip_orch", None, None), ("chip_orch", None, None)]
    assert _tasks(derived) == [("combine", 0, ())]


def test_requires_call_directions() -> None:
    source = KERNELS + "        return self.combine(x, x, c)\n"
    program = parse_one(source)
    established = BEFORE_DIRECTIONS | {Property.CALL_DIRECTIONS_DERIVED}
    with pytest.raises(InternalError, match="DeriveCallDirections must run first"):
        PassManager((AutoDeriveTaskDependencies(),)).run(program, established=established)

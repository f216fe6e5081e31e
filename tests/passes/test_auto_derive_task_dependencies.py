"""AutoDeriveTaskDependencies: TensorMap edges (RAW, WAW, WAR) between the kernel tasks of a
CHIP orchestration, seen through renaming, views, branches and loops."""

from __future__ import annotations

import textwrap

import pytest

from pypto_build.lowering.diagnostics import InternalError
from pypto_build.lowering.frontend import parse_source
from pypto_build.lowering.ir import GlobalVar, Program, get_attr
from pypto_build.lowering.passes import (
    AutoDeriveTaskDependencies,
    DeriveCallDirections,
    PassManager,
    Property,
)
from pypto_build.lowering.passes.rewrite import walk_calls
from pypto_build.lowering.verifier import verify

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
    (program,) = parse_source(source, "deps.py")
    pipeline = PassManager((DeriveCallDirections(), AutoDeriveTaskDependencies()))
    derived = pipeline.run(program, established=BEFORE_DIRECTIONS)
    verify(derived)
    return derived


def _tasks(program: Program, func: str = "chip_orch") -> list[tuple[str, object, object]]:
    """(callee, task_id, deps) of every self-call of ``func`` in program order."""
    body = program.function(func)
    assert body is not None
    return [
        (call.op.name, get_attr(call.attrs, "task_id"), get_attr(call.attrs, "deps"))
        for call in walk_calls(body.body)
        if isinstance(call.op, GlobalVar)
    ]


def test_read_after_write_write_after_write_and_write_after_read() -> None:
    derived = _derive(
        """\
        a = self.produce(x, a)
        b = self.produce(x, b)
        c = self.combine(a, b, c)
        a = self.produce(x, a)
        c = self.combine(a, a, c)
        return c
        """
    )
    assert _tasks(derived) == [
        ("produce", 0, ()),
        ("produce", 1, ()),
        ("combine", 2, (0, 1)),  # RAW on a and b
        ("produce", 3, (0, 2)),  # WAW on a (task 0), WAR on a (task 2 read it)
        ("combine", 4, (2, 3)),  # RAW on a (task 3), WAW on c (task 2)
    ]


def test_renamed_results_views_and_submit_keep_their_storage() -> None:
    derived = _derive(
        """\
        filled = self.produce(x, a)
        flat = pl.reshape(filled, [32])
        c = self.flat(flat, c)
        result, tid = pl.submit(self.update, b)
        b = self.combine(x, result, b)
        return c
        """
    )
    assert _tasks(derived) == [
        ("produce", 0, ()),
        ("flat", 1, (0,)),  # reads a through the renamed result and a reshape
        ("update", 2, ()),
        ("combine", 3, (2,)),  # reads the submit's result (b), then writes b again
    ]


def test_a_result_of_unknown_origin_is_any_argument_the_kernel_wrote() -> None:
    derived = _derive(
        """\
        a = self.produce(x, a)
        r = self.swap(a, b)
        c = self.combine(r, x, c)
        b = self.produce(x, b)
        return c
        """
    )
    assert _tasks(derived) == [
        ("produce", 0, ()),
        ("swap", 1, (0,)),
        ("combine", 2, (1,)),  # r is a or b: both last written by the swap
        ("produce", 3, (1, 2)),  # WAR: the combine may have read b through r
    ]


def test_branches_join_their_writers() -> None:
    derived = _derive(
        """\
        if n > 0:
            a = self.produce(x, a)
        else:
            a = self.update(a)
        c = self.combine(a, x, c)
        return c
        """
    )
    assert _tasks(derived) == [("produce", 0, ()), ("update", 1, ()), ("combine", 2, (0, 1))]


def test_loop_tasks_also_depend_on_the_previous_iteration() -> None:
    derived = _derive(
        """\
        a = self.produce(x, a)
        for i in pl.range(n):
            b = self.combine(a, x, b)
            a = self.update(a)
        c = self.combine(b, x, c)
        return c
        """
    )
    assert _tasks(derived) == [
        ("produce", 0, ()),
        ("combine", 1, (0, 2)),  # a from before the loop or from the previous update
        ("update", 2, (0, 1)),  # its own previous iteration is not an edge
        ("combine", 3, (1,)),
    ]


def test_host_orchestrators_are_not_tensor_map_tasks() -> None:
    derived = _derive("c = self.combine(x, x, c)\nreturn c\n", host=HOST)
    dispatches = _tasks(derived, "host_orch")
    assert dispatches == [("chip_orch", None, None), ("chip_orch", None, None)]
    assert _tasks(derived) == [("combine", 0, ())]


def test_requires_call_directions() -> None:
    source = KERNELS + "        return self.combine(x, x, c)\n"
    (program,) = parse_source(source, "deps.py")
    established = BEFORE_DIRECTIONS | {Property.CALL_DIRECTIONS_DERIVED}
    with pytest.raises(InternalError, match="DeriveCallDirections must run first"):
        PassManager((AutoDeriveTaskDependencies(),)).run(program, established=established)

"""FuseCreateAssembleToSlice: created-then-assembled scratch tensors become slice views of
their destination, and only where that cannot change what the program computes."""

from __future__ import annotations

import textwrap

import pytest
from _support.passes import parse_one, run_verified

from pypto_build.lowering.ir import Program
from pypto_build.lowering.passes import FuseCreateAssembleToSlice

KERNELS = """\
import pypto.language as pl


@pl.program
class Fuse:
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/fill.cpp")
    def fill(
        self, x: pl.Tensor[[8, 64], pl.FP32], t: pl.Out[pl.Tensor[[4, 64], pl.FP32]]
    ) -> pl.Tensor[[4, 64], pl.FP32]: ...

    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/scale.cpp")
    def scale(
        self, t: pl.InOut[pl.Tensor[[4, 64], pl.FP32]], y: pl.Out[pl.Tensor[[4, 64], pl.FP32]]
    ) -> tuple[pl.Tensor[[4, 64], pl.FP32], pl.Tensor[[4, 64], pl.FP32]]: ...

    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/touch.cpp")
    def touch(
        self, x: pl.InOut[pl.Tensor[[8, 64], pl.FP32]]
    ) -> pl.Tensor[[8, 64], pl.FP32]: ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(
        self,
        x: pl.Tensor[[8, 64], pl.FP32],
        y: pl.Out[pl.Tensor[[4, 64], pl.FP32]],
        out: pl.Out[pl.Tensor[[8, 64], pl.FP32]],
    ) -> pl.Tensor[[8, 64], pl.FP32]:
"""


def _program(body: str) -> Program:
    return parse_one(KERNELS + textwrap.indent(textwrap.dedent(body), " " * 8))


def _fuse(body: str) -> Program:
    return run_verified(_program(body), FuseCreateAssembleToSlice())


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            """\
            t = pl.create_tensor([4, 64], dtype=pl.FP32)
            t = self.fill(x, t)
            out = pl.assemble(out, t, [4, 0])
            return out
            """,
            """\
            t = pl.slice(out, [4, 64], [4, 0])
            t = self.fill(x, t)
            return out
            """,
            id="create-filled-and-assembled-becomes-a-slice-view",
        ),
        pytest.param(
            """\
            t = pl.create_tensor([4, 64], dtype=pl.FP32)
            filled = self.fill(x, t)
            scaled, y = self.scale(filled, y)
            res = pl.assemble(out, scaled, [0, 0])
            return res
            """,
            """\
            t = pl.slice(out, [4, 64], [0, 0])
            filled = self.fill(x, t)
            scaled, y = self.scale(filled, y)
            res = out
            return res
            """,
            id="renaming-through-returned-arguments-and-a-new-result-name",
        ),
        pytest.param(
            """\
            t = pl.create_tensor([4, 64], dtype=pl.FP32)
            t = self.fill(x, t)
            out = pl.assemble(out, t, [0, 0])
            t = pl.create_tensor([4, 64], dtype=pl.FP32)
            t = self.fill(x, t)
            out = pl.assemble(out, t, [4, 0])
            return out
            """,
            """\
            t = pl.slice(out, [4, 64], [0, 0])
            t = self.fill(x, t)
            t = pl.slice(out, [4, 64], [4, 0])
            t = self.fill(x, t)
            return out
            """,
            id="consecutive-blocks-reusing-a-name-both-fuse",
        ),
        pytest.param(
            """\
            for i in pl.range(2):
                t = pl.create_tensor([4, 64], dtype=pl.FP32)
                t = self.fill(x, t)
                out = pl.assemble(out, t, [4, 0])
            return out
            """,
            """\
            for i in pl.range(2):
                t = pl.slice(out, [4, 64], [4, 0])
                t = self.fill(x, t)
            return out
            """,
            id="inside-a-loop-body",
        ),
    ],
)
def test_created_then_assembled_scratch_becomes_a_slice_view(body: str, expected: str) -> None:
    assert _fuse(body) == _program(expected)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(
            """\
            t = pl.create_tensor([4, 64], dtype=pl.FP32)
            t = self.fill(x, t)
            out = self.touch(out)
            out = pl.assemble(out, t, [4, 0])
            return out
            """,
            id="parent-written-in-between",
        ),
        pytest.param(
            """\
            t = pl.create_tensor([4, 64], dtype=pl.FP32)
            v = pl.reshape(out, [16, 32])
            t = self.fill(x, t)
            out = pl.assemble(out, t, [4, 0])
            return out
            """,
            id="parent-viewed-in-between",
        ),
        pytest.param(
            """\
            t = pl.create_tensor([4, 64], dtype=pl.FP32)
            t = self.fill(out, t)
            out = pl.assemble(out, t, [4, 0])
            return out
            """,
            id="parent-read-by-the-filling-kernel",
        ),
        pytest.param(
            """\
            t = pl.create_tensor([4, 64], dtype=pl.FP32)
            t = self.fill(x, t)
            out = pl.assemble(out, t, [4, 0])
            y = self.fill(x, t)
            return out
            """,
            id="scratch-used-after-the-assemble",
        ),
        pytest.param(
            """\
            t = pl.create_tensor([4, 64], dtype=pl.FP32)
            v = pl.reshape(t, [8, 32])
            t = self.fill(x, t)
            out = pl.assemble(out, t, [4, 0])
            return out
            """,
            id="scratch-viewed-in-between",
        ),
        pytest.param(
            """\
            for i in pl.range(2):
                t = pl.create_tensor([4, 64], dtype=pl.FP32)
                t = self.fill(x, t)
                out = pl.assemble(out, t, [i * 4, 0])
            return out
            """,
            id="offset-not-literal",
        ),
        pytest.param(
            """\
            t = pl.create_tensor([4, 64], dtype=pl.FP32)
            t, tid = pl.submit(self.fill, x, t)
            out = pl.assemble(out, t, [4, 0])
            return out
            """,
            id="filled-through-submit",
        ),
        pytest.param(
            """\
            t = pl.create_tensor([4, 64], dtype=pl.FP32)
            for i in pl.range(2):
                t = self.fill(x, t)
            out = pl.assemble(out, t, [4, 0])
            return out
            """,
            id="filled-in-a-nested-loop",
        ),
        pytest.param(
            """\
            t = pl.create_tensor([4, 64], dtype=pl.FP32)
            t = self.fill(x, t)
            out = pl.create_tensor([8, 64], dtype=pl.FP32)
            out = pl.assemble(out, t, [4, 0])
            return out
            """,
            id="parent-rebound-in-between",
        ),
    ],
)
def test_unsafe_or_unmatched_patterns_are_left_untouched(body: str) -> None:
    program = _program(body)
    assert FuseCreateAssembleToSlice().apply(program) is program

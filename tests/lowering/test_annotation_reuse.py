"""A parameter annotation written alike twice in a file is converted once: both parameters get
its type, and a refused one is refused at each place it is written."""

from __future__ import annotations

import pytest

from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.frontend import parse_source

_PROGRAM = """\
import pypto.language as pl

N = 8


@pl.program
class P:
    @pl.function(type=pl.FunctionType.AIV, external_source="k.cpp")
    def k(self, a: pl.Tensor[[N], pl.FP32], b: pl.Out[pl.Tensor[[N], pl.FP32]]) -> None: ...

    @pl.function(type=pl.FunctionType.AIV, external_source="k.cpp")
    def j(self, a: pl.Tensor[[N], pl.FP32], b: pl.Out[pl.Tensor[[N], pl.FP32]]) -> None: ...
"""


def test_alike_annotations_give_equal_parameters() -> None:
    (program,) = parse_source(_PROGRAM, "p.py")
    k, j = program.functions
    assert k.params == j.params
    assert [p.direction.value for p in k.params] == ["In", "Out"]


@pytest.mark.parametrize("line", [9, 12])
def test_a_refused_annotation_is_refused_where_it_is_written(line: int) -> None:
    lines = _PROGRAM.splitlines(keepends=True)
    lines[line - 1] = lines[line - 1].replace("b: pl.Out[pl.Tensor[[N], pl.FP32]]", "b: pl.FP99")
    with pytest.raises(ProgramError) as refused:
        parse_source("".join(lines), "p.py")
    assert (refused.value.span.line, refused.value.span.col) == (line, 47)
    assert "unsupported type annotation 'pl.FP99'" in refused.value.message

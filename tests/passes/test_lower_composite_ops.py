"""LowerCompositeOps: the InCore rail's rules; orchestration bodies are deferred untouched."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.frontend import parse_file, parse_source
from pypto_build.lowering.ir import Program
from pypto_build.lowering.passes import LowerCompositeOps

PROGRAMS = Path(__file__).resolve().parent.parent / "programs"

HEADER = """\
import pypto.language as pl
import pypto.language.distributed as pld


@pl.program
class Composite:
"""

#: Annotation shorthands of the sources below (the DSL has no type aliases).
TYPES = {
    "PAYLOAD": "pld.DistributedTensor[[8, 64], pl.FP32]",
    "SIGNAL": "pld.DistributedTensor[[2, 1], pl.INT32]",
    "COUNTS": "pld.DistributedTensor[[2], pl.INT32]",
}


def _parse(body: str, filename: str) -> tuple[Program, str]:
    source = HEADER + body
    for alias, spelled in TYPES.items():
        source = source.replace(alias, spelled)
    (program,) = parse_source(source, filename)
    return program, source


KERNEL = """\
    @pl.function(type=pl.FunctionType.{func_type})
    def exchange(
        self,
        stage: PAYLOAD,
        data: pl.InOut[PAYLOAD],
        signal: pl.InOut[SIGNAL],
        counts: COUNTS,
        recv: pl.InOut[SIGNAL],
        cores: pl.Scalar[pl.INDEX],
    ) -> PAYLOAD:
        data = {call}
        return data
"""

A2AV = "pld.tensor.all_to_all_v(stage, data, signal, counts, recv{extra})"


def _kernel_program(call: str, func_type: str = "InCore") -> tuple[Program, str]:
    return _parse(KERNEL.format(func_type=func_type, call=call), "composite.py")


def _position(source: str, needle: str) -> tuple[int, int]:
    """1-based line and 0-based column of the first ``needle`` in ``source``."""
    for number, line in enumerate(source.splitlines(), start=1):
        if needle in line:
            return number, line.index(needle)
    raise AssertionError(f"{needle!r} not in source")


@pytest.mark.parametrize("extra", ["", ", core_num=1"])
@pytest.mark.parametrize("func_type", ["InCore", "AIV", "AIC"])
def test_single_core_incore_collective_is_accepted_unchanged(extra: str, func_type: str) -> None:
    program, _ = _kernel_program(A2AV.format(extra=extra), func_type)
    assert LowerCompositeOps().apply(program) is program


def test_chip_orchestration_collectives_are_deferred_untouched() -> None:
    (program,) = parse_file(PROGRAMS / "chip_pipeline.py")
    assert LowerCompositeOps().apply(program) is program


def test_orchestration_multi_core_and_other_collectives_are_not_checked() -> None:
    body = textwrap.indent(
        textwrap.dedent(
            """\
            @pl.function(type=pl.FunctionType.Orchestration)
            def chip_orch(
                self, stage: PAYLOAD, data: pl.InOut[PAYLOAD], signal: pl.InOut[SIGNAL],
                counts: COUNTS, recv: pl.InOut[SIGNAL], index: pl.Tensor[[8], pl.INT32],
            ) -> PAYLOAD:
                data = pld.tensor.all_to_all_v(stage, data, signal, counts, recv, core_num=4)
                data = pld.tensor.indexed_all_to_all_v(
                    stage, data, signal, counts, recv, index, core_num=2
                )
                return data
            """
        ),
        "    ",
    )
    program, _ = _parse(body, "orch.py")
    assert LowerCompositeOps().apply(program) is program


def test_incore_multi_core_is_rejected_at_the_call() -> None:
    program, source = _kernel_program(A2AV.format(extra=", core_num=2"))
    with pytest.raises(ProgramError) as info:
        LowerCompositeOps().apply(program)
    error = info.value
    assert error.message == (
        "InCore pld.tensor.all_to_all_v requires a compile-time core_num=1, got 2; call it from "
        "a CHIP Orchestration function to use the managed multi-AIV path"
    )
    assert error.phase == "LowerCompositeOps"
    line, col = _position(source, "pld.tensor.all_to_all_v(")
    assert (error.span.file, error.span.line, error.span.col) == ("composite.py", line, col)


def test_incore_runtime_core_num_is_rejected() -> None:
    program, source = _kernel_program(A2AV.format(extra=", core_num=cores"))
    with pytest.raises(ProgramError) as info:
        LowerCompositeOps().apply(program)
    assert info.value.message == (
        "InCore pld.tensor.all_to_all_v requires a compile-time core_num=1, got a dynamic value; "
        "call it from a CHIP Orchestration function to use the managed multi-AIV path"
    )
    assert (info.value.span.line, info.value.span.col) == _position(source, "pld.tensor.all")


def test_incore_indexed_all_to_all_v_is_rejected() -> None:
    call = "pld.tensor.indexed_all_to_all_v(stage, data, signal, counts, recv, index)"
    program, source = _parse(
        KERNEL.format(func_type="AIV", call=call).replace(
            "cores: pl.Scalar[pl.INDEX]", "index: pl.Tensor[[8], pl.INT32]"
        ),
        "indexed.py",
    )
    with pytest.raises(ProgramError) as info:
        LowerCompositeOps().apply(program)
    message = info.value.message
    assert message.startswith(
        "pld.tensor.indexed_all_to_all_v is not supported in an InCore function: "
    )
    assert message.endswith("call it from a CHIP Orchestration function")
    assert info.value.phase == "LowerCompositeOps"
    assert (info.value.span.line, info.value.span.col) == _position(source, "pld.tensor.indexed")

"""LowerCompositeOps: the InCore rail's rules; orchestration bodies are deferred untouched."""

from __future__ import annotations

import textwrap

import pytest
from _support.passes import PROGRAMS, located, parse_one, pass_error, position

from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.frontend import parse_file
from pypto_build.lowering.ir import Program
from pypto_build.lowering.passes import LowerCompositeOps

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


def _parse(body: str) -> tuple[Program, str]:
    source = HEADER + body
    for alias, spelled in TYPES.items():
        source = source.replace(alias, spelled)
    return parse_one(source), source


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
    return _parse(KERNEL.format(func_type=func_type, call=call))


def _rejection(program: Program) -> ProgramError:
    return pass_error(program, LowerCompositeOps())


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
    program, _ = _parse(body)
    assert LowerCompositeOps().apply(program) is program


@pytest.mark.parametrize(
    ("core_num", "got"), [("2", "2"), ("cores", "a dynamic value")], ids=["multi-core", "runtime"]
)
def test_incore_core_num_other_than_one_is_rejected_at_the_call(core_num: str, got: str) -> None:
    program, source = _kernel_program(A2AV.format(extra=f", core_num={core_num}"))
    error = _rejection(program)
    assert error.message == (
        f"InCore pld.tensor.all_to_all_v requires a compile-time core_num=1, got {got}; call it "
        "from a CHIP Orchestration function to use the managed multi-AIV path"
    )
    assert located(error) == position(source, "pld.tensor.all_to_all_v(")


def test_incore_indexed_all_to_all_v_is_rejected() -> None:
    call = "pld.tensor.indexed_all_to_all_v(stage, data, signal, counts, recv, index)"
    program, source = _parse(
        KERNEL.format(func_type="AIV", call=call).replace(
            "cores: pl.Scalar[pl.INDEX]", "index: pl.Tensor[[8], pl.INT32]"
        )
    )
    error = _rejection(program)
    assert error.message.startswith(
        "pld.tensor.indexed_all_to_all_v is not supported in an InCore function: "
    )
    assert error.message.endswith("call it from a CHIP Orchestration function")
    assert located(error) == position(source, "pld.tensor.indexed")

"""CheckLegality checks a kernel that many orchestrations call once, and reports a problem of
it as it would for a single caller."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.frontend import parse_file
from pypto_build.lowering.ir import Call, EvalStmt, GlobalVar
from pypto_build.lowering.legality.chip_orchestration import called_kernels
from pypto_build.lowering.lower import lower_programs
from pypto_build.lowering.passes import check_legality

_PIPELINE = """
    @pl.function(type=pl.FunctionType.Orchestration)
    def pipeline_{index}(
        self, x: pl.Tensor[[4, 4], pl.FP32], y: pl.Out[pl.Tensor[[4, 4], pl.FP32]]
    ) -> pl.Tensor[[4, 4], pl.FP32]:
        y = self.step(x, y)
        y = self.step(x, y)
        return y
"""


def _program(folder: Path, pipelines: int) -> Path:
    text = textwrap.dedent(
        """\
        import pypto.language as pl


        @pl.program
        class Shared:
            @pl.function(type=pl.FunctionType.AIV, external_source="step.cpp")
            def step(
                self, x: pl.Tensor[[4, 4], pl.FP32], y: pl.Out[pl.Tensor[[4, 4], pl.FP32]]
            ) -> pl.Tensor[[4, 4], pl.FP32]: ...
        """
    ) + "".join(_PIPELINE.format(index=index) for index in range(pipelines))
    path = folder / "shared.py"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_shared_kernel_is_checked_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "step.cpp").write_text("// step\n", encoding="utf-8")
    checked: list[str] = []
    real = check_legality.check_kernel

    def counting(kernel: object, *rest: object) -> None:
        checked.append(kernel.name)  # type: ignore[attr-defined]
        real(kernel, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(check_legality, "check_kernel", counting)
    lower_programs(parse_file(_program(tmp_path, 3)), ("a3",))
    assert checked == ["step"]


def test_a_shared_kernels_problem_is_reported_as_for_one_caller(tmp_path: Path) -> None:
    errors = []
    for pipelines in (1, 3):
        folder = tmp_path / str(pipelines)
        folder.mkdir()
        with pytest.raises(ProgramError) as raised:  # step.cpp is missing
            lower_programs(parse_file(_program(folder, pipelines)), ("a3",))
        errors.append((raised.value.message, raised.value.span.line, raised.value.span.col))
    assert errors[0] == errors[1]
    assert "external_source 'step.cpp' of kernel 'step' does not exist" in errors[0][0]


def test_an_orchestrations_kernels_are_found_once_per_program(tmp_path: Path) -> None:
    # The legality pass, its checks and each chip's render ask for the same orchestration's
    # kernels: one answer per program and function, the same function of another program
    # answered anew.
    (tmp_path / "step.cpp").write_text("// step\n", encoding="utf-8")
    (program,) = lower_programs(parse_file(_program(tmp_path, 2)), ("a3",))
    orch = program.function("pipeline_0")
    assert orch is not None
    found = called_kernels(program, orch)
    assert [kernel.name for kernel in found] == ["step"]
    assert called_kernels(program, orch) is found
    other = dataclasses.replace(program)
    assert called_kernels(other, orch) is not found
    assert called_kernels(other, orch) == found


def test_a_call_of_a_non_kernel_is_refused_every_time(tmp_path: Path) -> None:
    (tmp_path / "step.cpp").write_text("// step\n", encoding="utf-8")
    (program,) = parse_file(_program(tmp_path, 2))
    caller = program.function("pipeline_0")
    callee = program.function("pipeline_1")
    assert caller is not None and callee is not None
    body = caller.body
    (first, *rest) = body.stmts
    call = Call(GlobalVar(callee.name), (), callee.return_types[0], span=first.span)
    wrong = dataclasses.replace(
        caller, body=dataclasses.replace(body, stmts=(EvalStmt(call), *rest))
    )
    for _ in range(2):
        with pytest.raises(ProgramError, match=r"calling 'pipeline_1' .* can only submit kernels"):
            called_kernels(program, wrong)

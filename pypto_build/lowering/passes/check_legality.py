"""CheckLegality: the default pipeline's last pass; it owns the diagnostics of lowered programs.

The passes before it rewrite what they own and reject what they cannot rewrite. What remains is
whether a lowered program can be *built*: whether each CHIP orchestration has a generated C++
form (:mod:`pypto_build.lowering.legality.chip_orchestration`), each kernel it submits a source
or a builtin package for the build's chips (:mod:`pypto_build.lowering.legality.kernels`), and
each HOST orchestrator a run-time binding of its windows
(:mod:`pypto_build.lowering.analysis.host_windows`). Checking it here, rather than where each
backend meets it, is what makes ``pypto-build lower --after all`` refuse exactly the programs a
render refuses, with the same message; the backends then raise internal errors only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pypto_build.lowering.analysis.host_windows import HostWindows
from pypto_build.lowering.diagnostics import Span
from pypto_build.lowering.ir import Function, GlobalVar, Program
from pypto_build.lowering.ir.walk import walk_calls
from pypto_build.lowering.legality.chip_orchestration import (
    called_kernels,
    check_chip_orchestration,
)
from pypto_build.lowering.legality.kernels import check_kernel
from pypto_build.lowering.legality.output_names import check_output_name
from pypto_build.lowering.pass_names import CHECK_LEGALITY
from pypto_build.lowering.passes.base import Pass, Property


@dataclass(frozen=True)
class CheckLegality(Pass):
    """Reject the first construct of a lowered program that a build cannot generate.

    ``chips`` are the build's target chips (empty: not known here, none refused).
    """

    name: ClassVar[str] = CHECK_LEGALITY
    requires: ClassVar[frozenset[Property]] = frozenset({Property.DIST_TENSOR_CTX_MATERIALIZED})

    chips: tuple[str, ...] = ()

    def apply(self, program: Program) -> Program:
        checked: set[str] = set()  # kernels found legal (a model's pipelines share them)
        for func in program.functions:
            if func.is_chip_orchestration:
                check_output_name(func)
                self._check_chip_orchestration(program, func, checked)
            elif func.is_host_orchestrator:
                check_output_name(func)
                HostWindows(program, func)
        return program

    def _check_chip_orchestration(
        self, program: Program, orch: Function, checked: set[str]
    ) -> None:
        """``orch`` and the kernels it calls; a kernel already checked for an earlier
        orchestration is not checked again (a kernel's legality does not depend on its
        caller, only where an error points does, and that is its first caller's call)."""
        kernels = [kernel for kernel in called_kernels(program, orch) if kernel.name not in checked]
        if kernels:
            first_calls: dict[str, Span] = {}
            for call in walk_calls(orch.body):
                if isinstance(call.op, GlobalVar):
                    first_calls.setdefault(call.op.name, call.span)
            for kernel in kernels:
                check_output_name(kernel)
                check_kernel(kernel, first_calls[kernel.name], self.chips)
                checked.add(kernel.name)
        check_chip_orchestration(program, orch)

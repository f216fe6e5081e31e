"""LowerCompositeOps: the InCore (composite) rail of the managed collectives.

Upstream, this pass expands a ``pld.tensor.*`` collective written in an InCore body into
tile-level puts and notifies inside that kernel. This tool never generates code from DSL kernel
bodies (kernels are external sources or synthesized builtins), so there is nothing to expand
into: the pass leaves the IR unchanged and only enforces the rail's rules, so that a program that
cannot work on the InCore rail is rejected here, at the call, by the pass that owns the rail —
not later by a pass that would point at the wrong cause.

Rules, on InCore-family bodies (InCore, AIC, AIV) only:

* ``pld.tensor.all_to_all_v`` runs as a single block on this rail: its ``core_num`` must be
  the compile-time constant 1 (or absent). A multi-block exchange needs the managed CHIP rail,
  which launches the builtin kernel with a synchronized block count.
* ``pld.tensor.indexed_all_to_all_v`` exists only as a managed A5 task; it has no InCore form.

The static geometry rules of the InCore expansion (target rows divisible by the signal's NR)
are not repeated here: the op's type deducer enforces them on every rail, and the verifier
re-deduces every op call between passes, so no program reaching this pass violates them.

Orchestration-like bodies (CHIP orchestrations, Graph bodies, HOST orchestrators) are deferred
untouched: their collectives belong to LowerL2TensorCollectives and the HOST rail.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.ir import Call, ConstInt, Function, Program, get_attr
from pypto_build.lowering.passes.base import Pass, Property
from pypto_build.lowering.passes.rewrite import walk_calls

ALL_TO_ALL_V = "pld.tensor.all_to_all_v"
INDEXED_ALL_TO_ALL_V = "pld.tensor.indexed_all_to_all_v"


@dataclass(frozen=True)
class LowerCompositeOps(Pass):
    name: ClassVar[str] = "LowerCompositeOps"
    produces: ClassVar[frozenset[Property]] = frozenset({Property.COMPOSITE_OPS_LOWERED})

    def apply(self, program: Program) -> Program:
        for func in program.functions:
            if func.func_type.is_kernel:
                _check_incore_body(func)
        return program


def _check_incore_body(func: Function) -> None:
    for call in walk_calls(func.body):
        if call.op == ALL_TO_ALL_V:
            _check_single_core(call)
        elif call.op == INDEXED_ALL_TO_ALL_V:
            raise ProgramError(
                f"{INDEXED_ALL_TO_ALL_V} is not supported in an InCore function: it runs only "
                "as a managed A5 URMA task of a CHIP orchestration, which has no InCore "
                "(composite) form; call it from a CHIP Orchestration function",
                call.span,
                LowerCompositeOps.name,
            )


def _check_single_core(call: Call) -> None:
    core_num = get_attr(call.kwargs, "core_num")
    if core_num is None or (isinstance(core_num, ConstInt) and core_num.value == 1):
        return
    got = str(core_num.value) if isinstance(core_num, ConstInt) else "a dynamic value"
    raise ProgramError(
        f"InCore {ALL_TO_ALL_V} requires a compile-time core_num=1, got {got}; call it from a "
        "CHIP Orchestration function to use the managed multi-AIV path",
        call.span,
        LowerCompositeOps.name,
    )

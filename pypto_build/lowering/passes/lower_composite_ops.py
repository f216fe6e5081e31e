"""LowerCompositeOps: the InCore (composite) rail of the managed collectives.

Upstream, this pass expands a ``pld.tensor.*`` collective written in an InCore body into
tile-level puts and notifies inside that kernel. This tool never generates code from DSL kernel
bodies (kernels are external sources or synthesized builtins), so there is nothing to expand
into: the pass leaves the IR unchanged and only enforces the rail's rules, so that a program that
cannot work on the InCore rail is rejected here, at the call, by the pass that owns the rail —
not later by a pass that would point at the wrong cause.

Rules, on InCore-family bodies (InCore, AIC, AIV) only, for the collectives of builtin
packages (their manifests say which have an ``incore`` rail):

* a collective with an InCore form (``pld.tensor.all_to_all_v``) runs as a single block on this
  rail: its ``core_num`` must be the compile-time constant 1 (or absent). A multi-block exchange
  needs the managed CHIP rail, which launches the builtin kernel with a synchronized block count.
* one without (``pld.tensor.indexed_all_to_all_v``, a managed A5 task only) is rejected.

The static geometry rules of the InCore expansion (target rows divisible by the signal's NR)
are not repeated here: the op's type deducer enforces them on every rail, and the verifier
re-deduces every op call between passes, so no program reaching this pass violates them.

Orchestration-like bodies (CHIP orchestrations, Graph bodies, HOST orchestrators) are deferred
untouched: their collectives belong to LowerL2TensorCollectives and the HOST rail.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pypto_build.lowering.builtin_ops import CHIP_RAIL, HOST_RAIL, INCORE_RAIL
from pypto_build.lowering.builtin_registry import public_builtin
from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.ir import Call, ConstInt, Function, Program
from pypto_build.lowering.ir.names import Kwarg, kwarg
from pypto_build.lowering.ir.walk import walk_calls
from pypto_build.lowering.pass_names import LOWER_COMPOSITE_OPS
from pypto_build.lowering.passes.base import Pass, Property


@dataclass(frozen=True)
class LowerCompositeOps(Pass):
    name: ClassVar[str] = LOWER_COMPOSITE_OPS
    produces: ClassVar[frozenset[Property]] = frozenset({Property.COMPOSITE_OPS_LOWERED})

    def apply(self, program: Program) -> Program:
        for func in program.functions:
            if func.func_type.is_kernel:
                _check_incore_body(func)
        return program


def _check_incore_body(func: Function) -> None:
    for call in walk_calls(func.body):
        builtin = public_builtin(call.op) if isinstance(call.op, str) else None
        if builtin is None:
            continue
        if builtin.supports(INCORE_RAIL):
            _check_single_core(call)
            continue
        where = " or ".join(
            name
            for rail, name in (
                (CHIP_RAIL, "a CHIP Orchestration function"),
                (HOST_RAIL, "a HOST orchestrator"),
            )
            if builtin.supports(rail)
        )
        raise ProgramError(
            f"{call.op} is not supported in an InCore function: it runs only as a managed "
            f"task of its builtin package, which has no InCore (composite) form; call it from "
            f"{where}",
            call.span,
            LowerCompositeOps.name,
        )


def _check_single_core(call: Call) -> None:
    core_num = kwarg(call, Kwarg.CORE_NUM)
    if core_num is None or (isinstance(core_num, ConstInt) and core_num.value == 1):
        return
    got = str(core_num.value) if isinstance(core_num, ConstInt) else "a dynamic value"
    raise ProgramError(
        f"InCore {call.op} requires a compile-time core_num=1, got {got}; call it from a "
        "CHIP Orchestration function to use the managed multi-AIV path",
        call.span,
        LowerCompositeOps.name,
    )

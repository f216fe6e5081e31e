"""Launch widths a chip's runtime will refuse, found when the tree for that chip is planned.

A sync-start task whose blocks cannot all be resident at once is refused by PyPTO's runtime
with ``SIMPLER_ERROR_REQUIRE_SYNC_START_INVALID`` (7) when it is submitted: its block count
exceeds the chip's capacity for the kernel's core type (the chip catalog's
:meth:`~pypto_build.chip_build.chips.Chip.sync_start_limit`). When the block count is a
compile-time constant (every collective's admitted width, a kernel call's ``core_num=``), that
refusal is known at build time, and the build says so.

It is a warning of the render for one chip, not a program diagnostic of the lowering: the
capacity is a fact of the chip catalog, which the lowering does not know (it must not import
``chip_build``), and the same program is right for a chip that admits the width (40 blocks run
on a3's 48 AIV and are refused on a5's 36). The lowering keeps deciding what the program
means; the chip tree that will be refused names the chip.

The host-simulation platforms admit less than the device: simpler's ``a2a3sim`` and ``a5sim``
run 8 clusters (16 AIV) whatever the chip, and so does pypto-build's simulator. A launch the
device admits but the simulation does not gets a warning of its own: the tree is right for the
NPU, and neither simulator can run it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pypto_build.chip_build.chips import Chip, CoreType
from pypto_build.chip_build.orchestration_codegen import kernel_core_types
from pypto_build.lowering.diagnostics import Span
from pypto_build.lowering.ir import (
    Attrs,
    Call,
    ConstBool,
    ConstInt,
    GlobalVar,
    Program,
    SeqStmts,
    get_attr,
)
from pypto_build.lowering.ir.memo import per_node
from pypto_build.lowering.ir.names import CallAttr
from pypto_build.lowering.ir.walk import walk_calls

#: The runtime's refusal, as it spells it.
SYNC_START_REFUSAL = "SIMPLER_ERROR_REQUIRE_SYNC_START_INVALID (7)"


@dataclass(frozen=True)
class BuildWarning:
    """Something the build found that will fail later, located in the program."""

    span: Span
    message: str

    def render(self) -> str:
        """``path:line:col: warning: message``, as a compiler prints a warning."""
        return f"{self.span}: warning: {self.message}"


def launch_warnings(program: Program, chip: Chip) -> Iterator[BuildWarning]:
    """A warning for each call of a CHIP orchestration of ``program`` whose constant
    sync-start launch is wider than ``chip`` admits for the kernel's core type."""
    for orch in program.functions:
        if not orch.is_chip_orchestration:
            continue
        for call, blocks in _sync_start_launches(orch.body):
            assert isinstance(call.op, GlobalVar)
            kernel = program.function(call.op.name)
            if kernel is None:
                continue
            # AIV-only tasks are bounded by the AIV count, every other shape (AIC, a MIX
            # cluster) by the cluster count, which is the AIC count.
            aiv_only = kernel_core_types(kernel) == (CoreType.AIV,)
            core_type = CoreType.AIV if aiv_only else CoreType.AIC
            limit = chip.sync_start_limit(core_type)
            simulated = chip.sync_start_limit(core_type, simulated=True)
            launch = f"kernel '{kernel.name}' is launched with {blocks} blocks and sync_start"
            if blocks > limit:
                yield BuildWarning(
                    call.span,
                    f"{launch}, more than chip {chip.name} ({chip.soc}) admits: its "
                    f"{core_type.value.upper()} capacity is {limit}, so PyPTO's runtime refuses "
                    "the task with "
                    f"{SYNC_START_REFUSAL}",
                )
            elif blocks > simulated:
                yield BuildWarning(
                    call.span,
                    f"{launch}: chip {chip.name} ({chip.soc}) admits {limit}, but its host "
                    f"simulation {chip.sim_platform} runs {simulated} "
                    f"{core_type.value.upper()} cores, so PyPTO's {chip.sim_platform} and "
                    f"pypto-build's simulator refuse the task with {SYNC_START_REFUSAL}",
                )


@per_node
def _sync_start_launches(body: SeqStmts) -> tuple[tuple[Call, int], ...]:
    """The function calls of ``body`` launched with sync_start on a constant block count
    above one, with that count: what each chip's tree compares with its capacity, so a
    program's calls are scanned once, not once per chip (:mod:`~pypto_build.lowering.ir.memo`)."""
    found: list[tuple[Call, int]] = []
    for call in walk_calls(body):
        if not isinstance(call.op, GlobalVar):
            continue
        blocks = _constant(get_attr(call.attrs, CallAttr.CORE_NUM))
        if blocks is not None and blocks > 1 and _sync_start(call.attrs):
            found.append((call, blocks))
    return tuple(found)


def _constant(value: object) -> int | None:
    if isinstance(value, ConstInt):
        return value.value
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _sync_start(attrs: Attrs) -> bool:
    value = get_attr(attrs, CallAttr.SYNC_START)
    return value is True or (isinstance(value, ConstBool) and value.value)

"""CheckPairwiseDistinctWindows: the window operands of one collective are distinct allocations.

A builtin collective kernel writes its peers' windows with remote puts and notifies while it
still reads its own. Two ``pld.window`` views over the same ``pld.alloc_window_buffer`` are
therefore a cross-process data race even when they are different expressions (the type deducer
only rejects ``input`` being the very same expression as ``target``). Only a pass that sees the
allocations can tell: windows record the name of the buffer they view, and on the HOST rail
every operand is a view of a buffer allocated in the same function.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pypto_build.lowering.diagnostics import ProgramError, Span


@dataclass(frozen=True)
class WindowOperand:
    """One window operand of a collective: its role, the buffer it views, where it is written."""

    role: str
    buffer: str
    span: Span


def check_pairwise_distinct_windows(op: str, operands: Sequence[WindowOperand], phase: str) -> None:
    """Reject the first pair ``i < j`` (in operand order) viewing the same buffer, at operand
    ``j``: the second view is the one that introduces the alias."""
    for index, first in enumerate(operands):
        for second in operands[index + 1 :]:
            if first.buffer == second.buffer:
                raise ProgramError(
                    f"{op} {first.role} and {second.role} must be different window allocations "
                    "(two pld.window views over the same alloc_window_buffer are a "
                    "cross-process data race under in-kernel TPUT/notify)",
                    second.span,
                    phase,
                )

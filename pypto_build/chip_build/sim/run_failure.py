"""How a simulated run fails: the runtime's error codes, what each dispatch did, and the error a
run raises.

Codes and names are the device runtime's (hw-native-sys/simpler at 6ebaf77,
``src/a2a3/runtime/tensormap_and_ringbuffer/common/pto_runtime_status.h``), so a failure reads the
same in the simulator as on hardware: the first code a rank latches wins, and the run fails on every
rank that latched one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pypto_build.chip_build.sim.runtime import KERNEL_CRASHED, RUN_REFUSED, UNORDERED_ACCESS
from pypto_build.errors import PyptoError

if TYPE_CHECKING:
    from pypto_build.chip_build.sim.result import SimResult

SIMPLER_ERROR_INVALID_ARGS = 5
SIMPLER_ERROR_REQUIRE_SYNC_START_INVALID = 7
SIMPLER_ERROR_SCHEDULER_TIMEOUT = 100

#: Names of the runtime's error codes (orchestrator 1-11, scheduler 100+) and the simulator's own
#: (negative: what no device runtime code describes).
ERROR_NAMES: dict[int, str] = {
    RUN_REFUSED: "RUN_REFUSED",
    KERNEL_CRASHED: "KERNEL_CRASHED",
    UNORDERED_ACCESS: "UNORDERED_ACCESS",
    1: "SIMPLER_ERROR_SCOPE_DEADLOCK",
    2: "SIMPLER_ERROR_HEAP_RING_DEADLOCK",
    3: "SIMPLER_ERROR_FLOW_CONTROL_DEADLOCK",
    4: "SIMPLER_ERROR_DEP_POOL_OVERFLOW",
    SIMPLER_ERROR_INVALID_ARGS: "SIMPLER_ERROR_INVALID_ARGS",
    SIMPLER_ERROR_REQUIRE_SYNC_START_INVALID: "SIMPLER_ERROR_REQUIRE_SYNC_START_INVALID",
    8: "SIMPLER_ERROR_TENSOR_WAIT_TIMEOUT",
    9: "SIMPLER_ERROR_EXPLICIT_ORCH_FATAL",
    10: "SIMPLER_ERROR_SCOPE_TASKS_OVERFLOW",
    11: "SIMPLER_ERROR_TENSORMAP_OVERFLOW",
    SIMPLER_ERROR_SCHEDULER_TIMEOUT: "SIMPLER_ERROR_SCHEDULER_TIMEOUT",
    101: "SIMPLER_ERROR_ASYNC_COMPLETION_INVALID",
    102: "SIMPLER_ERROR_ASYNC_WAIT_OVERFLOW",
    103: "SIMPLER_ERROR_ASYNC_REGISTRATION_FAILED",
    104: "SIMPLER_ERROR_READY_QUEUE_OVERFLOW",
}


def error_name(code: int) -> str:
    return ERROR_NAMES.get(code, f"error {code}")


@dataclass(frozen=True)
class DispatchRecord:
    """What one chip dispatch did on its rank."""

    rank: int
    #: Its position among the rank's dispatches.
    index: int
    next_level: str
    #: 0, the latched error code, or RUN_REFUSED.
    code: int
    message: str
    #: Kernel tasks it started.
    tasks: int
    #: Timing lines and reported errors.
    log: tuple[str, ...]
    #: Not run: its rank had already failed.
    skipped: bool
    #: Wall time the dispatch took on its rank's thread, orchestration and tasks (0 skipped): a
    #: simulated run's timings show where it waits, not how fast a chip would be.
    seconds: float = 0.0


@dataclass(frozen=True)
class RankError:
    """The failure of one rank: the first error it latched."""

    rank: int
    #: The latched runtime error code, or :data:`RUN_REFUSED` for a run the runtime refused
    #: before its orchestration started (too few arguments).
    code: int
    message: str
    #: The sub-build whose dispatch failed (``next_levels/<name>``).
    next_level: str

    @property
    def status(self) -> int:
        """The run status as upstream's host sees it: the negated code."""
        return self.code if self.code < 0 else -self.code

    def __str__(self) -> str:
        return (
            f"rank {self.rank}: {error_name(self.code)} ({self.code}) in {self.next_level}: "
            f"{self.message}"
        )


class SimulationError(PyptoError, RuntimeError):
    """A simulated run failed; :attr:`ranks` holds each failed rank's first error,
    :attr:`dispatches` what every dispatch had done by then and :attr:`result`, when the run
    got as far as its program, the tensors and windows as the failure left them: what a user
    debugging the failure looks at first."""

    def __init__(
        self, ranks: Sequence[RankError], dispatches: Sequence[DispatchRecord] = ()
    ) -> None:
        self.ranks = tuple(sorted(ranks, key=lambda error: error.rank))
        self.dispatches = tuple(dispatches)
        #: The run's partial result (set by the run that raised this).
        self.result: SimResult | None = None
        lines = [f"simulation failed on {len(self.ranks)} rank(s):"]
        lines += [f"  {error}" for error in self.ranks]
        super().__init__("\n".join(lines))

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled with its ranks, dispatches and result: a worker process sends it whole."""
        return (SimulationError, (self.ranks, self.dispatches), {"result": self.result})

    @property
    def codes(self) -> dict[int, int]:
        """The error code of each failed rank."""
        return {error.rank: error.code for error in self.ranks}

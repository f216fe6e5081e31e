"""Run a built program on P simulated ranks on the CPU: NumPy arrays in, NumPy arrays out.

A kernel developer without an NPU builds a program with the ``sim`` toolchain and runs it here,
with the same kernel sources that ship to hardware::

    from pypto_build import sim

    result = sim.run("build", chip="a3", ranks=4, inputs={"inp": x})
    result["out"]            # every tensor parameter, as the run left it
    result.windows["stage"]  # every window, by the name the program gave it, per rank
    result.dispatches        # what each rank's chip dispatches did (codes, tasks, wall time)

A program is the tree's HOST orchestrator (``<chip>/orchestration/host_orch.py``, the module
PyPTO's runtime runs, whose ``distributed_meta.json`` declares every parameter's shape, element
type and direction), or, with ``program=`` naming it, one of its chip orchestrations, which runs
on every rank without a HOST orchestrator: the simulator allocates the windows its
``DistributedTensor`` parameters need (one comm domain over all ranks, each window shaped as its
parameter) and dispatches it once per rank. A tree without a HOST orchestrator runs its only
chip orchestration.

Inputs are given by name: every ``In`` and ``InOut`` tensor and every scalar; an ``Out`` tensor
may be left out (it starts zero-filled) or given as its initial contents, and so may a chip
orchestration's window (it starts zeroed, as allocated). A HOST orchestrator's tensors are host
memory, as in upstream's simulator: every rank's dispatch of a host tensor sees the same array,
so a program gives each rank its own region by slicing (``inp[r]``). A chip orchestration's
ranks each have their own tensors: an input with a leading axis of ``ranks`` gives rank r its
``[r]``, one of the parameter's own shape gives every rank the same; every tensor comes back
with the rank axis. Inputs are checked before anything runs (:class:`InputError`, a
``ValueError`` naming every problem, one per line, its ``problems`` the lines). A failed run
raises :class:`SimulationError` with each failed rank's error code and message, and its
``result``: the tensors and windows as the failure left them. A tree that
differs from its ``manifest.json`` (a file changed, removed or added since the build) is not
opened: :class:`BuildTreeError` names each file. A rank count other than the one the program's
windows were sized for is refused before anything runs (:class:`RankCountError`, a
``ValueError``).

The ranks run in a worker process, so a kernel that segfaults, aborts, throws or calls ``exit``
fails the run instead of ending the caller's process: the :class:`SimulationError` names the
rank, the sub-build, the kernel and block, and the signal, exception or exit status
(:data:`KERNEL_CRASHED`), and threads a timed-out run abandoned end with their worker. Results are
the same as those of a run in the caller's process (``isolate=False``, for a debugger).

Tasks are ordered as PyPTO's runtime orders them, and no further: by their explicit
dependencies, their tensors' creators and the TensorMap's producer lookups. A task that reads or
writes what an earlier task wrote or read, with nothing of those ordering the two, races on the
runtime; here it fails the run before it starts (:data:`UNORDERED_ACCESS`, naming both tasks).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

try:
    import numpy  # noqa: F401  (the first import of NumPy, so its absence reads as below)
except ImportError as exc:  # numpy is the [sim] extra: a build environment goes without it
    raise ImportError("pypto_build.sim needs NumPy: pip install 'pypto-build[sim]'") from exc
import numpy.typing as npt

from pypto_build.chip_build.distributed_meta import Parameter
from pypto_build.chip_build.runtime_types import DataType
from pypto_build.chip_build.sim.arguments import InputError
from pypto_build.chip_build.sim.isolation import run_isolated
from pypto_build.chip_build.sim.l3 import DomainSnapshot
from pypto_build.chip_build.sim.launch import RankCountError, execute, prepare
from pypto_build.chip_build.sim.program import (
    BuildTreeError,
    ChipBuild,
    HostOrchestrator,
    SubBuild,
    open_chip_build,
)
from pypto_build.chip_build.sim.result import SimResult
from pypto_build.chip_build.sim.run_failure import (
    SIMPLER_ERROR_INVALID_ARGS,
    SIMPLER_ERROR_REQUIRE_SYNC_START_INVALID,
    SIMPLER_ERROR_SCHEDULER_TIMEOUT,
    DispatchRecord,
    RankError,
    SimulationError,
    error_name,
)
from pypto_build.chip_build.sim.runtime import KERNEL_CRASHED, RUN_REFUSED, UNORDERED_ACCESS
from pypto_build.chip_build.sim.world import TIMEOUT_ENV, Timeouts

__all__ = [
    "KERNEL_CRASHED",
    "RUN_REFUSED",
    "SIMPLER_ERROR_INVALID_ARGS",
    "SIMPLER_ERROR_REQUIRE_SYNC_START_INVALID",
    "SIMPLER_ERROR_SCHEDULER_TIMEOUT",
    "TIMEOUT_ENV",
    "UNORDERED_ACCESS",
    "BuildTreeError",
    "DataType",
    "DispatchRecord",
    "DomainSnapshot",
    "InputError",
    "Parameter",
    "ProgramKind",
    "RankCountError",
    "RankError",
    "SimProgram",
    "SimResult",
    "SimulationError",
    "error_name",
    "run",
]

#: Most ranks one comm domain holds (COMM_MAX_RANK_NUM).
MAX_RANKS = 64

#: What a program is: a HOST orchestrator, or a chip orchestration run on every rank.
ProgramKind = Literal["host", "chip"]


class SimProgram:
    """One program of a compiled chip tree, ready to run on simulated ranks: its HOST
    orchestrator or one of its chip orchestrations."""

    def __init__(self, build: ChipBuild, program: HostOrchestrator | SubBuild) -> None:
        self.build = build
        self.program = program

    @classmethod
    def open(
        cls, build_dir: str | Path, *, chip: str | None = None, program: str | None = None
    ) -> SimProgram:
        """Program ``program`` of ``build_dir``'s tree for ``chip`` (the only chip if None;
        ``build_dir`` may also be the chip tree itself): the HOST orchestrator of that name,
        else the chip orchestration; without a name, the tree's HOST orchestrator, else its
        only chip orchestration."""
        build = open_chip_build(Path(build_dir), chip)
        return cls(build, build.program(program))

    @property
    def name(self) -> str:
        return self.program.name

    @property
    def kind(self) -> ProgramKind:
        return "host" if isinstance(self.program, HostOrchestrator) else "chip"

    @property
    def parameters(self) -> tuple[Parameter, ...]:
        """The parameters a run takes, in declaration order (a chip orchestration's windows as
        tensors, its comm contexts left out: the run supplies them)."""
        if isinstance(self.program, HostOrchestrator):
            return self.program.parameters
        return tuple(p.parameter() for p in self.program.params if p.kind != "comm_context")

    @property
    def windows(self) -> tuple[str, ...]:
        """The parameters that are windows (a chip orchestration's ``DistributedTensor``s)."""
        if isinstance(self.program, HostOrchestrator):
            return ()
        return tuple(p.name for p in self.program.params if p.kind == "window")

    def run(
        self,
        inputs: Mapping[str, npt.ArrayLike],
        *,
        ranks: int,
        timeout: float | None = None,
        isolate: bool = True,
    ) -> SimResult:
        """Run on ``ranks`` simulated ranks. ``inputs`` gives the parameters by name, ``Out``
        tensors and windows optional (see the module; arrays are copied, never modified);
        ``timeout`` is the seconds one kernel wait may take (default
        ``$PYPTO_SIM_TIMEOUT_S``, else 10). ``isolate=False`` runs the ranks in this process,
        where a debugger or profiler attached to it sees the kernels, and where a crashing
        kernel ends it."""
        if not 1 <= ranks <= MAX_RANKS:
            raise ValueError(f"ranks must be in [1, {MAX_RANKS}], got {ranks}")
        timeouts = Timeouts.from_environment() if timeout is None else Timeouts(timeout)
        launch = prepare(self.build, self.program, inputs, ranks, timeouts)
        return run_isolated(launch) if isolate else execute(launch)


def run(
    build_dir: str | Path,
    *,
    ranks: int,
    inputs: Mapping[str, npt.ArrayLike],
    chip: str | None = None,
    program: str | None = None,
    timeout: float | None = None,
    isolate: bool = True,
) -> SimResult:
    """Run program ``program`` of ``build_dir`` for ``chip`` on ``ranks`` simulated ranks (see
    :class:`SimProgram`)."""
    return SimProgram.open(build_dir, chip=chip, program=program).run(
        inputs, ranks=ranks, timeout=timeout, isolate=isolate
    )

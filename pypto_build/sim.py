"""Run a built program on P simulated ranks on the CPU: NumPy arrays in, NumPy arrays out.

A kernel developer without an NPU builds a program with the ``sim`` toolchain and runs it here,
with the same kernel sources that ship to hardware (DESIGN §1, §8)::

    from pypto_build import sim

    result = sim.run("build", chip="a3", ranks=4, inputs={"inp": x})
    result["out"]            # every tensor parameter, as the run left it
    result.dispatches        # what each rank's chip dispatches did (codes, tasks, timing lines)

The program runs through its HOST orchestrator (``<chip>/orchestration/host_orch.py``, the module
PyPTO's runtime runs), whose ``distributed_meta.json`` declares every parameter's shape, element
type and direction. Inputs are
given by name: every ``In`` and ``InOut`` tensor and every scalar; an ``Out`` tensor may be left
out (it starts zero-filled) or given as its initial contents. They are checked against the
parameters before anything runs (:class:`InputError`, a ``ValueError``), and every tensor
parameter comes back by name. Host memory is device memory here, as in upstream's simulator:
every rank's dispatch of a host tensor sees the same array, so a program gives each rank its own
region by slicing (``inp[r]``). A failed run raises :class:`SimulationError` with each failed
rank's error code and message. A tree that differs from its ``manifest.json`` (a file changed,
removed or added since the build) is not opened: :class:`BuildTreeError` names each file.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

try:
    import numpy as np
except ImportError as exc:  # numpy is the [sim] extra: a build environment goes without it
    raise ImportError("pypto_build.sim needs NumPy: pip install 'pypto-build[sim]'") from exc
import numpy.typing as npt

from pypto_build.chip_build.distributed_meta import Parameter
from pypto_build.chip_build.runtime_types import DataType
from pypto_build.chip_build.sim.arguments import InputError, bind_arguments
from pypto_build.chip_build.sim.errors import (
    SIMPLER_ERROR_INVALID_ARGS,
    SIMPLER_ERROR_REQUIRE_SYNC_START_INVALID,
    SIMPLER_ERROR_SCHEDULER_TIMEOUT,
    DispatchRecord,
    RankError,
    SimulationError,
    error_name,
)
from pypto_build.chip_build.sim.host_env import allocate_intermediates, entry_of
from pypto_build.chip_build.sim.l3 import (
    CallConfig,
    DomainSnapshot,
    SimNextLevel,
    SimOrchestrator,
)
from pypto_build.chip_build.sim.program import (
    BuildTreeError,
    ChipBuild,
    HostOrchestrator,
    open_chip_build,
)
from pypto_build.chip_build.sim.runtime import RUN_REFUSED, load_runtime
from pypto_build.chip_build.sim.world import TIMEOUT_ENV, Timeouts, World

__all__ = [
    "RUN_REFUSED",
    "SIMPLER_ERROR_INVALID_ARGS",
    "SIMPLER_ERROR_REQUIRE_SYNC_START_INVALID",
    "SIMPLER_ERROR_SCHEDULER_TIMEOUT",
    "TIMEOUT_ENV",
    "BuildTreeError",
    "DataType",
    "DispatchRecord",
    "DomainSnapshot",
    "InputError",
    "Parameter",
    "RankError",
    "SimProgram",
    "SimResult",
    "SimulationError",
    "error_name",
    "run",
]

#: Most ranks one comm domain holds (COMM_MAX_RANK_NUM).
MAX_RANKS = 64


class SimResult(Mapping[str, npt.NDArray[np.generic]]):
    """The tensor parameters as a finished run left them, by name, and how it ran."""

    def __init__(
        self,
        tensors: Mapping[str, npt.NDArray[np.generic]],
        dispatches: tuple[DispatchRecord, ...],
        domains: tuple[DomainSnapshot, ...],
    ) -> None:
        self._tensors = dict(tensors)
        #: Every chip dispatch, by rank and order: its error code, tasks and timing lines.
        self.dispatches = dispatches
        #: Each comm domain's windows as its scope left them, in the order the scopes ended.
        self.domains = domains

    def __getitem__(self, name: str) -> npt.NDArray[np.generic]:
        return self._tensors[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)

    def domain(self, name: str) -> DomainSnapshot:
        """The last snapshot of comm domain ``name``."""
        for snapshot in reversed(self.domains):
            if snapshot.name == name:
                return snapshot
        known = ", ".join(snapshot.name for snapshot in self.domains) or "none"
        raise KeyError(f"no comm domain '{name}' in this run (domains: {known})")


class SimProgram:
    """One HOST orchestrator of a compiled chip tree, ready to run on simulated ranks."""

    def __init__(self, build: ChipBuild, host: HostOrchestrator) -> None:
        self.build = build
        self.host = host

    @classmethod
    def open(
        cls, build_dir: str | Path, *, chip: str | None = None, program: str | None = None
    ) -> SimProgram:
        """The HOST orchestrator ``program`` (the only one if None) of ``build_dir``'s tree for
        ``chip`` (the only chip if None; ``build_dir`` may also be the chip tree itself)."""
        build = open_chip_build(Path(build_dir), chip)
        return cls(build, build.host(program))

    @property
    def parameters(self) -> tuple[Parameter, ...]:
        """The HOST orchestrator's parameters, in declaration order."""
        return self.host.parameters

    def run(
        self,
        inputs: Mapping[str, npt.ArrayLike],
        *,
        ranks: int,
        timeout: float | None = None,
    ) -> SimResult:
        """Run on ``ranks`` simulated ranks. ``inputs`` gives the parameters by name, ``Out``
        tensors optional (see the module; arrays are copied, never modified); ``timeout`` is the
        seconds one kernel wait may take (default ``$PYPTO_SIM_TIMEOUT_S``, else 10)."""
        if not 1 <= ranks <= MAX_RANKS:
            raise ValueError(f"ranks must be in [1, {MAX_RANKS}], got {ranks}")
        arguments = bind_arguments(self.host.name, self.parameters, inputs)
        timeouts = Timeouts.from_environment() if timeout is None else Timeouts(timeout)
        module = self.host.load()
        entry = entry_of(module, self.host.path)
        runtime = load_runtime()
        world = World(runtime, self.build.chip, ranks, timeouts)
        callables: dict[str, SimNextLevel] = {}
        try:
            for name, sub_build in self.build.sub_builds.items():
                native = runtime.load_callable(
                    sub_build.orchestration, sub_build.entry, sub_build.kernels
                )
                callables[name] = SimNextLevel(name, native)
            orchestrator = SimOrchestrator(world)
            # As PyPTO's L3 runner calls it: the parameters by name, then the intermediates.
            tensors = arguments.values()
            allocate_intermediates(module, tensors, ranks)
            keep: list[object] = []
            entry(
                orchestrator,
                None,
                CallConfig(),
                tensors=tensors,
                callables=callables,
                sub_ids={},
                _keep=keep,
                world_size=ranks,
            )
            world.fence()
        finally:
            world.close([next_level.native for next_level in callables.values()])
        return SimResult(arguments.tensors, world.records(), tuple(orchestrator.snapshots))


def run(
    build_dir: str | Path,
    *,
    ranks: int,
    inputs: Mapping[str, npt.ArrayLike],
    chip: str | None = None,
    program: str | None = None,
    timeout: float | None = None,
) -> SimResult:
    """Run HOST orchestrator ``program`` of ``build_dir`` for ``chip`` on ``ranks`` simulated
    ranks (see :class:`SimProgram`)."""
    return SimProgram.open(build_dir, chip=chip, program=program).run(
        inputs, ranks=ranks, timeout=timeout
    )

"""Running a program of a chip tree on P simulated ranks: a HOST orchestrator as PyPTO's L3 runner
runs it, or one chip orchestration dispatched once on every rank.

Both go through the same world (:mod:`.world`) and the same L3 objects (:mod:`.l3`): a chip
orchestration run without a HOST orchestrator is driven as a generated HOST orchestrator would
drive it, so its windows are a comm domain made by ``allocate_domain`` (one over all P ranks,
one buffer per window parameter, shaped and typed as the parameter, padded as the HOST codegen
pads buffers, then the tail a builtin kernel's simulation keeps state in) and its dispatches
are ``submit_next_level`` calls with ``TaskArgs``. Nothing of the domain, context or dispatch
machinery exists twice.

A run is prepared, then executed. :func:`prepare` checks everything that can be checked before
anything runs (the rank count against the one the program was sized for, the inputs against its
parameters) and returns a :class:`Launch`, which holds all a run needs and pickles; :func:`execute`
runs it, in this process or in a worker process (:mod:`.isolation`), which makes no difference
to its result. A run that fails (a rank latched an error, the run hung) raises
:class:`SimulationError` with its :attr:`~SimulationError.result` set: the tensors and windows as
the failure left them.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pypto_build.chip_build.host_orch_codegen import WINDOW_ALIGNMENT
from pypto_build.chip_build.kernel_config import OrchestrationParam
from pypto_build.chip_build.runtime_types import DataType, ScalarValue, TensorArgType
from pypto_build.chip_build.sim.arguments import (
    BoundArguments,
    bind_arguments,
    bind_rank_arguments,
)
from pypto_build.chip_build.sim.host_env import allocate_intermediates, entry_of
from pypto_build.chip_build.sim.l3 import (
    OPAQUE,
    CallConfig,
    CommBufferSpec,
    SimDomain,
    SimNextLevel,
    SimOrchestrator,
    TaskArgs,
    layout_buffers,
    make_tensor_arg,
)
from pypto_build.chip_build.sim.program import ChipBuild, HostOrchestrator, SubBuild
from pypto_build.chip_build.sim.result import SimResult
from pypto_build.chip_build.sim.run_failure import SimulationError
from pypto_build.chip_build.sim.runtime import load_runtime, window_stride
from pypto_build.chip_build.sim.shared import Segment, stack
from pypto_build.chip_build.sim.tensors import NUMPY_DTYPES, SimTensor
from pypto_build.chip_build.sim.world import DispatchListener, Timeouts, World
from pypto_build.errors import PyptoUsageError
from pypto_build.lowering.builtin_registry import builtin_ops
from pypto_build.lowering.ir import ParamDirection

#: The comm domain of a chip orchestration's windows: the name a HOST orchestrator's single
#: world domain has.
CHIP_DOMAIN = "d0"


class RankCountError(PyptoUsageError, ValueError):
    """A run asked for another rank count than the program's windows were sized for."""


@dataclass(frozen=True)
class Launch:
    """A run, checked and ready: the program, its bound arguments, its ranks and time limits."""

    build: ChipBuild
    program: HostOrchestrator | SubBuild
    ranks: int
    timeouts: Timeouts
    #: A HOST orchestrator's arguments (one), or each rank's for a chip orchestration.
    arguments: tuple[BoundArguments, ...]
    #: A chip orchestration's windows, every rank's one after another, holding their given
    #: contents (so a launch runs once); None for a program without windows.
    windows: Segment | None = None
    #: Seconds spent setting up :attr:`windows` (allocating and filling every rank's).
    window_setup_seconds: float = 0.0


def prepare(
    build: ChipBuild,
    program: HostOrchestrator | SubBuild,
    inputs: Mapping[str, npt.ArrayLike],
    ranks: int,
    timeouts: Timeouts,
) -> Launch:
    """Check a run of ``program`` on ``ranks`` ranks with ``inputs`` and bind its arguments
    (see the module); raises :class:`RankCountError` or :class:`InputError` before anything
    runs."""
    _check_rank_count(program, ranks)
    arguments: tuple[BoundArguments, ...]
    if isinstance(program, HostOrchestrator):
        arguments = (bind_arguments(program.name, program.parameters, inputs),)
    else:
        params = program.params
        arguments = bind_rank_arguments(
            program.name,
            [param.parameter() for param in params if param.kind != "comm_context"],
            inputs,
            ranks,
            {param.name for param in params if param.kind == "window"},
        )
        windows = _chip_windows(program)
        if windows:
            started = time.perf_counter()
            memory = _fill(windows, arguments, ranks)
            setup = time.perf_counter() - started
            return Launch(build, program, ranks, timeouts, arguments, memory, setup)
    return Launch(build, program, ranks, timeouts, arguments)


def _check_rank_count(program: HostOrchestrator | SubBuild, ranks: int) -> None:
    """Refuse ``ranks`` other than those ``program`` was sized for: a HOST orchestrator's
    devices (``distributed_meta.json``, what PyPTO's runtime runs it on, which pypto-build sizes
    by its collectives' NR), a chip orchestration's collectives' NR (``kernel_config.py``).
    Windows sized for NR ranks on another rank count would have kernels place rows at the wrong
    offsets, or skip ranks, without an error."""
    if isinstance(program, HostOrchestrator):
        sized_for, where = program.world_size, "distributed_meta.json lists its devices"
    elif program.ranks is not None:
        sized_for, where = program.ranks, "kernel_config.py: its collectives' NR"
    else:
        return
    if ranks != sized_for:
        raise RankCountError(
            f"{program.name} was built for {sized_for} ranks ({where}); it cannot run on "
            f"{ranks}: its windows are sized for {sized_for} (run it on {sized_for} ranks, or "
            "build the program for the rank count you need)"
        )


def execute(launch: Launch, listener: DispatchListener | None = None) -> SimResult:
    """Run ``launch`` in this process; ``listener`` hears of each dispatch as it starts and
    finishes."""
    if isinstance(launch.program, HostOrchestrator):
        return _run_host(launch, launch.program, listener)
    return _run_chip(launch, launch.program, listener)


@contextlib.contextmanager
def _session(
    launch: Launch, sub_builds: Iterable[SubBuild], listener: DispatchListener | None
) -> Iterator[tuple[SimOrchestrator, dict[str, SimNextLevel]]]:
    """A world of the launch's rank threads with ``sub_builds`` loaded, closed afterwards."""
    runtime = load_runtime()
    world = World(runtime, launch.build.chip, launch.ranks, launch.timeouts, listener)
    callables: dict[str, SimNextLevel] = {}
    try:
        for sub_build in sub_builds:
            native = runtime.load_callable(
                sub_build.orchestration, sub_build.entry, sub_build.kernels
            )
            callables[sub_build.name] = SimNextLevel(sub_build.name, native)
        yield SimOrchestrator(world), callables
    finally:
        world.close([next_level.native for next_level in callables.values()])


def _finish(
    orchestrator: SimOrchestrator, body: Callable[[], None], result: Callable[[], SimResult]
) -> SimResult:
    """Run ``body``, wait for every dispatch, and return ``result()``; a failure raises with
    ``result()`` as far as the run got."""
    try:
        body()
        orchestrator.world.fence()
    except SimulationError as failure:
        failure.result = result()
        raise
    return result()


def _run_host(
    launch: Launch, host: HostOrchestrator, listener: DispatchListener | None
) -> SimResult:
    """Run HOST orchestrator ``host`` as PyPTO's L3 runner calls it: the parameters by name,
    the intermediates, then the marked entry."""
    (arguments,) = launch.arguments
    ranks = launch.ranks
    module = host.load()
    entry = entry_of(module, host.path)
    sub_builds = launch.build.sub_builds.values()
    with _session(launch, sub_builds, listener) as (orch, callables):
        tensors = arguments.values()

        def body() -> None:
            allocate_intermediates(module, tensors, ranks)
            entry(
                orch,
                None,
                CallConfig(),
                tensors=tensors,
                callables=callables,
                sub_ids={},
                _keep=[],
                world_size=ranks,
            )

        def result() -> SimResult:
            # The run's own arrays (bound copies of the inputs), which no dispatch uses any more;
            # copies when threads of an abandoned run may still write them.
            abandoned = orch.world.abandoned
            left = {
                name: array.copy() if abandoned else array
                for name, array in arguments.tensors.items()
            }
            return SimResult(left, orch.world.records(), tuple(orch.snapshots))

        return _finish(orch, body, result)


@dataclass(frozen=True)
class _Window:
    """A window parameter of a chip orchestration: its buffer in the run's comm domain."""

    param: OrchestrationParam

    @property
    def dtype(self) -> DataType:
        return _element_type(self.param)

    @property
    def nbytes(self) -> int:
        return math.prod(self.param.shape) * NUMPY_DTYPES[self.dtype].itemsize

    def spec(self) -> CommBufferSpec:
        """The buffer, declared in bytes and padded as the HOST codegen declares buffers."""
        padded = -(-self.nbytes // WINDOW_ALIGNMENT) * WINDOW_ALIGNMENT
        return CommBufferSpec(self.param.name, OPAQUE, self.nbytes, padded)


def _chip_windows(sub_build: SubBuild) -> list[_Window]:
    return [_Window(param) for param in sub_build.params if param.kind == "window"]


def _buffers_size(windows: Sequence[_Window]) -> int:
    return sum(window.spec().nbytes for window in windows)


def _window_size(windows: Sequence[_Window]) -> int:
    """The window: the buffers, then the largest tail a builtin kernel's simulation keeps state
    in (``Contract.window_tail``), whatever the program's kernels: the simulator gives every
    window that tail."""
    tail = max((found.contract.window_tail for found in builtin_ops()), default=0)
    return _buffers_size(windows) + tail


def _fill(windows: Sequence[_Window], bound: Sequence[BoundArguments], ranks: int) -> Segment:
    """Every rank's windows, laid out as the run's comm domain lays them out, with the contents
    given for them (taken out of ``bound``) and zeros everywhere else (the tail too): one pass
    over the windows, in memory an earlier run may have used. Filled before any rank runs: a
    peer's first remote write must land on the initial contents, never be overwritten by them.
    The work per window is one view over every rank's copy of it and an assignment per rank
    given; the zeros are each rank's gaps between given contents, merged. Large windows are
    filled by two threads, half the ranks each: shared memory in 4 KiB pages takes about a fifth
    longer to write than an anchor's private arrays, and one thread alone does not reach the
    memory's speed. Windows too large to stay in the caches are written with streaming stores
    (:class:`_Writes`)."""
    window_size = _window_size(windows)
    layouts = layout_buffers([window.spec() for window in windows], window_size)
    buffers = _buffers_size(windows)
    stride = window_stride(window_size)
    memory = Segment.allocate(ranks * stride, zeroed=False)
    views = [
        memory.array((ranks, window.nbytes), np.uint8, layout.offset, (stride, 1))
        .view(NUMPY_DTYPES[window.dtype])
        .reshape((ranks, *window.param.shape))
        for window, layout in zip(windows, layouts, strict=True)
    ]
    given = [[arguments.tensors.pop(w.param.name, None) for w in windows] for arguments in bound]
    gaps: list[list[tuple[int, int]]] = [[] for _ in range(ranks)]
    for rank, rank_given in enumerate(given):
        for window, layout, value in zip(windows, layouts, rank_given, strict=True):
            filled = 0 if value is None else window.nbytes
            _add_gap(gaps[rank], layout.offset + filled, layout.offset + layout.nbytes)
        _add_gap(gaps[rank], buffers, stride)

    writes = _Writes(memory, streamed=ranks * stride >= _STREAMED_BYTES)

    def fill(first: int, last: int) -> None:
        for rank in range(first, last):
            for view, value in zip(views, given[rank], strict=True):
                if value is not None:
                    writes.copy(view[rank], value)
        _zero_gaps(memory, writes, stride, first, gaps[first:last])

    if ranks > 1 and ranks * stride >= _PARALLEL_FILL_BYTES:
        half = ranks // 2
        other = _filler().submit(fill, half, ranks)
        fill(0, half)
        other.result()
    else:
        fill(0, ranks)
    return memory


#: Windows of at least this many bytes in all are filled by two threads (see :func:`_fill`).
_PARALLEL_FILL_BYTES = 8 << 20
#: A gap at most this long is zeroed in every rank at once by one strided NumPy assignment; a
#: longer one by a ``memset`` per rank, which writes at the memory's speed.
_SMALL_GAP = 1 << 16
#: Windows of at least this many bytes in all are written with streaming stores: more than the
#: caches hold, so a run reads them from memory whichever stores wrote them.
_STREAMED_BYTES = 8 << 20


class _Writes:
    """How :func:`_fill` writes a window's bytes. An ordinary store to memory that is not cached
    first reads the line it writes into, so ``memset`` (glibc's, which streams nothing) and a
    copy of a rank's contents move each byte twice; ``streamed``, they go through the runtime's
    streaming stores (:meth:`~.runtime.NativeRuntime.stream_fill`), which write whole lines
    without reading them: about half the time over windows of many MiB."""

    def __init__(self, memory: Segment, *, streamed: bool) -> None:
        self._memory = memory
        self._runtime = load_runtime() if streamed else None

    def copy(self, target: npt.NDArray[np.generic], value: npt.NDArray[np.generic]) -> None:
        """``target[...] = value``; streamed for a C-contiguous array of the target's type."""
        if (
            self._runtime is not None
            and value.dtype == target.dtype
            and value.shape == target.shape
            and value.flags.c_contiguous
        ):
            self._runtime.stream_fill(target.ctypes.data, value.ctypes.data, target.nbytes)
        else:
            target[...] = value

    def zero(self, offset: int, size: int) -> None:
        """Zeros over bytes ``[offset, offset + size)`` of the windows' memory."""
        if self._runtime is None:
            self._memory.zero(offset, size)
        else:
            self._runtime.stream_fill(self._memory.address + offset, None, size)


@functools.cache
def _filler() -> concurrent.futures.ThreadPoolExecutor:
    """The second thread of :func:`_fill`, started on first use and kept."""
    return concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="pypto-sim-fill")


def _add_gap(gaps: list[tuple[int, int]], begin: int, end: int) -> None:
    """Append bytes ``[begin, end)`` of a window to ``gaps``, merged with the last one when they
    touch."""
    if begin >= end:
        return
    if gaps and gaps[-1][1] == begin:
        gaps[-1] = (gaps[-1][0], end)
    else:
        gaps.append((begin, end))


def _zero_gaps(
    memory: Segment,
    writes: _Writes,
    stride: int,
    first: int,
    gaps: Sequence[Sequence[tuple[int, int]]],
) -> None:
    """Zero the ``gaps`` (byte ranges of a window, ``stride`` bytes apart) of ranks ``first``,
    ``first + 1``, ..."""
    if all(rank_gaps == gaps[0] for rank_gaps in gaps):
        rows = memory.array((len(gaps), stride), np.uint8, first * stride)
        for begin, end in gaps[0]:
            if end - begin <= _SMALL_GAP:
                rows[:, begin:end] = 0
            else:
                for rank in range(first, first + len(gaps)):
                    writes.zero(rank * stride + begin, end - begin)
        return
    for rank, rank_gaps in enumerate(gaps, first):
        for begin, end in rank_gaps:
            writes.zero(rank * stride + begin, end - begin)


def _run_chip(launch: Launch, sub_build: SubBuild, listener: DispatchListener | None) -> SimResult:
    """Dispatch chip orchestration ``sub_build`` once on each of the launch's ranks, each with
    its own arguments, its window parameters in one comm domain over all ranks (see the
    module). Every tensor parameter comes back with a leading rank axis; the windows also under
    :attr:`SimResult.windows`."""
    params = sub_build.params
    windows = _chip_windows(sub_build)
    bound, ranks = launch.arguments, launch.ranks
    specs = [window.spec() for window in windows]
    with _session(launch, [sub_build], listener) as (orch, callables):
        next_level = callables[sub_build.name]

        def body() -> None:
            if not windows:
                _dispatch(orch, next_level, params, bound, None)
                return
            with orch.allocate_domain(
                name=CHIP_DOMAIN,
                workers=range(ranks),
                window_size=_window_size(windows),
                buffers=specs,
                memory=launch.windows,
            ) as domain:
                _dispatch(orch, next_level, params, bound, domain)

        def result() -> SimResult:
            snapshot = orch.snapshots[0] if orch.snapshots else None
            tensors: dict[str, npt.NDArray[np.generic]] = {}
            for param in params:
                name = param.name
                if param.kind == "tensor":
                    tensors[name] = stack([arguments.tensors[name] for arguments in bound])
                elif param.kind == "window" and snapshot is not None:
                    dtype = _element_type(param)
                    views = [snapshot.view(name, r, param.shape, dtype) for r in range(ranks)]
                    tensors[name] = stack(views)
            by_window = {w.param.name: tensors[w.param.name] for w in windows if snapshot}
            return SimResult(
                tensors,
                orch.world.records(),
                tuple(orch.snapshots),
                by_window,
                window_setup_seconds=launch.window_setup_seconds,
            )

        return _finish(orch, body, result)


def _element_type(param: OrchestrationParam) -> DataType:
    if param.dtype is None:
        raise TypeError(f"parameter {param.name} ({param.kind}) has no element type")
    return param.dtype


def _dispatch(
    orch: SimOrchestrator,
    next_level: SimNextLevel,
    params: tuple[OrchestrationParam, ...],
    bound: tuple[BoundArguments, ...],
    domain: SimDomain | None,
) -> None:
    """Each rank's dispatch: every rank's ``TaskArgs`` in argument order (tensors, then scalars
    and contexts) is submitted to that rank (its windows hold their given contents already:
    :func:`_fill`)."""

    def window(rank: int, param: OrchestrationParam) -> SimTensor:
        if domain is None:
            raise TypeError(f"window parameter {param.name} outside a comm domain")
        return domain[rank].buffers[param.name].tensor(param.shape, _element_type(param))

    for rank, arguments in enumerate(bound):
        task = TaskArgs()
        scalars: list[ScalarValue] = []
        for param in params:
            tag = TensorArgType.of(ParamDirection(param.direction))
            if param.kind == "tensor":
                task.add_tensor(make_tensor_arg(orch, arguments.tensors[param.name]), tag)
            elif param.kind == "window":
                task.add_tensor(window(rank, param), tag)
            elif param.kind == "scalar":
                scalars.append(arguments.scalars[param.name])
            elif domain is not None:  # a window's context: every window is in the one domain
                scalars.append(domain[rank].device_ctx)
        for scalar in scalars:
            task.add_scalar(scalar)
        orch.submit_next_level(next_level, task, CallConfig(), worker=rank)

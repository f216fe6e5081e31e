"""The second stage on simulated ranks: a world of ep * tp ranks, a stream per rank, and
:func:`run`.

aclnn's caller runs one thread per rank (``[sample]`` of ``docs/mc2.md``): each sets its device,
gets its EP and TP communicators' names, calls the first stage with its own tensors, then the second
stage on its own stream, and synchronizes the stream; the op is collective, so it completes only
once every rank has launched it. :class:`SimWorld` stands for the devices and communicators of that
sample: ``ep * tp`` ranks laid out as the sample lays them out (TP groups contiguous,
``rank = ep_index * tp + tp_index``), each with a :class:`SimStream` that knows its rank and its
groups' names (``group_ep``, ``group_tp``, what ``HcclGetCommName`` returns).

:func:`run` queues the rank's launch on its stream and returns, as aclnn's second stage returns
once the kernel is queued. When every rank of the world has queued one, the world runs the
kernel on all of them at once, on a thread of its own: the program of the configuration, built
through the engine (:mod:`pypto_build.mc2.kernels`), dispatched once per rank by the
simulator's chip-orchestration runner (:func:`pypto_build.sim.SimProgram.run`), with each
rank's tensors stacked along a leading rank axis; each rank's result is then written into its
``out``. A world's launches run one after another, in the order they filled, as a stream runs
what was queued on it in order. :meth:`SimStream.synchronize` waits for the rank's launches and
raises what failed (the first failure of a launch, on every rank's stream), or, when some rank
never launched, a :class:`~pypto_build.mc2.run_error.RunError` naming those ranks instead of
hanging.

One thread per rank, as in aclnn's sample, or one thread calling :func:`run` for every rank in
turn and then synchronizing: both work, because :func:`run` never waits for the other ranks.
"""

from __future__ import annotations

import math
import numbers
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from pypto_build.chip_build.sim.world import Timeouts
from pypto_build.lowering.aclnn.rules import described
from pypto_build.mc2.arguments import ArgumentError, integer
from pypto_build.mc2.executor import Executor
from pypto_build.mc2.program import OUT, WORKSPACE
from pypto_build.mc2.run_error import NoSuchRank, RunError

#: The most ranks the simulator runs in one comm domain.
MAX_RANKS = 64

#: What the API takes for a workspace: any writable, contiguous buffer.
Buffer = npt.NDArray[np.generic] | bytearray | memoryview


@dataclass(frozen=True)
class _Submission:
    """One rank's queued launch: its executor and its workspace, as bytes."""

    executor: Executor
    workspace: npt.NDArray[np.uint8]


@dataclass
class _Launch:
    """One collective launch: filled by the ranks' runs, then run once on all of them."""

    submissions: dict[int, _Submission] = field(default_factory=dict)
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None
    #: The world's launch before this one, which runs first: a stream runs in order.
    previous: _Launch | None = None


class SimWorld:
    """``ep_world_size * tp_world_size`` simulated ranks of chip a3 with their EP and TP groups,
    and a stream per rank (see the module). ``timeout`` bounds one kernel wait and how long
    :meth:`SimStream.synchronize` waits for ranks that have not launched (default
    ``$PYPTO_SIM_TIMEOUT_S``, else 10 seconds). The sizes are integers and ``timeout`` a number
    (:class:`~pypto_build.mc2.arguments.ArgumentError`); a world the simulator cannot run, or a
    timeout that is not positive, is a :class:`~pypto_build.mc2.run_error.RunError`."""

    def __init__(
        self, ep_world_size: int, tp_world_size: int, *, timeout: float | None = None
    ) -> None:
        ep_world_size = integer("ep_world_size", ep_world_size, "a group size")
        tp_world_size = integer("tp_world_size", tp_world_size, "a group size")
        if ep_world_size < 1 or tp_world_size < 1:
            raise RunError(
                f"a world needs ep_world_size and tp_world_size of at least 1, got "
                f"{ep_world_size} and {tp_world_size}"
            )
        if ep_world_size * tp_world_size > MAX_RANKS:
            raise RunError(
                f"ep_world_size * tp_world_size = {ep_world_size * tp_world_size}: the simulator "
                f"runs at most {MAX_RANKS} ranks"
            )
        self.ep_world_size = ep_world_size
        self.tp_world_size = tp_world_size
        #: Seconds one kernel wait, and the wait for ranks that have not launched, may take.
        self.timeout = _timeouts(timeout).wait
        self.streams = tuple(SimStream(self, rank) for rank in range(self.size))
        self._changed = threading.Condition()
        self._open = _Launch()
        self._last: _Launch | None = None

    @property
    def size(self) -> int:
        return self.ep_world_size * self.tp_world_size

    def stream(self, rank: int) -> SimStream:
        """Rank ``rank``'s stream; :class:`~pypto_build.mc2.run_error.NoSuchRank` (an
        ``IndexError``) outside the world."""
        rank = integer("rank", rank, "a rank of the world")
        if not 0 <= rank < self.size:
            raise NoSuchRank(f"rank {rank} is outside this world of {self.size} ranks")
        return self.streams[rank]

    def synchronize(self, timeout: float | None = None) -> None:
        """Synchronize every rank's stream, in rank order."""
        for stream in self.streams:
            stream.synchronize(timeout)

    def __repr__(self) -> str:
        return f"SimWorld(ep_world_size={self.ep_world_size}, tp_world_size={self.tp_world_size})"

    def _submit(self, rank: int, submission: _Submission) -> _Launch:
        """Queue ``rank``'s part of the open launch; the last rank's part starts it."""
        with self._changed:
            launch = self._open
            if rank in launch.submissions:
                raise RunError(
                    f"rank {rank} already launched the op and the ranks "
                    f"{_listed(self._missing(launch))} have not: a collective launch takes one "
                    "run per rank"
                )
            launch.submissions[rank] = submission
            if len(launch.submissions) == self.size:
                launch.previous, self._last = self._last, launch
                self._open = _Launch()
                threading.Thread(
                    target=self._execute, args=(launch,), name="mc2-launch", daemon=True
                ).start()
            self._changed.notify_all()
            return launch

    def _missing(self, launch: _Launch) -> list[int]:
        return [rank for rank in range(self.size) if rank not in launch.submissions]

    def _await_ranks(self, launch: _Launch, rank: int, timeout: float | None) -> None:
        """Wait until every rank has queued its part of ``launch``."""
        wait = self.timeout if timeout is None else timeout
        with self._changed:
            complete = self._changed.wait_for(
                lambda: len(launch.submissions) == self.size, timeout=wait
            )
            if not complete:
                raise RunError(
                    f"rank {rank}: ranks {_listed(self._missing(launch))} of {self.size} did not "
                    f"launch the op within {wait:g} s; a collective op runs once every rank has "
                    "called run() (on hardware the launched ranks would hang)"
                )

    def _execute(self, launch: _Launch) -> None:
        """Run the kernel on every rank of ``launch`` and write each rank's results back,
        once the world's previous launch has ended."""
        if launch.previous is not None:
            launch.previous.done.wait()
            launch.previous = None  # keep no chain of finished launches alive
        try:
            submissions = [launch.submissions[rank] for rank in range(self.size)]
            executors = [submission.executor for submission in submissions]
            _require_one_configuration(executors)
            built = executors[0].built()
            transposed = executors[0].config.transpose_weight
            per_rank = [executor.operands.inputs(transposed) for executor in executors]
            inputs = {name: np.stack([arrays[name] for arrays in per_rank]) for name in per_rank[0]}
            result = built.program.run(inputs, ranks=self.size, timeout=self.timeout)
            for rank, submission in enumerate(submissions):
                submission.executor.operands.out.data[...] = result[OUT][rank]
                window = result.windows[WORKSPACE][rank].view(np.uint8).reshape(-1)
                submission.workspace[: window.size] = window
        except BaseException as error:  # reported by every rank's synchronize()
            launch.error = error
        finally:
            launch.done.set()


class SimStream:
    """Rank ``rank``'s stream in ``world``: where :func:`run` queues the rank's launch, and the
    names of the rank's EP and TP groups."""

    def __init__(self, world: SimWorld, rank: int) -> None:
        self.world = world
        self.rank = rank
        self._pending: list[_Launch] = []
        self._lock = threading.Lock()

    @property
    def ep_index(self) -> int:
        """The rank's position in its EP group (``rank // tp``)."""
        return self.rank // self.world.tp_world_size

    @property
    def tp_index(self) -> int:
        """The rank's position in its TP group (``rank % tp``)."""
        return self.rank % self.world.tp_world_size

    @property
    def ep_ranks(self) -> tuple[int, ...]:
        """The rank's EP group: the ranks of its TP position, ``tp`` apart."""
        tp = self.world.tp_world_size
        return tuple(p * tp + self.tp_index for p in range(self.world.ep_world_size))

    @property
    def tp_ranks(self) -> tuple[int, ...]:
        """The rank's TP group: ``tp`` contiguous ranks."""
        tp = self.world.tp_world_size
        return tuple(self.ep_index * tp + t for t in range(tp))

    @property
    def group_ep(self) -> str:
        """The EP group's name (what ``HcclGetCommName`` returns for the rank's EP comm)."""
        return f"ep{self.tp_index}"

    @property
    def group_tp(self) -> str:
        """The TP group's name."""
        return f"tp{self.ep_index}"

    def synchronize(self, timeout: float | None = None) -> None:
        """Wait for the launches queued on this stream; raise the first failure. ``timeout``
        bounds the wait for ranks that have not launched (default: the world's timeout); the
        launch itself always ends, its every kernel wait being bounded."""
        if timeout is not None:
            timeout = _seconds(timeout, zero=True)
        while True:
            with self._lock:
                if not self._pending:
                    return
                launch = self._pending[0]
            self.world._await_ranks(launch, self.rank, timeout)
            launch.done.wait()
            with self._lock:
                if self._pending and self._pending[0] is launch:
                    self._pending.pop(0)
            if launch.error is not None:
                raise launch.error

    def __repr__(self) -> str:
        return f"<SimStream rank {self.rank} of {self.world!r}>"

    def _check(self, executor: Executor) -> None:
        """The stream's world is the executor's, and the executor names the rank's groups."""
        world, config = self.world, executor.config
        if (world.ep_world_size, world.tp_world_size) != (config.ep, config.tp):
            raise RunError(
                f"the stream is rank {self.rank} of a world of {world.size} ranks (ep "
                f"{world.ep_world_size} x tp {world.tp_world_size}); the executor was made for "
                f"ep_world_size {config.ep} x tp_world_size {config.tp} = {executor.ranks} "
                f"ranks: run it on a stream of SimWorld({config.ep}, {config.tp})"
            )
        for kind, given, own, ranks in (
            ("EP", executor.group_ep, self.group_ep, self.ep_ranks),
            ("TP", executor.group_tp, self.group_tp, self.tp_ranks),
        ):
            if given != own:
                raise RunError(
                    f"group_{kind.lower()} {given!r} is not rank {self.rank}'s {kind} group "
                    f"{own!r} (ranks {_listed(ranks)}): pass the names of the rank's groups, "
                    "stream.group_ep and stream.group_tp"
                )

    def _submit(self, executor: Executor, workspace: npt.NDArray[np.uint8]) -> None:
        launch = self.world._submit(self.rank, _Submission(executor, workspace))
        with self._lock:
            self._pending.append(launch)


def run(
    workspace: Buffer | None, workspace_size: int, executor: Executor, stream: SimStream
) -> None:
    """``aclnnBatchMatMulReduceScatterAlltoAll``: queue ``executor``'s launch on ``stream`` (see
    the module); :meth:`SimStream.synchronize` waits for it. ``workspace`` is a writable buffer
    of at least ``workspace_size`` bytes, itself at least what the first stage returned; after
    the run its first bytes hold the kernel's window (the user part), the system part being
    HCCL's on hardware and unused here. A misuse is a :class:`~pypto_build.mc2.run_error.RunError`
    (a ``workspace_size`` that is no integer an
    :class:`~pypto_build.mc2.arguments.ArgumentError`) and queues nothing."""
    if not isinstance(executor, Executor):
        raise RunError(f"executor must be what get_workspace_size returned, got {executor!r}")
    if not isinstance(stream, SimStream):
        raise RunError(
            f"stream must be a simulated rank's stream (SimWorld(ep, tp).stream(rank)), "
            f"got {stream!r}"
        )
    stream._check(executor)
    workspace_size = integer("workspace_size", workspace_size, "aclnn's uint64_t, in bytes")
    if workspace_size < executor.workspace_size:
        raise RunError(
            f"workspace_size {workspace_size} is smaller than the {executor.workspace_size} "
            "bytes get_workspace_size returned"
        )
    data = _workspace_bytes(workspace, workspace_size)
    executor.claim()
    stream._submit(executor, data)


def _workspace_bytes(workspace: Buffer | None, workspace_size: int) -> npt.NDArray[np.uint8]:
    """``workspace`` as writable bytes, at least ``workspace_size`` of them."""
    if workspace is None:
        raise RunError(f"workspace is None; the op needs {workspace_size} bytes")
    try:
        view = workspace.data if isinstance(workspace, np.ndarray) else memoryview(workspace)
    except TypeError:
        kind = type(workspace).__name__
        raise RunError(
            f"workspace must be a buffer (a NumPy array, a bytearray), got {kind}"
        ) from None
    if not view.c_contiguous or view.readonly:
        raise RunError("workspace must be a writable, contiguous buffer")
    if view.nbytes < workspace_size:
        raise RunError(
            f"workspace holds {view.nbytes} bytes, fewer than workspace_size ({workspace_size})"
        )
    return np.frombuffer(view.cast("B"), dtype=np.uint8)


def _timeouts(timeout: object) -> Timeouts:
    """A world's time limits from its ``timeout`` (None: ``$PYPTO_SIM_TIMEOUT_S``)."""
    if timeout is None:
        try:
            return Timeouts.from_environment()
        except ValueError as error:  # the variable is no positive number
            raise RunError(str(error)) from None
    return Timeouts(_seconds(timeout))


def _seconds(timeout: object, *, zero: bool = False) -> float:
    """``timeout`` as a finite number of seconds, positive (or also 0 with ``zero``)."""
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
        raise ArgumentError(f"timeout must be a number of seconds, got {described(timeout)}")
    seconds = float(timeout)
    if not (math.isfinite(seconds) and (seconds > 0 or (zero and seconds == 0))):
        what = "a non-negative" if zero else "a positive"
        raise RunError(f"timeout must be {what}, finite number of seconds, got {timeout}")
    return seconds


def _require_one_configuration(executors: Sequence[Executor]) -> None:
    """Every rank of a launch runs the same configuration: one kernel, one orchestration."""
    first = executors[0]
    for rank, executor in enumerate(executors):
        if executor.program.digest != first.program.digest:
            raise RunError(
                f"rank {rank}'s executor is for another configuration (shapes, dtypes or "
                "attributes) than rank 0's: every rank of a collective launch runs the same op"
            )


def _listed(ranks: Sequence[int]) -> str:
    return ", ".join(map(str, ranks))

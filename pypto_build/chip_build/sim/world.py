"""The simulated world: P ranks, each a thread that runs its chip dispatches in order.

A HOST orchestrator submits dispatches one after another for every rank; a collective needs all
ranks inside it at once, so a submission only queues the dispatch on its rank's worker thread
and returns. Each worker runs its queue in program order (that is the per-rank ordering the
ordering token stands for), calling the runtime, which runs the orchestration on that thread
and every kernel task on threads of its block pool. Ranks run concurrently; their threads are
kept for the next world when this one closes.

Failure follows the device runtime's rules, per rank: the first error a rank latches is its
error, and after it the rank drops its later dispatches. A peer still waiting on a failed rank
inside a collective times out (code 100) instead of hanging. :meth:`World.fence` waits for all
queued work and raises :class:`SimulationError` naming every failed rank.

Nothing waits forever. A kernel signal wait is bounded by the wait timeout, a task by
:data:`TASK_TIMEOUT_WAITS` of them (the runtime abandons blocks that never return), and a fence
by a watchdog: if no kernel block starts or returns and no dispatch finishes on any rank for a
task timeout plus a wait timeout while work is pending, the run is declared hung. Memory that
abandoned threads may still touch (windows, loaded kernels) is then never freed. The timeouts
belong to the runtime, which is one per process: a world sets them when it is created.
"""

from __future__ import annotations

import functools
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pypto_build.chip_build.chips import Chip, CoreType
from pypto_build.chip_build.sim.run_failure import (
    SIMPLER_ERROR_SCHEDULER_TIMEOUT,
    DispatchRecord,
    RankError,
    SimulationError,
)
from pypto_build.chip_build.sim.runtime import (
    RUN_REFUSED,
    Descriptor,
    NativeCallable,
    NativeDomain,
    NativeRuntime,
    RunOutcome,
)
from pypto_build.chip_build.sim.shared import Segment

#: Environment variable with the wait timeout in seconds.
TIMEOUT_ENV = "PYPTO_SIM_TIMEOUT_S"
#: The device runtime's default scheduler timeout in simulation.
DEFAULT_WAIT_TIMEOUT = 10.0
#: A task may run this many wait timeouts. A kernel that follows the portability header's
#: protocol returns within one timeout of its last peer's progress, so only a kernel spinning
#: outside those waits (or one computing for minutes) runs longer.
TASK_TIMEOUT_WAITS = 4
#: How often a fence looks at the watchdog while it waits.
_POLL_SECONDS = 0.25

#: What abandoned threads may still touch: the dispatches (and through them host arrays and
#: descriptors), windows and loaded kernels of abandoned runs. Never freed.
_ABANDONED: list[object] = []


def threads_abandoned() -> bool:
    """Whether a run of this process abandoned kernel threads, which may still be running: a
    worker process that did must not run anything more (:mod:`.isolation`)."""
    return bool(_ABANDONED)


@dataclass(frozen=True)
class Timeouts:
    """The simulation's time limits, all derived from one wait timeout (seconds)."""

    wait: float = DEFAULT_WAIT_TIMEOUT

    def __post_init__(self) -> None:
        if not self.wait > 0:
            raise ValueError(f"the wait timeout must be positive, got {self.wait}")

    @property
    def task(self) -> float:
        return self.wait * TASK_TIMEOUT_WAITS

    @property
    def idle(self) -> float:
        """How long a fence tolerates no progress at all while work is pending."""
        return self.task + self.wait

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Timeouts:
        """``$PYPTO_SIM_TIMEOUT_S`` seconds per wait, else the default (10 s)."""
        environ = os.environ if environ is None else environ
        text = environ.get(TIMEOUT_ENV)
        if not text:
            return cls()
        try:
            return cls(float(text))
        except ValueError:  # not a number, or not positive
            raise ValueError(
                f"{TIMEOUT_ENV}={text!r} is not a positive number of seconds"
            ) from None


@dataclass(frozen=True)
class Dispatch:
    """One chip callable to run on one rank, its arguments already described."""

    next_level: str
    callable: NativeCallable
    tensors: tuple[Descriptor, ...]
    #: 64-bit patterns.
    scalars: tuple[int, ...]
    #: What the descriptors point into (host arrays, window views), kept alive with them.
    memory: tuple[object, ...] = ()


@dataclass(frozen=True)
class DispatchStart:
    """A dispatch about to run on its rank (its :class:`DispatchRecord` follows when it ends)."""

    rank: int
    index: int
    next_level: str


#: Told of each dispatch as it starts and as it finishes, on its rank's thread: how a worker
#: process streams them to its caller, which then knows what every rank had done and was doing
#: if the worker dies in the middle of the run.
DispatchListener = Callable[[DispatchStart | DispatchRecord], None]


class _RankThreads:
    """Threads that serve the ranks of worlds, kept from one world to the next: starting one
    costs a round trip through the scheduler, a good part of a small run on a busy machine. A
    thread left inside a run that was abandoned never comes back."""

    def __init__(self) -> None:
        self._idle: list[queue.SimpleQueue[Callable[[], None]]] = []
        self._lock = threading.Lock()

    def start(self, work: Callable[[], None]) -> None:
        """Run ``work`` on an idle thread, or a new one."""
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(inbox,), daemon=True).start()
        inbox.put(work)

    def _serve(self, inbox: queue.SimpleQueue[Callable[[], None]]) -> None:
        while True:
            inbox.get()()
            with self._lock:
                self._idle.append(inbox)


_RANK_THREADS = _RankThreads()


class World:
    """``nranks`` rank threads of chip ``chip`` on ``runtime`` (see the module); ``listener``
    hears of each dispatch as it starts and finishes."""

    def __init__(
        self,
        runtime: NativeRuntime,
        chip: Chip,
        nranks: int,
        timeouts: Timeouts,
        listener: DispatchListener | None = None,
    ) -> None:
        if nranks < 1:
            raise ValueError(f"a world has at least one rank, got {nranks}")
        self.runtime = runtime
        self.chip = chip
        self.nranks = nranks
        self.timeouts = timeouts
        self._listener = listener
        #: Set when threads may still be running inside a task that was given up on.
        self.abandoned = False
        runtime.set_timeouts(wait=timeouts.wait, task=timeouts.task)
        self._cond = threading.Condition()
        self._queues: list[deque[Dispatch]] = [deque() for _ in range(nranks)]
        self._submitted = [0] * nranks
        self._running: dict[int, str] = {}
        self._pending = 0
        self._finished = 0
        self._failed: dict[int, RankError] = {}
        self._hung: list[RankError] = []
        self._records: list[DispatchRecord] = []
        self._closing = False
        self._domains: list[NativeDomain] = []
        self._dispatched: list[Dispatch] = []
        self._serving = nranks
        for rank in range(nranks):
            _RANK_THREADS.start(functools.partial(self._serve, rank))

    # -- work ---------------------------------------------------------------------------------

    def submit(self, rank: int, dispatch: Dispatch) -> None:
        """Queue ``dispatch`` on ``rank``; it runs after the rank's earlier dispatches."""
        if not 0 <= rank < self.nranks:
            raise ValueError(f"worker {rank} is not a rank of this run (0..{self.nranks - 1})")
        with self._cond:
            if self._hung:
                raise SimulationError(self._hung, tuple(self._records))
            self._queues[rank].append(dispatch)
            self._dispatched.append(dispatch)
            self._pending += 1
            self._cond.notify_all()

    def _serve(self, rank: int) -> None:
        threading.current_thread().name = f"sim-rank-{rank}"
        try:
            self._serve_queue(rank)
        finally:
            with self._cond:
                self._serving -= 1
                self._cond.notify_all()

    def _serve_queue(self, rank: int) -> None:
        queue = self._queues[rank]
        while True:
            with self._cond:
                while not queue and not self._closing:
                    self._cond.wait()
                if not queue:
                    return
                dispatch = queue.popleft()
                index = self._submitted[rank]
                self._submitted[rank] += 1
                skipped = rank in self._failed
                if not skipped:
                    self._running[rank] = dispatch.next_level
            if not skipped and self._listener is not None:
                self._listener(DispatchStart(rank, index, dispatch.next_level))
            started = time.perf_counter()
            outcome = None if skipped else self._execute(rank, dispatch)
            seconds = time.perf_counter() - started if outcome is not None else 0.0
            with self._cond:
                record = self._record(rank, index, dispatch, outcome, seconds)
                self._running.pop(rank, None)
                self._pending -= 1
                self._finished += 1
                self._cond.notify_all()
            if self._listener is not None:
                self._listener(record)

    def _execute(self, rank: int, dispatch: Dispatch) -> RunOutcome:
        try:
            return self.runtime.execute(
                dispatch.callable,
                rank=rank,
                next_level=dispatch.next_level,
                tensors=dispatch.tensors,
                scalars=dispatch.scalars,
                # The simulation platform's capacity, upstream's a2a3sim / a5sim's.
                aiv_capacity=self.chip.sync_start_limit(CoreType.AIV, simulated=True),
                aic_capacity=self.chip.sync_start_limit(CoreType.AIC, simulated=True),
            )
        except Exception as exc:  # a worker must always report back, or the fence would wait
            return RunOutcome(RUN_REFUSED, f"{type(exc).__name__}: {exc}", 0, (), False)

    def _record(
        self,
        rank: int,
        index: int,
        dispatch: Dispatch,
        outcome: RunOutcome | None,
        seconds: float,
    ) -> DispatchRecord:
        if outcome is None:
            record = DispatchRecord(rank, index, dispatch.next_level, 0, "", 0, (), skipped=True)
            self._records.append(record)
            return record
        record = DispatchRecord(
            rank,
            index,
            dispatch.next_level,
            outcome.code,
            outcome.message,
            outcome.tasks,
            outcome.log,
            skipped=False,
            seconds=seconds,
        )
        self._records.append(record)
        if outcome.abandoned:
            self.abandoned = True
        if outcome.code != 0 and rank not in self._failed:
            self._failed[rank] = RankError(rank, outcome.code, outcome.message, dispatch.next_level)
        return record

    # -- fences -------------------------------------------------------------------------------

    def quiesce(self) -> bool:
        """Wait until every queued dispatch has finished; False if the watchdog gave up."""
        with self._cond:
            if self._hung:
                return False
            last = (self.runtime.progress(), self._finished)
            since = time.monotonic()
            while self._pending:
                self._cond.wait(_POLL_SECONDS)
                now = time.monotonic()
                state = (self.runtime.progress(), self._finished)
                if state != last:
                    last, since = state, now
                elif now - since >= self.timeouts.idle:
                    self._declare_hung(now - since)
                    return False
        return True

    def _declare_hung(self, idle: float) -> None:
        self.abandoned = True
        for rank in range(self.nranks):
            running = self._running.get(rank)
            waiting = self._queues[rank]
            if running is None and not waiting:
                continue
            name = running if running is not None else waiting[0].next_level
            self._hung.append(
                RankError(
                    rank,
                    SIMPLER_ERROR_SCHEDULER_TIMEOUT,
                    f"no kernel block started or returned and no dispatch finished on any rank "
                    f"for {idle:.1f} s; the run was abandoned",
                    name,
                )
            )

    def fence(self) -> None:
        """Wait for all queued work; raise :class:`SimulationError` if any rank failed."""
        if not self.quiesce():
            hung = {error.rank for error in self._hung}
            errors = [*self._hung, *(e for r, e in self._failed.items() if r not in hung)]
            raise SimulationError(errors, self.records())
        if self._failed:
            raise SimulationError(list(self._failed.values()), self.records())

    def records(self) -> tuple[DispatchRecord, ...]:
        """Every dispatch so far, by rank and position."""
        with self._cond:
            return tuple(sorted(self._records, key=lambda r: (r.rank, r.index)))

    # -- windows and shutdown -----------------------------------------------------------------

    def create_domain(
        self, nranks: int, window_bytes: int, memory: Segment | None = None
    ) -> NativeDomain:
        """Windows and contexts of a comm domain (in ``memory``, filled before any rank runs,
        or in new zeroed memory), freed by :meth:`release_domain`."""
        domain = self.runtime.create_domain(nranks, window_bytes, memory)
        self._domains.append(domain)
        return domain

    def release_domain(self, domain: NativeDomain) -> None:
        """Free a domain's windows, unless abandoned threads may still use them (they are
        then kept until :meth:`close`, which keeps them forever)."""
        if not self.abandoned:
            domain.close()
            self._domains.remove(domain)

    def close(self, callables: Sequence[NativeCallable] = ()) -> None:
        """Stop the rank threads and free the domains and ``callables`` (all left allocated
        when the run was abandoned). Queued work is waited for first."""
        self.quiesce()
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self.abandoned:
            _ABANDONED.append((self._dispatched, self._domains, tuple(callables)))
            return
        with self._cond:  # idle after quiesce: each rank's thread leaves at once
            self._cond.wait_for(lambda: not self._serving, self.timeouts.wait)
        for domain in list(self._domains):
            self.release_domain(domain)
        for callable_ in callables:
            callable_.close()

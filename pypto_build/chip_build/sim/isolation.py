"""Running a simulated world in a worker process, so the caller survives its kernels.

Kernels are host shared objects run as threads: in the caller's process, a kernel that
segfaults, aborts or calls ``exit`` takes the caller with it, and one a timed-out run abandoned
keeps burning its CPU. So :func:`run_isolated` hands the prepared :class:`~.launch.Launch` to a
worker process (:mod:`.worker`), which runs it exactly as :func:`~.launch.execute` runs it here
and sends back the result (or the :class:`SimulationError`, partial result included) by pickle.
The results are the same objects either way.

When the worker dies instead, the caller raises a :class:`SimulationError` that says who did
it: the runtime's crash report (the rank, sub-build, kernel and block of the thread that raised
the fatal signal or called ``exit()``, written by the worker's handlers before it ended) with
the signal or exit status the caller reaps. Its ``dispatches`` are the ones that finished, which
the worker streamed as they did; its ``result`` is None, the tensors and windows having died
with the process. A death no thread reported (a signal from outside, ``_exit``) is put on every
rank that was running a dispatch.

A kernel can also leave its process without ending it, or end it without ending its work: it
forks and the parent calls ``_exit`` (the copy goes on holding the worker's channel), stops
itself (``raise(SIGSTOP)``), closes every descriptor, or forks and goes on in both processes.
So each worker runs in a session of its own, and whenever a worker is done with, its whole
process group is killed, whatever the kernels started in it; the caller watches the worker's
process itself (a pidfd), not only its channel; a worker that sends nothing, not even the
heartbeat it sends every wait timeout during a run, for longer than the world's own bound on a
run without progress (``Timeouts.idle``) is killed as stuck or stopped;
and the worker reports processes its kernels started (:mod:`.worker`), which fail the run.

Workers are kept for reuse: starting one costs an interpreter and the simulator's imports
(``bench/bench_sim_isolation.py`` measures it), a run in one a few messages. A worker that
died, abandoned kernel threads (a timed-out run, after which it leaves by itself and is killed
if it lingers, so no CPU is left burning) or failed in any unforeseen way is never reused. Each
concurrent run takes a worker of its own. Idle workers leave when their caller closes their
channel, at its exit at the latest. Launches and results cross the channel with their large
arrays in shared memory (:mod:`.shared`): windows are not copied at all, other arrays once.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path

import pypto_build
from pypto_build.chip_build.sim import shared
from pypto_build.chip_build.sim import worker as protocol
from pypto_build.chip_build.sim.launch import Launch
from pypto_build.chip_build.sim.result import SimResult
from pypto_build.chip_build.sim.run_failure import DispatchRecord, RankError, SimulationError
from pypto_build.chip_build.sim.runtime import KERNEL_CRASHED, runtime_image
from pypto_build.chip_build.sim.world import DispatchStart

#: How long a worker that reported its crash, or was told to leave, may take to end.
_GRACE_SECONDS = 5.0
#: How much longer than the world's own bound on a run making no progress (its ``idle``
#: timeout, after which it abandons the run and replies) the caller waits for a silent worker.
_SILENCE_MARGIN = 1.0


class WorkerError(RuntimeError):
    """A simulation worker could not be started or broke the protocol."""


@dataclass(frozen=True)
class CrashReport:
    """What the runtime's handlers wrote before a fatal signal or ``exit()`` ended the worker
    (``pypto_sim_report_crashes``): the thread that did it."""

    #: -1 for a thread outside any run.
    rank: int
    next_level: str
    #: "" for an orchestration thread.
    kernel: str
    func_id: int
    block: int
    block_num: int
    #: The signal number, 0 for ``exit()``.
    signal: int

    @classmethod
    def parse(cls, text: str) -> CrashReport | None:
        """The first report line of ``text``, if it has one."""
        for line in text.splitlines():
            fields = line.split("\t")
            if len(fields) == 8 and fields[0] == "crash":
                try:
                    rank, func_id, block, block_num, number = (
                        int(fields[i]) for i in (1, 4, 5, 6, 7)
                    )
                except ValueError:
                    continue
                return cls(rank, fields[2], fields[3], func_id, block, block_num, number)
        return None

    def who(self) -> str:
        if not self.kernel:
            return "the orchestration"
        return (
            f"kernel '{self.kernel}' (func_id {self.func_id}) block {self.block}/{self.block_num}"
        )


def describe_status(returncode: int) -> str:
    """How a process ended, as its caller sees it: ``was killed by signal 11 (SIGSEGV:
    Segmentation fault)`` or ``exited with status 7``."""
    if returncode < 0:
        number = -returncode
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"was killed by signal {number} ({name}: {signal.strsignal(number)})"
    return f"exited with status {returncode}"


def crash_error(
    returncode: int,
    report: CrashReport | None,
    running: Sequence[DispatchStart],
    finished: Sequence[DispatchRecord],
    broke: str | None = None,
) -> SimulationError:
    """The error of a run whose worker ended with ``returncode``: the reporting thread's rank
    (see the module), or every rank that was ``running`` a dispatch when no thread reported
    (``broke``: what the worker did instead of replying, when it did not just die)."""
    ended = describe_status(returncode)
    if report is not None and report.rank >= 0:
        did = "called exit()" if report.signal == 0 else f"raised signal {report.signal}"
        message = f"{report.who()} {did}; the simulation process {ended}"
        records = sorted(finished, key=lambda record: (record.rank, record.index))
        return SimulationError(
            [RankError(report.rank, KERNEL_CRASHED, message, report.next_level)], records
        )
    if broke is not None:
        message = (
            f"the simulation process {broke} (a kernel's forked copy wrote on its channel); it "
            "was killed with every process its kernels started"
        )
        return _rank_errors(message, running, finished)
    if report is not None:
        cause = "a thread outside any rank's run " + (
            "called exit()" if report.signal == 0 else f"raised signal {report.signal}"
        )
    else:
        cause = "no thread reported why (a signal from outside, or _exit())"
    message = f"the simulation process {ended} while this rank ran it: {cause}"
    return _rank_errors(message, running, finished)


class _Worker:
    """One worker process, its channel (a Unix socket, see :mod:`.worker`) and its crash pipe."""

    def __init__(self) -> None:
        self._channel, child = socket.socketpair()
        self._crashes, crashes_write = os.pipe()
        child_fds = (child.fileno(), crashes_write)
        # The worker imports this very pypto_build, whatever its own path would find first.
        package_root = str(Path(pypto_build.__file__).resolve().parent.parent)
        path = os.pathsep.join([package_root, *filter(None, [os.environ.get("PYTHONPATH")])])
        try:
            # A session of its own: the worker and whatever its kernels start are one process
            # group, killed as a whole (see the module).
            self.process = subprocess.Popen(
                [sys.executable, "-m", protocol.__name__, *(str(fd) for fd in child_fds)],
                pass_fds=child_fds,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONPATH": path},
                start_new_session=True,
            )
        finally:
            child.close()
            os.close(crashes_write)
        #: Readable once the worker process has ended, whoever still holds its channel.
        self._ended = os.pidfd_open(self.process.pid)
        try:
            carried = shared.send(self._channel, runtime_image(), returned=True)
            kind, value, _ = shared.receive(self._channel)
            carried.clear()  # the worker has replied: done with them
        except (OSError, EOFError):
            self.stop()
            raise WorkerError(
                f"the simulation worker ended as it started ({describe_status(self._reap())})"
            ) from None
        if kind != protocol.READY:
            self.stop()
            raise value if isinstance(value, BaseException) else WorkerError(repr(value))

    def run(self, launch: Launch) -> tuple[str, object, bool]:
        """Send ``launch`` and wait for its reply (its kind, its value, and whether the worker
        leaves); raises :class:`SimulationError` if the worker dies, falls silent or breaks the
        protocol first."""
        running: dict[tuple[int, int], DispatchStart] = {}
        finished: list[DispatchRecord] = []
        carried: list[shared.Segment] = []  # held until the reply: the worker uses them
        silence = launch.timeouts.idle + _SILENCE_MARGIN
        try:
            carried = shared.send(self._channel, launch, returned=True)
            while True:
                ready = wait([self._channel, self._crashes, self._ended], timeout=silence)
                if not ready:
                    raise self._silent(silence, list(running.values()), finished)
                if self._channel not in ready:
                    break  # a crash report, or the process ended: the worker is gone
                kind, value, leaving = shared.receive(self._channel)
                if kind != protocol.EVENT:
                    carried.clear()
                    return kind, value, leaving
                if isinstance(value, DispatchStart):
                    running[(value.rank, value.index)] = value
                elif isinstance(value, DispatchRecord):
                    running.pop((value.rank, value.index), None)
                    finished.append(value)
        except (OSError, EOFError):
            pass  # the worker is gone
        except SimulationError:
            raise
        except Exception:  # not what the worker sends: a forked copy wrote on the channel too
            self._kill()
            raise crash_error(
                self._reap(), None, list(running.values()), finished, "broke the protocol"
            ) from None
        returncode = self._reap()
        report = CrashReport.parse(self._read_crashes())
        raise crash_error(returncode, report, list(running.values()), finished)

    def _silent(
        self, seconds: float, running: list[DispatchStart], finished: list[DispatchRecord]
    ) -> SimulationError:
        """The error of a worker that sent nothing for ``seconds``: stopped or stuck; it is
        killed with its process group."""
        stopped = _state(self.process.pid) in ("T", "t")
        self._kill()
        self._reap()
        how = "is stopped (a kernel raised SIGSTOP)" if stopped else "hangs"
        message = (
            f"the simulation process sent nothing for {seconds:g} s: it {how}; it was killed "
            "with every process its kernels started"
        )
        return _rank_errors(message, running, finished)

    def _kill(self) -> None:
        """SIGKILL the worker's process group: the worker and whatever its kernels started
        (forked copies included), stopped or not. The group outlives a reaped worker while any
        member lives, so its id is never another's."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def _reap(self) -> int:
        """Wait for the process to end (killing its group after the grace period), then kill
        what is left of its group."""
        try:
            returncode = self.process.wait(_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            self._kill()
            returncode = self.process.wait()
        self._kill()
        return returncode

    def _read_crashes(self) -> str:
        """Everything the worker's crash handlers wrote before it ended; read without blocking,
        as a process that escaped the group could still hold the pipe."""
        os.set_blocking(self._crashes, False)
        chunks = []
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(self._crashes, 4096):
                chunks.append(chunk)
        return b"".join(chunks).decode("utf-8", errors="replace")

    def stop(self) -> None:
        """End the worker: it leaves when its channel closes; one that does not (it is stuck, or
        still running abandoned threads) is killed, and so is every process of its group."""
        self._channel.close()
        self._reap()
        os.close(self._crashes)
        os.close(self._ended)


def _state(pid: int) -> str:
    """The state letter ``/proc`` gives process ``pid`` (``T`` when stopped), "" if unknown."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return ""
    return text[text.rindex(")") + 2 :][:1]


def _rank_errors(
    message: str, running: Sequence[DispatchStart], finished: Sequence[DispatchRecord]
) -> SimulationError:
    """``message`` on every rank that was running a dispatch (or on the run as a whole)."""
    errors = [RankError(start.rank, KERNEL_CRASHED, message, start.next_level) for start in running]
    if not errors:  # between dispatches: the whole world failed
        errors = [RankError(0, KERNEL_CRASHED, message, "(between dispatches)")]
    records = sorted(finished, key=lambda record: (record.rank, record.index))
    return SimulationError(errors, records)


class _Pool:
    """Idle workers, reused by later runs (see the module)."""

    def __init__(self) -> None:
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def take(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.process.poll() is None:
                    return worker
                worker.stop()  # ended while idle (killed from outside)
        return _Worker()

    def give(self, worker: _Worker) -> None:
        with self._lock:
            self._idle.append(worker)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.stop()


_POOL = _Pool()
atexit.register(_POOL.close)


def run_isolated(launch: Launch) -> SimResult:
    """Run ``launch`` in a worker process (see the module): its result, or the error the run
    raised there; a :class:`SimulationError` when the worker dies."""
    worker = _POOL.take()
    reusable = False
    try:
        kind, value, leaving = worker.run(launch)
        reusable = kind in (protocol.RESULT, protocol.FAILED) and not leaving
        if kind == protocol.RESULT and isinstance(value, SimResult):
            return value
        if isinstance(value, BaseException):
            raise value
        raise WorkerError(f"the simulation worker replied {kind!r} with {type(value).__name__}")
    finally:
        if reusable:
            _POOL.give(worker)
        else:
            worker.stop()

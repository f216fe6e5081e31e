"""The simulation worker: a process that runs simulated worlds for a caller in another process
(:mod:`.isolation`), so that whatever a kernel does to its process, the caller's survives.

``python -m pypto_build.chip_build.sim.worker CHANNEL CRASHES``: an inherited Unix socket, on
which requests come and replies go (:func:`.shared.send`: large arrays by reference to shared
memory), and a pipe for crash reports. The caller first sends the runtime library's image (the
one it resolved through its compile cache, so both processes run the same library whatever their
environments say); the worker loads it, turns on the runtime's crash reports (to ``CRASHES``:
which rank, sub-build, kernel and block a fatal signal or ``exit()`` came from) and answers
``ready``. Then, for each :class:`~.launch.Launch` it receives, it streams what the world tells
it (each dispatch's start and record, and a heartbeat every wait timeout) and ends with one
reply: the result, the run's :class:`SimulationError` (its partial result included), or any
other exception the run raised, and whether the worker is leaving.

A kernel that forks leaves processes behind in the worker's place (its session, which the
caller kills as a whole when it is done with the worker). The worker is the subreaper of
whatever its kernels start, so no such process escapes to ``init``, and after each run it
looks for them: a run that started any fails with a :class:`SimulationError` saying so, and
the worker leaves. Python's reports of exceptions in its threads go nowhere: a kernel that
closed the worker's descriptors must not make it print tracebacks over the user's output (the
caller reports how the worker ended).

The worker leaves with ``os._exit``, never through the interpreter's shutdown: kernel threads a
timed-out run abandoned die with it (after such a run it leaves at once, so no later run shares
the process with them), and ``exit`` handlers are left to what the crash report needs them for,
a kernel calling ``exit()``.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import socket
import sys
import threading
from collections.abc import Sequence

from pypto_build.chip_build.sim import shared
from pypto_build.chip_build.sim.launch import Launch, execute
from pypto_build.chip_build.sim.run_failure import RankError, SimulationError
from pypto_build.chip_build.sim.runtime import KERNEL_CRASHED, load_runtime
from pypto_build.chip_build.sim.world import threads_abandoned

_PR_SET_CHILD_SUBREAPER = 36

#: Reply kinds: the first, once the runtime is loaded (or the error that stopped it)...
READY = "ready"
#: ... streamed during a run (a DispatchStart or a DispatchRecord) ...
EVENT = "event"
#: ... and the last message of a run.
RESULT, FAILED, ERROR = "result", "failed", "error"


def portable(error: BaseException) -> BaseException:
    """``error`` if it survives pickling, else a RuntimeError with its type and text: the caller
    must get an exception either way."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:  # any exception type may fail to pickle in its own way
        return RuntimeError(f"{type(error).__name__}: {error}")
    return error


class _Replies:
    """The channel's sending side, shared by the main thread and the rank threads streaming
    events."""

    def __init__(self, channel: socket.socket) -> None:
        self._channel = channel
        self._lock = threading.Lock()

    def send(self, kind: str, value: object, leaving: bool = False) -> None:
        """Send a message: its kind, its value, and whether this worker leaves after it."""
        with self._lock:
            shared.send(self._channel, (kind, value, leaving), returned=False)


def _run(launch: Launch, replies: _Replies) -> tuple[str, object]:
    done = threading.Event()
    beating = threading.Thread(
        target=_heartbeat, args=(replies, launch.timeouts.wait, done), daemon=True
    )
    beating.start()
    try:
        return _execute(launch, replies)
    finally:
        done.set()
        beating.join()


def _heartbeat(replies: _Replies, interval: float, done: threading.Event) -> None:
    """Send a heartbeat (an event of None) every ``interval`` seconds until the run is done: a
    long run is then never taken for a stopped or stuck worker by the caller, which kills one
    that falls silent (:mod:`.isolation`)."""
    while not done.wait(interval):
        try:
            replies.send(EVENT, None)
        except OSError:  # the channel is gone (a kernel closed it): the caller sees to it
            return


def _execute(launch: Launch, replies: _Replies) -> tuple[str, object]:
    try:
        return RESULT, execute(launch, lambda event: replies.send(EVENT, event))
    except SimulationError as failure:
        return FAILED, failure
    except Exception as error:  # the caller re-raises it, as an in-process run would raise it
        return ERROR, portable(error)


def serve(channel: socket.socket, replies: _Replies, crashes: int) -> None:
    """Load the runtime, then run launches until the caller closes ``channel``."""
    try:
        load_runtime(shared.receive(channel)).report_crashes(crashes)
    except Exception as error:
        replies.send(ERROR, portable(error))
        return
    replies.send(READY, None)
    while True:
        try:
            launch = shared.receive(channel)
        except (EOFError, OSError):  # the caller is done with this worker, or gone
            return
        kind, value = _run(launch, replies)
        started = _processes_started()
        if started:
            kind, value = FAILED, _forked(started)
        leaving = started > 0 or threads_abandoned()
        replies.send(kind, value, leaving)
        if leaving:
            return


def _processes_started() -> int:
    """How many processes are children of this worker: its kernels' forks (and, this process
    being their subreaper, their orphaned descendants), none when kernels behave."""
    count = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children", encoding="ascii") as listing:
                count += len(listing.read().split())
        except OSError:  # the thread ended meanwhile
            continue
    return count


def _forked(count: int) -> SimulationError:
    message = (
        f"a kernel started {count} process{'es' if count != 1 else ''} of its own (fork()); "
        "the simulation process and all of them were killed"
    )
    return SimulationError([RankError(0, KERNEL_CRASHED, message, "(the run)")])


def _quiet(*_: object) -> None:
    """A hook for Python's reports of uncaught exceptions: nothing (see the module)."""


def main(argv: Sequence[str]) -> None:
    sys.excepthook = _quiet
    threading.excepthook = _quiet
    # PR_SET_CHILD_SUBREAPER: orphans of what the kernels start become this process's children.
    ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    channel_fd, crashes_fd = (int(arg) for arg in argv)
    channel = socket.socket(fileno=channel_fd)
    try:
        serve(channel, _Replies(channel), crashes_fd)
    finally:
        # What kernels printed is still in C's buffers, which os._exit does not flush.
        ctypes.CDLL(None).fflush(None)
        os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])

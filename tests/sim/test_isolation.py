"""The simulator survives its kernels: whatever a kernel does -- segfault, abort, throw, call
exit, overflow its stack, spin forever -- the caller gets an error naming the rank, the kernel
and the signal, exception or exit status, its own process lives on, and the next run works.

The ranks run in a worker process (pypto_build/chip_build/sim/isolation.py). Each test here is
in the test process itself: that it gets to its assertions is half of what it proves."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import numpy as np
import pytest
from _support.console import run_cli
from _support.sim_programs import BuildProgram, Misbehave

from pypto_build import sim

NR = 2
BEHAVE, NULL, ABORT, THROW, EXIT, SPIN, OVERFLOW = range(7)
FORK_AND_EXIT, STOP, CLOSE_ALL, FORK = range(7, 11)
#: How kernel 'misbehave' is named in every message.
KERNEL = "kernel 'misbehave' (func_id 0) block 0/1"


@pytest.fixture
def build(build_program: BuildProgram) -> Path:
    return build_program(Misbehave(NR))


def modes(victim: int) -> dict[str, np.ndarray]:
    """Rank 1 does ``victim``, rank 0 behaves."""
    return {"mode": np.array([[BEHAVE], [victim]], dtype=np.int32)}


def behaves(build: Path) -> None:
    """A run after the failure works: every rank's kernel ran."""
    result = sim.run(build, ranks=NR, inputs=modes(BEHAVE))
    assert result["out"].tolist() == [[1], [1]]


@pytest.mark.parametrize(
    ("victim", "how"),
    [
        (NULL, "raised signal 11; the simulation process was killed by signal 11 (SIGSEGV: "),
        (OVERFLOW, "raised signal 11; the simulation process was killed by signal 11 (SIGSEGV: "),
        (ABORT, "raised signal 6; the simulation process was killed by signal 6 (SIGABRT: "),
        (EXIT, "called exit(); the simulation process exited with status 7"),
    ],
    ids=["segfault", "stack-overflow", "abort", "exit"],
)
def test_a_kernel_that_ends_its_process_fails_the_run_naming_rank_kernel_and_signal(
    build: Path, victim: int, how: str
) -> None:
    with pytest.raises(sim.SimulationError) as failed:
        sim.run(build, ranks=NR, inputs=modes(victim))
    (error,) = failed.value.ranks
    assert (error.rank, error.code, error.next_level) == (1, sim.KERNEL_CRASHED, "chip_misbehave")
    assert error.message.startswith(f"{KERNEL} {how}")
    assert str(error).startswith("rank 1: KERNEL_CRASHED (-2) in chip_misbehave: ")
    # The tensors died with the worker; what finished before the crash is kept.
    assert failed.value.result is None
    assert all(record.rank == 0 and record.code == 0 for record in failed.value.dispatches)
    behaves(build)


@pytest.mark.parametrize("isolate", [True, False], ids=["isolated", "in-process"])
def test_an_exception_escaping_a_kernel_is_the_rank_s_error_and_the_run_ends_normally(
    build: Path, isolate: bool
) -> None:
    with pytest.raises(sim.SimulationError) as failed:
        sim.run(build, ranks=NR, inputs=modes(THROW), isolate=isolate)
    (error,) = failed.value.ranks
    assert (error.rank, error.code) == (1, sim.KERNEL_CRASHED)
    assert error.message == f"{KERNEL} threw std::runtime_error: the kernel gave up"
    # Caught on its thread: the process lives, so the run leaves its partial result.
    result = failed.value.result
    assert result is not None and result["out"].tolist() == [[1], [1]]
    assert [(d.rank, d.code) for d in failed.value.dispatches] == [(0, 0), (1, sim.KERNEL_CRASHED)]
    behaves(build)


def test_run_reports_a_crash_and_writes_the_error_to_out(
    build: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    np.savez(tmp_path / "in.npz", **modes(NULL))
    out = tmp_path / "out.npz"
    argv = ["--ranks", str(NR), "--inputs", str(tmp_path / "in.npz"), "--out", str(out)]
    code, _, err = run_cli(capsys, "run", str(build), *argv)
    assert code == 1
    assert "the simulated run failed on 1 rank(s):\n" in err
    assert (
        f"  rank 1: KERNEL_CRASHED (-2) in chip_misbehave: {KERNEL} raised signal 11; the "
        "simulation process was killed by signal 11 (SIGSEGV: Segmentation fault)\n"
    ) in err
    with np.load(out) as written:
        assert written.files == ["run/error"]
        assert written["run/error"].tolist() == [
            f"rank 1: KERNEL_CRASHED (-2) in chip_misbehave: {KERNEL} raised signal 11; the "
            "simulation process was killed by signal 11 (SIGSEGV: Segmentation fault)"
        ]


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of process ``pid`` and of every live process under it."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:  # ended meanwhile
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
        if int(entry) == pid:
            total += (int(fields[11]) + int(fields[12])) / ticks
    for child in children.get(pid, []):
        total += _cpu_seconds(child)
    return total


@pytest.mark.slow
def test_a_kernel_spinning_forever_times_out_and_burns_no_cpu_afterwards(build: Path) -> None:
    with pytest.raises(sim.SimulationError) as failed:
        sim.run(build, ranks=NR, inputs=modes(SPIN), timeout=0.1)
    (error,) = failed.value.ranks
    assert (error.rank, error.code) == (1, sim.SIMPLER_ERROR_SCHEDULER_TIMEOUT)
    assert re.fullmatch(
        rf"{re.escape(KERNEL.removesuffix(' block 0/1'))}: 1 of 1 blocks did not return within "
        r"0\.4 s; they were abandoned",
        error.message,
    )
    # The abandoned thread ended with its worker: over an idle second, this process and every
    # process under it use next to no CPU (a spinning thread would use the whole second).
    before = _cpu_seconds(os.getpid())
    time.sleep(1.0)
    assert _cpu_seconds(os.getpid()) - before < 0.2
    behaves(build)


def _worker_processes() -> set[int]:
    """Every live process running the simulation worker's module (forked copies included)
    that this test process started: they inherit its environment, and another pytest-xdist
    worker's runs (which start workers of their own meanwhile) have another
    ``PYTEST_XDIST_WORKER``."""
    key = b"PYTEST_XDIST_WORKER="
    ours = os.environ.get("PYTEST_XDIST_WORKER", "").encode()
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            command = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text()
            environment = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        xdist = next((v.removeprefix(key) for v in environment if v.startswith(key)), b"")
        worker = b"pypto_build.chip_build.sim.worker" in command
        if worker and xdist == ours and state[state.rindex(")") + 2] != "Z":
            found.add(int(entry))
    return found


@pytest.mark.parametrize(
    ("victim", "message"),
    [
        (
            FORK_AND_EXIT,
            "the simulation process exited with status 0 while this rank ran it: no thread "
            "reported why (a signal from outside, or _exit())",
        ),
        (
            STOP,
            "the simulation process sent nothing for 2 s: it is stopped (a kernel raised "
            "SIGSTOP); it was killed with every process its kernels started",
        ),
        (CLOSE_ALL, "the simulation process exited with status 0 while this rank ran it: "),
        (
            FORK,
            "a kernel started 1 process of its own (fork()); the simulation process and all "
            "of them were killed",
        ),
    ],
    ids=["fork-and-exit", "sigstop", "close-every-descriptor", "fork"],
)
def test_a_kernel_that_escapes_its_process_ends_in_a_named_error_leaving_no_process(
    build: Path, victim: int, message: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """Within the run's bound (``timeout=0.2``: the world gives up on a silent run after 1 s,
    the caller 1 s later), and no copy of the worker outlives the run."""
    before = _worker_processes()
    start = time.monotonic()
    with pytest.raises(sim.SimulationError) as failed:
        sim.run(build, ranks=NR, inputs=modes(victim), timeout=0.2)
    assert time.monotonic() - start < 10
    assert failed.value.ranks[0].message.startswith(message), failed.value.ranks[0].message
    time.sleep(0.2)  # SIGKILL is delivered at once, the kernel reaps a moment later
    assert _worker_processes() <= before
    assert "Traceback" not in capfd.readouterr().err
    behaves(build)

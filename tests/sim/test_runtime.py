"""The simulation runtime's rules, one at a time, through a hand-written probe callable: block
identity, error latching, argument checks, sync-start admission, timeouts and watchdogs, and
the ABI structures it fills."""

from __future__ import annotations

import ctypes
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from _support.trees import write_subbuild

from pypto_build.chip_build.chips import CoreType
from pypto_build.chip_build.compile import compile_tree
from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.compile_cache.layout import LAYOUT
from pypto_build.chip_build.kernel_config import KernelEntry
from pypto_build.chip_build.runtime_types import DataType, TensorArgType
from pypto_build.chip_build.sim.l3 import (
    CallConfig,
    SimNextLevel,
    SimOrchestrator,
    TaskArgs,
    scalar_bits,
)
from pypto_build.chip_build.sim.library import RUNTIME_DIR, runtime_library
from pypto_build.chip_build.sim.program import BuildTreeError, ChipBuild, open_chip_build
from pypto_build.chip_build.sim.run_failure import DispatchRecord, SimulationError
from pypto_build.chip_build.sim.runtime import RUN_REFUSED, NativeRuntime
from pypto_build.chip_build.sim.tensors import SimTensor, window_tensor
from pypto_build.chip_build.sim.world import Timeouts, World
from pypto_build.chip_build.toolchains import SimToolchain
from pypto_build.chip_build.tree_manifest import write_manifest
from pypto_build.tree_layout import TreeLayout

PROBE = Path(__file__).resolve().parent / "probe"
KERNELS = (
    KernelEntry(0, "record", CoreType.AIV),
    KernelEntry(1, "wait_forever", CoreType.AIV),
    KernelEntry(2, "spin", CoreType.AIV),
    KernelEntry(3, "cube", CoreType.AIC),
)
# Probe modes (probe.cpp).
RECORD, TWO_FATALS, TENSOR_AFTER_SCALAR, SYNC_START, UNKNOWN_KERNEL = 0, 1, 2, 3, 4
WAIT_FOREVER, SPIN, AIC_AS_AIV, ORCHESTRATION_SPIN, CREATE_TENSOR, CUBE = 5, 6, 7, 8, 9, 10

FAST = Timeouts(wait=0.1)


def write_probe_tree(tree: Path) -> None:
    """``tree`` (a3) with sub-build ``next_levels/probe``: probe.cpp and its four kernels."""
    kernels = {
        kernel.name: (kernel.core_type, (PROBE / f"{kernel.name}.cpp").read_text())
        for kernel in KERNELS
    }
    orchestration = (PROBE / "probe.cpp").read_text()
    write_subbuild(tree, "probe", kernels, orchestration=orchestration)
    write_manifest(tree, chip="a3", toolchain="none", toolchain_version="", inputs={})


@pytest.fixture(scope="module")
def probe_build(
    tmp_path_factory: pytest.TempPathFactory,
    sim: SimToolchain,
    cache_dir: Path,
    runtime: NativeRuntime,
) -> ChipBuild:
    tree = tmp_path_factory.mktemp("probe") / "a3"
    write_probe_tree(tree)
    compile_tree(tree, "a3", sim, cache=CompileCache(cache_dir), progress=None)
    return open_chip_build(tree)


@dataclass(frozen=True)
class Outcome:
    records: tuple[DispatchRecord, ...]
    error: SimulationError | None
    arrays: tuple[npt.NDArray[np.int32], ...]
    abandoned: bool

    @property
    def record(self) -> DispatchRecord:
        (only,) = self.records
        return only


@dataclass(frozen=True)
class Probe:
    runtime: NativeRuntime
    build: ChipBuild

    def run(
        self,
        modes: list[list[tuple[int, int, int]]],
        *,
        rows: int = 4,
        timeouts: Timeouts = FAST,
        scalars: int = 3,
    ) -> Outcome:
        """``modes[r]``: rank r's dispatches, each (mode, operand, flag)."""
        sub_build = self.build.sub_build("probe")
        native = self.runtime.load_callable(
            sub_build.orchestration, sub_build.entry, sub_build.kernels
        )
        world = World(self.runtime, self.build.chip, len(modes), timeouts)
        arrays = tuple(np.full((rows, 2), -1, dtype=np.int32) for _ in modes)
        orchestrator = SimOrchestrator(world)
        error = None
        try:
            for rank, dispatches in enumerate(modes):
                for dispatch in dispatches:
                    args = TaskArgs()
                    args.add_tensor(SimTensor.of(arrays[rank]), TensorArgType.INOUT)
                    for value in dispatch[:scalars]:
                        args.add_scalar(value)
                    orchestrator.submit_next_level(
                        SimNextLevel("probe", native), args, CallConfig(), worker=rank
                    )
            world.fence()
        except SimulationError as failure:
            error = failure
        finally:
            world.close([native])
        return Outcome(world.records(), error, arrays, world.abandoned)


@pytest.fixture
def probe(runtime: NativeRuntime, probe_build: ChipBuild) -> Probe:
    return Probe(runtime, probe_build)


def test_the_abi_structures_have_the_pinned_sizes(runtime: NativeRuntime) -> None:
    assert (runtime.abi.chip_tensor, runtime.abi.comm_context, runtime.abi.local_context) == (
        128,
        1056,
        8,
    )


@pytest.mark.parametrize("offset", [0, 1, 15, 16, 63])
@pytest.mark.parametrize("nbytes", [0, 1, 63, 64, 65, 200, 4096 + 17])
def test_stream_fill_writes_exactly_its_bytes_at_any_alignment(
    runtime: NativeRuntime, offset: int, nbytes: int
) -> None:
    """The streamed middle and the plain ends together: a copy, or zeros, of exactly the range,
    whatever its alignment, and nothing around it."""
    rng = np.random.default_rng(nbytes * 64 + offset)
    source = rng.integers(1, 256, offset + nbytes + 64, dtype=np.uint8)
    target = np.full(offset + nbytes + 64, 0xA5, dtype=np.uint8)
    expected = target.copy()
    expected[offset : offset + nbytes] = source[offset : offset + nbytes]
    runtime.stream_fill(target.ctypes.data + offset, source.ctypes.data + offset, nbytes)
    np.testing.assert_array_equal(target, expected)
    expected[offset : offset + nbytes] = 0
    runtime.stream_fill(target.ctypes.data + offset, None, nbytes)
    np.testing.assert_array_equal(target, expected)


def test_a_domain_has_zeroed_windows_and_a_context_per_rank(runtime: NativeRuntime) -> None:
    domain = runtime.create_domain(3, 100)
    try:
        assert domain.window_bytes == 128
        for rank in range(3):
            assert not domain.window(rank).any()
            raw = ctypes.string_at(domain.contexts[rank], runtime.abi.comm_context)
            words = np.frombuffer(raw, dtype=np.uint64)
            assert np.frombuffer(raw[16:24], dtype=np.uint32).tolist() == [rank, 3]
            assert int(words[3]) == 128  # winSize
            assert words[4:7].tolist() == list(domain.windows)  # windowsIn
            assert words[68:71].tolist() == list(domain.windows)  # windowsOut
            assert not words[7:68].any() and not words[71:].any()
    finally:
        domain.close()


def descriptor_fields(
    runtime: NativeRuntime, tensor: SimTensor
) -> tuple[int, int, bool, list[int]]:
    """(start_offset, ndims, is_contiguous, strides) of the tensor's descriptor."""
    descriptor = tensor.describe(runtime)
    raw = ctypes.string_at(descriptor.address, runtime.abi.chip_tensor)
    start, ndims = int(np.frombuffer(raw[24:32], np.uint64)[0]), raw[36]
    strides = np.frombuffer(raw[72:92], np.uint32)[:ndims].tolist()
    return start, ndims, bool(raw[42]), strides


def test_descriptors_keep_a_view_s_offset_and_strides(runtime: NativeRuntime) -> None:
    whole = SimTensor.of(np.zeros((4, 8), dtype=np.float32))
    assert descriptor_fields(runtime, whole) == (0, 2, True, [8, 1])
    assert descriptor_fields(runtime, whole.slice((1, 2), (2, 4))) == (10, 2, False, [8, 1])
    assert descriptor_fields(runtime, whole.slice((2, 0), (1, 8))) == (16, 2, True, [8, 1])
    assert descriptor_fields(runtime, whole.slice((1, 0), (2, 8)).reshape((16,))) == (
        8,
        1,
        True,
        [1],
    )
    with pytest.raises(ValueError, match="not contiguous"):
        whole.slice((0, 0), (4, 4)).reshape((16,))
    with pytest.raises(ValueError, match="1 to 5 dimensions, got 6"):
        SimTensor.of(np.zeros((1,) * 6, dtype=np.float32)).describe(runtime)
    with pytest.raises(IndexError, match="offset 3 \\+ extent 2 exceeds dimension 0 of size 4"):
        whole.slice((3, 0), (2, 8))


def test_every_block_of_a_task_runs_with_its_own_identity(probe: Probe) -> None:
    outcome = probe.run([[(RECORD, 5, 0)]], rows=5)
    assert outcome.error is None
    assert outcome.arrays[0].tolist() == [[block, 5] for block in range(5)]
    assert (outcome.record.code, outcome.record.tasks) == (0, 1)


def test_the_first_error_wins_and_later_submissions_are_dropped(probe: Probe) -> None:
    outcome = probe.run([[(TWO_FATALS, 0, 0)]])
    assert outcome.error is not None and outcome.error.codes == {0: 9}
    record = outcome.record
    assert (record.code, record.message, record.tasks) == (9, "first fatal, code 9", 0)
    assert record.log == (
        "FATAL(code=9): first fatal, code 9",
        "FATAL(code=5, latched=9): second fatal",
    )
    assert (outcome.arrays[0] == -1).all()


def test_a_kernel_error_latches_with_the_block_that_reported_it(probe: Probe) -> None:
    outcome = probe.run([[(RECORD, 2, 1)]])
    assert outcome.record.code == 9
    assert outcome.record.message == "kernel 'record' (func_id 0) block 1/2: block one refuses"


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        (
            TENSOR_AFTER_SCALAR,
            "invalid task arguments for func_id 0: a tensor argument was added after a scalar",
        ),
        (UNKNOWN_KERNEL, "no kernel with func_id 42 in this callable's kernel_config.py"),
        (AIC_AS_AIV, "kernel 'cube' (func_id 3) is an aic kernel, submitted as aiv"),
    ],
)
def test_bad_submissions_latch_invalid_args(probe: Probe, mode: int, message: str) -> None:
    outcome = probe.run([[(mode, 0, 0)]])
    assert (outcome.record.code, outcome.record.message, outcome.record.tasks) == (5, message, 0)


def test_sync_start_launches_are_admitted_up_to_the_simulation_s_aiv_count(
    probe: Probe,
) -> None:
    # The host-simulation platform runs 8 clusters, 16 AIV, as simpler's a2a3sim does (the a3
    # device admits 48).
    admitted = probe.run([[(SYNC_START, 16, 0)]], rows=16)
    assert admitted.error is None
    assert admitted.arrays[0][:, 1].tolist() == [16] * 16
    refused = probe.run([[(SYNC_START, 17, 0)]], rows=17)
    assert (refused.record.code, refused.record.message, refused.record.tasks) == (
        7,
        "require_sync_start block_num=17 > limit=16 (deadlock guaranteed)",
        0,
    )


def test_aic_launches_are_bounded_by_the_simulation_s_cluster_count(probe: Probe) -> None:
    admitted = probe.run([[(CUBE, 8, 0)]])
    assert (admitted.record.code, admitted.record.tasks) == (0, 1)
    refused = probe.run([[(CUBE, 9, 0)]])
    assert (refused.record.code, refused.record.message) == (
        7,
        "require_sync_start block_num=9 > limit=8 (deadlock guaranteed)",
    )


def test_a_wait_that_never_completes_times_out_with_code_100(probe: Probe) -> None:
    outcome = probe.run([[(WAIT_FOREVER, 0, 0)]], timeouts=Timeouts(wait=0.2))
    assert outcome.record.code == 100
    assert outcome.record.message == (
        "kernel 'wait_forever' (func_id 1) block 0/1: signal wait timed out after 200000000 ns: "
        "the slot holds -1, waiting for >= 1073741824"
    )
    assert not outcome.abandoned


def test_block_threads_are_kept_for_later_tasks_and_runs(probe: Probe) -> None:
    before, _ = probe.runtime.pool_threads()
    for _ in range(3):
        outcome = probe.run([[(RECORD, 5, 0)] * 10], rows=5)
        assert outcome.error is None and outcome.arrays[0].tolist() == [[b, 5] for b in range(5)]
    # Thirty tasks of five blocks, one at a time: 150 blocks ran on a handful of fibers. A
    # fiber returns to the idle ones a moment after its job has signalled its end, so the next
    # task may start before every fiber of the last is back: at most twice the widest need (five
    # blocks and the orchestration) were ever made, and all are idle once the runs are over.
    deadline = time.monotonic() + 2.0
    threads, idle = probe.runtime.pool_threads()
    while idle != threads and time.monotonic() < deadline:
        time.sleep(0.01)
        threads, idle = probe.runtime.pool_threads()
    assert threads - before <= 2 * (5 + 1)
    assert idle == threads


def test_rank_threads_are_kept_for_later_worlds(probe: Probe) -> None:
    four_ranks = [[(RECORD, 2, 0)]] * 4
    assert probe.run(four_ranks, rows=2).error is None
    threads = threading.active_count()
    for _ in range(3):
        assert probe.run(four_ranks, rows=2).error is None
    assert threading.active_count() == threads


@pytest.mark.slow
def test_a_kernel_that_never_returns_is_abandoned(probe: Probe) -> None:
    outcome = probe.run([[(SPIN, 1500, 0)]])
    assert outcome.record.code == 100
    assert outcome.record.message == (
        "kernel 'spin' (func_id 2): 1 of 1 blocks did not return within 0.4 s; they were abandoned"
    )
    assert outcome.abandoned
    # The pool runs later tasks on other threads meanwhile, and takes the abandoned block's
    # thread back when its kernel returns.
    threads, idle = probe.runtime.pool_threads()
    assert idle == threads - 1
    later = probe.run([[(RECORD, 3, 0)]], rows=3)
    assert later.error is None and later.arrays[0].tolist() == [[b, 3] for b in range(3)]
    deadline = time.monotonic() + 5
    while len(set(probe.runtime.pool_threads())) > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    threads, idle = probe.runtime.pool_threads()
    assert idle == threads


@pytest.mark.slow
def test_a_run_without_progress_is_declared_hung(probe: Probe) -> None:
    outcome = probe.run([[(ORCHESTRATION_SPIN, 1500, 0)]])
    assert outcome.error is not None and outcome.error.codes == {0: 100}
    # The watchdog looks every quarter second: it reports the idle time it saw, at least the
    # 0.5 s limit and more on a loaded machine.
    found = re.fullmatch(
        r"no kernel block started or returned and no dispatch finished on any rank for "
        r"(\d+\.\d) s; the run was abandoned",
        outcome.error.ranks[0].message,
    )
    assert found is not None and float(found.group(1)) >= 0.5
    assert outcome.abandoned


def test_too_few_arguments_refuse_the_run(probe: Probe) -> None:
    outcome = probe.run([[(RECORD, 1, 0)]], scalars=2)
    assert outcome.record.code == RUN_REFUSED
    assert outcome.record.message == (
        "the orchestration expects 4 arguments (aicpu_orchestration_config), got 3 "
        "(1 tensors, 2 scalars)"
    )
    assert outcome.error is not None and outcome.error.ranks[0].status == -1


def test_runtime_tensors_are_zeroed_and_tasks_finish_before_submit_returns(probe: Probe) -> None:
    outcome = probe.run([[(CREATE_TENSOR, 3, 0)]])
    assert outcome.record.log == ("row 0: 0 3", "row 1: 1 3", "row 2: 2 3")


def test_a_failed_rank_drops_its_later_dispatches_and_the_others_go_on(probe: Probe) -> None:
    outcome = probe.run([[(TWO_FATALS, 0, 0), (RECORD, 1, 0)], [(RECORD, 1, 0), (RECORD, 2, 0)]])
    assert outcome.error is not None and outcome.error.codes == {0: 9}
    assert [(r.rank, r.index, r.code, r.skipped) for r in outcome.records] == [
        (0, 0, 9, False),
        (0, 1, 0, True),
        (1, 0, 0, False),
        (1, 1, 0, False),
    ]
    assert outcome.arrays[1][:2].tolist() == [[0, 2], [1, 2]]


def test_timeouts_come_from_the_environment() -> None:
    assert Timeouts.from_environment({}) == Timeouts(10.0)
    timeouts = Timeouts.from_environment({"PYPTO_SIM_TIMEOUT_S": "2.5"})
    assert (timeouts.wait, timeouts.task, timeouts.idle) == (2.5, 10.0, 12.5)
    for bad in ("soon", "0", "-1"):
        with pytest.raises(ValueError, match="is not a positive number of seconds"):
            Timeouts.from_environment({"PYPTO_SIM_TIMEOUT_S": bad})


def test_scalars_are_passed_as_64_bit_patterns() -> None:
    assert scalar_bits(-1) == 2**64 - 1
    assert scalar_bits(2**64 - 1) == 2**64 - 1
    assert scalar_bits(True) == 1
    assert scalar_bits(1.5) == 0x3FC00000
    with pytest.raises(OverflowError):
        scalar_bits(2**64)


def test_the_runtime_library_lives_in_the_cache_only_as_an_entry(
    runtime: NativeRuntime, cache_dir: Path, sim: SimToolchain
) -> None:
    cache = CompileCache(cache_dir)
    with runtime_library(cache, sim) as library:
        data = library.read_bytes()
        assert library.is_relative_to(cache_dir / LAYOUT / "tmp")
    assert not library.exists()
    assert data.startswith(b"\x7fELF")
    entries = (cache_dir / LAYOUT / "entries").glob("*/*/*/artifact")
    assert any(artifact.read_bytes() == data for artifact in entries)
    assert sorted(path.name for path in cache_dir.iterdir()) == [LAYOUT]
    # Built from sources named relative to their folder: no build or staging path inside.
    for path in (RUNTIME_DIR, cache_dir):
        assert str(path).encode() not in data


def test_only_trees_compiled_for_the_simulator_open(tmp_path: Path) -> None:
    write_probe_tree(tmp_path / "a3")
    render = r"is a render \(sources only\), not a build; build it first"
    with pytest.raises(BuildTreeError, match=render):
        open_chip_build(tmp_path)
    with pytest.raises(BuildTreeError, match="no tree for chip a5"):
        open_chip_build(tmp_path, "a5")
    with pytest.raises(BuildTreeError, match="not a build directory"):
        open_chip_build(TreeLayout(tmp_path / "a3").next_levels)


def test_host_arrays_and_window_views_are_typed_and_bounded() -> None:
    assert SimTensor.of(np.zeros(2, dtype=np.int8)).dtype is DataType.INT8
    with pytest.raises(TypeError, match="has no runtime DataType"):
        SimTensor.of(np.zeros(2, dtype=np.complex64))
    slot = np.zeros(64, dtype=np.uint8)
    assert window_tensor(slot, (4, 4), DataType.FLOAT32).shape == (4, 4)
    with pytest.raises(ValueError, match="needs 80 bytes; the window buffer has 64"):
        window_tensor(slot, (5, 4), DataType.FLOAT32)

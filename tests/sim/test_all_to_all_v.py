"""all_to_all_v on simulated ranks, both rails, built through the real path: the upstream goldens
and count matrix, launch widths, signal reuse, and every way a launch is refused."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from _support.goldens import (
    SKEW_CASES,
    Exchange,
    exchange,
    payload,
    salt,
    skew_counts,
    uniform_counts,
)
from _support.sim_programs import (
    MAX_RECV,
    ROUNDS,
    SIZE,
    BuildProgram,
    ChipRail,
    HostRail,
    NonContiguous,
)

from pypto_build import sim
from pypto_build.chip_build.runtime_types import DataType, TensorArgType
from pypto_build.chip_build.sim.l3 import (
    CallConfig,
    CommBufferSpec,
    SimNextLevel,
    SimOrchestrator,
    TaskArgs,
)
from pypto_build.chip_build.sim.program import open_chip_build
from pypto_build.chip_build.sim.runtime import load_runtime
from pypto_build.chip_build.sim.tensors import SimTensor
from pypto_build.chip_build.sim.world import Timeouts, World

#: Added to the payload of the second round (the upstream multicore test's round offset).
ROUND_OFFSET = 10000


@dataclass(frozen=True)
class Rounds:
    """What every rank sent and received in each round."""

    result: sim.SimResult
    sent: tuple[Exchange, ...]
    out: npt.NDArray[np.generic]
    recv: npt.NDArray[np.int32]


def run_rounds(
    build: Path,
    nr: int,
    dtype: str,
    counts: Sequence[npt.NDArray[np.int32]],
    offsets: Sequence[int],
    core_num: int | None = None,
) -> Rounds:
    """Run a rail program's :data:`ROUNDS` rounds: round i sends ``payload(offsets[i])`` with
    ``counts[i]``. The outputs ``out`` and ``recv_out`` start zero-filled (not given)."""
    inputs = [payload(nr, dtype, offset) for offset in offsets]
    total = nr * MAX_RECV
    values: dict[str, npt.ArrayLike] = {
        "inp": np.concatenate(inputs).reshape(ROUNDS * nr * total, SIZE),
        "counts_in": np.concatenate(counts).reshape(-1),
    }
    if core_num is not None:
        values["core_num"] = core_num
    result = sim.run(build, ranks=nr, inputs=values)
    return Rounds(
        result,
        tuple(exchange(i, c) for i, c in zip(inputs, counts, strict=True)),
        result["out"].reshape(ROUNDS, nr, total, SIZE),
        result["recv_out"].reshape(ROUNDS, nr, nr),
    )


def case_counts(case: str, nr: int) -> tuple[npt.NDArray[np.int32], int]:
    """The counts and payload offset of a golden case."""
    if case == "uniform":
        return uniform_counts(nr), 0
    return skew_counts(case, nr), salt(case, nr)


def rail_program(rail: str, nr: int, dtype: str, core_num: int = 1) -> HostRail | ChipRail:
    """The rail's program; a HOST program's signal has lanes for the widest launch the tests
    give it (S = B for core_num > 1, and 4 lanes at P=4 for the stride check)."""
    if rail == "chip":
        return ChipRail(nr, dtype, core_num)
    blocks = core_num if core_num < nr else core_num // nr * nr
    return HostRail(nr, dtype, lanes=4 if core_num == 1 and nr == 4 else blocks)


def signal_lanes(result: sim.SimResult, nr: int, lanes: int) -> npt.NDArray[np.generic]:
    """Every rank's signal window after the run, [rank, peer, lane]."""
    domain = result.domain("d0")
    return np.stack(
        [domain.view("signal", rank, (nr, lanes), DataType.INT32) for rank in range(nr)]
    )


@pytest.mark.slow
@pytest.mark.parametrize("case", ["uniform", *SKEW_CASES])
@pytest.mark.parametrize("nr", [2, 4])
@pytest.mark.parametrize("dtype", ["fp32", "int8"])
@pytest.mark.parametrize("rail", ["host", "chip"])
def test_golden_exchange(
    rail: str, dtype: str, nr: int, case: str, build_program: BuildProgram
) -> None:
    counts, offset = case_counts(case, nr)
    program = rail_program(rail, nr, dtype)
    build = build_program(program)
    rounds = run_rounds(
        build,
        nr,
        dtype,
        [counts, counts],
        [offset, offset + ROUND_OFFSET],
        core_num=1 if rail == "host" else None,
    )
    for index, golden in enumerate(rounds.sent):
        np.testing.assert_array_equal(rounds.recv[index], golden.recv)
        # Rows past each count were never written: exactly zero in the fresh windows.
        np.testing.assert_array_equal(rounds.out[index], golden.target)


@pytest.mark.parametrize("core_num", [1, 2, 4])
@pytest.mark.parametrize("rail", ["host", "chip"])
def test_launch_width_changes_nothing_but_the_lanes(
    rail: str, core_num: int, build_program: BuildProgram
) -> None:
    nr = 2
    program = rail_program(rail, nr, "fp32", core_num)
    counts, offset = case_counts("zero_and_full", nr)
    rounds = run_rounds(
        build_program(program),
        nr,
        "fp32",
        [counts, uniform_counts(nr)],
        [offset, ROUND_OFFSET],
        core_num=core_num if rail == "host" else None,
    )
    first, second = rounds.sent
    np.testing.assert_array_equal(rounds.out[0], first.target)
    np.testing.assert_array_equal(rounds.recv[1], second.recv)
    for rank in range(nr):
        for source in range(nr):
            rows = second.rows(rank, source)
            start = source * MAX_RECV
            np.testing.assert_array_equal(
                rounds.out[1, rank, start : start + rows], second.target[rank, start : start + rows]
            )
    assert not signal_lanes(rounds.result, nr, program.lanes).any()


@pytest.mark.parametrize(("nr", "core_num", "lanes"), [(2, 5, 4), (4, 10, 8)])
def test_two_rounds_through_one_signal_leave_every_lane_clean(
    nr: int, core_num: int, lanes: int, build_program: BuildProgram
) -> None:
    build = build_program(HostRail(nr, "fp32", lanes))
    counts = [skew_counts("one_and_full", nr), uniform_counts(nr)]
    rounds = run_rounds(build, nr, "fp32", counts, [0, ROUND_OFFSET], core_num=core_num)
    for index, golden in enumerate(rounds.sent):
        np.testing.assert_array_equal(rounds.recv[index], golden.recv)
        for rank in range(nr):
            for source in range(nr):
                start, rows = source * MAX_RECV, golden.rows(rank, source)
                np.testing.assert_array_equal(
                    rounds.out[index, rank, start : start + rows],
                    golden.target[rank, start : start + rows],
                )
    assert not signal_lanes(rounds.result, nr, lanes).any()
    blocks = lanes
    logs = [
        line
        for record in rounds.result.dispatches
        for line in record.log
        if record.next_level == "builtin.tensor.all_to_all_v__fp32"
    ]
    expected = (
        f"all_to_all_v: requested_core_num={core_num} launched_core_num={blocks} "
        f"active_lanes={blocks} nranks={nr} lanes_per_peer={blocks // nr}"
    )
    assert logs == [expected] * (ROUNDS * nr)


def failed_run(build: Path, nr: int, **scalars: int) -> sim.SimulationError:
    counts = [uniform_counts(nr)] * ROUNDS
    with pytest.raises(sim.SimulationError) as caught:
        run_rounds(build, nr, "fp32", counts, [0, ROUND_OFFSET], **scalars)
    return caught.value


@pytest.mark.parametrize(("nr", "lanes", "core_num", "blocks"), [(4, 4, 10, 8), (2, 2, 5, 4)])
def test_signal_stride_below_the_block_count_fails_every_rank(
    nr: int, lanes: int, core_num: int, blocks: int, build_program: BuildProgram
) -> None:
    error = failed_run(build_program(HostRail(nr, "fp32", lanes)), nr, core_num=core_num)
    message = (
        f"all_to_all_v: signal stride ({lanes}) is smaller than the admitted block count "
        f"({blocks}) for core_num={core_num}, nranks={nr}"
    )
    assert error.codes == dict.fromkeys(range(nr), sim.SIMPLER_ERROR_INVALID_ARGS)
    assert [e.message for e in error.ranks] == [message] * nr
    assert {e.next_level for e in error.ranks} == {"builtin.tensor.all_to_all_v__fp32"}
    assert message in str(error)
    # Nothing was launched, and each rank dropped its later dispatches.
    collective = "builtin.tensor.all_to_all_v__fp32"
    assert [(d.next_level, d.tasks, d.skipped) for d in error.dispatches if d.rank == 0] == [
        ("stage_orch", 1, False),
        (collective, 0, False),
        *[(name, 0, True) for name in ("drain_orch", "stage_orch", collective, "drain_orch")],
    ]


def test_a_sync_start_launch_wider_than_the_chip_is_refused(build_program: BuildProgram) -> None:
    # 50 blocks: beyond the a3 device's 48 AIV and the simulation platform's 16.
    error = failed_run(build_program(HostRail(2, "fp32", 50)), 2, core_num=51)
    assert error.codes == {0: 7, 1: 7}
    assert [e.message for e in error.ranks] == [
        "require_sync_start block_num=50 > limit=16 (deadlock guaranteed)"
    ] * 2
    assert "block_num=51" not in str(error)
    assert "SIMPLER_ERROR_REQUIRE_SYNC_START_INVALID" in str(error)


def dispatch_exchange(
    build_dir: Path, inputs: Sequence[npt.NDArray[np.float32]], timeout: float
) -> sim.SimulationError:
    """Dispatch ``chip_exchange`` of a :class:`NonContiguous` build on every rank, rank r's
    input ``inputs[r]`` as given (a strided view reaches the orchestration as such), with the
    windows its HOST orchestrator allocates; return the error the run must end with."""
    build = open_chip_build(build_dir)
    nr = len(inputs)
    total = nr * MAX_RECV
    sizes = {"stage_buf": total * SIZE * 4, "data_buf": total * SIZE * 4}
    sizes.update(signal_buf=nr * 4, counts_buf=nr * 4, recv_buf=nr * 4)
    specs = [
        CommBufferSpec(name, "opaque", size, -(-size // 64) * 64) for name, size in sizes.items()
    ]
    runtime = load_runtime()
    world = World(runtime, build.chip, nr, Timeouts(timeout))
    sub_build = build.sub_build("chip_exchange")
    native = runtime.load_callable(sub_build.orchestration, sub_build.entry, sub_build.kernels)
    exchange = SimNextLevel("chip_exchange", native)
    orch = SimOrchestrator(world)
    window_size = sum(spec.nbytes for spec in specs)
    try:
        with orch.allocate_domain(
            name="d0", workers=range(nr), window_size=window_size, buffers=specs
        ) as domain:
            for rank, array in enumerate(inputs):
                handle = domain[rank]
                args = TaskArgs()
                args.add_tensor(SimTensor.of_view(array), TensorArgType.INPUT)
                for name, shape, dtype in (
                    ("data_buf", (total, SIZE), DataType.FLOAT32),
                    ("signal_buf", (nr, 1), DataType.INT32),
                    ("counts_buf", (nr,), DataType.INT32),
                    ("recv_buf", (nr, 1), DataType.INT32),
                ):
                    args.add_tensor(handle.buffers[name].tensor(shape, dtype), TensorArgType.INOUT)
                for _ in range(4):
                    args.add_scalar(handle.device_ctx)
                orch.submit_next_level(exchange, args, CallConfig(), worker=rank)
    except sim.SimulationError as error:
        return error
    finally:
        world.close([native])
    raise AssertionError("the run did not fail")


def exchange_inputs(nr: int, strided: Sequence[int]) -> list[npt.NDArray[np.float32]]:
    """Rank r's rows: dense, or the left half of rows twice as wide (strided) for r in
    ``strided``."""
    total = nr * MAX_RECV
    wide = np.ones((nr * total, 2 * SIZE), dtype=np.float32)
    tall = np.ones((nr * total, SIZE), dtype=np.float32)
    return [
        (
            wide[r * total : (r + 1) * total, :SIZE]
            if r in strided
            else tall[r * total : (r + 1) * total]
        )
        for r in range(nr)
    ]


NOT_CONTIGUOUS = "__builtin_all_to_all_v__fp32: operand input is not contiguous"


def test_a_non_contiguous_operand_submits_nothing_on_any_rank(
    build_program: BuildProgram,
) -> None:
    nr = 2
    error = dispatch_exchange(
        build_program(NonContiguous(nr)), exchange_inputs(nr, strided=(0, 1)), timeout=10
    )
    assert error.codes == {0: 5, 1: 5}
    assert [e.message for e in error.ranks] == [NOT_CONTIGUOUS] * nr
    assert [(d.rank, d.next_level, d.tasks) for d in error.dispatches] == [
        (rank, "chip_exchange", 0) for rank in range(nr)
    ]


@pytest.mark.slow
def test_a_rank_left_alone_in_a_collective_times_out_instead_of_hanging(
    build_program: BuildProgram,
) -> None:
    nr = 2
    error = dispatch_exchange(
        build_program(NonContiguous(nr)), exchange_inputs(nr, strided=(1,)), timeout=0.3
    )
    first, second = error.ranks
    assert (first.code, second.code, second.message) == (100, 5, NOT_CONTIGUOUS)
    assert first.message == (
        "kernel '__builtin_all_to_all_v__fp32' (func_id 0) block 0/1: signal wait timed out "
        "after 300000000 ns: the slot holds 0, waiting for >= 1"
    )


def test_the_ranks_see_one_window_per_rank_at_the_same_offsets(
    build_program: BuildProgram,
) -> None:
    result = run_rounds(
        build_program(rail_program("host", 2, "fp32")),
        2,
        "fp32",
        [uniform_counts(2)] * ROUNDS,
        [0, ROUND_OFFSET],
        core_num=1,
    ).result
    domain = result.domain("d0")
    assert domain.devices == (0, 1)
    assert [(b.name, b.offset) for b in domain.buffers] == [
        ("stage", 0),
        ("data", 2048),
        ("signal", 4096),
        ("counts", 4160),
        ("recv", 4224),
    ]
    # Each rank's window holds what it received last: the drained output of the last round.
    total = 2 * MAX_RECV
    last_round = result["out"].reshape(ROUNDS, 2, total, SIZE)[-1]
    for rank in (0, 1):
        data = domain.view("data", rank, (total, SIZE), DataType.FLOAT32)
        np.testing.assert_array_equal(data, last_round[rank])

"""The cross-rank barrier of pypto_build/mix_kernel.h (``CommBarrier``), run through the
simulation runtime: built from portability.h's signal primitives on slots in a window, it holds
every rank until all have arrived, round after round, takes its credits off at the end of a call
so that back-to-back calls on the same window work, and a rank that never arrives fails its
peers with the wait timeout, never a hang."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from _support.sim_programs import HERE, BuildProgram, ProgramSpec

from pypto_build import sim

NR = 4
ROUNDS = 3  # barrier_rounds.cpp's kRounds
TIMEOUT = 0.3
TAKE_PART, LEAVE = 0, 1


@dataclass(frozen=True)
class BarrierRounds(ProgramSpec):
    """A chip orchestration alone that calls barrier_rounds.cpp twice on the same windows."""

    nr: int

    @property
    def slug(self) -> str:
        return f"barrier-p{self.nr}"

    def kernels(self) -> tuple[Path, ...]:
        return (HERE / "kernels" / "barrier_rounds.cpp",)

    def source(self) -> str:
        return f"""\
import pypto.language as pl
import pypto.language.distributed as pld

NR = {self.nr}
ROUNDS = {ROUNDS}


@pl.program
class BarrierRounds:
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/barrier_rounds.cpp")
    def rounds(
        self,
        mode: pl.Tensor[[1], pl.INT32],
        slots: pl.InOut[pld.DistributedTensor[[1], pl.INT32]],
        barrier: pl.InOut[pld.DistributedTensor[[1], pl.INT32]],
        seen: pl.Out[pl.Tensor[[ROUNDS, NR], pl.INT32]],
    ) -> tuple[
        pld.DistributedTensor[[1], pl.INT32],
        pld.DistributedTensor[[1], pl.INT32],
        pl.Tensor[[ROUNDS, NR], pl.INT32],
    ]:
        ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def barrier_rounds(
        self,
        mode: pl.Tensor[[1], pl.INT32],
        slots: pl.InOut[pld.DistributedTensor[[1], pl.INT32]],
        barrier: pl.InOut[pld.DistributedTensor[[1], pl.INT32]],
        first: pl.Out[pl.Tensor[[ROUNDS, NR], pl.INT32]],
        second: pl.Out[pl.Tensor[[ROUNDS, NR], pl.INT32]],
    ):
        slots, barrier, first = self.rounds(mode, slots, barrier, first)
        slots, barrier, second = self.rounds(mode, slots, barrier, second)
"""


@pytest.fixture
def build(build_program: BuildProgram) -> Path:
    return build_program(BarrierRounds(NR))


def modes(**by_rank: int) -> dict[str, np.ndarray]:
    """Every rank takes part, but for ``r<rank>=<mode>``."""
    mode = np.full((NR, 1), TAKE_PART, dtype=np.int32)
    for name, value in by_rank.items():
        mode[int(name.removeprefix("r"))] = value
    return {"mode": mode}


def test_back_to_back_calls_see_every_rank_s_value_of_each_round(build: Path) -> None:
    result = sim.run(build, ranks=NR, inputs=modes())
    expected = (np.arange(1, ROUNDS + 1)[:, None] * 100 + np.arange(NR)[None, :]).astype(np.int32)
    for name in ("first", "second"):
        np.testing.assert_array_equal(result[name], np.broadcast_to(expected, (NR, ROUNDS, NR)))
    assert result.windows["slots"][:, 0].tolist() == [ROUNDS * 100 + rank for rank in range(NR)]
    # Each call took its credits off again: the second call started from, and left, zeros.
    assert not result.windows["barrier"].any()


@pytest.mark.slow
def test_a_rank_that_never_arrives_fails_its_peers_after_one_timeout(build: Path) -> None:
    with pytest.raises(sim.SimulationError) as failed:
        sim.run(build, ranks=NR, inputs=modes(r2=LEAVE), timeout=TIMEOUT)
    errors = {error.rank: error for error in failed.value.ranks}
    assert sorted(errors) == [0, 1, 3]  # rank 2 returned at once, without an error
    assert {error.code for error in errors.values()} == {sim.SIMPLER_ERROR_SCHEDULER_TIMEOUT}
    # Each waiter got the first credits of the two others that arrived, not rank 2's.
    assert all(
        "signal wait timed out after 300000000 ns: the slot holds 2, waiting for >= 3"
        in error.message
        for error in errors.values()
    )
    result = failed.value.result
    assert result is not None
    # The peers wait out their timeouts side by side: the run takes one timeout, not one per rank.
    assert max(d.seconds for d in result.dispatches) < 3 * TIMEOUT

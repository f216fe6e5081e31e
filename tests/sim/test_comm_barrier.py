"""The simulation runtime's barrier over a comm domain (``comm_barrier``, pypto_build/mix_kernel.h):
it holds every rank until all have arrived, round after round, needs no bytes in the windows, and
a rank that never arrives (or arrives counting other parties) fails the run at once on every
rank, with the wait timeout as its only delay."""

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
TAKE_PART, LEAVE, TWO_PARTIES = 0, 1, 2


@dataclass(frozen=True)
class BarrierRounds(ProgramSpec):
    """A chip orchestration alone whose one AIV kernel runs barrier_rounds.cpp on every rank."""

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
        seen: pl.Out[pl.Tensor[[ROUNDS, NR], pl.INT32]],
    ) -> tuple[pld.DistributedTensor[[1], pl.INT32], pl.Tensor[[ROUNDS, NR], pl.INT32]]:
        ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def barrier_rounds(
        self,
        mode: pl.Tensor[[1], pl.INT32],
        slots: pl.InOut[pld.DistributedTensor[[1], pl.INT32]],
        seen: pl.Out[pl.Tensor[[ROUNDS, NR], pl.INT32]],
    ):
        slots, seen = self.rounds(mode, slots, seen)
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


def test_every_round_sees_every_rank_s_value_of_that_round(build: Path) -> None:
    result = sim.run(build, ranks=NR, inputs=modes())
    expected = (np.arange(1, ROUNDS + 1)[:, None] * 100 + np.arange(NR)[None, :]).astype(np.int32)
    np.testing.assert_array_equal(result["seen"], np.broadcast_to(expected, (NR, ROUNDS, NR)))
    # The barrier keeps nothing in the windows: each holds its rank's last value only.
    assert result.windows["slots"][:, 0].tolist() == [ROUNDS * 100 + rank for rank in range(NR)]


@pytest.mark.slow
def test_a_rank_that_never_arrives_fails_its_peers_after_one_timeout(build: Path) -> None:
    with pytest.raises(sim.SimulationError) as failed:
        sim.run(build, ranks=NR, inputs=modes(r2=LEAVE), timeout=TIMEOUT)
    errors = {error.rank: error for error in failed.value.ranks}
    assert sorted(errors) == [0, 1, 3]  # rank 2 returned at once, without an error
    assert {error.code for error in errors.values()} == {sim.SIMPLER_ERROR_SCHEDULER_TIMEOUT}
    messages = [error.message for error in errors.values()]
    # One waiter ran out of time and broke the barrier; the others left when it broke, so the
    # run took one timeout, not one per rank.
    waited = [m for m in messages if "comm_barrier: rank " in m]
    broken = [m for m in messages if "comm_barrier: the barrier was broken: rank " in m]
    assert (len(waited), len(broken)) == (1, 2)
    assert all(m.endswith("waited 0.3 s with 3 of 4 parties arrived") for m in messages)
    result = failed.value.result
    assert result is not None
    assert max(d.seconds for d in result.dispatches) < 3 * TIMEOUT


@pytest.mark.slow
def test_a_rank_counting_other_parties_breaks_the_barrier(build: Path) -> None:
    with pytest.raises(sim.SimulationError) as failed:
        sim.run(build, ranks=NR, inputs=modes(r1=TWO_PARTIES), timeout=TIMEOUT)
    errors = failed.value.ranks
    assert sorted(error.rank for error in errors) == list(range(NR))
    mismatched = [error for error in errors if error.code == sim.SIMPLER_ERROR_INVALID_ARGS]
    assert len(mismatched) == 1
    assert "parties, the round under way has" in mismatched[0].message

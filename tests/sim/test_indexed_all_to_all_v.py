"""indexed_all_to_all_v on simulated a5 ranks: rows gathered through the index, counts clamped,
and an index outside the input rows failing every rank before anything is written."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from _support.goldens import skew_counts
from _support.sim_programs import MAX_RECV, SIZE, BuildProgram, Indexed

from pypto_build import sim

NR = 2
ROWS = 10
TOTAL = NR * MAX_RECV


def inputs(index: npt.NDArray[np.int32], counts: npt.NDArray[np.int32]) -> dict[str, npt.ArrayLike]:
    rows = np.arange(NR * ROWS * SIZE, dtype=np.float32).reshape(NR * ROWS, SIZE) + 1
    return {
        "rows": rows,
        "counts_in": counts.reshape(-1),
        "index_in": index.reshape(-1),
    }


def gathered(
    rows: npt.NDArray[np.float32], index: npt.NDArray[np.int32], counts: npt.NDArray[np.int32]
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int32]]:
    """Rank d's target and recv: slot r row k = rank r's rows[index_r[d*M + k]], k < rows."""
    own = rows.reshape(NR, ROWS, SIZE)
    target = np.zeros((NR, TOTAL, SIZE), dtype=np.float32)
    recv = np.clip(counts, 0, MAX_RECV).T.astype(np.int32)
    for src in range(NR):
        for dst in range(NR):
            for k in range(recv[dst, src]):
                target[dst, src * MAX_RECV + k] = own[src, index[src, dst * MAX_RECV + k]]
    return target, recv


@pytest.mark.parametrize("core_num", [1, 3])
def test_rows_are_gathered_through_the_index(core_num: int, build_program: BuildProgram) -> None:
    build = build_program(Indexed(NR, core_num, ROWS, chip="a5"))
    rng = np.random.default_rng(2521)
    index = rng.integers(0, ROWS, size=(NR, TOTAL), dtype=np.int32)
    counts = skew_counts("one_and_full", NR) + np.array([[0, 3], [0, 0]], dtype=np.int32)
    values = inputs(index, counts)
    result = sim.run(build, chip="a5", ranks=NR, inputs=values)
    target, recv = gathered(np.asarray(values["rows"]), index, counts)
    np.testing.assert_array_equal(result["recv_out"].reshape(NR, NR), recv)
    np.testing.assert_array_equal(result["out"].reshape(NR, TOTAL, SIZE), target)
    signal = result.domain("d0")
    for rank in range(NR):
        lanes = signal.view("signal", rank, (NR, core_num), sim.DataType.INT32)
        assert not lanes.any()


def test_an_index_outside_the_rows_fails_every_rank(build_program: BuildProgram) -> None:
    build = build_program(Indexed(NR, 1, ROWS, chip="a5"))
    index = np.zeros((NR, TOTAL), dtype=np.int32)
    index[1, 2] = ROWS  # rank 1's second row for rank 0 is one past its last row
    counts = np.full((NR, NR), MAX_RECV, dtype=np.int32)
    with pytest.raises(sim.SimulationError) as caught:
        sim.run(build, ranks=NR, inputs=inputs(index, counts))
    error = caught.value
    assert error.codes == {0: 5, 1: 5}
    assert "an index entry selects a row outside this rank's input rows" in error.ranks[1].message
    assert "another rank's arguments failed validation" in error.ranks[0].message

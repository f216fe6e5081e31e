"""Programs in upstream PyPTO's own spelling build unchanged and run on simulated ranks.

Each is built through the real path (front end, default pipeline, render, sim compile) and run
against the golden of upstream's all_to_all_v system tests: rank ``r`` sends ``NR - d`` rows to
rank ``d``, row ``k`` valued ``r*1000 + d*100 + k*10 + j % 10``.
"""

from __future__ import annotations

import numpy as np
import pytest
from _support.sim_programs import BuildProgram
from _support.upstream_programs import MAX_RECV, SIZE, UpstreamStyle

from pypto_build import sim


def _inputs(nr: int) -> dict[str, np.ndarray]:
    total = nr * MAX_RECV
    inputs = np.zeros((nr, total, SIZE), np.float32)
    counts = np.zeros((nr, nr, 1), np.int32)
    for r in range(nr):
        for d in range(nr):
            counts[r, d, 0] = nr - d
            for k in range(nr - d):
                inputs[r, d * MAX_RECV + k] = r * 1000 + d * 100 + k * 10 + np.arange(SIZE) % 10
    return {"inputs": inputs, "send_counts": counts}


@pytest.mark.parametrize("rail", ["host", "chip"])
@pytest.mark.parametrize("nr", [2, 4])
def test_upstream_style_program_builds_and_runs(
    build_program: BuildProgram, rail: str, nr: int
) -> None:
    build = build_program(UpstreamStyle(rail=rail, nr=nr))
    given = _inputs(nr)
    result = sim.run(build, ranks=nr, inputs=given)
    outputs, recv = result["outputs"], result["recv_outputs"]
    for rank in range(nr):
        for src in range(nr):
            rows = int(given["send_counts"][src, rank, 0])
            assert int(recv[rank, src, 0]) == rows
            got = outputs[rank, src * MAX_RECV : src * MAX_RECV + rows]
            sent = given["inputs"][src, rank * MAX_RECV : rank * MAX_RECV + rows]
            np.testing.assert_array_equal(got, sent)

"""A whole CHIP-rail pipeline on four simulated ranks: stage kernel -> all_to_all_v -> consume
kernel, with tests/programs/chip_pipeline.py's hand-written kernels, against a NumPy golden."""

from __future__ import annotations

import numpy as np
from _support.goldens import payload, pipeline_golden
from _support.sim_programs import MAX_RECV, SIZE, BuildProgram, Pipeline

from pypto_build import sim

NR = 4


def test_stage_exchange_consume_matches_numpy(build_program: BuildProgram) -> None:
    build = build_program(Pipeline(NR))
    inputs = payload(NR, "fp32", offset=7)
    total = NR * MAX_RECV
    # The output is given explicitly here: its initial contents are what consume_step overwrites.
    result = sim.run(
        build,
        ranks=NR,
        inputs={
            "inp": inputs.reshape(NR * total, SIZE),
            "out": np.full((NR * total, SIZE), -1.0, dtype=np.float32),
        },
    )
    # stage_step sends (rank + d) % (MAX_RECV + 1) rows to d; consume_step keeps the received
    # rows and zeroes the rest of every slot.
    np.testing.assert_array_equal(result["out"].reshape(NR, total, SIZE), pipeline_golden(inputs))
    assert [(d.rank, d.next_level, d.code, d.tasks) for d in result.dispatches] == [
        (rank, "chip_pipeline", 0, 3) for rank in range(NR)
    ]

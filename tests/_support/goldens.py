"""NumPy goldens of all_to_all_v (those of PyPTO's system tests, hw-native-sys/pypto
``tests/st/distributed/``), and of the
stage -> all_to_all_v -> consume pipelines built on ``tests/programs/kernels/`` (imported by the
upstream compatibility check in ``compat/`` too).

Rank r's block for destination d is ``inputs[r, d*M : d*M + rows, :]`` with
``rows = clamp(counts[r, d], 0, M)``; it lands on rank d at ``target[r*M : r*M + rows, :]`` and
rank d's ``recv[r] = rows``. Rows of a slot at or past its count are never written, so in a
freshly zeroed window they read exactly 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from _support.sim_programs import MAX_RECV, SIZE

#: The upstream skew cases, in the order the salt formula indexes them.
SKEW_CASES = ("negative", "one_and_full", "over_capacity", "zero_and_full")
NUMPY_DTYPES = {"fp32": np.float32, "int8": np.int8}


def uniform_counts(nr: int) -> npt.NDArray[np.int32]:
    """``send_counts[r, d] = nr - d``."""
    return np.tile(nr - np.arange(nr, dtype=np.int32), (nr, 1))


def skew_counts(case: str, nr: int) -> npt.NDArray[np.int32]:
    """The case's count for every (r, d): a function of d only."""
    m = MAX_RECV
    even = {"zero_and_full": 0, "one_and_full": 1, "over_capacity": m + 3, "negative": -2}[case]
    odd = m + 3 if case == "over_capacity" else m
    row = np.array([even if d % 2 == 0 else odd for d in range(nr)], dtype=np.int32)
    return np.tile(row, (nr, 1))


def salt(case: str, nr: int) -> int:
    return 900000 + (SKEW_CASES.index(case) + 1) * 100000 + nr * 10000


def payload(nr: int, dtype: str, offset: int = 0) -> npt.NDArray[np.generic]:
    """``inputs[r, d*M + k, j] = offset + r*1000 + d*100 + k*10 + j % 10`` as FP32; as INT8
    the same value folded into 1..127 (never 0, so an unwritten row is told apart)."""
    r, d, k, j = np.meshgrid(
        np.arange(nr), np.arange(nr), np.arange(MAX_RECV), np.arange(SIZE), indexing="ij"
    )
    value = offset + r * 1000 + d * 100 + k * 10 + j % 10
    if dtype == "int8":
        value = value % 127 + 1
    return value.reshape(nr, nr * MAX_RECV, SIZE).astype(NUMPY_DTYPES[dtype])


@dataclass(frozen=True)
class Exchange:
    """What every rank receives: ``target[d]`` (rows past each count zero) and ``recv[d]``."""

    target: npt.NDArray[np.generic]
    recv: npt.NDArray[np.int32]

    def rows(self, rank: int, source: int) -> int:
        return int(self.recv[rank, source])


def exchange(inputs: npt.NDArray[np.generic], counts: npt.NDArray[np.int32]) -> Exchange:
    """The golden of ``inputs`` [nr, nr*M, SIZE] sent with ``counts`` [nr, nr]."""
    nr = counts.shape[0]
    m = MAX_RECV
    target = np.zeros_like(inputs)
    recv = np.clip(counts, 0, m).T.astype(np.int32)  # recv[d, r] = rows r sends to d
    for src in range(nr):
        for dst in range(nr):
            rows = int(recv[dst, src])
            target[dst, src * m : src * m + rows] = inputs[src, dst * m : dst * m + rows]
    return Exchange(target, recv)


def stage_step_counts(nr: int) -> npt.NDArray[np.int32]:
    """The send counts ``tests/programs/kernels/stage_step.cpp`` stages on ``nr`` ranks:
    ``counts[r, d] = (r + d) % (MAX_RECV + 1)``, so every count from 0 to MAX_RECV occurs."""
    ranks = np.arange(nr)
    return ((ranks[:, None] + ranks[None, :]) % (MAX_RECV + 1)).astype(np.int32)


def pipeline_golden(inputs: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
    """What a stage_step -> all_to_all_v -> consume_step pipeline leaves in every rank's
    ``out`` ([nr, nr*M, SIZE]) for ``inputs`` [nr, nr*M, SIZE]: the exchange with
    :func:`stage_step_counts`, rows past each count zero (consume_step zeroes them)."""
    return exchange(inputs, stage_step_counts(inputs.shape[0])).target

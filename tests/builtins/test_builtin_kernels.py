"""The rendered kernels run: P simulated ranks x B blocks against NumPy goldens.

The harness (kernel_harness.cpp) drives the simulation side of the portability header exactly as
the host simulation runtime will: windows in host memory, one CommContext per rank, one thread
per block. Cases follow upstream's goldens (uniform counts, the skew matrix, the multicore
(P, L, S) table with signal reuse across rounds) plus the indexed variant's own contract.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

A2AV = ":pypto.runtime.builtins.collectives.all_to_all_v"
INDEXED = ":pypto.runtime.builtins.collectives.indexed_all_to_all_v"
INVALID_ARGS = 5
TIMEOUT = 100

Array = NDArray[np.int64]
Harness = Callable[[str, str], Path]


@dataclass
class Round:
    """One call: per rank its send_counts [P], input [N, W] and (indexed) index [P*M]."""

    counts: Array
    inputs: list[Array]
    indexes: list[Array] | None = None


@dataclass
class Exchange:
    nranks: int
    blocks: int
    lanes: int  # 0: a rank-1 signal [P]
    max_recv: int
    width: int
    rounds: list[Round] = field(default_factory=list)
    timeout_ms: int = 30_000
    skip_rank: int = -1

    @property
    def input_rows(self) -> int:
        return int(self.rounds[0].inputs[0].shape[0])


@dataclass
class RankState:
    error: int
    recv: Array
    target: Array
    signal: Array


def run(binary: Path, exchange: Exchange) -> list[list[RankState]]:
    header = [
        exchange.nranks,
        exchange.blocks,
        exchange.lanes,
        exchange.max_recv,
        exchange.width,
        exchange.input_rows,
        len(exchange.rounds),
        exchange.timeout_ms,
        exchange.skip_rank,
    ]
    parts = [" ".join(map(str, header))]
    for round_ in exchange.rounds:
        for rank in range(exchange.nranks):
            parts.append(" ".join(map(str, round_.counts[rank])))
            parts.append(" ".join(map(str, round_.inputs[rank].ravel())))
            if round_.indexes is not None:
                parts.append(" ".join(map(str, round_.indexes[rank])))
    result = subprocess.run(
        [str(binary)], input="\n".join(parts) + "\n", capture_output=True, text=True, check=True
    )
    lines = iter(result.stdout.splitlines())
    rows = exchange.nranks * exchange.max_recv
    states = []
    for _ in exchange.rounds:
        round_states = []
        for _ in range(exchange.nranks):
            values = [np.array(next(lines).split()[1:], dtype=np.int64) for _ in range(4)]
            error, recv, target, signal = values
            round_states.append(
                RankState(int(error[0]), recv, target.reshape(rows, exchange.width), signal)
            )
        states.append(round_states)
    return states


def golden(exchange: Exchange) -> list[list[RankState]]:
    """Per round and rank: the error, recv_counts, target and the (all-zero) signal expected."""
    p, m, w = exchange.nranks, exchange.max_recv, exchange.width
    target = np.zeros((p, p * m, w), dtype=np.int64)
    recv = np.zeros((p, p), dtype=np.int64)
    lanes = max(exchange.lanes, 1)
    states = []
    for round_ in exchange.rounds:
        rows = np.clip(round_.counts, 0, m)
        sources = [
            [
                np.arange(d * m, d * m + rows[r, d])
                if round_.indexes is None
                else round_.indexes[r][d * m : d * m + rows[r, d]]
                for d in range(p)
            ]
            for r in range(p)
        ]
        valid = all(
            ((src >= 0) & (src < exchange.input_rows)).all()
            for per_rank in sources
            for src in per_rank
        )
        if valid:
            for r in range(p):
                for d in range(p):
                    target[d, r * m : r * m + rows[r, d]] = round_.inputs[r][sources[r][d]]
                    recv[d, r] = rows[r, d]
        error = 0 if valid else INVALID_ARGS
        states.append(
            [
                RankState(error, recv[r].copy(), target[r].copy(), np.zeros(p * lanes, np.int64))
                for r in range(p)
            ]
        )
    return states


def assert_matches(actual: list[list[RankState]], expected: list[list[RankState]]) -> None:
    for round_index, (got_round, want_round) in enumerate(zip(actual, expected, strict=True)):
        for rank, (got, want) in enumerate(zip(got_round, want_round, strict=True)):
            where = f"round {round_index} rank {rank}"
            assert got.error == want.error, where
            np.testing.assert_array_equal(got.recv, want.recv, err_msg=f"{where} recv_counts")
            np.testing.assert_array_equal(got.target, want.target, err_msg=f"{where} target")
            np.testing.assert_array_equal(got.signal, want.signal, err_msg=f"{where} signal")


def staged_inputs(p: int, m: int, w: int, salt: int, dtype: str) -> list[Array]:
    """Upstream's input formula: row k of the slot for d on rank r is salt + r*1000 + d*100 +
    k*10 + j%10 (fp32); int8 folds a similar formula into [-128, 127]."""
    r, d, k, j = np.meshgrid(np.arange(p), np.arange(p), np.arange(m), np.arange(w), indexing="ij")
    if dtype == "fp32":
        values = salt + r * 1000 + d * 100 + k * 10 + j % 10
    else:
        values = (salt + r * 37 + d * 11 + k * 5 + j) % 256 - 128
    return [values[rank].reshape(p * m, w).astype(np.int64) for rank in range(p)]


def a2av(
    p: int,
    blocks: int,
    lanes: int,
    counts: list[Array],
    m: int = 4,
    w: int = 64,
    dtype: str = "fp32",
) -> Exchange:
    rounds = [
        Round(c, staged_inputs(p, m, w, 900_000 + 10_000 * i, dtype)) for i, c in enumerate(counts)
    ]
    return Exchange(p, blocks, lanes, m, w, rounds)


def uniform(p: int) -> Array:
    return np.array([[p - d for d in range(p)] for _ in range(p)])


def skew(p: int, m: int, case: str) -> Array:
    table = {
        "zero_and_full": lambda d: 0 if d % 2 == 0 else m,
        "one_and_full": lambda d: 1 if d % 2 == 0 else m,
        "over_capacity": lambda d: m + 3,
        "negative": lambda d: -2 if d % 2 == 0 else m,
    }
    return np.array([[table[case](d) for d in range(p)] for _ in range(p)])


@pytest.mark.parametrize("lanes", [1, 0])
def test_uniform_counts(kernel_harness: Harness, lanes: int) -> None:
    exchange = a2av(2, 1, lanes, [uniform(2)])
    assert_matches(run(kernel_harness(A2AV, "fp32"), exchange), golden(exchange))


@pytest.mark.parametrize("case", ["zero_and_full", "one_and_full", "over_capacity", "negative"])
def test_skew_matrix_clamps_counts_and_leaves_tails_untouched(
    kernel_harness: Harness, case: str
) -> None:
    exchange = a2av(4, 1, 1, [skew(4, 4, case)])
    assert_matches(run(kernel_harness(A2AV, "fp32"), exchange), golden(exchange))


# (P, B = CalAllToAllVBlocks(P, L), S): the multicore table, two rounds through one signal.
# Then launches no entry makes but the kernel must survive: a width that is not a multiple of P
# (blocks 4 and 5 only run the barriers) and more blocks than lanes (blocks 2 and 3 return).
@pytest.mark.parametrize(
    ("p", "blocks", "lanes"),
    [(2, 2, 2), (2, 4, 4), (2, 6, 6), (4, 2, 2), (4, 8, 8), (2, 2, 3), (4, 6, 6), (2, 4, 2)],
)
def test_multi_block_launches_reuse_the_signal(
    kernel_harness: Harness, p: int, blocks: int, lanes: int
) -> None:
    # One row per destination splits a 256-byte payload into ragged 32-byte-aligned pieces.
    counts = [uniform(p), np.array([[1 + (r + d) % 4 for d in range(p)] for r in range(p)])]
    exchange = a2av(p, blocks, lanes, counts)
    assert_matches(run(kernel_harness(A2AV, "fp32"), exchange), golden(exchange))


def test_int8_payload_with_pieces(kernel_harness: Harness) -> None:
    counts = [uniform(4), skew(4, 4, "one_and_full"), skew(4, 4, "negative")]
    exchange = a2av(4, 8, 8, counts, w=48, dtype="int8")
    assert_matches(run(kernel_harness(A2AV, "int8"), exchange), golden(exchange))


def test_a_missing_peer_times_out_instead_of_hanging(kernel_harness: Harness) -> None:
    exchange = a2av(2, 1, 1, [uniform(2)])
    exchange.timeout_ms = 200
    exchange.skip_rank = 1
    (states,) = run(kernel_harness(A2AV, "fp32"), exchange)
    assert [state.error for state in states] == [TIMEOUT, 0]
    # The lone rank pulled nothing and pushed nothing.
    assert not states[0].recv.any()
    assert not states[1].target.any()


def indexed_round(
    p: int, m: int, w: int, n: int, counts: Array, rng: np.random.Generator, dtype: str
) -> Round:
    inputs = [
        (
            (r * 1000 + np.arange(n)[:, None] * 10 + np.arange(w) % 10) % 256 - 128
            if dtype == "int8"
            else r * 1000 + np.arange(n)[:, None] * 10 + np.arange(w) % 10
        ).astype(np.int64)
        for r in range(p)
    ]
    indexes = []
    for r in range(p):
        index = np.full(p * m, -1, dtype=np.int64)  # entries past a count are never read
        for d in range(p):
            rows = int(np.clip(counts[r, d], 0, m))
            index[d * m : d * m + rows] = rng.integers(0, n, rows)
        indexes.append(index)
    return Round(counts, inputs, indexes)


def indexed(p: int, blocks: int, counts: list[Array], dtype: str = "fp32") -> Exchange:
    m, w, n = 4, 16, 7
    rng = np.random.default_rng(2521)
    rounds = [indexed_round(p, m, w, n, c, rng, dtype) for c in counts]
    return Exchange(p, blocks, blocks, m, w, rounds)


@pytest.mark.parametrize(("p", "blocks"), [(2, 1), (2, 2), (2, 3), (4, 2), (4, 6)])
def test_indexed_gathers_rows_through_the_index(
    kernel_harness: Harness, p: int, blocks: int
) -> None:
    exchange = indexed(p, blocks, [skew(p, 4, "over_capacity"), skew(p, 4, "negative"), uniform(p)])
    assert_matches(run(kernel_harness(INDEXED, "fp32"), exchange), golden(exchange))


def test_indexed_int8(kernel_harness: Harness) -> None:
    exchange = indexed(3, 4, [uniform(3), skew(3, 4, "one_and_full")], dtype="int8")
    assert_matches(run(kernel_harness(INDEXED, "int8"), exchange), golden(exchange))


def test_an_index_out_of_range_fails_every_rank_before_any_write(kernel_harness: Harness) -> None:
    exchange = indexed(3, 2, [uniform(3), uniform(3), skew(3, 4, "one_and_full")])
    bad = exchange.rounds[1].indexes
    assert bad is not None
    bad[1][2 * exchange.max_recv] = exchange.input_rows  # rank 1's first row for rank 2
    actual = run(kernel_harness(INDEXED, "fp32"), exchange)
    assert [state.error for state in actual[1]] == [INVALID_ARGS] * 3
    # The failed call changed nothing, and the lanes are clean for the next call.
    assert_matches(actual, golden(exchange))

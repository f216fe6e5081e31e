"""The MC2 golden (tests/_support/mc2_golden.py) against the operator's per-element formulas
(``docs/mc2.md``, Upstream sources), written independently here, exact in float64: for
receiver (p, t), sender EP position i and expert e,

* y_shard_type 1: ``y[i*E/ep + e, c, h] = S_i[e, p*tp*Ct + t*Ct + c, h] + b_{i,t}[e, h]``;
* y_shard_type 0: ``y[i*E/ep + e, c, h'] = S_i[e, p*C + c, t*Ht + h'] + b_{i,t}[e, h']``,

with ``S_i = sum_r x_{i,r} @ w_{i,r}``; for both rank layouts (TP groups contiguous, and
MindSpeed's), and its rounding helpers against their definitions."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest
from _support.mc2_golden import bf16_to_float, float_to_bf16, golden, quantize

F64 = npt.NDArray[np.float64]
EP, TP, E_OVER_EP, CT, M_OVER_TP, HT = 2, 2, 2, 3, 4, 2
C, H = CT * TP, HT * TP


def formula(x: F64, w: F64, b: F64 | None, shard: int, rank_of: Callable[[int, int], int]) -> F64:
    rows, cols = (CT, H) if shard == 1 else (C, HT)
    y = np.zeros((EP * TP, EP * E_OVER_EP, rows, cols))
    for p, t, i, e in itertools.product(range(EP), range(TP), range(EP), range(E_OVER_EP)):
        s = sum(x[rank_of(i, r)][e] @ w[rank_of(i, r)][e] for r in range(TP))
        for c, h in itertools.product(range(rows), range(cols)):
            row, col = (p * TP * CT + t * CT + c, h) if shard == 1 else (p * C + c, t * HT + h)
            value = s[row, col]
            bias = 0.0 if b is None else b[rank_of(i, t)][e, h]
            y[rank_of(p, t), i * E_OVER_EP + e, c, h] = value + bias
    return y


@pytest.mark.parametrize("shard", [0, 1])
@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("layout", ["tp-contiguous", "mindspeed"])
def test_the_golden_is_the_reference_formula(shard: int, with_bias: bool, layout: str) -> None:
    rng = np.random.default_rng(3)
    rank_of = (lambda p, t: p * TP + t) if layout == "tp-contiguous" else (lambda p, t: t * EP + p)
    ranks = EP * TP
    x = rng.standard_normal((ranks, E_OVER_EP, EP * C, M_OVER_TP))
    w = rng.standard_normal((ranks, E_OVER_EP, M_OVER_TP, H))
    bias = rng.standard_normal((ranks, E_OVER_EP, H if shard == 1 else HT)) if with_bias else None
    result = golden(x, w, bias, ep=EP, tp=TP, y_shard_type=shard, dtype="fp32", rank_of=rank_of)
    np.testing.assert_allclose(result, formula(x, w, bias, shard, rank_of), rtol=1e-12)


def test_quantizers_round_to_nearest_even() -> None:
    # 1 + 2**-11 is halfway between two FP16 values, 1 + 2**-8 between two BF16 values.
    assert quantize([1 + 2**-11, 1 + 3 * 2**-11], "fp16").tolist() == [1.0, 1 + 2**-9]
    assert quantize([1 + 2**-8, 1 + 3 * 2**-8], "bf16").tolist() == [1.0, 1 + 2**-6]
    assert quantize([1 + 2**-30], "fp32").tolist() == [1 + 2**-30]  # exact: not emulated
    bits = float_to_bf16([1.0, -2.5, np.inf])
    assert bits.tolist() == [0x3F80, 0xC020, 0x7F80]
    assert bf16_to_float(bits).tolist() == [1.0, -2.5, np.inf]

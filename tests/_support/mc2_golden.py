"""A NumPy golden of ``batch_matmul_reduce_scatter_all_to_all`` for every rank at once, written
from the operator's semantics (``docs/mc2.md``, Upstream sources: ``[golden]``), and the
I/O dtypes' storage as the simulator holds it.

The golden computes in float64 and rounds to the I/O dtype exactly where upstream's golden does:
once after each rank's matmul, after each add of the TP reduction (in TP-position order) and after
the bias add; ties go to even. A kernel that follows the device's precision model ([kernel]) differs
from it only where the device computes or rounds otherwise (FP32 rather than exact accumulation,
BF16's bias add rounded with CAST_ROUND): see :func:`tolerance`.

Rank layout: ``rank_of(p, t) = p * tp + t`` by default (TP groups contiguous, the aclnn sample's);
MindSpeed's is ``t * ep + p``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]

#: The I/O dtypes by the program model's names.
IO_DTYPES = ("fp16", "bf16")
#: The bias dtype of each I/O dtype.
BIAS_DTYPES = {"fp16": "fp16", "bf16": "fp32"}
#: Fraction bits of each I/O dtype's significand: one unit in the last place of a value in
#: [1, 2) is 2**-bits.
FRACTION_BITS = {"fp16": 10, "bf16": 7}


def quantize(values: npt.ArrayLike, dtype: str) -> F64:
    """The golden's quantizer ``q(a)``: ``values`` rounded to ``dtype`` (to nearest, ties to even)
    and held in float64; any dtype but fp16 and bf16 leaves them exact."""
    a = np.asarray(values, dtype=np.float64)
    if dtype == "fp16":
        return a.astype(np.float16).astype(np.float64)
    if dtype == "bf16":
        return bf16_to_float(float_to_bf16(a))
    return a


def float_to_bf16(values: npt.ArrayLike) -> npt.NDArray[np.uint16]:
    """bfloat16 bit patterns of ``values`` (narrowed to float32 first), rounded to nearest with
    ties to even on the bit pattern, as the golden rounds."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def bf16_to_float(bits: npt.ArrayLike) -> F64:
    """The values of bfloat16 bit patterns."""
    wide = np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16
    return wide.view(np.float32).astype(np.float64)


def storage(values: npt.ArrayLike, dtype: str) -> npt.NDArray[np.generic]:
    """``values`` as the simulator stores ``dtype`` (float16, bfloat16 bit patterns as uint16,
    float32), rounded to nearest even."""
    if dtype == "fp16":
        return np.asarray(values, dtype=np.float64).astype(np.float16)
    if dtype == "bf16":
        return float_to_bf16(values)
    if dtype == "fp32":
        return np.asarray(values, dtype=np.float32)
    raise ValueError(f"no storage for {dtype}")


def from_storage(array: npt.ArrayLike, dtype: str) -> F64:
    """The values of an array stored as :func:`storage` stores ``dtype``."""
    if dtype == "bf16":
        return bf16_to_float(array)
    return np.asarray(array).astype(np.float64)


def golden(
    x: Sequence[npt.ArrayLike],
    weight: Sequence[npt.ArrayLike],
    bias: Sequence[npt.ArrayLike] | None,
    *,
    ep: int,
    tp: int,
    y_shard_type: int,
    dtype: str,
    rank_of: Callable[[int, int], int] | None = None,
) -> F64:
    """Every rank's output ``[ep*tp, E, rows, cols]`` ([golden]).

    ``x[rank]`` is ``(E/ep, X1, M/tp)``, ``weight[rank]`` the logical ``(E/ep, M/tp, H)`` (a
    transposed weight's storage transposed back), ``bias[rank]`` ``(E/ep, N)`` or
    ``(E/ep, 1, N)``, or ``bias`` None; values are the I/O dtype's (the bias's dtype's), in any
    float container.
    """
    place = rank_of or (lambda p, t: p * tp + t)
    ranks = ep * tp
    parts = [
        quantize(np.matmul(np.asarray(x[r], np.float64), np.asarray(weight[r], np.float64)), dtype)
        for r in range(ranks)
    ]
    e_over_ep = parts[0].shape[0]
    outputs: dict[int, F64] = {}
    for p in range(ep):
        for t in range(tp):
            blocks = []
            for i in range(ep):
                # The TP reduction in TP-position order, rounding after each add (q(0 + P) = P).
                acc = _block(parts[place(i, 0)], p, t, ep, tp, y_shard_type)
                for r in range(1, tp):
                    acc = quantize(
                        acc + _block(parts[place(i, r)], p, t, ep, tp, y_shard_type), dtype
                    )
                if bias is not None:
                    b = np.asarray(bias[place(i, t)], np.float64).reshape(e_over_ep, 1, -1)
                    acc = quantize(acc + b, dtype)
                blocks.append(acc)
            outputs[place(p, t)] = np.concatenate(blocks, axis=0)
    return np.stack([outputs[rank] for rank in range(ranks)])


def _block(part: F64, p: int, t: int, ep: int, tp: int, y_shard_type: int) -> F64:
    """The rows (y_shard_type 1) or columns (0) of one rank's products that receiver (p, t)
    gets: ``P.reshape(E/ep, ep, tp, C/tp, H)[:, p, t]`` or
    ``P.reshape(E/ep, ep, C, tp, H/tp)[:, p, :, t]``."""
    e_over_ep, x1, h = part.shape
    if y_shard_type == 1:
        return part.reshape(e_over_ep, ep, tp, x1 // (ep * tp), h)[:, p, t]
    return part.reshape(e_over_ep, ep, x1 // ep, tp, h // tp)[:, p, :, t]


def tolerance(dtype: str) -> float:
    """The relative and absolute tolerance the device's precision model ([kernel]) justifies
    against :func:`golden`: two units in the last place of the I/O dtype at magnitude 1
    (``2 * 2**-fraction_bits``; fp16 ``2**-9`` ~ 1.95e-3, MindSpeed's 2e-3; bf16 ``2**-6``).

    The device rounds where the golden rounds, with two differences: the matmul accumulates in
    FP32 instead of exactly, which moves a partial product by one unit in the last place when
    its exact value lies within FP32's error of a rounding boundary, and BF16's bias add rounds
    its FP32 sum with ties away from zero (CAST_ROUND), one unit on a tie. The TP sums of two
    I/O values are exact in FP32, so they add no difference of their own; one moved partial
    moves the sum by at most one unit of the sum, after rounding two. Compared as
    ``|out - golden| <= tol + tol * |golden|`` for inputs of magnitude about 1."""
    return 2.0 * 2.0 ** -FRACTION_BITS[dtype]

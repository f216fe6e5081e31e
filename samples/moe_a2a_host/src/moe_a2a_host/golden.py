"""Fixed inputs for ``MoeDispatchHost.host_orch`` on NR ranks, and the outputs NumPy expects.

Rank ``r`` routes ``(r + 2*d) % (MAX_RECV + 2)`` rows to rank ``d`` (empty, partial, full and
over-capacity blocks; the exchange clamps a count to MAX_RECV); the ``k``-th row rank ``r``
routes to ``d`` holds ``r*1000 + d*100 + k*10 + j % 10`` in column ``j``. The sizes come from the
program file, whose decorators only mark the functions, so importing it is harmless.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from moe_a2a_host.pipelines import HIDDEN, MAX_RECV, NR


def inputs() -> dict[str, npt.NDArray[np.generic]]:
    """The ``In`` parameters of ``host_orch``: ``tokens`` [NR*NR*MAX_RECV, HIDDEN] and
    ``counts`` [NR*NR] (rank-major)."""
    r, d, k, j = np.ogrid[:NR, :NR, :MAX_RECV, :HIDDEN]
    tokens = (r * 1000 + d * 100 + k * 10 + j % 10).astype(np.float32)
    counts = ((np.arange(NR)[:, None] + 2 * np.arange(NR)[None, :]) % (MAX_RECV + 2)).ravel()
    return {"tokens": tokens.reshape(-1, HIDDEN), "counts": counts.astype(np.int32)}


def expected() -> dict[str, npt.NDArray[np.generic]]:
    """``out``: slot s of rank d holds the rows rank s routed to d, zeros past the clamped
    count; ``recv_out``: that count."""
    sent = inputs()["tokens"].reshape(NR, NR, MAX_RECV, HIDDEN)  # [s, d, k, j]
    received = np.minimum(inputs()["counts"].reshape(NR, NR), MAX_RECV).T  # [d, s]
    kept = np.arange(MAX_RECV)[None, None, :, None] < received[:, :, None, None]
    out = np.where(kept, sent.transpose(1, 0, 2, 3), np.float32(0))  # [d, s, k, j]
    return {
        "out": out.reshape(-1, HIDDEN),
        "recv_out": received.reshape(-1, 1).astype(np.int32),
    }


def mismatch(actual: Mapping[str, npt.NDArray[np.generic]]) -> str | None:
    """The first way ``actual`` (a run's outputs) departs from :func:`expected`, or None."""
    for name, want in expected().items():
        got = actual.get(name)
        if got is None or got.shape != want.shape or got.dtype != want.dtype:
            return f"{name}: expected {want.dtype}{list(want.shape)}"
        if not np.array_equal(got, want):
            first = tuple(int(i) for i in np.argwhere(got != want)[0])
            return f"{name}{list(first)}: {got[first]}, expected {want[first]}"
    return None

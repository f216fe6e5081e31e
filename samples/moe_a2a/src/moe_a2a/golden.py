"""Fixed inputs for ``MoeDispatch.host_orch`` on NR ranks, and what a correct run leaves in its
outputs, computed with NumPy.

The inputs are fixed, so a run can be checked by eye as well as by :func:`mismatch`: the token
row rank ``r`` routes to rank ``d`` as its ``k``-th row holds ``r*1000 + d*100 + k*10 + j % 10``
in column ``j``, and rank ``r`` routes ``(r + 2*d) % (MAX_RECV + 2)`` rows to rank ``d``. That
covers an empty block (0 rows), a full one (MAX_RECV) and one over capacity (MAX_RECV + 1),
which the exchange clamps to MAX_RECV.

The ``Out`` parameters (``out``, ``recv_out``) are not inputs: the simulator allocates them
zero-filled. The sizes come from the program file, so they cannot drift from it; importing it is
harmless, as its decorators only mark the functions.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from moe_a2a.pipelines import HIDDEN, MAX_RECV, NR


def routed_counts() -> npt.NDArray[np.int32]:
    """``counts[r, d]``: the rows rank r routes to rank d, before the exchange clamps them."""
    r, d = np.meshgrid(np.arange(NR), np.arange(NR), indexing="ij")
    return ((r + 2 * d) % (MAX_RECV + 2)).astype(np.int32)


def tokens() -> npt.NDArray[np.float32]:
    """``tokens[r, d*MAX_RECV + k, j] = r*1000 + d*100 + k*10 + j % 10``."""
    r, d, k, j = np.meshgrid(
        np.arange(NR), np.arange(NR), np.arange(MAX_RECV), np.arange(HIDDEN), indexing="ij"
    )
    values = r * 1000 + d * 100 + k * 10 + j % 10
    return values.reshape(NR, NR * MAX_RECV, HIDDEN).astype(np.float32)


def inputs() -> dict[str, npt.NDArray[np.generic]]:
    """The ``In`` parameters of ``host_orch``, by name."""
    return {
        "tokens": tokens().reshape(NR * NR * MAX_RECV, HIDDEN),
        "counts": routed_counts().reshape(NR * NR),
    }


def golden() -> dict[str, npt.NDArray[np.generic]]:
    """What a correct run leaves in ``out`` and ``recv_out``: slot s of rank d's ``out`` holds
    the rows rank s routed to d, zeros past their clamped count; ``recv_out`` that count."""
    sent = tokens()
    received = np.clip(routed_counts(), 0, MAX_RECV).T  # [d, s]
    out = np.zeros((NR, NR * MAX_RECV, HIDDEN), dtype=np.float32)
    for d in range(NR):
        for s in range(NR):
            n = int(received[d, s])
            out[d, s * MAX_RECV : s * MAX_RECV + n] = sent[s, d * MAX_RECV : d * MAX_RECV + n]
    return {
        "out": out.reshape(NR * NR * MAX_RECV, HIDDEN),
        "recv_out": received.reshape(NR * NR, 1).astype(np.int32),
    }


def mismatch(actual: Mapping[str, npt.NDArray[np.generic]]) -> str | None:
    """How ``actual`` (a run's outputs, by name) departs from :func:`golden`: the first missing
    array, wrong shape or differing element; None when they match."""
    for name, want in golden().items():
        got = actual.get(name)
        if got is None:
            return f"no array '{name}'"
        if got.shape != want.shape or got.dtype != want.dtype:
            return f"{name}: {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}"
        wrong = np.argwhere(got != want)
        if wrong.size:
            at = tuple(int(i) for i in wrong[0])
            return (
                f"{name}: {len(wrong)} elements differ; first at {list(at)}: "
                f"{got[at]}, expected {want[at]}"
            )
    return None


def summary() -> str:
    """The line printed when a run matches."""
    expected = golden()
    rows = int(expected["recv_out"].sum())
    return (
        f"outputs match the NumPy golden: {NR} ranks exchanged {rows} token rows "
        f"(out {list(expected['out'].shape)}, recv_out {expected['recv_out'].ravel().tolist()})"
    )

"""Fixed inputs for ``MoeCombine.expert_combine`` on RANKS ranks, and the ``out`` a correct run
leaves on every rank, computed with NumPy.

Every rank has its own arguments, so each array has a leading rank axis (``x[r]`` is rank r's),
as ``pypto_build.sim`` and ``pypto-build run`` take a chip orchestration's inputs. The values
are small integers (x in [-3, 3], the weights in [-2, 2], the bias in [-3, 3]), so every
product, sum and bias add is exact in FP16 whatever order the kernel sums in: a correct run
matches the golden exactly. Each rank's bias differs, so a run that adds the wrong rank's bias,
or adds it once per TP rank, does not match.

The ``Out`` parameter ``out`` and the window ``workspace`` are not inputs: the simulator
allocates them zero-filled. The sizes come from the program file, so they cannot drift from it;
importing it is harmless, as its decorators only mark the functions.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from moe_mc2.pipelines import C_LOCAL, E_LOCAL, EP, M_LOCAL, RANKS, TP, C, E, H


def _grid(*extents: int) -> list[npt.NDArray[np.int64]]:
    return list(np.meshgrid(*(np.arange(n) for n in extents), indexing="ij"))


def inputs() -> dict[str, npt.NDArray[np.float16]]:
    """The ``In`` parameters, each ``[RANKS, *shape]``."""
    r, e, row, k = _grid(RANKS, E_LOCAL, EP * C, M_LOCAL)
    x = (r + 3 * e + row + 2 * k) % 7 - 3
    r, e, k, h = _grid(RANKS, E_LOCAL, M_LOCAL, H)
    weight = (2 * r + e + 3 * k + h) % 5 - 2
    r, e, h = _grid(RANKS, E_LOCAL, H)
    bias = (r + e + h) % 7 - 3
    arrays = {"x": x, "weight": weight, "bias": bias}
    return {name: values.astype(np.float16) for name, values in arrays.items()}


def expected() -> npt.NDArray[np.float16]:
    """Every rank's ``out`` ``[RANKS, E, C / TP, H]``: rank (p, t) gets, from every EP position
    i, i's experts' products summed over i's TP group, the rows of EP rank p's tokens that TP
    rank t holds, plus the bias of rank (i, t)."""
    arrays = {name: a.astype(np.float64) for name, a in inputs().items()}
    products = np.matmul(arrays["x"], arrays["weight"])  # [RANKS, E/EP, EP*C, H]
    out = np.empty((RANKS, E, C_LOCAL, H))
    for i in range(EP):
        reduced = products[i * TP : (i + 1) * TP].sum(axis=0)  # the TP reduction
        rows = reduced.reshape(E_LOCAL, EP, TP, C_LOCAL, H)
        for p in range(EP):
            for t in range(TP):
                bias = arrays["bias"][i * TP + t][:, None, :]
                out[p * TP + t, i * E_LOCAL : (i + 1) * E_LOCAL] = rows[:, p, t] + bias
    return out.astype(np.float16)


def mismatch(actual: Mapping[str, npt.NDArray[np.generic]]) -> str | None:
    """How ``actual`` (a run's tensors, by name) departs from the golden ``out``: a missing
    array, its shape or dtype, or the first differing element; None when they match."""
    want = expected()
    got = actual.get("out")
    if got is None:
        return "no array 'out'"
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"out: {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}"
    wrong = np.argwhere(got != want)
    if wrong.size:
        at = tuple(int(i) for i in wrong[0])
        return (
            f"out: {len(wrong)} elements differ; first on rank {at[0]} at {list(at[1:])}: "
            f"{got[at]}, expected {want[at]}"
        )
    return None


def summary() -> str:
    """The line printed when a run matches."""
    return (
        f"outputs match the NumPy golden: {RANKS} ranks (ep {EP} x tp {TP}) each hold "
        f"out {list(expected().shape[1:])} for their tokens of all {E} experts"
    )

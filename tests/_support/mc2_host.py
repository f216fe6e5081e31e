"""Calling the host API (``pypto_build.mc2``) with arrays shaped as an op request says.

A request of ``_support.mc2`` gives every operand's shape and dtype (the weight as stored);
:func:`arrays_of` makes one rank's arrays of those shapes (a transposed weight as the transposed
view aclnn detects), and :func:`call` hands them to ``get_workspace_size``, so a test of the
host API and a test of the op's rules can share one request.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pypto_build import mc2
from pypto_build.lowering.aclnn.rules import Mc2Request, TensorSpec
from pypto_build.lowering.ir.types import DataType

#: NumPy's type of each dtype's elements (BF16 as its bit patterns).
NUMPY = {DataType.FP16: np.float16, DataType.BF16: np.uint16, DataType.FP32: np.float32}


def array_of(spec: TensorSpec) -> npt.NDArray[np.generic] | mc2.Tensor:
    """Zeros of ``spec``'s shape and dtype; a BF16 one as :func:`mc2.bf16` bit patterns, a
    dtype without a NumPy type (INT64, ...) as NumPy's own."""
    if spec.dtype is DataType.BF16:
        return mc2.bf16(np.zeros(spec.shape, np.uint16))
    dtype = NUMPY.get(spec.dtype) or np.dtype(spec.dtype.value)
    return np.zeros(spec.shape, dtype)


def weight_view(spec: TensorSpec, transposed: bool) -> npt.NDArray[np.generic] | mc2.Tensor:
    """The weight as a caller passes it: the stored array, or with ``transposed`` the view
    (E/ep, M/tp, H) of a stored (E/ep, H, M/tp) array."""
    stored = array_of(spec)
    if not transposed:
        return stored
    if isinstance(stored, mc2.Tensor):
        return mc2.Tensor(stored.data.transpose(0, 2, 1), stored.dtype)
    return stored.transpose(0, 2, 1)


def arrays_of(request: Mc2Request) -> dict[str, npt.NDArray[np.generic] | mc2.Tensor | None]:
    """One rank's operands for ``request``, by name."""
    return {
        "x": None if request.x is None else array_of(request.x),
        "weight": None
        if request.weight is None
        else weight_view(request.weight, request.transpose_weight),
        "bias": None if request.bias is None else array_of(request.bias),
        "out": None if request.out is None else array_of(request.out),
    }


def call(request: Mc2Request) -> tuple[int, mc2.Executor]:
    """``get_workspace_size`` with ``request``'s operands and attributes."""
    arrays = arrays_of(request)
    return mc2.get_workspace_size(
        arrays["x"],
        arrays["weight"],
        arrays["bias"],
        request.group_ep,
        request.group_tp,
        request.ep_world_size,
        request.tp_world_size,
        request.y_shard_type,
        arrays["out"],
    )

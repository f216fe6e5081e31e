"""The operands of the host API: NumPy arrays as aclnn's ``aclTensor``s.

aclnn takes tensors that carry their dtype, their view shape and their strides; here a tensor
is a NumPy array, whose dtype, shape and strides say the same. Two things NumPy cannot say
directly are settled here:

* **BF16.** NumPy has no bfloat16. An array whose dtype is named ``bfloat16`` (``ml_dtypes``,
  which JAX and TensorFlow use) is one; otherwise wrap the bit patterns, as ``uint16``, in
  :class:`Tensor` (:func:`bf16`). The simulator takes BF16 as those bit patterns too.
* **A transposed weight.** aclnn has no ``transposeWeight`` argument: it asks the weight's view
  whether its last two dimensions are a transposed view of contiguous storage
  (``IsTransposeLastTwoDims``) and then hands the kernel the storage with ``transpose_weight`` set
  (``TransTensor``; ``[aclnn]`` of ``docs/mc2.md``). :func:`is_transposed_view` asks NumPy's strides
  the same question, so ``w.transpose(0, 2, 1)`` of a contiguous ``(E/ep, H, M/tp)`` array is a
  transposed weight and any other layout is made contiguous, as aclnn's ``AutoContiguous`` inputs
  are.

An operand whose dtype the program model cannot name (``float64``, a bare ``uint16``) is still
checked by the op's rules in aclnn's order: :func:`spec` gives it a dtype that no rule accepts
and :func:`dtype_name` tells the message what the caller really passed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pypto_build.lowering.ir.types import DataType
from pypto_build.lowering.mc2.rules import TensorSpec

#: NumPy's element types by the program model's: the ones an operand of the op can hold
#: (BF16 as its bit patterns).
STORAGE_DTYPES: dict[DataType, np.dtype[np.generic]] = {
    DataType.FP16: np.dtype(np.float16),
    DataType.BF16: np.dtype(np.uint16),
    DataType.FP32: np.dtype(np.float32),
    DataType.INT8: np.dtype(np.int8),
    DataType.UINT8: np.dtype(np.uint8),
    DataType.INT16: np.dtype(np.int16),
    DataType.INT32: np.dtype(np.int32),
    DataType.INT64: np.dtype(np.int64),
    DataType.BOOL: np.dtype(np.bool_),
}
_BY_NUMPY = {dtype: data_type for data_type, dtype in STORAGE_DTYPES.items()}
del _BY_NUMPY[np.dtype(np.uint16)]  # a bare uint16 array is no BF16: wrap it in a Tensor
#: ``ml_dtypes.bfloat16`` and friends: the name NumPy reports for their arrays.
_BF16_NAME = "bfloat16"
#: A dtype no rule of the op accepts, standing for one the program model cannot name, so the
#: rules still run in aclnn's order (:func:`spec`).
UNNAMED = DataType.TASK_ID


@dataclass(frozen=True)
class Tensor:
    """An operand whose element type is given explicitly: ``data`` holds its elements in
    NumPy's nearest type (BF16 as ``uint16`` bit patterns)."""

    data: npt.NDArray[np.generic]
    dtype: DataType

    def __post_init__(self) -> None:
        data = np.asarray(self.data)
        object.__setattr__(self, "data", data)
        if self.dtype is UNNAMED:
            return
        expected = STORAGE_DTYPES.get(self.dtype)
        if expected is None or data.dtype.itemsize != expected.itemsize:
            raise TypeError(
                f"a {self.dtype.name} tensor holds {expected or 'no NumPy'} elements, "
                f"got {data.dtype}"
            )
        object.__setattr__(self, "data", data.view(expected))


#: What the API takes for a tensor: a NumPy array, a :class:`Tensor`, or None (a null pointer).
TensorLike = npt.NDArray[np.generic] | Tensor


def bf16(bits: npt.ArrayLike) -> Tensor:
    """A BF16 tensor from its bit patterns (``uint16``; the upper half of each FP32)."""
    return Tensor(np.asarray(bits), DataType.BF16)


def typed(value: TensorLike) -> Tensor:
    """``value`` with its element type named: a :class:`Tensor` as it is, an array by its
    dtype (:data:`UNNAMED` when the program model has no name for it)."""
    if isinstance(value, Tensor):
        return value
    array = np.asarray(value)
    if array.dtype.name == _BF16_NAME and array.dtype.itemsize == 2:
        return Tensor(array.view(np.uint16), DataType.BF16)
    return Tensor(array, _BY_NUMPY.get(array.dtype, UNNAMED))


def dtype_name(tensor: Tensor) -> str:
    """How a message names the dtype of ``tensor``: the program model's name, else NumPy's."""
    return str(tensor.data.dtype) if tensor.dtype is UNNAMED else tensor.dtype.name


def is_transposed_view(array: npt.NDArray[np.generic]) -> bool:
    """Whether ``array``'s last two dimensions are a transposed view of contiguous storage, as
    aclnn's ``IsTransposeLastTwoDims`` decides it from the view's strides: the second-to-last
    dimension steps by one element, the last by the second-to-last's extent, every batch
    dimension by the extent of all after it; a view whose last two extents are both 1 is not
    transposed."""
    if array.ndim < 2 or array.itemsize == 0:
        return False
    if any(stride % array.itemsize for stride in array.strides):
        return False
    strides = [stride // array.itemsize for stride in array.strides]
    shape = array.shape
    if shape[-1] == 1 and shape[-2] == 1:
        return False
    if strides[-2] != 1 or strides[-1] != shape[-2]:
        return False
    span = shape[-1] * shape[-2]
    for axis in range(array.ndim - 3, -1, -1):
        if strides[axis] != span:
            return False
        span *= shape[axis]
    return True


def storage(tensor: Tensor, *, transposed: bool = False) -> npt.NDArray[np.generic]:
    """The elements the kernel reads, C-contiguous: a transposed weight as its storage (the
    view with its last two axes swapped back, no copy), anything else made contiguous."""
    data = np.swapaxes(tensor.data, -1, -2) if transposed else tensor.data
    return np.ascontiguousarray(data)


def spec(tensor: Tensor | None, *, transposed: bool = False) -> TensorSpec | None:
    """The shape and dtype the op's rules check: a transposed weight's storage shape, as aclnn
    hands its inner API the storage of a transposed view."""
    if tensor is None:
        return None
    shape = tensor.data.shape
    if transposed:
        shape = (*shape[:-2], shape[-1], shape[-2])
    return TensorSpec(tuple(int(extent) for extent in shape), tensor.dtype)

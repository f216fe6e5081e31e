"""The operands of the host API: NumPy arrays as aclnn's ``aclTensor``s.

aclnn takes tensors that carry their dtype, their view shape and their strides; here a tensor
is a NumPy array, whose dtype, shape and strides say the same. Two things NumPy cannot say
directly are settled here:

* **BF16.** NumPy has no bfloat16. An array whose dtype is named ``bfloat16`` (``ml_dtypes``,
  which JAX and TensorFlow use) is one; otherwise :func:`bf16` makes one, of the bit patterns
  (``uint16``) or by value of ``float16`` / ``float32`` values, rounded to nearest even. It
  refuses any other array rather than guess whether its elements are values or bits. The
  simulator takes BF16 as bit patterns.
* **A transposed weight.** aclnn has no ``transposeWeight`` argument: it asks the weight's view
  whether its last two dimensions are a transposed view of contiguous storage
  (``IsTransposeLastTwoDims``) and then hands the kernel the storage with ``transpose_weight`` set
  (``TransTensor``; ``[aclnn]`` of ``docs/mc2.md``). :func:`is_transposed_view` asks NumPy's strides
  the same question, so ``w.transpose(0, 2, 1)`` of a contiguous ``(E/ep, H, M/tp)`` array is a
  transposed weight and any other layout is made contiguous, as aclnn's ``AutoContiguous`` inputs
  are.

An operand whose dtype the program model cannot name (``float64``, a bare ``uint16``) is still
checked by the op's rules in aclnn's order: :func:`spec` gives it a dtype that no rule accepts
and :func:`dtype_name` tells the message what the caller really passed. An operand that is no
array at all (a list, a number) is an :class:`~pypto_build.mc2.arguments.ArgumentError`
(:func:`typed`): no ``aclTensor`` could be made of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pypto_build.lowering.aclnn.rules import TensorSpec, described
from pypto_build.lowering.ir.types import DataType
from pypto_build.mc2.arguments import ArgumentError

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
#: The dtypes :func:`bf16` rounds to BF16 by value.
BF16_FROM_VALUES = (np.dtype(np.float16), np.dtype(np.float32))


@dataclass(frozen=True)
class Tensor:
    """An operand whose element type is given explicitly: ``data`` holds its elements in
    NumPy's type for it (BF16 as ``uint16`` bit patterns, or an ``ml_dtypes.bfloat16`` array);
    data of any other element type is refused, never reinterpreted."""

    data: npt.NDArray[np.generic]
    dtype: DataType

    def __post_init__(self) -> None:
        if not isinstance(self.dtype, DataType):
            raise ArgumentError(
                f"a Tensor's dtype must be a DataType (DataType.BF16, ...), "
                f"got {described(self.dtype)}"
            )
        data = np.asarray(self.data)
        object.__setattr__(self, "data", data)
        if self.dtype is UNNAMED:
            return
        expected = STORAGE_DTYPES.get(self.dtype)
        bf16_array = self.dtype is DataType.BF16 and _is_bfloat16(data.dtype)
        if expected is None or not (data.dtype == expected or bf16_array):
            hint = ""
            if self.dtype is DataType.BF16 and data.dtype in BF16_FROM_VALUES:
                hint = f" (mc2.bf16() converts {data.dtype} values)"
            raise ArgumentError(
                f"a {self.dtype.name} tensor holds {expected or 'no NumPy'} elements, "
                f"got {data.dtype}{hint}"
            )
        object.__setattr__(self, "data", data.view(expected))


#: What the API takes for a tensor: a NumPy array, a :class:`Tensor`, or None (a null pointer).
TensorLike = npt.NDArray[np.generic] | Tensor


def bf16(bits: npt.ArrayLike) -> Tensor:
    """A BF16 tensor: of its bit patterns (a ``uint16`` array, each the upper half of an FP32;
    or an ``ml_dtypes.bfloat16`` array), or of ``float16`` / ``float32`` values rounded to the
    nearest BF16, ties to even (a NaN stays a NaN). Any other array is refused
    (:class:`~pypto_build.mc2.arguments.ArgumentError`, naming its dtype): a ``float64`` would
    round twice through ``float32``, and an integer array could be either values or bits."""
    array = np.asarray(bits)
    if array.dtype in BF16_FROM_VALUES:
        return Tensor(_rounded_to_bf16(array.astype(np.float32)), DataType.BF16)
    if array.dtype != np.uint16 and not _is_bfloat16(array.dtype):
        raise ArgumentError(
            f"bf16() takes BF16 bit patterns (uint16 or bfloat16) or float16 / float32 values "
            f"to round to nearest even, got {array.dtype}"
            + (": narrow it to float32 first" if array.dtype.kind == "f" else "")
        )
    return Tensor(array, DataType.BF16)


def _rounded_to_bf16(values: npt.NDArray[np.float32]) -> npt.NDArray[np.uint16]:
    """The BF16 bit patterns nearest ``values``, ties to even: the upper half of each FP32
    after adding half a unit of BF16 (less one, plus the kept half's lowest bit); a NaN keeps
    its sign and upper bits and is made quiet, so rounding never turns it into an infinity."""
    bits = values.view(np.uint32).astype(np.uint64)
    upper = bits >> 16
    rounded = (bits + 0x7FFF + (upper & 1)) >> 16
    return np.where(np.isnan(values), upper | 0x0040, rounded).astype(np.uint16)


def _is_bfloat16(dtype: np.dtype[np.generic]) -> bool:
    """Whether ``dtype`` is a 2-byte dtype named ``bfloat16`` (``ml_dtypes``')."""
    return dtype.name == _BF16_NAME and dtype.itemsize == 2


def typed(name: str, value: object) -> Tensor:
    """Operand ``name`` with its element type named: a :class:`Tensor` as it is, an array (any
    object NumPy reads through ``__array__``) by its dtype (:data:`UNNAMED` when the program
    model has no name for it); anything else is an
    :class:`~pypto_build.mc2.arguments.ArgumentError`."""
    if isinstance(value, Tensor):
        return value
    if not hasattr(value, "__array__"):
        raise ArgumentError(
            f"{name} must be a NumPy array or an mc2.Tensor (aclnn's aclTensor), "
            f"got {type(value).__name__}"
        )
    array = np.asarray(value)
    if _is_bfloat16(array.dtype):
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

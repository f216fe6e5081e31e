"""Host tensors of the simulation: NumPy views that the runtime sees as tensor descriptors.

In the simulation host memory is device memory, as in upstream's simulator: a tensor handed to
a dispatch is described in place, never copied. A :class:`SimTensor` is a NumPy view plus the
allocation it views (the ``buffer`` of its descriptor), so a slice keeps its parent's strides
and a view that is not row-major reaches the orchestration as exactly that — which is what a
``require_contiguous_operands`` check must see. Every rank's dispatch of the same host tensor
sees the same memory; a program gives each rank its own region by slicing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pypto_build.chip_build.runtime_types import DataType
from pypto_build.chip_build.sim.runtime import Descriptor, NativeRuntime

#: Dimensions a tensor descriptor holds (RUNTIME_MAX_TENSOR_DIMS).
MAX_TENSOR_DIMS = 5

#: How each element type is stored in NumPy. BFLOAT16 has no NumPy type: its 16-bit patterns
#: are held as uint16.
NUMPY_DTYPES: dict[DataType, np.dtype[np.generic]] = {
    DataType.FLOAT32: np.dtype(np.float32),
    DataType.FLOAT16: np.dtype(np.float16),
    DataType.INT32: np.dtype(np.int32),
    DataType.INT16: np.dtype(np.int16),
    DataType.INT8: np.dtype(np.int8),
    DataType.UINT8: np.dtype(np.uint8),
    DataType.BFLOAT16: np.dtype(np.uint16),
    DataType.INT64: np.dtype(np.int64),
    DataType.UINT64: np.dtype(np.uint64),
    DataType.UINT16: np.dtype(np.uint16),
    DataType.UINT32: np.dtype(np.uint32),
    DataType.BOOL: np.dtype(np.bool_),
}

_FROM_NUMPY = {
    dtype: data_type for data_type, dtype in NUMPY_DTYPES.items() if data_type != DataType.BFLOAT16
}


def data_type_of(dtype: np.dtype[np.generic]) -> DataType:
    """The element type of a NumPy array; an error for a type the runtime has no name for."""
    try:
        return _FROM_NUMPY[dtype]
    except KeyError:
        supported = ", ".join(str(d) for d in _FROM_NUMPY)
        raise TypeError(
            f"NumPy dtype {dtype} has no runtime DataType (supported: {supported})"
        ) from None


@dataclass(frozen=True)
class SimTensor:
    """A host tensor: ``view`` of the allocation ``base``, with element type ``dtype``."""

    #: The allocation: its first element is the descriptor's ``buffer.addr``.
    base: npt.NDArray[np.generic]
    view: npt.NDArray[np.generic]
    dtype: DataType

    @classmethod
    def of(cls, array: npt.NDArray[np.generic]) -> SimTensor:
        """A tensor over the whole of ``array`` (its own allocation)."""
        return cls(array, array, data_type_of(array.dtype))

    @classmethod
    def of_view(cls, view: npt.NDArray[np.generic]) -> SimTensor:
        """A tensor over ``view``, a view of some NumPy allocation: the descriptor's buffer is
        the allocation the view was taken from, the view its offset and strides."""
        base = view
        while isinstance(base.base, np.ndarray):
            base = base.base
        return cls(base, view, data_type_of(view.dtype))

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.view.shape)

    def slice(self, offsets: Sequence[int], shape: Sequence[int]) -> SimTensor:
        """The region of extent ``shape`` at ``offsets``, with this tensor's strides."""
        if len(offsets) != self.view.ndim or len(shape) != self.view.ndim:
            raise ValueError(
                f"slice of a {self.view.ndim}-d tensor needs {self.view.ndim} offsets and "
                f"extents, got {len(offsets)} and {len(shape)}"
            )
        region = []
        for dim, (offset, extent, size) in enumerate(
            zip(offsets, shape, self.view.shape, strict=True)
        ):
            if offset < 0 or extent < 0 or offset + extent > size:
                raise IndexError(
                    f"slice offset {offset} + extent {extent} exceeds dimension {dim} of size "
                    f"{size}"
                )
            region.append(slice(offset, offset + extent))
        return SimTensor(self.base, self.view[tuple(region)], self.dtype)

    def reshape(self, shape: Sequence[int]) -> SimTensor:
        """The same elements under ``shape``; only a row-major tensor has one."""
        if not self.view.flags.c_contiguous:
            raise ValueError("reshape of a tensor that is not contiguous (row-major)")
        return SimTensor(self.base, self.view.reshape(tuple(shape)), self.dtype)

    def describe(self, runtime: NativeRuntime) -> Descriptor:
        """The tensor's descriptor: ``buffer`` = the allocation, the view by element offset and
        element strides."""
        if not 1 <= self.view.ndim <= MAX_TENSOR_DIMS:
            raise ValueError(
                f"a tensor argument has 1 to {MAX_TENSOR_DIMS} dimensions, got {self.view.ndim}"
            )
        itemsize = self.view.itemsize
        address = int(self.base.ctypes.data)
        offset = int(self.view.ctypes.data) - address
        strides = [int(s) for s in self.view.strides]
        if offset % itemsize or any(
            s <= 0 and n > 1 for s, n in zip(strides, self.shape, strict=True)
        ):
            raise ValueError(
                "a tensor argument must be a forward-strided view of its allocation "
                f"(byte offset {offset}, byte strides {tuple(strides)})"
            )
        if any(s % itemsize for s in strides):
            raise ValueError(f"byte strides {tuple(strides)} are not whole elements")
        element_strides = [max(1, s // itemsize) for s in strides]
        return runtime.describe(
            address=address,
            nbytes=int(self.base.nbytes),
            start_offset=offset // itemsize,
            dtype=int(self.dtype),
            shape=self.shape,
            strides=element_strides,
        )


def window_tensor(
    slot: npt.NDArray[np.uint8],
    shape: Sequence[int],
    dtype: DataType,
    strides: Sequence[int] | None = None,
    byte_offset: int = 0,
) -> SimTensor:
    """A tensor over a window buffer ``slot``: packed at its start, or with element ``strides``
    from ``byte_offset`` (simpler's ``Buffer.tensor``); it must lie inside the slot."""
    element = NUMPY_DTYPES[dtype]
    shape = tuple(int(d) for d in shape)
    strides = _row_major(shape) if strides is None else tuple(int(s) for s in strides)
    if len(strides) != len(shape) or byte_offset < 0 or byte_offset % element.itemsize:
        raise ValueError(
            f"a window view needs one stride per dimension and a byte offset that is a whole "
            f"number of {dtype.name} elements; got strides {strides}, byte offset {byte_offset}"
        )
    extent = 0 if 0 in shape else 1 + sum((d - 1) * s for d, s in zip(shape, strides, strict=True))
    nbytes = byte_offset + extent * element.itemsize
    if nbytes > slot.nbytes:
        raise ValueError(
            f"a {shape} {dtype.name} view at byte {byte_offset} needs {nbytes} bytes; the window "
            f"buffer has {slot.nbytes}"
        )
    elements = slot[: slot.nbytes - slot.nbytes % element.itemsize].view(element)
    view = np.lib.stride_tricks.as_strided(
        elements[byte_offset // element.itemsize :],
        shape=shape,
        strides=tuple(s * element.itemsize for s in strides),
        writeable=True,
    )
    return SimTensor(slot, view, dtype)


def _row_major(shape: Sequence[int]) -> tuple[int, ...]:
    strides: list[int] = []
    step = 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))

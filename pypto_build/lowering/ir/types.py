"""IR types: scalars, tensors, distributed (window) tensors, window handles and tuples.

Every dimension is a compile-time ``int``: the front end folds module constants and integer
arithmetic, and a shape it cannot fold is a diagnostic. Types are frozen dataclasses, so
``==`` is structural equality.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from pypto_build.lowering.fast_init import fast_init


class ParamDirection(enum.Enum):
    """Direction of a function parameter (``pl.Out[...]``, ``pl.InOut[...]``, plain = In); a
    call's ``arg_directions`` attr holds one per argument (None for a scalar passed by value)."""

    In = "In"
    Out = "Out"
    InOut = "InOut"


class DataType(enum.Enum):
    """Element types; ``value`` is upstream's ``DataType::ToString()`` spelling (variant suffix)."""

    FP32 = "fp32"
    FP16 = "fp16"
    BF16 = "bf16"
    INT8 = "int8"
    UINT8 = "uint8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    INDEX = "index"
    BOOL = "bool"
    TASK_ID = "task_id"

    @property
    def c_type(self) -> str:
        """The C++ element type, as upstream's ``DataType::ToCTypeString()``."""
        return _C_TYPES[self]

    @property
    def byte_size(self) -> int:
        return _BYTE_SIZES[self]

    def get_byte(self) -> int:
        """The element size in bytes, as upstream spells it (``pl.FP32.get_byte()``); the front
        end folds the call in a program file, this is its meaning for a type checker."""
        return self.byte_size

    @property
    def is_integer(self) -> bool:
        """An integer element type (``INDEX`` included: integer literals are typed ``INDEX``)."""
        return self in _INTEGERS

    @property
    def is_float(self) -> bool:
        return self in _FLOATS


#: The most bytes one tensor may hold: what a signed 64-bit byte offset reaches (the
#: runtime's descriptors, NumPy and every size computed from a shape are 64-bit).
MAX_TENSOR_BYTES = 2**63 - 1


def tensor_size_problem(shape: tuple[int, ...], dtype: DataType) -> str | None:
    """Why a tensor of ``shape`` and ``dtype`` cannot exist (its byte count overflows 64 bits),
    as the tail of a message naming the tensor, or None."""
    size = math.prod(shape) * _BYTE_SIZES.get(dtype, 8)
    if size <= MAX_TENSOR_BYTES:
        return None
    dims = ", ".join(str(dim) for dim in shape)
    return (
        f"[{dims}] of {dtype.value} holds {size} bytes, more than a 64-bit byte offset reaches "
        f"({MAX_TENSOR_BYTES})"
    )


_INTEGERS = frozenset(
    {
        DataType.INT8,
        DataType.UINT8,
        DataType.INT16,
        DataType.INT32,
        DataType.INT64,
        DataType.INDEX,
    }
)
_FLOATS = frozenset({DataType.FP32, DataType.FP16, DataType.BF16})

_C_TYPES = {
    DataType.FP32: "float",
    DataType.FP16: "half",
    DataType.BF16: "bfloat16_t",
    DataType.INT8: "int8_t",
    DataType.UINT8: "uint8_t",
    DataType.INT16: "int16_t",
    DataType.INT32: "int32_t",
    DataType.INT64: "int64_t",
    DataType.INDEX: "int64_t",
    DataType.BOOL: "bool",
    DataType.TASK_ID: "int64_t",
}
_BYTE_SIZES = {
    DataType.FP32: 4,
    DataType.FP16: 2,
    DataType.BF16: 2,
    DataType.INT8: 1,
    DataType.UINT8: 1,
    DataType.INT16: 2,
    DataType.INT32: 4,
    DataType.INT64: 8,
    DataType.INDEX: 8,
    DataType.BOOL: 1,
    DataType.TASK_ID: 8,
}


class ReduceOp(enum.Enum):
    """The element-wise reduction of a reducing collective (``op=pld.ReduceOp.Sum``)."""

    Sum = "Sum"
    Max = "Max"
    Min = "Min"
    Prod = "Prod"


class Layout(enum.Enum):
    """Tensor memory layout: row-major ``ND``, column-major ``DN`` or blocked ``NZ``."""

    ND = "ND"
    DN = "DN"
    NZ = "NZ"


Shape = tuple[int, ...]


def compact_strides(shape: Shape) -> Shape:
    """Row-major packed strides (in elements) of ``shape``."""
    strides: list[int] = []
    running = 1
    for dim in reversed(shape):
        strides.append(running)
        running *= dim
    return tuple(reversed(strides))


@fast_init
@dataclass(frozen=True)
class Type:
    """Base of all IR types."""


@fast_init
@dataclass(frozen=True)
class ScalarType(Type):
    dtype: DataType


@fast_init
@dataclass(frozen=True)
class TensorType(Type):
    """A tensor in global memory. ``stride`` and ``valid_shape`` are ``None`` when implied
    (packed row-major strides, whole shape valid)."""

    shape: Shape
    dtype: DataType
    layout: Layout = Layout.ND
    stride: Shape | None = None
    valid_shape: Shape | None = None

    @property
    def is_compact_nd(self) -> bool:
        """ND layout whose explicit stride (if any) is the packed row-major one."""
        return self.layout is Layout.ND and (
            self.stride is None or self.stride == compact_strides(self.shape)
        )

    def plain(self) -> TensorType:
        """The same tensor as a plain (non-distributed) :class:`TensorType`."""
        return TensorType(self.shape, self.dtype, self.layout, self.stride, self.valid_shape)


@fast_init
@dataclass(frozen=True)
class DistributedTensorType(TensorType):
    """A tensor living in a communication window. ``window`` names the
    ``pld.alloc_window_buffer`` it views, or is ``None`` for an unbound parameter."""

    window: str | None = None

    def unbound(self) -> DistributedTensorType:
        return DistributedTensorType(
            self.shape, self.dtype, self.layout, self.stride, self.valid_shape, None
        )


@fast_init
@dataclass(frozen=True)
class WindowBufferType(Type):
    """Handle returned by ``pld.alloc_window_buffer``: one per-rank window slot."""

    nbytes: int


@fast_init
@dataclass(frozen=True)
class CommCtxType(Type):
    """A ``CommContext*`` argument, appended by MaterializeDistTensorCtx."""


@fast_init
@dataclass(frozen=True)
class TupleType(Type):
    items: tuple[Type, ...]


TASK_ID = ScalarType(DataType.TASK_ID)
INDEX = ScalarType(DataType.INDEX)
BOOL = ScalarType(DataType.BOOL)
FP32 = ScalarType(DataType.FP32)

"""The runtime's value types as host code sees them: element types, tensor argument tags, scalars.

PyPTO's runtime (simpler) names a tensor's element type with ``DataType`` and how a dispatch uses a
tensor with ``TensorArgType``; a generated HOST orchestrator spells both as simpler's Python
module does (``DataType.FLOAT32``, ``TensorArgType.INOUT``), and the simulator serves those
names. The values are the runtime's (``kernel_abi.h``, simpler's ``tensor.h``).
"""

from __future__ import annotations

import enum

from pypto_build.lowering.ir import ParamDirection


class DataType(enum.IntEnum):
    """Element types of tensors; the values are the runtime's (``kernel_abi.h``)."""

    FLOAT32 = 0
    FLOAT16 = 1
    INT32 = 2
    INT16 = 3
    INT8 = 4
    UINT8 = 5
    BFLOAT16 = 6
    INT64 = 7
    UINT64 = 8
    UINT16 = 9
    UINT32 = 10
    BOOL = 11


class TensorArgType(enum.IntEnum):
    """How a dispatched callable uses a tensor; the runtime orders dispatches by it."""

    INPUT = 0
    #: A fresh tensor the runtime allocates.
    OUTPUT = 1
    INOUT = 2
    #: An existing tensor the callable overwrites without reading it.
    OUTPUT_EXISTING = 3
    NO_DEP = 4

    @classmethod
    def of(cls, direction: ParamDirection) -> TensorArgType:
        """How a dispatch passes a tensor bound to a parameter of ``direction``: an Out tensor
        is the caller's, overwritten (never one the runtime allocates)."""
        if direction is ParamDirection.Out:
            return cls.OUTPUT_EXISTING
        return cls.INOUT if direction is ParamDirection.InOut else cls.INPUT


#: A scalar argument: an integer (counts, a ``CommContext`` device address) or a float.
ScalarValue = int | float

_FLOAT_TYPES = frozenset({DataType.FLOAT32, DataType.FLOAT16, DataType.BFLOAT16})


def scalar_type(dtype: DataType) -> type[int] | type[float] | type[bool]:
    """The Python type a scalar of element type ``dtype`` is passed as."""
    if dtype is DataType.BOOL:
        return bool
    return float if dtype in _FLOAT_TYPES else int

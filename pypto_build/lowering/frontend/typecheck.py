"""When a value may flow where a type is declared (call arguments, returns, annotations).

Tensors must agree on shape, dtype and layout. A window tensor (``DistributedTensor``) may pass
where a plain ``Tensor`` is declared, never the reverse: a kernel reading its operand as local
memory does not care that it lives in a window, but a collective needs the window. The window
binding itself is not compared, because parameters are unbound. Scalars only need the same kind
of number, since integer literals are typed ``INDEX``.
"""

from __future__ import annotations

from pypto_build.lowering.ir import (
    DataType,
    DistributedTensorType,
    ScalarType,
    TensorType,
    TupleType,
    Type,
)


def compatible(expected: Type, actual: Type) -> bool:
    """Whether a value of type ``actual`` may be used where ``expected`` is declared."""
    if isinstance(expected, TensorType):
        if isinstance(expected, DistributedTensorType) and not isinstance(
            actual, DistributedTensorType
        ):
            return False
        return (
            isinstance(actual, TensorType)
            and actual.shape == expected.shape
            and actual.dtype is expected.dtype
            and actual.layout is expected.layout
        )
    if isinstance(expected, ScalarType):
        return isinstance(actual, ScalarType) and _same_kind(expected.dtype, actual.dtype)
    if isinstance(expected, TupleType):
        return (
            isinstance(actual, TupleType)
            and len(actual.items) == len(expected.items)
            and all(compatible(e, a) for e, a in zip(expected.items, actual.items, strict=True))
        )
    return expected == actual


def _same_kind(expected: DataType, actual: DataType) -> bool:
    return (
        expected is actual
        or (expected.is_integer and actual.is_integer)
        or (expected.is_float and actual.is_float)
    )

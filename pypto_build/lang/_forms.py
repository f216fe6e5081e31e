"""Runtime behaviour of the annotation names (``pl.Tensor``, ``pl.Out``, ``pl.Scalar``, ...).

When a program module is imported (by an editor, a documentation tool or a curious user),
Python evaluates its annotations. Each form turns its subscript into the IR type the front end
would build for it, so ``pl.Tensor[[8, 64], pl.FP32]`` is an honest
``TensorType((8, 64), DataType.FP32)`` rather than an opaque placeholder; malformed subscripts
fail with a ``TypeError`` that says what was expected.
"""

from __future__ import annotations

from dataclasses import dataclass

from pypto_build.lowering.ir import (
    DataType,
    DistributedTensorType,
    Layout,
    ParamDirection,
    ScalarType,
    TensorType,
)


@dataclass(frozen=True)
class ParamAnnotation:
    """``pl.Out[T]`` / ``pl.InOut[T]``: a tensor type with the parameter's direction."""

    direction: ParamDirection
    type: TensorType


class _Form:
    """An annotation name that shows as its DSL spelling (``pl.Tensor``) wherever it is printed."""

    def __init__(self, spelling: str) -> None:
        self._spelling = spelling

    def __repr__(self) -> str:
        return self._spelling


class TensorForm(_Form):
    """``Tensor[[d0, d1, ...], dtype]`` or ``Tensor[[...], dtype, layout]``."""

    def __init__(self, spelling: str, *, distributed: bool) -> None:
        super().__init__(spelling)
        self._distributed = distributed

    def __getitem__(self, item: object) -> TensorType:
        parts = item if isinstance(item, tuple) else (item,)
        if len(parts) not in (2, 3):
            raise self._usage(f"got {len(parts)} subscript item(s)")
        shape, dtype = parts[0], parts[1]
        layout = parts[2] if len(parts) == 3 else Layout.ND
        if not isinstance(shape, list | tuple) or not all(
            isinstance(dim, int) and not isinstance(dim, bool) for dim in shape
        ):
            raise self._usage(f"the shape must be a list of ints, got {shape!r}")
        if not isinstance(dtype, DataType):
            raise self._usage(f"the dtype must be a pl dtype such as pl.FP32, got {dtype!r}")
        if not isinstance(layout, Layout):
            raise self._usage(f"the layout must be pl.ND, pl.DN or pl.NZ, got {layout!r}")
        dims = tuple(shape)
        if self._distributed:
            return DistributedTensorType(dims, dtype, layout)
        return TensorType(dims, dtype, layout)

    def _usage(self, problem: str) -> TypeError:
        return TypeError(f"{self._spelling}[[d0, d1, ...], dtype(, layout)]: {problem}")


class DirectionForm(_Form):
    """``Out[T]`` / ``InOut[T]`` around a tensor annotation."""

    def __init__(self, spelling: str, direction: ParamDirection) -> None:
        super().__init__(spelling)
        self._direction = direction

    def __getitem__(self, item: object) -> ParamAnnotation:
        if not isinstance(item, TensorType):
            raise TypeError(
                f"{self._spelling}[...] wraps a tensor annotation such as "
                f"pl.Tensor[[8, 64], pl.FP32], got {item!r}"
            )
        return ParamAnnotation(self._direction, item)


class ScalarForm(_Form):
    """``Scalar[dtype]``."""

    def __getitem__(self, item: object) -> ScalarType:
        if not isinstance(item, DataType):
            raise TypeError(
                f"{self._spelling}[dtype] needs a pl dtype such as pl.INDEX, got {item!r}"
            )
        return ScalarType(item)

"""``pl.tensor``: tensor ops of orchestration bodies (also reachable as ``pl.slice`` etc.).

Signatures match the op table the front end binds calls against
(``pypto_build.lowering.ops.tensor_ops``), so a call a type checker accepts binds the same way
in the build. Shapes, offsets and indices are lists of compile-time ints or loop indices.
"""

from __future__ import annotations

from collections.abc import Sequence

from pypto_build.lang._annotations import Tensor
from pypto_build.lang._errors import compiled_only
from pypto_build.lowering.ir import DataType, Layout


def create(shape: Sequence[int], dtype: DataType, layout: Layout = Layout.ND) -> Tensor:
    """A new tensor of ``shape`` and ``dtype`` (``pl.create_tensor``)."""
    raise compiled_only("pl.tensor.create")


def slice(
    tensor: Tensor,
    shape: Sequence[int],
    offset: Sequence[int],
    valid_shape: Sequence[int] | None = None,
) -> Tensor:
    """The ``shape`` window of ``tensor`` starting at ``offset`` (a view, not a copy)."""
    raise compiled_only("pl.tensor.slice")


def reshape(tensor: Tensor, shape: Sequence[int]) -> Tensor:
    """``tensor`` with the same elements in a new shape."""
    raise compiled_only("pl.tensor.reshape")


def view(
    tensor: Tensor,
    shape: Sequence[int] | None = None,
    valid_shape: Sequence[int] | None = None,
    *,
    layout: Layout | None = None,
) -> Tensor:
    """A view of ``tensor`` with another shape, valid shape or layout."""
    raise compiled_only("pl.tensor.view")


def assemble(target: Tensor, source: Tensor, offset: Sequence[int]) -> Tensor:
    """``target`` with ``source`` written at ``offset``."""
    raise compiled_only("pl.tensor.assemble")


def transpose(tensor: Tensor, axis1: int, axis2: int) -> Tensor:
    """``tensor`` with two axes swapped (negative axes count from the end)."""
    raise compiled_only("pl.tensor.transpose")


def set_validshape(tensor: Tensor, valid_rows: int, valid_cols: int) -> Tensor:
    """``tensor`` with a narrower valid region (metadata only)."""
    raise compiled_only("pl.tensor.set_validshape")


def write(tensor: Tensor, indices: Sequence[int], value: int | float) -> Tensor:
    """``tensor`` with the element at ``indices`` set to ``value``."""
    raise compiled_only("pl.tensor.write")

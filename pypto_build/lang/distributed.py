"""``pld``: communication windows and managed collectives (``import ... .distributed as pld``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import final

from pypto_build.lang import collectives as tensor
from pypto_build.lang._annotations import DistributedTensor
from pypto_build.lang._errors import compiled_only
from pypto_build.lowering.ir import DataType


@final
class WindowBuffer:
    """What :func:`alloc_window_buffer` returns: a per-rank slot of the communication window.

    A name for type checkers only; no instance is ever created.
    """

    def __init__(self) -> None:
        raise compiled_only("pld.WindowBuffer")


def alloc_window_buffer(
    size: int | Sequence[int], *, dtype: DataType | None = None, name: str = ""
) -> WindowBuffer:
    """Declare a window slot of ``size`` bytes, or of a shape of ``dtype`` elements (HOST)."""
    raise compiled_only("pld.alloc_window_buffer")


def window(buf: WindowBuffer, shape: Sequence[int], *, dtype: DataType) -> DistributedTensor:
    """A distributed tensor viewing ``buf`` as ``shape`` of ``dtype``."""
    raise compiled_only("pld.window")


def world_size() -> int:
    """The number of ranks in the communication domain (known at run time)."""
    raise compiled_only("pld.world_size")


@contextmanager
def comm_domain(*, devices: Sequence[int] | None = None) -> Iterator[None]:
    """``with pld.comm_domain(devices=[0, 1]):`` scopes window allocations of a HOST orchestrator
    to an explicit device list (without it, a HOST body's windows span the whole world)."""
    raise compiled_only("pld.comm_domain")
    yield  # unreachable: marks this function as a generator for contextmanager


__all__ = [
    "DistributedTensor",
    "WindowBuffer",
    "alloc_window_buffer",
    "comm_domain",
    "tensor",
    "window",
    "world_size",
]

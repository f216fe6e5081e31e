"""``@pl.program`` and ``@pl.function``: how a program file declares its parts.

The decorators return what they decorate, unchanged: the front end reads the decorator
arguments from the source text, so nothing needs to happen at import time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, overload

from pypto_build.lowering.ir import FunctionType, Level, Role

_T = TypeVar("_T")
_R = TypeVar("_R")


def program(cls: type[_T]) -> type[_T]:
    """Mark a class whose methods form one PyPTO program."""
    return cls


@overload
def function(func: Callable[..., _R], /) -> Callable[..., _R]: ...


@overload
def function(
    *,
    type: FunctionType = FunctionType.Opaque,
    level: Level | None = None,
    role: Role | None = None,
    external_source: str | None = None,
) -> Callable[[Callable[..., _R]], Callable[..., _R]]: ...


def function(
    func: Callable[..., Any] | None = None,
    /,
    *,
    type: FunctionType = FunctionType.Opaque,
    level: Level | None = None,
    role: Role | None = None,
    external_source: str | None = None,
) -> Any:
    """Mark a method of a ``@pl.program`` class as a PyPTO function.

    ``external_source`` is the kernel's C++ file, relative to the program file. For a type
    checker the decorated function accepts any arguments and keeps its return type: call sites
    add launch attributes that are not parameters (``self.chip_pipeline(..., device=r)``,
    ``core_num=``, ``sync_start=``), which no signature-preserving type can express.
    """
    if func is not None:
        return func

    def mark(inner: Callable[..., _R]) -> Callable[..., _R]:
        return inner

    return mark

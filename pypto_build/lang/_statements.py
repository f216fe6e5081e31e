"""Statement-level DSL calls: ``pl.range``, ``pl.submit`` and ``pl.func_attr``."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

from pypto_build.lang._errors import compiled_only

_R = TypeVar("_R")


def range(start_or_stop: int, stop: int | None = None, step: int = 1, /) -> Iterator[int]:
    """A loop of the program: ``for i in pl.range(n)`` / ``pl.range(start, stop, step)``."""
    raise compiled_only("pl.range")


def submit(kernel: Callable[..., _R], /, *args: object) -> tuple[_R, int]:
    """Submit ``kernel(*args)`` as a task: ``result, task_id = pl.submit(self.k, a, b)``."""
    raise compiled_only("pl.submit")


def func_attr(attrs: Mapping[str, object], /) -> None:
    """Function attributes, written as the first statement of a function body."""
    raise compiled_only("pl.func_attr")

"""Pausing Python's cyclic garbage collector while the engine builds large object trees.

The front end, the passes and the render allocate millions of small objects for a large
program (IR nodes, their spans and attrs, analysis values, generated text) and keep most of them
alive until the phase ends. CPython's cyclic collector runs whenever allocations outnumber
deallocations by its threshold, and each of its older-generation passes walks every tracked
object still alive: as the heap grows, the collector runs ever longer for nothing, because none
of these objects is part of a reference cycle (the IR is an immutable tree, and analyses hold
plain dicts and frozensets). ``docs/performance.md`` (row 1) records what it cost.

So each such phase runs with the collector paused; reference counting frees everything as
usual, and the collector resumes afterwards (any cycle made meanwhile, an exception's traceback
say, is collected by its next pass). Pausing nests and restores the state it found, so a caller
that paused the collector itself keeps it paused.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector off for the ``with`` block, as it was afterwards."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def pauses_collector(function: Callable[P, R]) -> Callable[P, R]:
    """``function`` run with the cyclic collector paused (:func:`collector_paused`)."""

    @functools.wraps(function)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        with collector_paused():
            return function(*args, **kwargs)

    return paused

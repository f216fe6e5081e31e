"""Facts about one IR node, computed once per node.

IR nodes are immutable, and the passes preserve identity (a node none of whose children changed
is the same object afterwards), so what a walk or an analysis finds about a node stays true for
as long as the node exists. Several passes, the legality checks and every chip's render ask the
same questions of the same functions (the calls of a body, which parameter a kernel returns);
for a program of many pipelines, asking each of them anew made every phase scan everything
several times over.

:func:`per_node` remembers a function's answer in the node itself, beside its fields (as
:func:`functools.cached_property` does): equality, ``repr`` and :func:`dataclasses.replace`
read the fields only, so a memo never changes what a node is, and it is freed with the node.
:func:`per_function` does the same for a question about one function of a program.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

from pypto_build.lowering.ir.function import Function, Program

N = TypeVar("N")
R = TypeVar("R")

#: What the memo holds for a question not asked yet (an answer may be None).
_MISSING = object()


def per_node(function: Callable[[N], R]) -> Callable[[N], R]:
    """``function`` of one immutable IR node, computed once per node (its result must not
    be mutated by callers)."""
    slot = f"_memo_{function.__module__}.{function.__qualname__}"

    @functools.wraps(function)
    def remembered(node: N) -> R:
        found: dict[str, object] = node.__dict__
        # Not try/except: every pass makes new nodes, whose first question is a miss, and
        # raising a KeyError costs more than the lookup.
        value = found.get(slot, _MISSING)
        if value is _MISSING:
            value = found[slot] = function(node)
        return value  # type: ignore[return-value]

    return remembered


def per_function(function: Callable[[Program, Function], R]) -> Callable[[Program, Function], R]:
    """``function`` of a program and one of its functions (a callee's lookups depend on the
    program), computed once per pair and kept in the program."""
    slot = f"_memo_{function.__module__}.{function.__qualname__}"

    @functools.wraps(function)
    def remembered(program: Program, func: Function) -> R:
        found: dict[int, tuple[Function, R]] = program.__dict__.setdefault(slot, {})
        entry = found.get(id(func))
        # The entry holds the function itself, so its id cannot be reused while it is kept.
        if entry is not None and entry[0] is func:
            return entry[1]
        value = function(program, func)
        found[id(func)] = (func, value)
        return value

    return remembered

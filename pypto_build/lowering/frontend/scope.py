"""Names bound in a function body, with Python's flow-sensitive rules made static.

Every use of a name must carry the type of the definition that reaches it, and later passes
treat a name rebound in a branch or loop body as one carried value. So a name that was bound
before an ``if``/loop keeps its type through it, a name first bound in every branch of an if/else
must get one type there, and a name bound only on some paths (one branch, a loop body that may
run zero times) is "maybe undefined" afterwards: using it is a diagnostic. A maybe-undefined
name holds no value a later use could see, so binding it again (a window bound afresh in each of
two per-device loops) starts a new binding of any type.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.ir import DistributedTensorType, Type, Var
from pypto_build.lowering.printer import format_type


@dataclass
class Scope:
    """``bound``: name -> the Var of its reaching definition. ``maybe_unbound``: names bound only
    on some paths -> where ("inside the if at line 12"), for the diagnostic of a use."""

    bound: dict[str, Var] = field(default_factory=dict)
    maybe_unbound: dict[str, str] = field(default_factory=dict)

    def copy(self) -> Scope:
        return Scope(dict(self.bound), dict(self.maybe_unbound))

    def bind(self, var: Var) -> None:
        self.bound[var.name] = var
        self.maybe_unbound.pop(var.name, None)


def join(before: Scope, branches: Sequence[Scope], where: str) -> None:
    """Update ``before`` to the scope after control flow whose paths end in ``branches`` (each
    a copy of ``before`` at the split).

    ``where`` describes the construct for the maybe-unbound diagnostic; a loop passes its body
    and an untouched copy of ``before`` as the two paths (zero iterations).
    """
    result = before.copy()
    names = dict.fromkeys(name for branch in branches for name in branch.bound)
    for name in names:
        entries = [(branch, branch.bound.get(name)) for branch in branches]
        old = None if name in before.maybe_unbound else before.bound.get(name)
        _check_types(name, old, [var for _, var in entries if var is not None])
        first = next(var for _, var in entries if var is not None)
        result.bound[name] = first if old is None else old
        missing = [branch for branch, var in entries if var is None or name in branch.maybe_unbound]
        if missing:
            result.maybe_unbound[name] = missing[0].maybe_unbound.get(name, where)
        else:
            result.maybe_unbound.pop(name, None)
    before.bound, before.maybe_unbound = result.bound, result.maybe_unbound


def _check_types(name: str, old: Var | None, new_vars: list[Var]) -> None:
    reference = old if old is not None else new_vars[0]
    for var in new_vars:
        if var is not old and var.type != reference.type:
            if old is not None:
                message = (
                    f"'{name}' is rebound here as {_type_text(var.type, old.type)} but was "
                    f"{_type_text(old.type, var.type)} before; a name assigned inside an if/else "
                    "or a loop must keep its type"
                )
            else:
                message = (
                    f"'{name}' is {_type_text(reference.type, var.type)} in one branch and "
                    f"{_type_text(var.type, reference.type)} in another; it must have one type "
                    "after the if"
                )
            raise ProgramError(message, var.span, phase="frontend")


def _type_text(ty: Type, other: Type) -> str:
    """``ty`` as a diagnostic writes it beside ``other``: two window views that print alike
    differ in the window buffer they view, so that is named."""
    if (
        isinstance(ty, DistributedTensorType)
        and isinstance(other, DistributedTensorType)
        and format_type(ty) == format_type(other)
        and None not in (ty.window, other.window)
        and ty.window != other.window
    ):
        return f"a view of window buffer '{ty.window}'"
    return format_type(ty)

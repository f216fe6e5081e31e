"""Names bound in a function body, with Python's flow-sensitive rules made static.

Every use of a name must carry the type of the definition that reaches it, and later passes
treat a name rebound in a branch or loop body as one carried value. So a name that was bound
before an ``if``/loop keeps its type through it, a name first bound in every branch of an if/else
must get one type there, and a name bound only on some paths (one branch, a loop body that may
run zero times) is "maybe undefined" afterwards: using it is a diagnostic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.ir import Var
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
        _check_types(name, before.bound.get(name), [var for _, var in entries if var is not None])
        first = next(var for _, var in entries if var is not None)
        result.bound[name] = before.bound.get(name, first)
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
                    f"'{name}' is rebound here as {format_type(var.type)} but was "
                    f"{format_type(old.type)} before; a name assigned inside an if/else or a "
                    "loop must keep its type"
                )
            else:
                message = (
                    f"'{name}' is {format_type(reference.type)} in one branch and "
                    f"{format_type(var.type)} in another; it must have one type after the if"
                )
            raise ProgramError(message, var.span, phase="frontend")

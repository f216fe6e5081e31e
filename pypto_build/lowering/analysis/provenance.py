"""Which storage a tensor value of an orchestration body may refer to.

Orchestration code rebinds names freely (``data = self.collective(stage, data, ...)``), passes
views (``pl.reshape``, ``pl.slice``, ``pld.window``) and receives tensors back from kernels that
return one of their arguments. Dependency derivation, direction derivation and CommCtx
materialization all need to see through that to the *root* a value lives in: a parameter, or an
allocation (``tensor.create``, ``pld.alloc_window_buffer``, a result of a non-kernel callee).

:class:`ProvenanceWalker` computes, for each name at each point, the set of roots it may refer
to, on the forward driver (:mod:`.dataflow`). Subclasses extend the state and observe each
self-call through :meth:`ProvenanceWalker.on_call`.

It reads what an op does from the op's effects: an allocating op makes a new root, an op whose
result views (or writes and returns) an operand refers to that operand's roots, and any other op
(a scalar such as ``pld.world_size``) refers to none. A callee result that is not provably one of
its arguments (:func:`returned_params`) is any argument it writes (a kernel cannot allocate) or a
fresh root (any other callee). Distinct parameters are assumed not to alias each other, as
everywhere else in the pipeline.
"""

from __future__ import annotations

from typing import NamedTuple, TypeAlias, TypeVar

from pypto_build.lowering.analysis.dataflow import FlowState, ForwardAnalysis, Value, leaves
from pypto_build.lowering.analysis.returns import returned_params
from pypto_build.lowering.ir import (
    Call,
    Expr,
    ForStmt,
    Function,
    Param,
    ParamDirection,
    Var,
)
from pypto_build.lowering.optable.table import lookup

_PARAM_SITE = -1


class Root(NamedTuple):
    """One piece of storage: parameter ``name``, or the allocation made at ``site``.

    ``site`` identifies the allocating node for the duration of one analysis (it is never
    printed), ``result`` tells apart the results of one call. A named tuple, not a dataclass:
    roots are the keys of every set and map the dependency and context analyses build, for
    each operand of each call, and a tuple is hashed and compared in C.
    """

    name: str
    site: int = _PARAM_SITE
    result: int = 0

    @property
    def is_param(self) -> bool:
        return self.site == _PARAM_SITE


def allocation_root(call: Call) -> Root:
    """The storage an allocating op call (``tensor.create``, ...) makes."""
    return Root(call.callee_name, id(call))


Roots: TypeAlias = frozenset[Root]

#: The roots a value may refer to: a set for a tensor or scalar (empty for scalars), a tuple
#: of origins for a tuple-valued expression (a call returning several values, ``pl.submit``).
Origin: TypeAlias = Value[Roots]

#: The state of a provenance walk.
ProvenanceState: TypeAlias = FlowState[Roots]

NOTHING: Roots = frozenset()


def roots(origin: Origin) -> Roots:
    """Every root anywhere in ``origin``."""
    if type(origin) is frozenset:
        return origin
    return frozenset(root for leaf in leaves(origin) for root in leaf)


S = TypeVar("S", bound=ProvenanceState)


class ProvenanceWalker(ForwardAnalysis[Roots, S]):
    """Forward walk of one function body tracking the roots of every name."""

    def join_leaves(self, a: Roots, b: Roots) -> Roots:
        return a | b

    def bottom(self) -> Roots:
        return NOTHING

    def param(self, param: Param) -> Origin:
        return frozenset({Root(param.var.name)})

    def loop_index(self, stmt: ForStmt) -> Origin:
        return NOTHING

    def unbound(self, var: Var) -> Origin:
        return NOTHING

    def scalar(self, expr: Expr, state: S) -> Origin:
        return NOTHING

    def on_call(self, call: Call, callee: Function, args: tuple[Origin, ...], state: S) -> None:
        """Called for each self-call once its operands are evaluated; may update ``state``."""

    def op_call(self, call: Call, args: tuple[Origin, ...], state: S) -> Origin:
        return self.op_result(call, args)

    def op_result(self, call: Call, args: tuple[Origin, ...]) -> Origin:
        """The roots of an op call's result, from the op's effects."""
        effects = lookup(call.callee_name).effects
        if effects.allocates:
            return frozenset({allocation_root(call)})
        if effects.view_of is not None:
            return roots(args[effects.view_of])
        return NOTHING

    def function_call(self, call: Call, args: tuple[Origin, ...], state: S) -> Origin:
        callee = self.callee(call)
        self.on_call(call, callee, args, state)
        count = len(args)
        results = [
            args[position]
            if position is not None and position < count
            else _unknown_result(call, callee, args, index)
            for index, position in enumerate(returned_params(callee))
        ]
        return results[0] if len(results) == 1 else tuple(results)


def _unknown_result(call: Call, callee: Function, args: tuple[Origin, ...], index: int) -> Origin:
    """A result not provably one particular argument. A kernel cannot allocate, so it is one
    of the arguments the kernel writes; any other callee may return new storage."""
    if callee.func_type.is_kernel:
        written = frozenset(
            root
            for param, arg in zip(callee.params, args, strict=False)
            if param.direction is not ParamDirection.In
            for root in roots(arg)
        )
        if written:
            return written
    return frozenset({Root(callee.name, id(call), index)})

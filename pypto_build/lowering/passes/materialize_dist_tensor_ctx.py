"""MaterializeDistTensorCtx: make every communication context an explicit argument.

A kernel that reaches peers' windows needs the ``CommContext*`` of the communication domain its
DistributedTensor operands live in. This pass gives every function one CommCtx parameter per
DistributedTensor parameter, named ``<param>__ctx`` (direction In), appended after all existing
parameters, and passes the matching context at every call site. For the synthesized
``all_to_all_v`` kernel (five tensors, of which target, signal and recv_counts are
DistributedTensors) this yields exactly the ABI both rails share: ``args[5]`` is the context
and ``args[6..7]`` are unread duplicates.

At a call site, the context for a DistributedTensor argument is:

* in a function that itself received the tensor as a DistributedTensor parameter (a CHIP
  orchestration passing its window operands on to kernels), that parameter's ``__ctx``
  parameter — found through renaming by kernel results and views (:mod:`provenance`), e.g.
  ``data`` rebound to the collective's result still traces to the ``data`` parameter;
* for a view of a window allocated in the calling function (a HOST orchestrator dispatching a
  chip pipeline), ``pld.get_comm_ctx(<view>)``: the context of the domain that window belongs
  to on the dispatched device, which the HOST codegen resolves once comm domains are known.

Anything else (a value that may come from two different parameters, say) cannot name one
context and is rejected at the argument. Call sites that carry ``arg_directions`` get one
``Scalar`` entry per added context (a context is passed by value). Result types are unchanged:
a returned DistributedTensor is still the tensor, its context travels separately.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

from pypto_build.lowering.analysis.provenance import (
    Origin,
    ProvenanceState,
    ProvenanceWalker,
    roots,
)
from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.ir import (
    Call,
    CommCtxType,
    DistributedTensorType,
    Expr,
    Function,
    Param,
    ParamDirection,
    Program,
    Var,
    set_attr,
)
from pypto_build.lowering.ir.names import ArgDirection, CallAttr, Op, arg_directions
from pypto_build.lowering.ir.rebuild import replaced
from pypto_build.lowering.ir.walk import defined_names, walk_calls
from pypto_build.lowering.ops.signature import expr_span
from pypto_build.lowering.optable import make_call
from pypto_build.lowering.pass_names import MATERIALIZE_DIST_TENSOR_CTX
from pypto_build.lowering.passes.base import Pass, Property
from pypto_build.lowering.passes.derive_call_directions import arg_direction
from pypto_build.lowering.passes.rewrite import Mutator, map_functions

CTX_SUFFIX = "__ctx"
GET_COMM_CTX = Op.GET_COMM_CTX


def ctx_param_name(param_name: str) -> str:
    return param_name + CTX_SUFFIX


@dataclass(frozen=True)
class _CtxSignature:
    """The CommCtx parameters a function gains: for each, the index of its DistributedTensor
    parameter and the new parameter."""

    slots: tuple[tuple[int, Param], ...]

    # Asked at every call of the function: found once per function.
    @cached_property
    def params(self) -> tuple[Param, ...]:
        return tuple(param for _, param in self.slots)

    @cached_property
    def directions(self) -> tuple[ArgDirection, ...]:
        """The ``arg_directions`` entries of the added arguments."""
        return tuple(arg_direction(param) for param in self.params)


@dataclass(frozen=True)
class MaterializeDistTensorCtx(Pass):
    name: ClassVar[str] = MATERIALIZE_DIST_TENSOR_CTX
    requires: ClassVar[frozenset[Property]] = frozenset(
        {Property.L2_COLLECTIVES_LOWERED, Property.HOST_COLLECTIVES_LOWERED}
    )
    produces: ClassVar[frozenset[Property]] = frozenset({Property.DIST_TENSOR_CTX_MATERIALIZED})

    def apply(self, program: Program) -> Program:
        signatures = {f.name: _ctx_signature(f) for f in program.functions}
        return map_functions(program, lambda f: _materialize(program, f, signatures))


def _ctx_signature(func: Function) -> _CtxSignature:
    slots: list[tuple[int, Param]] = []
    taken: set[str] | None = None  # the names a new parameter must not take, when it has one
    for index, param in enumerate(func.params):
        if not isinstance(param.var.type, DistributedTensorType):
            continue
        if taken is None:
            taken = {p.var.name for p in func.params} | defined_names(func.body)
        name = ctx_param_name(param.var.name)
        if name in taken:
            raise ProgramError(
                f"'{name}' in function '{func.name}' collides with the CommCtx parameter "
                f"added for DistributedTensor parameter '{param.var.name}'; rename it",
                func.span,
                MaterializeDistTensorCtx.name,
            )
        ctx = Var(name, CommCtxType(), span=param.var.span)
        slots.append((index, Param(ctx, ParamDirection.In)))
    return _CtxSignature(tuple(slots))


def _materialize(
    program: Program, func: Function, signatures: Mapping[str, _CtxSignature]
) -> Function:
    own = signatures[func.name]
    if own.slots:
        func = replaced(func, params=(*func.params, *own.params))
    if not func.body.stmts:
        return func  # a kernel
    resolver = _CtxResolver(program, func, signatures, own)
    resolver.run(ProvenanceState({}))
    if not (resolver.ctx_args or resolver.failures):
        return func  # no call gains an argument
    if resolver.failures:  # the first in program order
        for call in walk_calls(func.body):
            failure = resolver.failures.get(id(call))
            if failure is not None:
                raise failure
    return _AppendCtxArgs(resolver.ctx_args).function(func)


class _CtxResolver(ProvenanceWalker[ProvenanceState]):
    """Finds the context argument for each DistributedTensor argument of each call."""

    def __init__(
        self,
        program: Program,
        func: Function,
        signatures: Mapping[str, _CtxSignature],
        own: _CtxSignature,
    ) -> None:
        super().__init__(program, func)
        self._signatures = signatures
        self._own_ctx = {func.params[index].var.name: param.var for index, param in own.slots}
        self.ctx_args: dict[int, tuple[tuple[Expr, ...], _CtxSignature]] = {}
        self.failures: dict[int, ProgramError] = {}

    def on_call(
        self, call: Call, callee: Function, args: tuple[Origin, ...], state: ProvenanceState
    ) -> None:
        signature = self._signatures[callee.name]
        if not signature.slots:
            return
        try:
            ctx = tuple(
                self._ctx_for(call, callee, index, args[index]) for index, _ in signature.slots
            )
        except ProgramError as failure:
            self.failures[id(call)] = failure
            return
        self.failures.pop(id(call), None)
        self.ctx_args[id(call)] = (ctx, signature)

    def _ctx_for(self, call: Call, callee: Function, index: int, origin: Origin) -> Expr:
        arg = call.args[index]
        span = expr_span(arg, call.span)
        if isinstance(arg.type, DistributedTensorType) and arg.type.window is not None:
            view = dataclasses.replace(arg) if isinstance(arg, Var) else arg
            return make_call(GET_COMM_CTX, (view,), (), span)
        found = roots(origin)
        (root,) = found if len(found) == 1 else (None,)
        ctx = self._own_ctx.get(root.name) if root is not None and root.is_param else None
        if ctx is not None:
            return replaced(ctx, span=span)
        param = callee.params[index].var.name
        raise ProgramError(
            f"cannot tell which communication context to pass for DistributedTensor parameter "
            f"'{param}' of '{callee.name}': in '{self.func.name}' the argument must be a view "
            f"of a window buffer or come from exactly one DistributedTensor parameter of "
            f"'{self.func.name}'",
            span,
            MaterializeDistTensorCtx.name,
        )


class _AppendCtxArgs(Mutator):
    def __init__(self, ctx_args: dict[int, tuple[tuple[Expr, ...], _CtxSignature]]) -> None:
        self._ctx_args = ctx_args

    def visit_call(self, call: Call) -> Expr:
        found = self._ctx_args.get(id(call))
        rebuilt = super().visit_call(call)
        if found is None or not isinstance(rebuilt, Call):
            return rebuilt
        ctx, signature = found
        args = (*rebuilt.args, *ctx)
        directions = arg_directions(rebuilt)
        if directions is None:
            return replaced(rebuilt, args=args)
        added = (*directions, *signature.directions)
        attrs = set_attr(rebuilt.attrs, CallAttr.ARG_DIRECTIONS, added)
        return replaced(rebuilt, args=args, attrs=attrs)  # one copy of the call

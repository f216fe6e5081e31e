"""FuseCreateAssembleToSlice: write kernel results in place instead of copying them.

An orchestration often creates a scratch tensor, lets kernels fill it, and copies it into a
region of a bigger tensor::

    t = pl.create_tensor([4, 8], dtype=pl.FP32)
    t = self.fill(x, t)
    out = pl.assemble(out, t, [4, 0])

If the scratch tensor is a slice view of that region from the start, the kernels write in place
and the copy disappears::

    t = pl.slice(out, [4, 8], [4, 0])
    t = self.fill(x, t)

The rewrite changes what memory the kernels touch, so it is applied only where it provably
preserves the program's meaning; everything else is left untouched. For a
``t = tensor.create(...)`` and the first later ``tensor.assemble`` of the same block whose source
is that tensor (through any renaming by kernels that return it, see :mod:`provenance`):

* the assemble's offset is a literal tuple and the slice view has exactly the created tensor's
  type (same shape, dtype and layout);
* between the two, the created tensor is used only as a direct argument of kernel calls (no
  views of it, no ``pl.submit``), and the parent tensor's storage is not used at all (a read
  would see the kernels' writes early, a write would clobber them where the copy used to come
  last) nor its name rebound;
* the created tensor is not used anywhere else in the function (after the assemble it would
  alias the parent region, which later writes may change; in a loop this includes earlier
  statements of the next iteration).

Storage identity comes from the provenance analysis, which treats distinct parameters as
distinct storage. The assemble is dropped; if its result has a new name, that name is bound to
the parent (``res = out``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from pypto_build.lowering.analysis.provenance import (
    NOTHING,
    Origin,
    ProvenanceState,
    ProvenanceWalker,
    Root,
    allocation_root,
    roots,
)
from pypto_build.lowering.ir import (
    AssignStmt,
    Call,
    ConstInt,
    EvalStmt,
    Expr,
    Function,
    GlobalVar,
    MakeTuple,
    Program,
    SeqStmts,
    Stmt,
    Var,
)
from pypto_build.lowering.ir.names import Op, is_submit
from pypto_build.lowering.ir.walk import (
    child_bodies,
    defined_names,
    walk_calls,
    walk_exprs,
    walk_stmts,
)
from pypto_build.lowering.optable import make_call
from pypto_build.lowering.pass_names import FUSE_CREATE_ASSEMBLE_TO_SLICE
from pypto_build.lowering.passes.base import Pass, Property
from pypto_build.lowering.passes.rewrite import Mutator, map_functions


@dataclass(frozen=True)
class FuseCreateAssembleToSlice(Pass):
    name: ClassVar[str] = FUSE_CREATE_ASSEMBLE_TO_SLICE
    requires: ClassVar[frozenset[Property]] = frozenset({Property.COMPOSITE_OPS_LOWERED})
    produces: ClassVar[frozenset[Property]] = frozenset({Property.CREATE_ASSEMBLE_FUSED})

    def apply(self, program: Program) -> Program:
        return map_functions(
            program,
            lambda f: _fuse_function(program, f) if f.func_type.is_orchestration_like else f,
        )


def _fuse_function(program: Program, func: Function) -> Function:
    """Apply one fusion at a time (each changes the storage the next one reasons about)."""
    ops = {call.op for call in walk_calls(func.body)}
    if Op.TENSOR_CREATE not in ops or Op.TENSOR_ASSEMBLE not in ops:
        return func  # no pair to fuse: not worth a provenance analysis of the body
    while True:
        fusion = _find_fusion(program, func)
        if fusion is None:
            return func
        func = _ReplaceBlock(*fusion).function(func)


class _UseRecorder(ProvenanceWalker[ProvenanceState]):
    """Records, for every variable use (by node identity), the roots it may refer to."""

    def __init__(self, program: Program, func: Function) -> None:
        super().__init__(program, func)
        self.use_roots: dict[int, frozenset[Root]] = {}

    def eval(self, expr: Expr, state: ProvenanceState) -> Origin:
        origin = super().eval(expr, state)
        if isinstance(expr, Var):
            self.use_roots[id(expr)] = self.use_roots.get(id(expr), NOTHING) | roots(origin)
        return origin


class _ReplaceBlock(Mutator):
    def __init__(self, old: SeqStmts, new: SeqStmts) -> None:
        self._old = old
        self._new = new

    def body(self, seq: SeqStmts) -> SeqStmts:
        return self._new if seq is self._old else super().body(seq)


def _blocks(func: Function) -> Iterator[SeqStmts]:
    yield func.body
    for stmt in walk_stmts(func.body):
        yield from child_bodies(stmt)


def _find_fusion(program: Program, func: Function) -> tuple[SeqStmts, SeqStmts] | None:
    """The first fusable create/assemble pair: (its block, the block rewritten)."""
    recorder = _UseRecorder(program, func)
    recorder.run(ProvenanceState({}))
    matcher = _Matcher(program, func, recorder.use_roots)
    for block in _blocks(func):
        for i in range(len(block.stmts)):
            rewritten = matcher.match(block, i)
            if rewritten is not None:
                return block, rewritten
    return None


def _var_uses(node: Stmt | Expr) -> Iterator[Var]:
    return (e for e in walk_exprs(node) if isinstance(e, Var))


class _OpAssign(NamedTuple):
    """``target = <op>(...)``: the statement, its target and its call."""

    stmt: AssignStmt
    target: Var
    call: Call


def _as_op_assign(stmt: Stmt, op: str) -> _OpAssign | None:
    if (
        isinstance(stmt, AssignStmt)
        and len(stmt.targets) == 1
        and isinstance(stmt.value, Call)
        and stmt.value.op == op
    ):
        return _OpAssign(stmt, stmt.targets[0], stmt.value)
    return None


class _Matcher:
    def __init__(
        self, program: Program, func: Function, use_roots: dict[int, frozenset[Root]]
    ) -> None:
        self._program = program
        self._func = func
        self._use_roots = use_roots

    def _roots_of(self, var: Var) -> frozenset[Root]:
        return self._use_roots.get(id(var), NOTHING)

    def match(self, block: SeqStmts, i: int) -> SeqStmts | None:
        """``block`` with the create at ``i`` fused into its assemble, if that is sound."""
        create = _as_op_assign(block.stmts[i], Op.TENSOR_CREATE)
        if create is None:
            return None
        created = allocation_root(create.call)
        found = self._assemble_after(block, i, created)
        if found is None:
            return None
        j, assemble = found
        parent, offset = assemble.call.args[0], assemble.call.args[2]
        if not (
            isinstance(parent, Var)
            and isinstance(offset, MakeTuple)
            and all(isinstance(item, ConstInt) for item in offset.items)
        ):
            return None
        parent_roots = self._roots_of(parent)
        if not parent_roots or created in parent_roots:
            return None
        if not all(
            self._window_ok(stmt, created, parent_roots, parent.name)
            for stmt in block.stmts[i + 1 : j]
        ):
            return None
        if self._used_elsewhere(created, block.stmts[i + 1 : j + 1]):
            return None
        view = make_call(
            Op.TENSOR_SLICE,
            (dataclasses.replace(parent), create.call.args[0], offset),
            (),
            create.call.span,
        )
        if view.type != create.call.type:
            return None
        stmts = list(block.stmts)
        stmts[i] = dataclasses.replace(create.stmt, value=view)
        if assemble.target.name == parent.name:
            del stmts[j]
        else:
            stmts[j] = dataclasses.replace(assemble.stmt, value=dataclasses.replace(parent))
        return dataclasses.replace(block, stmts=tuple(stmts))

    def _assemble_after(
        self, block: SeqStmts, i: int, created: Root
    ) -> tuple[int, _OpAssign] | None:
        """The first later assemble of the block whose source may be the created tensor, if
        its source is certainly that tensor."""
        for j in range(i + 1, len(block.stmts)):
            found = _as_op_assign(block.stmts[j], Op.TENSOR_ASSEMBLE)
            if found is None:
                continue
            source = found.call.args[1]
            if isinstance(source, Var) and created in self._roots_of(source):
                return (j, found) if self._roots_of(source) == {created} else None
        return None

    def _window_ok(
        self, stmt: Stmt, created: Root, parent_roots: frozenset[Root], parent_name: str
    ) -> bool:
        """A statement between the create and the assemble may pass the created tensor to
        kernels, but must neither touch the parent's storage nor rebind the parent's name."""
        if parent_name in defined_names(stmt):
            return False
        kernel_args = self._direct_kernel_args(stmt)
        for var in _var_uses(stmt):
            found = self._roots_of(var)
            if found & parent_roots or (created in found and id(var) not in kernel_args):
                return False
        return True

    def _direct_kernel_args(self, stmt: Stmt) -> frozenset[int]:
        """Identities of the variables ``stmt`` passes directly to a (non-submit) kernel call."""
        value = (
            stmt.value
            if isinstance(stmt, AssignStmt)
            else stmt.expr
            if isinstance(stmt, EvalStmt)
            else None
        )
        if not (
            isinstance(value, Call) and isinstance(value.op, GlobalVar) and not is_submit(value)
        ):
            return frozenset()
        callee = self._program.function(value.op.name)
        if callee is None or not callee.func_type.is_kernel:
            return frozenset()
        return frozenset(id(arg) for arg in value.args if isinstance(arg, Var))

    def _used_elsewhere(self, created: Root, window: tuple[Stmt, ...]) -> bool:
        """Whether the created tensor is used outside ``window`` anywhere in the function."""
        inside = {id(var) for stmt in window for var in _var_uses(stmt)}
        return any(
            created in self._roots_of(var) and id(var) not in inside
            for var in _var_uses(self._func.body)
        )

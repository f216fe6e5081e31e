"""The generic IR traversal the passes share: the identity-preserving Mutator and its hooks,
CallMapper, map_functions, and the read-only walks (their order and what they reach)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from _support.passes import function, parse_one

from pypto_build.lowering.ir import (
    INDEX,
    AssignStmt,
    BinaryOp,
    Call,
    ConstInt,
    EvalStmt,
    Expr,
    ForStmt,
    IfStmt,
    Program,
    ReturnStmt,
    SeqStmts,
    Stmt,
    Var,
    WhileStmt,
)
from pypto_build.lowering.ir.walk import (
    child_bodies,
    child_exprs,
    defined_names,
    stmt_exprs,
    walk_calls,
    walk_exprs,
    walk_stmts,
)
from pypto_build.lowering.passes.rewrite import CallMapper, Mutator, StmtResult, map_functions

#: ``VEC`` stands for the one tensor type of the program (the DSL has no type aliases).
SOURCE = """\
import pypto.language as pl


@pl.program
class Walk:
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/k.cpp")
    def k(self, x: VEC, y: pl.Out[VEC]) -> VEC: ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(self, x: VEC, y: pl.Out[VEC], n: pl.Scalar[pl.INDEX]) -> VEC:
        a = pl.reshape(x, [2, 2])
        if n > 0:
            y = self.k(x, y, device=n)
        for i in pl.range(n):
            b = i + 1
        while n > 0:
            y = self.k(pl.reshape(a, [4]), y)
        return y
""".replace("VEC", "pl.Tensor[[4], pl.FP32]")


@pytest.fixture(scope="module")
def program() -> Program:
    return parse_one(SOURCE)


def _names(exprs: list[Expr]) -> list[str]:
    return [
        e.name if isinstance(e, Var) else e.callee_name for e in exprs if isinstance(e, Var | Call)
    ]


class _Rename(Mutator):
    """Renames variables at their definitions and at their uses."""

    def __init__(self, renames: dict[str, str]) -> None:
        self.renames = renames

    def define(self, var: Var) -> Var:
        if var.name not in self.renames:
            return var
        return Var(self.renames[var.name], var.type, var.span)

    def visit_var(self, var: Var) -> Expr:
        return self.define(var)


# --- Mutator ---------------------------------------------------------------------------------


def test_a_mutator_that_changes_nothing_returns_the_same_objects(program: Program) -> None:
    orch = function(program, "orch")
    assert Mutator().function(orch) is orch
    assert map_functions(program, Mutator().function) is program


def test_renaming_reaches_params_definitions_uses_loop_bounds_and_call_attrs(
    program: Program,
) -> None:
    renamed = _Rename({"y": "z", "n": "m"}).function(function(program, "orch"))
    assert [p.var.name for p in renamed.params] == ["x", "z", "m"]
    used = {e.name for e in walk_exprs(renamed.body) if isinstance(e, Var)}
    assert {"y", "n"}.isdisjoint(used) and {"z", "m"} <= used
    assert defined_names(renamed.body) == {"a", "z", "i", "b"}
    (branch,) = [s for s in renamed.body.stmts if isinstance(s, IfStmt)]
    (assign,) = branch.then_body.stmts
    assert isinstance(assign, AssignStmt) and isinstance(assign.value, Call)
    assert assign.value.attrs == (("device", Var("m", INDEX)),)


def test_unchanged_siblings_keep_their_identity(program: Program) -> None:
    orch = function(program, "orch")
    renamed = _Rename({"b": "c"}).function(orch)
    assert renamed is not orch
    kept = [new is old for new, old in zip(renamed.body.stmts, orch.body.stmts, strict=True)]
    assert kept == [True, True, False, True, True]  # only the loop that assigns b was rebuilt


def test_statement_hooks_may_delete_or_expand(program: Program) -> None:
    class Edit(Mutator):
        def visit_assign(self, stmt: AssignStmt) -> StmtResult:
            return [] if stmt.targets[0].name == "b" else super().visit_assign(stmt)

        def visit_return(self, stmt: ReturnStmt) -> StmtResult:
            return (EvalStmt(ConstInt(0)), stmt)

    edited = Edit().function(function(program, "orch"))
    loop = edited.body.stmts[2]
    assert isinstance(loop, ForStmt) and loop.body.stmts == ()
    assert [type(s) for s in edited.body.stmts[-2:]] == [EvalStmt, ReturnStmt]


def test_a_nested_sequence_is_visited_in_place() -> None:
    inner = SeqStmts((EvalStmt(ConstInt(1)),))
    assert Mutator().body(SeqStmts((inner,))).stmts == (inner,)


def test_uses_are_visited_before_the_definition_they_precede(program: Program) -> None:
    class Record(Mutator):
        def __init__(self) -> None:
            self.events: list[str] = []

        def define(self, var: Var) -> Var:
            self.events.append(f"def {var.name}")
            return var

        def visit_var(self, var: Var) -> Expr:
            self.events.append(f"use {var.name}")
            return var

    record = Record()
    record.body(function(program, "orch").body)
    assert record.events[:3] == ["use x", "def a", "use n"]
    assert record.events[3:7] == ["use x", "use y", "use n", "def y"]


def test_an_unknown_statement_kind_is_a_type_error() -> None:
    @dataclass(frozen=True)
    class Odd(Stmt):
        pass

    with pytest.raises(TypeError, match="unknown statement kind Odd"):
        Mutator().stmt(Odd())


def test_call_mapper_maps_every_call_after_its_operands(program: Program) -> None:
    seen: list[str] = []

    def tag(call: Call) -> Call:
        seen.append(call.callee_name)
        return Call(call.op, call.args, call.type, call.kwargs, (*call.attrs, ("seen", True)))

    (loop,) = [s for s in function(program, "orch").body.stmts if isinstance(s, WhileStmt)]
    mapped = CallMapper(tag).body(loop.body)
    assert seen == ["tensor.reshape", "k"]
    (assign,) = mapped.stmts
    assert isinstance(assign, AssignStmt) and isinstance(assign.value, Call)
    inner = assign.value.args[0]
    assert isinstance(inner, Call) and ("seen", True) in inner.attrs
    assert ("seen", True) in assign.value.attrs


def test_map_functions_rebuilds_only_when_a_function_changes(program: Program) -> None:
    renamed = map_functions(program, _Rename({"y": "z"}).function)
    assert renamed is not program
    assert renamed.function("k") is not program.function("k")  # its parameter y is renamed too
    assert [f.name for f in renamed.functions] == ["k", "orch"]


# --- read-only walks -------------------------------------------------------------------------


def test_walk_stmts_is_pre_order_without_sequences(program: Program) -> None:
    kinds = [type(s).__name__ for s in walk_stmts(function(program, "orch").body)]
    assert kinds == [
        "AssignStmt",
        "IfStmt",
        "AssignStmt",
        "ForStmt",
        "AssignStmt",
        "WhileStmt",
        "AssignStmt",
        "ReturnStmt",
    ]


def test_walk_exprs_yields_operands_before_the_expression(program: Program) -> None:
    body = function(program, "orch").body
    assert _names(list(walk_exprs(body))) == [
        "x",
        "tensor.reshape",
        "n",
        "x",
        "y",
        "n",
        "k",
        "n",
        "i",
        "n",
        "a",
        "tensor.reshape",
        "y",
        "k",
        "y",
    ]
    assert [c.callee_name for c in walk_calls(body)] == [
        "tensor.reshape",
        "k",
        "tensor.reshape",
        "k",
    ]


def test_child_exprs_include_keyword_and_attr_expressions() -> None:
    n, r = Var("n", INDEX), Var("r", INDEX)
    call = Call(
        "op",
        (n,),
        INDEX,
        kwargs=(("core_num", ConstInt(2)), ("dtype", None)),
        attrs=(("device", r), ("pair", (ConstInt(3), "text"))),
    )
    assert child_exprs(call) == (n, ConstInt(2), r, ConstInt(3))
    assert child_exprs(ConstInt(1)) == ()


def test_attrs_of_literals_are_passed_over_and_attrs_of_expressions_mapped() -> None:
    n = Var("n", INDEX)
    literal = (("task_id", 3), ("deps", (0, 1)), ("pair", ("text", None)))
    call = Call("op", (n,), INDEX, attrs=literal)
    renamed = _Rename({"n": "m"}).expr(call)
    assert isinstance(renamed, Call) and renamed.args == (Var("m", INDEX),)
    assert renamed.attrs is literal  # nothing in them to map: the same tuple
    # An expression nested in an attr tuple is found (and renamed) like one at the top.
    nested = Call("op", (ConstInt(1),), INDEX, attrs=(("pair", (ConstInt(3), n)),))
    assert child_exprs(nested) == (ConstInt(1), ConstInt(3), n)
    mapped = _Rename({"n": "m"}).expr(nested)
    assert isinstance(mapped, Call)
    assert mapped.attrs == (("pair", (ConstInt(3), Var("m", INDEX))),)
    assert child_exprs(mapped) == (ConstInt(1), ConstInt(3), Var("m", INDEX))


def test_stmt_exprs_and_child_bodies_per_statement_kind() -> None:
    n = Var("n", INDEX)
    one, body = ConstInt(1), SeqStmts((EvalStmt(n),))
    loop = ForStmt(Var("i", INDEX), ConstInt(0), n, one, body)
    branch = IfStmt(n, body, None)
    assert stmt_exprs(loop) == (ConstInt(0), n, one)
    assert stmt_exprs(branch) == (n,)
    assert stmt_exprs(ReturnStmt((n, one))) == (n, one)
    assert stmt_exprs(body) == ()
    assert child_bodies(loop) == (body,)
    assert child_bodies(branch) == (body,)
    assert child_bodies(IfStmt(n, body, SeqStmts(()))) == (body, SeqStmts(()))
    assert child_bodies(body) == (body,)
    assert child_bodies(EvalStmt(n)) == ()


def test_defined_names_cover_nested_assignments_and_loop_variables(program: Program) -> None:
    assert defined_names(function(program, "orch").body) == {"a", "y", "i", "b"}


def test_walk_calls_is_walk_exprs_keeping_calls(program: Program) -> None:
    # Calls nested in operands, in keyword operands and attrs, and in arithmetic, through
    # every statement kind: the calls-only walk finds what the full walk finds, in its order.
    inner = Call("inner", (Var("n", INDEX),), INDEX)
    nested = Call(
        "outer",
        (BinaryOp("+", inner, ConstInt(1), INDEX), Var("m", INDEX)),
        INDEX,
        kwargs=(("core_num", Call("width", (), INDEX)),),
        attrs=(("device", (Call("rank", (), INDEX), "text")),),
    )
    body = function(program, "orch").body
    stmt = EvalStmt(nested)
    for node in (body, *body.stmts, stmt, nested, SeqStmts((stmt, *body.stmts))):
        assert list(walk_calls(node)) == [e for e in walk_exprs(node) if isinstance(e, Call)]
    assert [c.callee_name for c in walk_calls(stmt)] == ["inner", "width", "rank", "outer"]

"""The IR verifier: a well-formed program passes, and each broken invariant is reported as an
InternalError naming the program, the function and the construct."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support.ir_builders import DIST, SAMPLES, TENSOR, seq, stage_step

from pypto_build.lowering import optable
from pypto_build.lowering.diagnostics import InternalError
from pypto_build.lowering.frontend import parse_source
from pypto_build.lowering.ir import (
    BOOL,
    INDEX,
    TASK_ID,
    AssignStmt,
    BinaryOp,
    Call,
    CommDomainScopeStmt,
    ConstInt,
    DataType,
    DistributedTensorType,
    EvalStmt,
    Expr,
    ForStmt,
    Function,
    FunctionType,
    GlobalVar,
    IfStmt,
    Level,
    MakeTuple,
    Param,
    ParamDirection,
    Program,
    ReturnStmt,
    ScalarType,
    Stmt,
    TupleType,
    Type,
    Var,
    WhileStmt,
)
from pypto_build.lowering.verifier import verify

INP, STAGE, N = Var("inp", TENSOR), Var("stage", DIST), Var("n", INDEX)
X = Var("x", DIST)


def step(*args: Expr, ty: Type = DIST, **attrs: Expr | bool) -> Call:
    return Call(GlobalVar("stage_step"), args, ty, attrs=tuple(attrs.items()))


def kernel() -> Function:
    """The example kernel, returning what it writes."""
    return stage_step(seq(ReturnStmt((Var("stage", DIST),))))


def program(*body: Stmt, returns: tuple[Type, ...] = (DIST,)) -> Program:
    """A kernel plus an orchestration ``orch(inp, stage, n)`` with ``body``."""
    orch = Function(
        "orch",
        (Param(INP), Param(STAGE, ParamDirection.InOut), Param(N)),
        returns,
        seq(*body),
        FunctionType.Orchestration,
        Level.CHIP,
    )
    return Program("P", (kernel(), orch))


@pytest.mark.parametrize("sample", SAMPLES, ids=[path.name for path in SAMPLES])
def test_sample_programs_verify(sample: Path) -> None:
    for parsed in parse_source(sample.read_text(encoding="utf-8"), sample.name):
        verify(parsed)


def test_well_formed_program_passes() -> None:
    res, tid, i = Var("res", DIST), Var("tid", TASK_ID), Var("i", INDEX)
    verify(
        program(
            AssignStmt((STAGE,), step(INP, STAGE)),
            IfStmt(
                BinaryOp(">", N, ConstInt(0), BOOL),
                seq(AssignStmt((X,), STAGE)),
                seq(AssignStmt((X,), step(INP, STAGE, device=N))),
            ),
            ForStmt(i, ConstInt(0), N, ConstInt(1), seq(AssignStmt((STAGE,), step(INP, X)))),
            WhileStmt(BinaryOp("<", N, ConstInt(4), BOOL), seq(EvalStmt(step(INP, X)))),
            CommDomainScopeStmt("ep", (), None, seq(AssignStmt((res,), X))),
            AssignStmt(
                (res, tid),
                step(INP, res, ty=TupleType((DIST, TASK_ID)), submit=True),
            ),
            ReturnStmt((res,)),
        )
    )


def test_a_branch_that_returns_does_not_leave_names_undefined() -> None:
    verify(
        program(
            IfStmt(
                BinaryOp(">", N, ConstInt(0), BOOL),
                seq(ReturnStmt((STAGE,))),
                seq(AssignStmt((X,), STAGE)),
            ),
            ReturnStmt((X,)),
        )
    )


def test_return_of_a_call_returning_several_values() -> None:
    pair = TupleType((DIST, DIST))
    callee = Function("two", (), (DIST, DIST), seq(), FunctionType.AIV, Level.CHIP)
    caller = Function(
        "orch",
        (),
        (DIST, DIST),
        seq(ReturnStmt((Call(GlobalVar("two"), (), pair),))),
        FunctionType.Orchestration,
    )
    verify(Program("P", (callee, caller)))


def test_op_call_with_its_deduced_type_passes() -> None:
    call = Call("pld.world_size", (), INDEX)
    world = Call("pld.world_size", (), optable.deduce_type(call))
    verify(program(AssignStmt((Var("w", world.type),), world), ReturnStmt((STAGE,))))


def test_arguments_follow_the_front_end_compatibility_rule() -> None:
    """A window tensor (bound, with a valid shape) may pass where a plain tensor is declared and
    an INDEX literal where an INT32 scalar is; both are what the front end accepts."""
    count = Var("count", ScalarType(DataType.INT32))
    callee = Function(
        "k", (Param(Var("t", TENSOR)), Param(count)), (), seq(), FunctionType.AIV, Level.CHIP
    )
    view = DistributedTensorType((8, 64), DataType.FP32, valid_shape=(4, 64), window="buf")
    caller = Function(
        "orch",
        (Param(Var("v", view)),),
        (),
        seq(EvalStmt(Call(GlobalVar("k"), (Var("v", view), ConstInt(3)), TupleType(())))),
        FunctionType.Orchestration,
    )
    verify(Program("P", (callee, caller)))


# --- one test per violation kind -----------------------------------------------------------


def check_fails(prog: Program, pattern: str) -> None:
    with pytest.raises(InternalError, match=pattern) as caught:
        verify(prog)
    assert "verifier: program 'P'" in str(caught.value)


def test_use_before_definition() -> None:
    check_fails(
        program(ReturnStmt((X,))),
        r"function 'orch': use of 'x': used before it is defined",
    )


def test_use_after_assignment_in_one_branch_only() -> None:
    check_fails(
        program(
            IfStmt(ConstInt(1), seq(AssignStmt((X,), STAGE)), None),
            ReturnStmt((X,)),
        ),
        r"function 'orch': use of 'x': may be undefined: only some paths assign it",
    )


def test_use_after_a_loop_of_a_name_only_the_loop_assigns() -> None:
    i = Var("i", INDEX)
    check_fails(
        program(
            ForStmt(i, ConstInt(0), N, ConstInt(1), seq(AssignStmt((X,), STAGE))),
            ReturnStmt((X,)),
        ),
        r"use of 'x': may be undefined",
    )
    check_fails(
        program(
            ForStmt(i, ConstInt(0), N, ConstInt(1), seq()),
            EvalStmt(i),
            ReturnStmt((STAGE,)),
        ),
        r"use of 'i': may be undefined",
    )


def test_undefined_name_in_a_call_attr() -> None:
    check_fails(
        program(ReturnStmt((step(INP, STAGE, device=Var("r", INDEX)),))),
        r"use of 'r': used before it is defined",
    )


def test_call_of_a_missing_function() -> None:
    check_fails(
        program(EvalStmt(Call(GlobalVar("gone"), (INP,), DIST)), ReturnStmt((STAGE,))),
        r"function 'orch': call of 'self.gone': no function 'gone' in the program",
    )


def test_call_with_wrong_arity() -> None:
    check_fails(
        program(ReturnStmt((step(INP),))),
        r"call of 'self.stage_step': 1 arguments for 2 parameters",
    )


def test_call_with_an_incompatible_argument() -> None:
    check_fails(
        program(ReturnStmt((step(INP, INP),))),
        r"call of 'self.stage_step': argument 1 \(inp\) has type pl.Tensor\[\[8, 64\], pl.FP32\], "
        r"parameter 'stage' is pld.DistributedTensor\[\[8, 64\], pl.FP32\]",
    )


def test_op_call_whose_type_is_not_the_deduced_one() -> None:
    check_fails(
        program(EvalStmt(Call("pld.world_size", (), TENSOR)), ReturnStmt((STAGE,))),
        r"call of 'pld.world_size': has type pl.Tensor\[\[8, 64\], pl.FP32\], the op deduces ",
    )


@pytest.mark.parametrize(
    ("call", "reason"),
    [
        (Call("pld.world_size", (INP,), INDEX), "call has 1 args, its signature 0"),
        (
            Call("pld.window", (INP, MakeTuple((ConstInt(8),))), DIST, (("dtype", DataType.FP32),)),
            "must be a pld.alloc_window_buffer variable",
        ),
    ],
)
def test_op_call_the_op_table_rejects(call: Call, reason: str) -> None:
    check_fails(
        program(EvalStmt(call), ReturnStmt((STAGE,))),
        f"call of '{call.op}': the op table rejects it: .*{reason}",
    )


def test_return_of_the_wrong_type() -> None:
    check_fails(
        program(ReturnStmt((INP,))),
        r"function 'orch': return: value 0 has type pl.Tensor\[\[8, 64\], pl.FP32\], "
        r"declared pld.DistributedTensor",
    )


def test_return_of_the_wrong_number_of_values() -> None:
    check_fails(program(ReturnStmt((STAGE, STAGE))), r"return: returns 2 values, 1 declared")
    check_fails(program(ReturnStmt((STAGE,)), returns=()), r"return: returns 1 values, 0 declared")


def test_duplicate_function_names() -> None:
    check_fails(
        Program("P", (kernel(), kernel())),
        r"program 'P': function name 'stage_step' is defined 2 times",
    )


def test_tuple_assignment_of_the_wrong_arity() -> None:
    res, tid = Var("res", DIST), Var("tid", TASK_ID)
    check_fails(
        program(AssignStmt((res, tid), step(INP, STAGE)), ReturnStmt((res,))),
        r"assignment to res, tid: 2 targets for a value of type pld.DistributedTensor",
    )
    check_fails(
        program(AssignStmt((res, tid), MakeTuple((STAGE, N, N))), ReturnStmt((res,))),
        r"assignment to res, tid: 2 targets for a value of type tuple\[pld.DistributedTensor",
    )

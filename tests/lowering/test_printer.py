"""The IR printer: exact DSL text for hand-built programs, Python-correct operator precedence
and string quoting, and a round trip through the front end for every sample program."""

from __future__ import annotations

import ast
import itertools
import operator
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _support.ir_builders import DIST, SAMPLES, TENSOR, seq, stage_step

from pypto_build.lowering.diagnostics import InternalError
from pypto_build.lowering.frontend import parse_source
from pypto_build.lowering.ir import (
    BOOL,
    INDEX,
    TASK_ID,
    AssignStmt,
    BinaryOp,
    Call,
    CommCtxType,
    CommDomainScopeStmt,
    ConstBool,
    ConstFloat,
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
    Layout,
    Level,
    MakeTuple,
    Param,
    ParamDirection,
    Program,
    ReturnStmt,
    ScalarType,
    TensorType,
    TupleGetItem,
    TupleType,
    Type,
    UnaryOp,
    Var,
    WhileStmt,
    WindowBufferType,
)
from pypto_build.lowering.printer import (
    format_expr,
    format_type,
    print_programs,
    quote,
)

COUNTS = DistributedTensorType((4,), DataType.INT32)


def idx(name: str) -> Var:
    return Var(name, INDEX)


def external_stage_step() -> Function:
    """The example kernel with an external source: an empty body."""
    return stage_step(attrs=(("external_source", "kernels/stage.cpp"),))


STAGE_STEP_TEXT = """\
import pypto.language as pl
import pypto.language.distributed as pld


@pl.program
class ChipProgram:
    @pl.function(type=pl.FunctionType.AIV, level=pl.Level.CHIP, external_source="kernels/stage.cpp")
    def stage_step(self, inp: pl.Tensor[[8, 64], pl.FP32], stage: pl.InOut[pld.DistributedTensor[[8, 64], pl.FP32]]) -> pld.DistributedTensor[[8, 64], pl.FP32]:
        ...
"""  # noqa: E501


def test_external_kernel_prints_exactly() -> None:
    assert print_programs([Program("ChipProgram", (external_stage_step(),))]) == STAGE_STEP_TEXT


def chip_pipeline() -> Function:
    """An orchestration using every statement and expression kind the front end parses."""
    inp, stage, out = Var("inp", TENSOR), Var("stage", DIST), Var("out", TENSOR)
    counts, n = Var("counts", COUNTS), idx("n")
    i, j, k = idx("i"), idx("j"), idx("k")
    res, tid = Var("res", DIST), Var("tid", TASK_ID)
    pair = Var("pair", TupleType((DIST, DIST)))
    step = GlobalVar("stage_step")
    submit_type = TupleType((DIST, TASK_ID))
    return Function(
        "chip_pipeline",
        (
            Param(inp),
            Param(out, ParamDirection.Out),
            Param(stage, ParamDirection.InOut),
            Param(counts),
            Param(n),
        ),
        (DIST, TENSOR),
        seq(
            AssignStmt((stage,), Call(step, (inp, stage), DIST)),
            AssignStmt(
                (Var("buf", TENSOR),),
                Call(
                    "tensor.create",
                    (MakeTuple((ConstInt(8), ConstInt(64))),),
                    TENSOR,
                    kwargs=(("dtype", DataType.FP32), ("layout", Layout.ND)),
                ),
            ),
            AssignStmt(
                (stage,),
                Call(
                    "pld.tensor.all_to_all_v",
                    (stage, stage, stage, counts, counts),
                    DIST,
                    kwargs=(("core_num", ConstInt(4)),),
                ),
            ),
            IfStmt(
                BinaryOp("==", BinaryOp("%", n, ConstInt(2), INDEX), ConstInt(0), BOOL),
                seq(EvalStmt(Call(step, (inp, stage), DIST, attrs=(("device", n),)))),
                seq(
                    IfStmt(
                        UnaryOp("not", BinaryOp("<", n, ConstInt(4), BOOL), BOOL),
                        seq(),
                        seq(AssignStmt((j,), UnaryOp("-", n, INDEX))),
                    )
                ),
            ),
            ForStmt(i, ConstInt(0), n, ConstInt(1), seq(AssignStmt((j,), i))),
            ForStmt(i, ConstInt(1), n, ConstInt(1), seq()),
            ForStmt(i, ConstInt(0), n, ConstInt(2), seq()),
            WhileStmt(
                BinaryOp("and", ConstBool(True), BinaryOp(">=", n, ConstInt(1), BOOL), BOOL),
                seq(AssignStmt((k,), BinaryOp("*", BinaryOp("+", n, k, INDEX), n, INDEX))),
            ),
            AssignStmt(
                (res, tid),
                Call(step, (inp, stage), submit_type, attrs=(("submit", True),)),
            ),
            AssignStmt((pair,), MakeTuple((res, stage))),
            ReturnStmt((TupleGetItem(pair, 1, DIST), out)),
        ),
        FunctionType.Orchestration,
        Level.CHIP,
        (("auto_scope", True), ("note", 'say "hi"')),
    )


CHIP_PIPELINE_TEXT = """\
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP)
    def chip_pipeline(self, inp: pl.Tensor[[8, 64], pl.FP32], out: pl.Out[pl.Tensor[[8, 64], pl.FP32]], stage: pl.InOut[pld.DistributedTensor[[8, 64], pl.FP32]], counts: pld.DistributedTensor[[4], pl.INT32], n: pl.Scalar[pl.INDEX]) -> tuple[pld.DistributedTensor[[8, 64], pl.FP32], pl.Tensor[[8, 64], pl.FP32]]:
        pl.func_attr({"auto_scope": True, "note": "say \\"hi\\""})
        stage = self.stage_step(inp, stage)
        buf = pl.tensor.create([8, 64], dtype=pl.FP32, layout=pl.ND)
        stage = pld.tensor.all_to_all_v(stage, stage, stage, counts, counts, core_num=4)
        if n % 2 == 0:
            self.stage_step(inp, stage, device=n)
        elif not n < 4:
            pass
        else:
            j = -n
        for i in pl.range(n):
            j = i
        for i in pl.range(1, n):
            pass
        for i in pl.range(0, n, 2):
            pass
        while True and n >= 1:
            k = (n + k) * n
        res, tid = pl.submit(self.stage_step, inp, stage)
        pair = [res, stage]
        return pair[1], out
"""  # noqa: E501


def test_orchestration_prints_every_construct() -> None:
    text = print_programs([Program("ChipProgram", (external_stage_step(), chip_pipeline()))])
    assert text == STAGE_STEP_TEXT + "\n" + CHIP_PIPELINE_TEXT
    ast.parse(text)


def test_several_programs_share_one_import_header() -> None:
    one = Program("A", (external_stage_step(),))
    two = Program("B", ())
    text = print_programs((one, two))
    assert text.count("import pypto.language as pl\n") == 1
    assert text.endswith("\n\n\n@pl.program\nclass B:\n    pass\n")
    assert text.startswith(STAGE_STEP_TEXT.replace("ChipProgram", "A"))


def test_function_without_results_or_attrs() -> None:
    func = Function("noop", (), (), seq(), FunctionType.InCore, Level.CHIP)
    text = print_programs([Program("P", (func,))])
    assert text.endswith(
        "    @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP)\n"
        "    def noop(self):\n"
        "        ...\n"
    )


def test_comm_domain_scope_prints_as_with_block() -> None:
    body = seq(
        CommDomainScopeStmt("ep", ("a", "b"), (0, 1), seq(ReturnStmt(()))),
        CommDomainScopeStmt("world", (), None, seq()),
    )
    func = Function("host", (), (), body, FunctionType.Orchestration, Level.HOST)
    assert print_programs([Program("P", (func,))]).endswith(
        '        with pld.comm_domain("ep", buffers=["a", "b"], devices=[0, 1]):\n'
        "            return\n"
        '        with pld.comm_domain("world", buffers=[]):\n'
        "            pass\n"
    )


def test_nested_seq_prints_flat() -> None:
    body = seq(seq(EvalStmt(ConstInt(1))), EvalStmt(ConstInt(2)))
    func = Function("f", (), (), body, FunctionType.Orchestration, Level.CHIP)
    assert print_programs([Program("P", (func,))]).endswith("        1\n        2\n")


@pytest.mark.parametrize(
    ("ty", "text"),
    [
        (TENSOR, "pl.Tensor[[8, 64], pl.FP32]"),
        (TensorType((4, 4), DataType.INT8, Layout.DN), "pl.Tensor[[4, 4], pl.INT8, pl.DN]"),
        (
            TensorType((4, 4), DataType.FP16, stride=(8, 1), valid_shape=(2, 4)),
            "pl.Tensor[[4, 4], pl.FP16, pl.TensorView(layout=pl.ND, stride=[8, 1], "
            "valid_shape=[2, 4])]",
        ),
        (
            DistributedTensorType((2,), DataType.BF16, Layout.NZ, valid_shape=(1,)),
            "pld.DistributedTensor[[2], pl.BF16, pl.TensorView(layout=pl.NZ, valid_shape=[1])]",
        ),
        (
            DistributedTensorType((8, 64), DataType.FP32, window="buf"),
            "pld.DistributedTensor[[8, 64], pl.FP32]",
        ),
        (ScalarType(DataType.INDEX), "pl.Scalar[pl.INDEX]"),
        (TupleType((BOOL, TASK_ID)), "tuple[pl.Scalar[pl.BOOL], pl.Scalar[pl.TASK_ID]]"),
        (WindowBufferType(256), "pld.WindowBuffer[256]"),
        (CommCtxType(), "pld.CommCtx"),
    ],
)
def test_type_spelling(ty: Type, text: str) -> None:
    assert format_type(ty) == text


@pytest.mark.parametrize(
    ("call", "text"),
    [
        (Call("pld.world_size", (), INDEX), "pld.world_size()"),
        (
            Call("tensor.view", (Var("t", TENSOR),), TENSOR, kwargs=(("name", "v"),)),
            'pl.tensor.view(t, name="v")',
        ),
        (
            Call(GlobalVar("k"), (), TupleType((TENSOR, TASK_ID)), attrs=(("submit", True),)),
            "pl.submit(self.k)",
        ),
        (
            Call(
                GlobalVar("k"),
                (ConstFloat(0.5),),
                TENSOR,
                attrs=(("submit", False), ("arg_directions", ("In", None, 2.0, (1,)))),
            ),
            'self.k(0.5, submit=False, arg_directions=("In", None, 2.0, (1,)))',
        ),
        (
            Call(GlobalVar("__builtin_all_to_all_v__fp32"), (idx("a"),), TENSOR),
            "self.__builtin_all_to_all_v__fp32(a)",
        ),
        (
            Call("tensor.create", (), TENSOR, kwargs=(("init_value", ConstFloat(float("-inf"))),)),
            'pl.tensor.create(init_value=float("-inf"))',
        ),
    ],
)
def test_call_spelling(call: Call, text: str) -> None:
    assert format_expr(call) == text


@pytest.mark.parametrize(
    "text", ["plain", 'd"q', "s'q", "both'\"", "back\\slash", "new\nline\t\x00", "ünï", ""]
)
def test_strings_are_double_quoted_python_literals(text: str) -> None:
    literal = quote(text)
    assert literal.startswith('"')
    assert ast.literal_eval(literal) == text


# --- operator precedence: every nesting of two operators evaluates as the IR says -----------

_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "or": lambda a, b: a or b,
    "and": lambda a, b: a and b,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "//": operator.floordiv,
    "%": operator.mod,
}
_UNARY: dict[str, Callable[[Any], Any]] = {"-": operator.neg, "not": operator.not_}


@dataclass(frozen=True)
class _Outcome:
    value: Any = None
    error: type[Exception] | None = None


def _evaluate(expr: Expr) -> Any:
    """Evaluate the IR tree directly, following its structure (not any printed text)."""
    if isinstance(expr, BinaryOp):
        return _BINARY[expr.op](_evaluate(expr.lhs), _evaluate(expr.rhs))
    if isinstance(expr, UnaryOp):
        return _UNARY[expr.op](_evaluate(expr.operand))
    assert isinstance(expr, ConstInt)
    return expr.value


def _outcome(compute: Callable[..., Any], *args: Any) -> _Outcome:
    try:
        return _Outcome(compute(*args))
    except ZeroDivisionError as error:
        return _Outcome(error=type(error))


def _nestings() -> list[Expr]:
    leaves = (ConstInt(7), ConstInt(-3), ConstInt(2))
    inner: list[Expr] = [BinaryOp(op, leaves[0], leaves[1], INDEX) for op in _BINARY]
    inner += [UnaryOp(op, leaves[1], INDEX) for op in _UNARY]
    nested: list[Expr] = []
    for op, sub in itertools.product(_BINARY, inner):
        nested.append(BinaryOp(op, sub, leaves[2], INDEX))
        nested.append(BinaryOp(op, leaves[2], sub, INDEX))
    nested += [UnaryOp(op, sub, INDEX) for op, sub in itertools.product(_UNARY, inner)]
    return nested


def test_parentheses_preserve_the_tree() -> None:
    for expr in _nestings():
        text = format_expr(expr)
        assert _outcome(eval, text, {}) == _outcome(_evaluate, expr), text


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        (BinaryOp("-", BinaryOp("-", idx("a"), idx("b"), INDEX), idx("c"), INDEX), "a - b - c"),
        (BinaryOp("-", idx("a"), BinaryOp("-", idx("b"), idx("c"), INDEX), INDEX), "a - (b - c)"),
        (BinaryOp("<", BinaryOp("<", idx("a"), idx("b"), BOOL), idx("c"), BOOL), "(a < b) < c"),
        (BinaryOp("+", idx("a"), BinaryOp("*", idx("b"), idx("c"), INDEX), INDEX), "a + b * c"),
        (UnaryOp("-", BinaryOp("+", idx("a"), idx("b"), INDEX), INDEX), "-(a + b)"),
        (BinaryOp("*", idx("a"), ConstInt(-1), INDEX), "a * -1"),
        (TupleGetItem(Var("t", TupleType((INDEX,))), 0, INDEX), "t[0]"),
    ],
)
def test_minimal_parentheses(expr: Expr, text: str) -> None:
    assert format_expr(expr) == text


def test_unknown_node_kind_is_an_internal_error() -> None:
    @dataclass(frozen=True)
    class Mystery(Expr):
        type: Type = INDEX

    with pytest.raises(InternalError, match="no DSL spelling for expression Mystery"):
        format_expr(Mystery())
    with pytest.raises(InternalError, match="unknown operator '\\*\\*'"):
        format_expr(BinaryOp("+", idx("a"), BinaryOp("**", idx("a"), idx("b"), INDEX), INDEX))


# --- round trip through the front end ------------------------------------------------------


@pytest.mark.parametrize("sample", SAMPLES, ids=[path.name for path in SAMPLES])
def test_sample_round_trips_through_the_front_end(sample: Path) -> None:
    programs = parse_source(sample.read_text(encoding="utf-8"), sample.name)
    printed = print_programs(programs)
    reparsed = parse_source(printed, f"printed-{sample.name}")
    assert reparsed == programs
    assert print_programs(reparsed) == printed

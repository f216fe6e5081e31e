"""The static front end: sample programs -> IR, import spellings, constants, control flow."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _support.ir_builders import PROGRAMS

from pypto_build.lowering.frontend import parse_file, parse_source
from pypto_build.lowering.ir import (
    BOOL,
    INDEX,
    TASK_ID,
    AssignStmt,
    BinaryOp,
    Call,
    ConstBool,
    ConstFloat,
    ConstInt,
    DataType,
    DistributedTensorType,
    EvalStmt,
    ForStmt,
    Function,
    FunctionType,
    GlobalVar,
    IfStmt,
    Layout,
    Level,
    MakeTuple,
    ParamDirection,
    Program,
    ReturnStmt,
    ScalarType,
    TensorType,
    TupleGetItem,
    TupleType,
    UnaryOp,
    Var,
    WhileStmt,
    WindowBufferType,
)

FP32_ROWS = TensorType((8, 64), DataType.FP32)
WINDOW_ROWS = DistributedTensorType((8, 64), DataType.FP32)
SIGNAL = DistributedTensorType((2, 1), DataType.INT32)
COUNTS = DistributedTensorType((2,), DataType.INT32)


def only_program(path: Path) -> Program:
    programs = parse_file(path)
    assert len(programs) == 1
    return programs[0]


def function(program: Program, name: str) -> Function:
    func = program.function(name)
    assert func is not None, name
    return func


# --- the CHIP pipeline ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def chip_pipeline() -> Program:
    return only_program(PROGRAMS / "chip_pipeline.py")


def test_chip_pipeline_functions(chip_pipeline: Program) -> None:
    assert chip_pipeline.name == "ChipPipeline"
    summary = [(f.name, f.func_type, f.level) for f in chip_pipeline.functions]
    assert summary == [
        ("stage_step", FunctionType.AIV, Level.CHIP),
        ("consume_step", FunctionType.AIV, Level.CHIP),
        ("chip_pipeline", FunctionType.Orchestration, Level.CHIP),
        ("host_orch", FunctionType.Orchestration, Level.HOST),
    ]
    assert function(chip_pipeline, "chip_pipeline").is_chip_orchestration
    assert function(chip_pipeline, "host_orch").is_host_orchestrator


def test_external_kernels_have_empty_bodies_and_relative_sources(chip_pipeline: Program) -> None:
    stage = function(chip_pipeline, "stage_step")
    assert stage.attrs == (("external_source", "kernels/stage_step.cpp"),)
    assert stage.body.stmts == ()
    assert [(p.var.name, p.direction) for p in stage.params] == [
        ("inp", ParamDirection.In),
        ("stage", ParamDirection.InOut),
        ("counts", ParamDirection.InOut),
    ]
    assert [p.var.type for p in stage.params] == [FP32_ROWS, WINDOW_ROWS, COUNTS]
    assert stage.return_types == (WINDOW_ROWS, COUNTS)
    consume = function(chip_pipeline, "consume_step")
    assert consume.attr("external_source") == "kernels/consume_step.cpp"
    assert consume.params[2].direction is ParamDirection.Out
    assert consume.return_types == (FP32_ROWS,)
    for source in ("stage_step.cpp", "consume_step.cpp"):
        assert (PROGRAMS / "kernels" / source).is_file()


def test_chip_pipeline_body_is_stage_collective_consume(chip_pipeline: Program) -> None:
    orch = function(chip_pipeline, "chip_pipeline")
    stage, data, signal, counts, recv = (
        Var("stage", WINDOW_ROWS),
        Var("data", WINDOW_ROWS),
        Var("signal", SIGNAL),
        Var("counts", COUNTS),
        Var("recv", SIGNAL),
    )
    inp, out = Var("inp", FP32_ROWS), Var("out", FP32_ROWS)
    assert orch.body.stmts == (
        AssignStmt(
            (stage, counts),
            Call(
                GlobalVar("stage_step"),
                (inp, stage, counts),
                TupleType((WINDOW_ROWS, COUNTS)),
            ),
        ),
        AssignStmt(
            (data,),
            Call(
                "pld.tensor.all_to_all_v",
                (stage, data, signal, counts, recv),
                WINDOW_ROWS,
                kwargs=(("core_num", ConstInt(1)),),
            ),
        ),
        ReturnStmt((Call(GlobalVar("consume_step"), (data, recv, out), FP32_ROWS),)),
    )


def test_host_orchestrator_allocates_views_and_dispatches_per_rank(
    chip_pipeline: Program,
) -> None:
    host = function(chip_pipeline, "host_orch")
    stmts = host.body.stmts
    allocs = [s for s in stmts if isinstance(s, AssignStmt) and isinstance(s.value, Call)]
    assert [s.value.callee_name for s in allocs if isinstance(s.value, Call)] == [
        *["pld.alloc_window_buffer"] * 5,
        *["pld.window"] * 5,
    ]
    first = allocs[0]
    assert isinstance(first.value, Call)
    # TOTAL * ROW_BYTES = (NR * MAX_RECV) * (SIZE * 4), folded at parse time.
    assert first.value.args == (ConstInt(8 * 64 * 4),)
    assert first.value.kwargs == (("name", "stage"),)
    assert first.targets == (Var("stage_buf", WindowBufferType(2048)),)
    stage_view = allocs[5]
    assert stage_view.targets == (
        Var("stage", DistributedTensorType((8, 64), DataType.FP32, window="stage_buf")),
    )
    loop = stmts[-1]
    assert isinstance(loop, ForStmt)
    assert loop.var == Var("r", INDEX)
    assert (loop.start, loop.step) == (ConstInt(0), ConstInt(1))
    assert loop.stop == Call("pld.world_size", (), INDEX)
    (dispatch,) = loop.body.stmts
    assert isinstance(dispatch, EvalStmt)
    call = dispatch.expr
    assert isinstance(call, Call)
    assert call.op == GlobalVar("chip_pipeline")
    assert call.type == FP32_ROWS
    assert call.attrs == (("device", Var("r", INDEX)),)
    assert [arg.type for arg in call.args][2] == DistributedTensorType(
        (8, 64), DataType.FP32, window="stage_buf"
    )


def test_spans_name_the_file_as_given(tmp_path: Path, chip_pipeline: Program) -> None:
    copy = tmp_path / "copy.py"
    copy.write_text((PROGRAMS / "chip_pipeline.py").read_text(encoding="utf-8"), encoding="utf-8")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        (program,) = parse_file("copy.py")
    finally:
        os.chdir(cwd)
    assert program == chip_pipeline
    orch = function(program, "chip_pipeline")
    collective = orch.body.stmts[1]
    assert isinstance(collective, AssignStmt) and isinstance(collective.value, Call)
    assert str(collective.value.span) == "copy.py:55:16"
    operand = collective.value.args[0]
    assert isinstance(operand, Var)
    assert str(operand.span) == "copy.py:55:40"
    assert str(orch.span) == "copy.py:44:5"


# --- other samples ---------------------------------------------------------------------------


def test_incore_body_holds_its_collective() -> None:
    program = only_program(PROGRAMS / "incore_collective.py")
    exchange = function(program, "exchange")
    assert exchange.func_type is FunctionType.InCore
    assert exchange.level is Level.CHIP
    assert exchange.attrs == ()
    assign, ret = exchange.body.stmts
    assert isinstance(assign, AssignStmt)
    assert isinstance(assign.value, Call)
    assert assign.value.op == "pld.tensor.all_to_all_v"
    assert assign.value.kwargs == ()  # core_num absent means 1
    assert ret == ReturnStmt((Var("data", WINDOW_ROWS),))


def test_host_rail_int8_uses_upstream_host_orchestrator_spelling() -> None:
    program = only_program(PROGRAMS / "host_rail_int8.py")
    host = function(program, "host_orch")
    # level=HOST, role=Orchestrator and no type: a HOST orchestration.
    assert (host.func_type, host.level) == (FunctionType.Orchestration, Level.HOST)
    collective = next(
        s
        for s in host.body.stmts
        if isinstance(s, AssignStmt)
        and s.targets[0].name == "data"
        and isinstance(s.value, Call)
        and s.value.op == "pld.tensor.all_to_all_v"
    )
    assert isinstance(collective.value, Call)
    assert collective.value.kwargs == (("core_num", ConstInt(2)),)
    assert collective.value.type == DistributedTensorType((8, 64), DataType.INT8, window="data_buf")
    loops = [s for s in host.body.stmts if isinstance(s, ForStmt)]
    assert len(loops) == 2
    stage_orch = function(program, "stage_orch")
    assert stage_orch.return_types == ()


def test_side_effects_are_not_run_by_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sample = PROGRAMS / "side_effects.py"
    # The fixture is real: executing it writes the marker and raises.
    ran = tmp_path / "ran.txt"
    result = subprocess.run(
        [sys.executable, str(sample)],
        env={**os.environ, "PYPTO_SIDE_EFFECT_MARKER": str(ran)},
        capture_output=True,
        check=False,
    )
    assert result.returncode != 0
    assert ran.is_file()
    # Parsing it does neither.
    marker = tmp_path / "parsed.txt"
    monkeypatch.setenv("PYPTO_SIDE_EFFECT_MARKER", str(marker))
    monkeypatch.chdir(tmp_path)
    (program,) = parse_file(sample)
    assert not marker.exists()
    assert list(tmp_path.iterdir()) == [ran]
    assert [f.name for f in program.functions] == ["scale", "orch"]
    assert function(program, "scale").params[0].var.type == TensorType((16,), DataType.FP32)


# --- import spellings ------------------------------------------------------------------------

_SPELLING_BODY = """\
SIZE = 64

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(
        self,
        inp: pl.Tensor[[8, SIZE], pl.FP32],
        data: pl.InOut[pld.DistributedTensor[[8, SIZE], pl.FP32]],
        signal: pld.DistributedTensor[[2, 1], pl.INT32],
        counts: pld.DistributedTensor[[2], pl.INT32],
        recv: pld.DistributedTensor[[2, 1], pl.INT32],
    ) -> pld.DistributedTensor[[8, SIZE], pl.FP32]:
        t = pl.create_tensor([8, SIZE], dtype=pl.FP32, layout=pl.TensorLayout.ND)
        return pld.tensor.all_to_all_v(inp, data, signal, counts, recv, core_num=1)
"""


def _spelled(header: str, pl_name: str, pld_name: str) -> str:
    body = _SPELLING_BODY.replace("pld.", "@PLD@.").replace("pl.", f"{pl_name}.")
    return header + body.replace("@PLD@.", f"{pld_name}.")


SPELLINGS = {
    "upstream": (
        "import pypto.language as pl\nimport pypto.language.distributed as pld\n",
        "pl",
        "pld",
    ),
    "ours": (
        "import pypto_build.lang as pl\nimport pypto_build.lang.distributed as pld\n",
        "pl",
        "pld",
    ),
    "from-import-aliases": (
        "from pypto import language as L\nfrom pypto.language import distributed as D\n",
        "L",
        "D",
    ),
    "ours-from-import": (
        "from pypto_build import lang as lang\nfrom pypto_build.lang import distributed as dist\n",
        "lang",
        "dist",
    ),
    "fully-qualified": ("import pypto.language\n", "pypto.language", "pypto.language.distributed"),
    "distributed-through-pl": ("import pypto_build.lang as p\n", "p", "p.distributed"),
}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_import_spellings_give_equal_programs(spelling: str) -> None:
    reference = parse_source(_spelled(*SPELLINGS["upstream"]), "a.py")
    assert parse_source(_spelled(*SPELLINGS[spelling]), "b.py") == reference


def test_unrelated_module_named_pl_is_not_the_dsl() -> None:
    source = _spelled("import numpy as pl\nimport pypto.language.distributed as pld\n", "pl", "pld")
    assert parse_source(source, "a.py") == ()  # no @pl.program: the class is not a program


# --- constants, expressions and control flow -------------------------------------------------


def parse_one(source: str) -> Program:
    (program,) = parse_source(
        "import pypto.language as pl\nimport pypto.language.distributed as pld\n"
        + textwrap.dedent(source),
        "t.py",
    )
    return program


def test_module_constants_fold_in_shapes_and_expressions() -> None:
    program = parse_one(
        """\
        NR = 2
        MAX_RECV = 4
        TOTAL = NR * MAX_RECV
        WIDE = (TOTAL + 1) ** 2 // 3 % 7 - -1
        REBOUND = 1
        REBOUND = REBOUND + 1
        IGNORED = "not an int"

        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def f(self, x: pl.Tensor[[TOTAL, WIDE, REBOUND], pl.FP32]):
                n = NR * 2 + MAX_RECV
        """
    )
    f = function(program, "f")
    assert f.params[0].var.type == TensorType((8, (81 // 3) % 7 + 1, 2), DataType.FP32)
    assert f.body.stmts == (AssignStmt((Var("n", INDEX),), ConstInt(8)),)


def test_scalar_expressions_are_typed() -> None:
    program = parse_one(
        """\
        @pl.program
        class P:
            @pl.function
            def f(self, a: pl.Scalar[pl.INT32], i: pl.Scalar[pl.INDEX], s: pl.Scalar[pl.FP32]):
                b = i + a
                c = i < 4 and not i == a
                d = -i
                e = s * 0.5
                g = -3
        """
    )
    a, i, s = (
        Var("a", ScalarType(DataType.INT32)),
        Var("i", INDEX),
        Var("s", ScalarType(DataType.FP32)),
    )
    stmts = function(program, "f").body.stmts
    values = [stmt.value for stmt in stmts if isinstance(stmt, AssignStmt)]
    assert values[0] == BinaryOp("+", i, a, ScalarType(DataType.INT32))
    assert values[1] == BinaryOp(
        "and",
        BinaryOp("<", i, ConstInt(4), BOOL),
        UnaryOp("not", BinaryOp("==", i, a, BOOL), BOOL),
        BOOL,
    )
    assert values[2] == UnaryOp("-", i, INDEX)
    assert values[3] == BinaryOp("*", s, ConstFloat(0.5), ScalarType(DataType.FP32))
    assert values[4] == ConstInt(-3)


def test_if_loop_and_while_keep_names_typed() -> None:
    program = parse_one(
        """\
        @pl.program
        class P:
            @pl.function
            def f(self, n: pl.Scalar[pl.INDEX]) -> pl.Scalar[pl.INDEX]:
                acc = 0
                if n > 4:
                    acc = n
                    tmp = n
                elif n > 2:
                    acc = 1
                    tmp = n
                else:
                    tmp = acc
                for i in pl.range(1, n, 2):
                    acc = acc + i
                while acc > 0:
                    acc = acc - 1
                return tmp + acc
        """
    )
    body = function(program, "f").body.stmts
    branch = body[1]
    assert isinstance(branch, IfStmt)
    assert branch.else_body is not None
    assert isinstance(branch.else_body.stmts[0], IfStmt)  # elif is a nested if
    loop = body[2]
    assert isinstance(loop, ForStmt)
    assert (loop.start, loop.stop, loop.step) == (ConstInt(1), Var("n", INDEX), ConstInt(2))
    assert isinstance(body[3], WhileStmt)
    assert body[4] == ReturnStmt((BinaryOp("+", Var("tmp", INDEX), Var("acc", INDEX), INDEX),))


def test_calls_to_later_functions_submit_tuples_and_func_attrs() -> None:
    program = parse_one(
        """\
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def orch(
                self, x: pl.Tensor[[4, 4], pl.FP32, pl.DN]
            ) -> pl.Tensor[[4, 4], pl.FP32, pl.DN]:
                '''Docstrings are skipped.'''
                pl.func_attr({"note": "kept", "count": 2 * 3, "flag": True, "pair": (1, "a")})
                y, tid = pl.submit(self.kernel, x, core_num=2, sync_start=True)
                both = self.pair(x)
                first = both[0]
                self.nothing()
                return first

            @pl.function(type=pl.FunctionType.AIC, external_source="kernels/k.cpp")
            def kernel(
                self, a: pl.Tensor[[4, 4], pl.FP32, pl.DN]
            ) -> pl.Tensor[[4, 4], pl.FP32, pl.DN]:
                ...

            @pl.function(type=pl.FunctionType.InCore)
            def pair(self, a: pl.Tensor[[4, 4], pl.FP32, pl.DN]) -> tuple[
                pl.Tensor[[4, 4], pl.FP32, pl.DN], pl.Scalar[pl.INDEX]
            ]:
                return a, 1

            @pl.function
            def nothing(self):
                pass
        """
    )
    dn = TensorType((4, 4), DataType.FP32, Layout.DN)
    orch = function(program, "orch")
    assert orch.attrs == (("note", "kept"), ("count", 6), ("flag", True), ("pair", (1, "a")))
    submit, pair, first, nothing, ret = orch.body.stmts
    assert submit == AssignStmt(
        (Var("y", dn), Var("tid", TASK_ID)),
        Call(
            GlobalVar("kernel"),
            (Var("x", dn),),
            TupleType((dn, TASK_ID)),
            attrs=(("submit", True), ("core_num", ConstInt(2)), ("sync_start", ConstBool(True))),
        ),
    )
    pair_type = TupleType((dn, INDEX))
    assert isinstance(pair, AssignStmt) and pair.value.type == pair_type
    assert first == AssignStmt((Var("first", dn),), TupleGetItem(Var("both", pair_type), 0, dn))
    assert nothing == EvalStmt(Call(GlobalVar("nothing"), (), TupleType(())))
    assert ret == ReturnStmt((Var("first", dn),))
    assert function(program, "kernel").func_type is FunctionType.AIC
    assert function(program, "pair").body.stmts == (ReturnStmt((Var("a", dn), ConstInt(1))),)


def test_window_tensor_passes_where_a_plain_tensor_is_declared() -> None:
    program = parse_one(
        """\
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.AIV, external_source="k.cpp")
            def k(self, a: pl.Tensor[[8], pl.INT32]): ...

            @pl.function(type=pl.FunctionType.Orchestration)
            def f(self, w: pld.DistributedTensor[[8], pl.INT32]):
                self.k(w)
        """
    )
    (call,) = function(program, "f").body.stmts
    assert call == EvalStmt(
        Call(
            GlobalVar("k"), (Var("w", DistributedTensorType((8,), DataType.INT32)),), TupleType(())
        )
    )


def test_default_types_and_levels() -> None:
    program = parse_one(
        """\
        @pl.program()
        class P:
            @pl.function
            def opaque(self): ...

            @pl.function(type=pl.FunctionType.Graph)
            def graph(self): ...

            @pl.function(role=pl.Role.Orchestrator)
            def orchestrator(self): ...

            @pl.function(level=pl.Level.HOST)
            def host(self): ...
        """
    )
    assert [(f.func_type, f.level) for f in program.functions] == [
        (FunctionType.Opaque, Level.CHIP),
        (FunctionType.Graph, Level.CHIP),
        (FunctionType.Orchestration, Level.CHIP),
        (FunctionType.Opaque, Level.HOST),
    ]


def test_tensor_view_annotation_and_op_literals() -> None:
    program = parse_one(
        """\
        @pl.program
        class P:
            @pl.function
            def f(self, x: pl.Tensor[[4, 8], pl.FP16, pl.TensorView(layout=pl.ND, stride=[16, 1])]):
                t = pl.tensor.create([4, 8], pl.BF16)
        """
    )
    f = function(program, "f")
    assert f.params[0].var.type == TensorType((4, 8), DataType.FP16, stride=(16, 1))
    (assign,) = f.body.stmts
    assert isinstance(assign, AssignStmt)
    assert assign.value == Call(
        "tensor.create",
        (MakeTuple((ConstInt(4), ConstInt(8))),),
        TensorType((4, 8), DataType.BF16),
        kwargs=(("dtype", DataType.BF16),),
    )


def test_several_programs_in_source_order_and_other_classes_ignored() -> None:
    (first, second) = parse_source(
        "import pypto.language as pl\n"
        "class Helper:\n    x = 1\n"
        "@pl.program\nclass B:\n    pass\n"
        "@pl.program\nclass A:\n    pass\n",
        "t.py",
    )
    assert (first.name, second.name) == ("B", "A")
    assert first.functions == ()

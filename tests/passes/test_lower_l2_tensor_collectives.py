"""LowerL2TensorCollectives: the CHIP rail rewrite, the synthesized kernels, the launch width,
every diagnostic with its location, and the residual check."""

from __future__ import annotations

import textwrap

import pytest
from _support.passes import (
    PROGRAMS,
    builtin_kernel_calls,
    callees,
    function,
    located,
    parse_one,
    pass_error,
    position,
    run_verified,
)

from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.frontend import parse_file
from pypto_build.lowering.ir import (
    AssignStmt,
    Call,
    ConstBool,
    ConstInt,
    DataType,
    DistributedTensorType,
    FunctionType,
    Level,
    ParamDirection,
    Program,
    ReturnStmt,
    SeqStmts,
    TensorType,
)
from pypto_build.lowering.passes import LowerL2TensorCollectives, Property
from pypto_build.lowering.printer import print_programs
from pypto_build.lowering.verifier import verify

PHASE = "LowerL2TensorCollectives"

IN, INOUT = ParamDirection.In, ParamDirection.InOut

KERNELS = """\
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/stage_step.cpp")
    def stage_step(
        self,
        inp: pl.Tensor[[T, W], DT],
        stage: pl.InOut[pld.DistributedTensor[[T, W], DT]],
        counts: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
    ) -> tuple[pld.DistributedTensor[[T, W], DT], pld.DistributedTensor[[NR], pl.INT32]]:
        ...

    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/consume_step.cpp")
    def consume_step(
        self,
        data: pld.DistributedTensor[[T, W], DT],
        recv: pld.DistributedTensor[[NR, 1], pl.INT32],
        out: pl.Out[pl.Tensor[[T, W], DT]],
    ) -> pl.Tensor[[T, W], DT]:
        ...
"""

PIPELINE = """\
    @pl.function(type=pl.FunctionType.FUNC_TYPE)
    def chip_pipeline(
        self,
        inp: pl.Tensor[[T, W], DT],
        out: pl.Out[pl.Tensor[[T, W], DT]],
        stage: pl.InOut[pld.DistributedTensor[[T, W], DT]],
        data: pl.InOut[pld.DistributedTensor[[T, W], DT]],
        signal: pl.InOut[pld.DistributedTensor[[NR, S], pl.INT32]],
        counts: pl.InOut[COUNTS],
        recv: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
        n: pl.Scalar[pl.INDEX],
    ) -> pl.Tensor[[T, W], DT]:
"""

SEED_BODY = """\
stage, counts = self.stage_step(inp, stage, counts)
data = pld.tensor.all_to_all_v(stage, data, signal, counts, recv, core_num=CORES)
return self.consume_step(data, recv, out)
"""

A2AV = "pld.tensor.all_to_all_v(stage, data, signal, counts, recv)"


def chip_source(
    body: str = SEED_BODY,
    *,
    dtype: str = "FP32",
    nranks: int = 4,
    stride: int = 1,
    cores: str = "1",
    func_type: str = "Orchestration",
    counts: str = "pld.DistributedTensor[[NR], pl.INT32]",
    functions: str = "",
) -> str:
    """A program with the CHIP pipeline's two kernels, ``functions`` and a CHIP
    ``chip_pipeline`` whose body is ``body``; NR ranks with two rows each, a ``[NR, S]`` signal."""
    pipeline = PIPELINE.replace("FUNC_TYPE", func_type).replace("COUNTS", counts)
    source = (
        "import pypto.language as pl\n"
        "import pypto.language.distributed as pld\n\n"
        f"NR = {nranks}\nT = NR * 2\nW = 64\nS = {stride}\n\n\n"
        "@pl.program\nclass Chip:\n"
        + KERNELS
        + functions
        + "\n"
        + pipeline
        + textwrap.indent(textwrap.dedent(body), " " * 8)
    )
    return source.replace("DT", f"pl.{dtype}").replace("CORES", cores)


def lower(source: str, chips: tuple[str, ...] = ()) -> Program:
    return run_verified(parse_one(source), LowerL2TensorCollectives(chips))


def lowering_error(source: str, chips: tuple[str, ...] = ()) -> ProgramError:
    return pass_error(parse_one(source), LowerL2TensorCollectives(chips))


def builtin_call(program: Program, name: str = "chip_pipeline") -> Call:
    (call,) = builtin_kernel_calls(program, name)
    return call


# --- the rewrite ------------------------------------------------------------------------------


def test_pass_contract() -> None:
    assert LowerL2TensorCollectives.name == PHASE
    assert LowerL2TensorCollectives.requires == {
        Property.COMPOSITE_OPS_LOWERED,
        Property.CREATE_ASSEMBLE_FUSED,
    }
    assert LowerL2TensorCollectives.produces == {Property.L2_COLLECTIVES_LOWERED}
    assert LowerL2TensorCollectives().chips == ()


def test_seed_pipeline_becomes_three_kernel_calls() -> None:
    original = parse_one(chip_source())
    program = lower(chip_source())
    pipeline = function(program, "chip_pipeline")
    assert callees(program, "chip_pipeline") == [
        "stage_step",
        "__builtin_all_to_all_v__fp32",
        "consume_step",
    ]
    before, after = function(original, "chip_pipeline").body.stmts[1], pipeline.body.stmts[1]
    assert isinstance(before, AssignStmt) and isinstance(after, AssignStmt)
    assert after.targets == before.targets  # ``data = ...`` still rebinds data
    assert isinstance(before.value, Call)
    call = builtin_call(program)
    assert call.args == before.value.args  # stage, data, signal, counts, recv as written
    assert call.type == before.value.type == call.args[1].type  # window-as-result
    assert call.kwargs == () and call.attrs == ()  # core_num consumed, B == 1


def test_sample_chip_pipeline_lowers() -> None:
    (program,) = parse_file(PROGRAMS / "chip_pipeline.py")
    lowered = LowerL2TensorCollectives().apply(program)
    verify(lowered)
    assert callees(lowered, "chip_pipeline") == [
        "stage_step",
        "__builtin_all_to_all_v__fp32",
        "consume_step",
    ]
    assert lowered.function("host_orch") is program.function("host_orch")


def test_synthesized_kernel_signature() -> None:
    program = lower(chip_source())
    func = function(program, "__builtin_all_to_all_v__fp32")
    assert program.functions[-1] is func  # appended after the program's own functions
    assert (func.func_type, func.level) == (FunctionType.AIV, Level.CHIP)
    names = [p.var.name for p in func.params]
    assert names == ["input", "target", "signal", "send_counts", "recv_counts"]
    assert [p.direction for p in func.params] == [IN, INOUT, INOUT, IN, INOUT]
    # Canonical kinds, not the call site's: stage and counts are windows at the call.
    assert [type(p.var.type) for p in func.params] == [
        TensorType,
        DistributedTensorType,
        DistributedTensorType,
        TensorType,
        DistributedTensorType,
    ]
    assert func.params[0].var.type == TensorType((8, 64), DataType.FP32)
    assert func.params[3].var.type == TensorType((4,), DataType.INT32)
    assert func.params[2].var.type == DistributedTensorType((4, 1), DataType.INT32)
    assert func.return_types == (func.params[1].var.type,)
    assert func.body == SeqStmts((ReturnStmt((func.params[1].var,)),))
    assert func.attrs == (
        ("builtin_template_dir", ":pypto.runtime.builtins.collectives.all_to_all_v"),
        ("builtin_template_vars", "dtype_cpp=float"),
        ("require_contiguous_operands", True),
    )


def test_window_bound_operands_become_unbound_parameters() -> None:
    body = """\
    buf = pld.alloc_window_buffer(T * W * 4, name="staging")
    staging = pld.window(buf, [T, W], dtype=pl.FP32)
    data = pld.tensor.all_to_all_v(inp, staging, signal, counts, recv)
    return self.consume_step(data, recv, out)
    """
    func = function(lower(chip_source(body)), "__builtin_all_to_all_v__fp32")
    assert func.params[1].var.type == DistributedTensorType((8, 64), DataType.FP32)


def test_int8_synthesizes_int8_variant() -> None:
    program = lower(chip_source(dtype="INT8"))
    assert callees(program, "chip_pipeline")[1] == "__builtin_all_to_all_v__int8"
    func = function(program, "__builtin_all_to_all_v__int8")
    assert func.attr("builtin_template_vars") == "dtype_cpp=int8_t"
    assert func.params[0].var.type == TensorType((8, 64), DataType.INT8)


def test_variant_is_shared_by_every_call_site() -> None:
    body = f"""\
    data = {A2AV}
    stage = pld.tensor.all_to_all_v(data, stage, signal, counts, recv)
    return self.consume_step(stage, recv, out)
    """
    source = chip_source(body)
    program = lower(source)
    assert len(program.functions) == len(parse_one(source).functions) + 1
    assert callees(program, "chip_pipeline") == [
        "__builtin_all_to_all_v__fp32",
        "__builtin_all_to_all_v__fp32",
        "consume_step",
    ]


def test_variants_are_appended_in_first_use_order() -> None:
    functions = """
    @pl.function(type=pl.FunctionType.Orchestration)
    def int8_pipeline(
        self,
        inp: pl.Tensor[[T, W], pl.INT8],
        data: pl.InOut[pld.DistributedTensor[[T, W], pl.INT8]],
        signal: pl.InOut[pld.DistributedTensor[[NR, S], pl.INT32]],
        counts: pld.DistributedTensor[[NR], pl.INT32],
        recv: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
    ) -> pld.DistributedTensor[[T, W], pl.INT8]:
        return pld.tensor.all_to_all_v(inp, data, signal, counts, recv)
"""
    program = lower(chip_source(functions=functions))
    assert [f.name for f in program.functions[-2:]] == [
        "__builtin_all_to_all_v__int8",
        "__builtin_all_to_all_v__fp32",
    ]


@pytest.mark.parametrize(
    "body",
    [
        f"return {A2AV}",
        f"{A2AV}\nreturn out",
        f"if n > 0:\n    data = {A2AV}\nreturn out",
        f"for i in pl.range(n):\n    data = {A2AV}\nreturn out",
        f"while n > 0:\n    data = {A2AV}\nreturn out",
        f"if n > 0:\n    return out\nelse:\n    for i in pl.range(n):\n        {A2AV}\nreturn out",
    ],
    ids=["return", "eval", "if", "for", "while", "nested"],
)
def test_collective_is_lowered_in_every_statement_position(body: str) -> None:
    program = lower(chip_source(body))
    assert builtin_call(program).callee_name == "__builtin_all_to_all_v__fp32"


def test_graph_body_is_lowered() -> None:
    program = lower(chip_source(func_type="Graph"))
    assert "__builtin_all_to_all_v__fp32" in callees(program, "chip_pipeline")


def test_incore_body_is_left_to_the_composite_rail() -> None:
    (program,) = parse_file(PROGRAMS / "incore_collective.py")
    lowered = LowerL2TensorCollectives().apply(program)
    assert lowered.functions == program.functions
    assert lowered.function("exchange") is program.function("exchange")


def test_host_orchestrator_is_left_to_the_host_rail() -> None:
    functions = """
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.HOST)
    def host_orch(self, inp: pl.Tensor[[T, W], pl.FP32]):
        stage_buf = pld.alloc_window_buffer(T * W * 4, name="stage")
        data_buf = pld.alloc_window_buffer(T * W * 4, name="data")
        signal_buf = pld.alloc_window_buffer(NR * 4, name="signal")
        counts_buf = pld.alloc_window_buffer(NR * 4, name="counts")
        recv_buf = pld.alloc_window_buffer(NR * 4, name="recv")
        stage = pld.window(stage_buf, [T, W], dtype=pl.FP32)
        data = pld.window(data_buf, [T, W], dtype=pl.FP32)
        signal = pld.window(signal_buf, [NR, 1], dtype=pl.INT32)
        counts = pld.window(counts_buf, [NR], dtype=pl.INT32)
        recv = pld.window(recv_buf, [NR, 1], dtype=pl.INT32)
        data = pld.tensor.all_to_all_v(stage, data, signal, counts, recv, core_num=3)
        data = pld.tensor.allreduce(data, signal, op=pld.ReduceOp.Sum)
"""
    program = parse_one(chip_source(functions=functions))
    lowered = LowerL2TensorCollectives().apply(program)
    assert lowered.function("host_orch") is program.function("host_orch")


# --- launch width -----------------------------------------------------------------------------

#: (P, L, B): the worked table of hw-native-sys/pypto issue #2521, P=4/2 cases of the multicore
#: ST and the harness.
LAUNCH_TABLE = [
    (8, 1, 1),
    (8, 2, 2),
    (8, 4, 4),
    (8, 7, 7),
    (8, 8, 8),
    (8, 10, 8),
    (8, 15, 8),
    (8, 16, 16),
    (4, 10, 8),
    (2, 5, 4),
    (2, 51, 50),
]


@pytest.mark.parametrize(("nranks", "cores", "blocks"), LAUNCH_TABLE)
def test_launch_width_is_folded_to_the_admitted_block_count(
    nranks: int, cores: int, blocks: int
) -> None:
    # S == B: the capacity check compares against B, so the tightest signal is accepted.
    program = lower(chip_source(nranks=nranks, stride=blocks, cores=str(cores)))
    call = builtin_call(program)
    assert call.kwargs == ()
    if blocks == 1:
        assert call.attrs == ()
    else:
        assert call.attrs == (("core_num", ConstInt(blocks)), ("sync_start", ConstBool(True)))


def test_launch_attrs_round_trip_through_the_printer() -> None:
    """The launch spec uses the front end's own representation of ``core_num=``/``sync_start=``
    call keywords, so a lowered program prints and parses back to itself."""
    program = lower(chip_source(nranks=8, stride=8, cores="10"))
    assert "recv, core_num=8, sync_start=True)" in print_programs([program])
    assert parse_one(print_programs([program])) == program


def test_capacity_is_checked_against_blocks_not_core_num() -> None:
    call = builtin_call(lower(chip_source(nranks=8, stride=8, cores="10")))
    assert call.attrs == (("core_num", ConstInt(8)), ("sync_start", ConstBool(True)))


@pytest.mark.parametrize(
    ("nranks", "stride", "cores", "blocks"), [(8, 7, 10, 8), (4, 4, 10, 8), (2, 2, 5, 4)]
)
def test_signal_stride_below_admitted_blocks_is_rejected(
    nranks: int, stride: int, cores: int, blocks: int
) -> None:
    source = chip_source(nranks=nranks, stride=stride, cores=str(cores))
    error = lowering_error(source)
    assert error.message == (
        f"CHIP pld.tensor.all_to_all_v: signal stride ({stride}) is smaller than the admitted "
        f"block count ({blocks}) for core_num={cores}, nranks={nranks}"
    )
    assert located(error) == position(source, "signal, counts, recv, core_num")


def test_more_ranks_than_a_comm_domain_holds_are_rejected() -> None:
    source = chip_source(nranks=65, stride=65)
    error = lowering_error(source)
    assert error.message == (
        "collective signal shape[0] (NR = 65) exceeds the 64 ranks a comm domain holds (the "
        "CommContext's windowsIn[64])"
    )


def test_runtime_core_num_is_rejected() -> None:
    source = chip_source(cores="n")
    error = lowering_error(source)
    assert error.message == (
        "CHIP pld.tensor.all_to_all_v: a runtime core_num is not supported on this rail yet; "
        "pass a compile-time core_num (the HOST rail accepts a runtime value)"
    )
    assert located(error) == position(source, "core_num=n", offset=len("core_num="))


def test_core_num_bound_once_to_a_constant_is_folded() -> None:
    # c = 8 then core_num=c is core_num=8, as upstream's Simplify folds it first.
    body = SEED_BODY.replace("data = pld.tensor", "c = 8\ndata = pld.tensor")
    call = builtin_call(lower(chip_source(body, nranks=8, stride=8, cores="c")))
    assert call.attrs == (("core_num", ConstInt(8)), ("sync_start", ConstBool(True)))


@pytest.mark.parametrize(
    "rebinding",
    ["c = 8\nif n > 1:\n    c = 4\n", "c = 8\nfor c in pl.range(n):\n    pass\n"],
    ids=["reassigned-in-a-branch", "a-loop-variable"],
)
def test_core_num_bound_more_than_once_stays_runtime(rebinding: str) -> None:
    body = SEED_BODY.replace("data = pld.tensor", rebinding + "data = pld.tensor")
    source = chip_source(body, nranks=8, stride=8, cores="c")
    assert "a runtime core_num" in lowering_error(source).message


def test_core_num_none_is_not_a_constant_integer() -> None:
    source = chip_source(cores="None")
    with pytest.raises(ProgramError) as info:
        parse_one(source)
    assert info.value.message == (
        "pld.tensor.all_to_all_v() argument 'core_num' cannot be None: leave it out for its default"
    )


@pytest.mark.parametrize(("cores", "value"), [("0", 0), ("-1", -1), ("2**31", 2**31)])
def test_core_num_out_of_int32_range_is_rejected(cores: str, value: int) -> None:
    source = chip_source(cores=cores)
    error = lowering_error(source)
    assert error.message == (
        f"CHIP pld.tensor.all_to_all_v: core_num must be in [1, 2147483647], got {value}"
    )
    assert located(error) == position(source, f"core_num={cores}", offset=len("core_num="))


def test_largest_int32_core_num_is_accepted() -> None:
    call = builtin_call(lower(chip_source(nranks=2, stride=2**31 - 1, cores="2**31 - 1")))
    assert call.attrs[0] == ("core_num", ConstInt(2**31 - 2))


# --- operand and dtype diagnostics ------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["FP16", "BF16", "INT32"])
def test_unsupported_dtype_is_rejected(dtype: str) -> None:
    body = f"data = {A2AV}\nreturn out"
    source = chip_source(body, dtype=dtype)
    error = lowering_error(source)
    assert error.message == (
        "managed pld.tensor.all_to_all_v currently supports only dtype=FP32 or INT8, "
        f"got {dtype.lower()}"
    )
    assert located(error) == position(source, "pld.tensor.all_to_all_v(")


def test_plain_tensor_send_counts_is_rejected() -> None:
    body = f"data = {A2AV}\nreturn out"
    source = chip_source(body, counts="pl.Tensor[[NR], pl.INT32]")
    error = lowering_error(source)
    assert error.message == (
        "CHIP pld.tensor.all_to_all_v send_counts must be a DistributedTensor: peers read this "
        "rank's send_counts through CommRemotePtr, so a plain Tensor (accepted only on the "
        "InCore composite path) is not supported on this rail"
    )
    assert located(error) == position(source, "counts, recv)")


def test_synthesized_name_collision_is_rejected() -> None:
    functions = """
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/mine.cpp")
    def __builtin_all_to_all_v__fp32(self, x: pl.Tensor[[T, W], pl.FP32]):
        ...
"""
    source = chip_source(functions=functions)
    error = lowering_error(source)
    assert error.message == (
        "LowerL2TensorCollectives: synthesized builtin kernel name "
        "'__builtin_all_to_all_v__fp32' collides with an existing function"
    )
    assert located(error) == position(source, "pld.tensor.all_to_all_v(")


# --- residual check ---------------------------------------------------------------------------

RESIDUAL = (
    " in function 'chip_pipeline' was not lowered. The managed CHIP/L2 rail currently supports "
    "only pld.tensor.all_to_all_v with a compile-time core_num; write any other collective in a "
    "HOST orchestrator (builtin dispatch rail) or an InCore function (composite rail)"
)


def test_other_collective_in_chip_orchestration_is_not_lowered() -> None:
    source = chip_source(
        "data = pld.tensor.allreduce(data, signal, op=pld.ReduceOp.Sum)\nreturn out"
    )
    error = lowering_error(source)
    assert error.message == "pld.tensor.allreduce" + RESIDUAL
    assert located(error) == position(source, "pld.tensor.allreduce(")


#: Every collective of upstream's DSL without a CHIP rail here, as upstream spells it
#: (hw-native-sys/pypto e2d0f78, python/pypto/language/distributed/op/tensor_ops.py).
UPSTREAM_SPELLINGS = [
    "data = pld.tensor.allreduce(data, signal, op=pld.ReduceOp.Sum)",
    'data = pld.tensor.allreduce(data, signal, op=pld.ReduceOp.Max, mode="ring", core_num=2)',
    "data = pld.tensor.allreduce(data)",
    "data = pld.tensor.allgather(stage, data, signal)",
    "data = pld.tensor.reduce_scatter(data, signal, op=pld.ReduceOp.Sum)",
    "data = pld.tensor.broadcast(data, signal, root=0)",
    "data = pld.tensor.all_to_all(stage, data, signal)",
    "signal = pld.tensor.barrier(signal)",
]


@pytest.mark.parametrize("statement", UPSTREAM_SPELLINGS)
def test_upstream_spelling_reaches_the_residual_check(statement: str) -> None:
    source = chip_source(f"{statement}\nreturn out")
    error = lowering_error(source)
    op = statement.split("= ", 1)[1].split("(", 1)[0]
    assert error.message == op + RESIDUAL
    assert located(error) == position(source, op + "(")


@pytest.mark.parametrize("func_type", ["Orchestration", "Graph"])
def test_residual_check_runs_when_nothing_else_changes(func_type: str) -> None:
    source = chip_source(
        "pld.tensor.allgather(stage, data, signal)\nreturn out", func_type=func_type
    )
    assert lowering_error(source).message == "pld.tensor.allgather" + RESIDUAL


def test_collective_nested_in_an_expression_is_not_lowered() -> None:
    source = chip_source(f"return self.consume_step({A2AV}, recv, out)")
    error = lowering_error(source)
    assert error.message == "pld.tensor.all_to_all_v" + RESIDUAL
    assert located(error) == position(source, A2AV)


# --- indexed_all_to_all_v ---------------------------------------------------------------------

INDEXED_PIPELINE = """\
import pypto.language as pl
import pypto.language.distributed as pld

NR = 4
T = NR * 2
W = 64


@pl.program
class Indexed:
    @pl.function(type=pl.FunctionType.Orchestration)
    def chip_pipeline(
        self,
        rows: pl.Tensor[[16, W], pl.FP32],
        data: pl.InOut[pld.DistributedTensor[[T, W], pl.FP32]],
        signal: pl.InOut[pld.DistributedTensor[[NR, STRIDE], pl.INT32]],
        counts: pld.DistributedTensor[[NR], pl.INT32],
        recv: pl.InOut[pl.Tensor[[NR, 1], pl.INT32]],
        index: pl.Tensor[[T], pl.INT32],
    ) -> pld.DistributedTensor[[T, W], pl.FP32]:
        return pld.tensor.indexed_all_to_all_v(rows, data, signal, counts, recv, index, core_num=L)
"""


def indexed_source(cores: int = 1, stride: int = 8) -> str:
    return INDEXED_PIPELINE.replace("STRIDE", str(stride)).replace(
        "core_num=L", f"core_num={cores}"
    )


def test_indexed_synthesizes_six_operand_function() -> None:
    program = lower(indexed_source(), chips=("a5",))
    call = builtin_call(program)
    assert call.callee_name == "__builtin_indexed_all_to_all_v__fp32"
    assert len(call.args) == 6 and call.attrs == ()
    func = function(program, "__builtin_indexed_all_to_all_v__fp32")
    assert func.func_type is FunctionType.AIV
    assert [p.var.name for p in func.params] == [
        "input",
        "target",
        "signal",
        "send_counts",
        "recv_counts",
        "index",
    ]
    assert [p.direction for p in func.params] == [IN, INOUT, INOUT, IN, INOUT, IN]
    # Three DistributedTensor params: the first appended CommCtx lands in slot 6.
    assert [type(p.var.type) for p in func.params] == [
        TensorType,
        DistributedTensorType,
        DistributedTensorType,
        DistributedTensorType,
        TensorType,
        TensorType,
    ]
    assert func.body == SeqStmts((ReturnStmt((func.params[1].var,)),))
    assert func.attrs == (
        ("builtin_template_dir", ":pypto.runtime.builtins.collectives.indexed_all_to_all_v"),
        ("builtin_template_vars", "dtype_cpp=float"),
        ("require_contiguous_operands", True),
    )


@pytest.mark.parametrize("cores", [2, 5, 6, 8])
def test_indexed_launches_exactly_core_num_blocks(cores: int) -> None:
    call = builtin_call(lower(indexed_source(cores=cores, stride=8), chips=("a5",)))
    assert call.attrs == (("core_num", ConstInt(cores)), ("sync_start", ConstBool(True)))


def test_indexed_signal_must_cover_every_launched_block() -> None:
    source = indexed_source(cores=6, stride=5)
    error = lowering_error(source)
    assert error.message == (
        "CHIP pld.tensor.indexed_all_to_all_v: signal stride (5) is smaller than the admitted "
        "block count (6) for core_num=6, nranks=4"
    )
    assert located(error) == position(source, "signal, counts, recv, index")


def test_indexed_runtime_core_num_is_rejected() -> None:
    source = (
        INDEXED_PIPELINE.replace("STRIDE", "8")
        .replace(
            "index: pl.Tensor[[T], pl.INT32],",
            "index: pl.Tensor[[T], pl.INT32], m: pl.Scalar[pl.INDEX],",
        )
        .replace("core_num=L", "core_num=m")
    )
    error = lowering_error(source)
    assert error.message == (
        "CHIP pld.tensor.indexed_all_to_all_v: a runtime core_num is not supported; pass a "
        "compile-time core_num (it is the exact number of AIV launched)"
    )
    assert located(error) == position(source, "core_num=m", offset=len("core_num="))


def test_nested_indexed_gets_advice_that_works() -> None:
    # indexed_all_to_all_v has no HOST or InCore rail: the advice is the statement form.
    source = indexed_source().replace(
        "return pld.tensor.indexed_all_to_all_v(rows, data, signal, counts, recv, index, "
        "core_num=1)",
        "return pl.reshape(pld.tensor.indexed_all_to_all_v(rows, data, signal, counts, recv, "
        "index, core_num=1), [T, W])",
    )
    error = lowering_error(source, chips=("a5",))
    assert error.message.endswith(
        "pld.tensor.indexed_all_to_all_v has no HOST or InCore rail: call it as a statement "
        "of its own in a CHIP orchestration (result = pld.tensor.indexed_all_to_all_v(...), not "
        "nested in another expression), with a compile-time core_num, for chip a5"
    )
    assert "HOST orchestrator (builtin dispatch rail)" not in error.message


@pytest.mark.parametrize(("chips", "named"), [(("a3",), "a3"), (("a5", "a2"), "a2")])
def test_indexed_requires_a5(chips: tuple[str, ...], named: str) -> None:
    source = indexed_source()
    error = lowering_error(source, chips=chips)
    assert error.message == (
        "pld.tensor.indexed_all_to_all_v requires chip a5 (URMA PER_PEER transport); "
        f"the build targets {named}"
    )
    assert located(error) == position(source, "pld.tensor.indexed_all_to_all_v(")

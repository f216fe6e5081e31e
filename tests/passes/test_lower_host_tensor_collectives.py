"""LowerHostTensorCollectives: the HOST rail's per-device builtin dispatch, its window checks
(host-bound operands, CheckPairwiseDistinctWindows, CheckStaticSignalCapacity) with their exact
messages and locations, the rejected collectives, and the internal builtin op."""

from __future__ import annotations

import dataclasses
import re
import textwrap

import pytest
from _support.passes import (
    FILE,
    HOST_A2AV,
    HOST_PRELUDE,
    HOST_WINDOWS,
    PROGRAMS,
    host_function,
    located,
    parse_one,
    pass_error,
    position,
    run_verified,
    span_location,
    with_function,
)

from pypto_build.lowering.diagnostics import SYNTHETIC, InternalError, ProgramError, Span
from pypto_build.lowering.frontend import parse_file
from pypto_build.lowering.ir import (
    INDEX,
    AssignStmt,
    Call,
    CommDomainScopeStmt,
    ConstInt,
    DataType,
    DistributedTensorType,
    EvalStmt,
    ForStmt,
    Function,
    IfStmt,
    ParamDirection,
    Program,
    SeqStmts,
    Stmt,
    TensorType,
    Var,
    get_attr,
)
from pypto_build.lowering.ir.walk import walk_calls
from pypto_build.lowering.optable import (
    deduce_type,
    dsl_spelling,
    is_managed_collective,
    resolve_dsl_name,
)
from pypto_build.lowering.passes import (
    MaterializeDistTensorCtx,
    PassManager,
    PipelineOrderError,
    Property,
    default_pipeline,
)
from pypto_build.lowering.passes.lower_host_tensor_collectives import (
    LowerHostTensorCollectives,
    check_static_signal_capacity,
)
from pypto_build.lowering.printer import print_programs

PHASE = "LowerHostTensorCollectives"
BUILTIN = "builtin.tensor.all_to_all_v"
ARG_NAMES = ["inp", "data", "signal", "counts", "recv"]
DIRECTIONS = (
    ParamDirection.In,
    ParamDirection.InOut,
    ParamDirection.InOut,
    ParamDirection.In,
    ParamDirection.InOut,
)

#: The default pipeline up to and including this pass, and the part of it before this pass.
PIPELINE = default_pipeline().until(PHASE).passes
SCOPED = default_pipeline().until("MaterializeCommDomainScopes")

HEADER = (
    HOST_PRELUDE
    + """\
    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host_orch(
        self,
        x: pl.Tensor[[T, W], DT],
        u: pld.DistributedTensor[[T, W], DT],
        pc: pl.Tensor[[NR], pl.INT32],
        c: pld.DistributedTensor[[NR], pl.INT32],
        n: pl.Scalar[pl.INDEX],
    ):
"""
)

WINDOWS = HOST_WINDOWS
A2AV = HOST_A2AV
COLLECTIVE = f"data = {A2AV}\n"


def host_source(
    body: str = WINDOWS + COLLECTIVE, *, dtype: str = "FP32", devices: str | None = None
) -> str:
    """A HOST orchestrator whose body is ``body``, inside ``with pld.comm_domain(devices=...)``
    when ``devices`` is given."""
    body = textwrap.dedent(body)
    if devices is not None:
        body = f"with pld.comm_domain(devices={devices}):\n" + textwrap.indent(body, "    ")
    source = HEADER + textwrap.indent(body, " " * 8)
    return source.replace("DT", f"pl.{dtype}")


def lower(source: str) -> Program:
    return run_verified(parse_one(source), *PIPELINE)


def lowering_error(source: str, phase: str = PHASE) -> ProgramError:
    return pass_error(parse_one(source), *PIPELINE, phase=phase)


def at_operand(source: str, index: int) -> tuple[str, int, int]:
    """Where operand ``index`` of the (last) all_to_all_v call is written."""
    call = source.rindex("pld.tensor.all_to_all_v(")
    start = source.index("(", call) + 1
    for _ in range(index):
        start = source.index(",", start) + 2
    line_start = source.rfind("\n", 0, start) + 1
    return FILE, source.count("\n", 0, start) + 1, start - line_start


def scope_body(func: Function) -> tuple[Stmt, ...]:
    """The statements of the (outermost) comm-domain scope of ``func``."""
    (scope,) = func.body.stmts
    assert isinstance(scope, CommDomainScopeStmt)
    return scope.body.stmts


def builtin_calls(func: Function) -> list[Call]:
    return [c for c in walk_calls(func.body) if c.op == BUILTIN]


def rebind_span(func: Function) -> Span:
    rebind = scope_body(func)[-1]
    assert isinstance(rebind, AssignStmt)
    return rebind.span


def dispatch(stmt: Stmt) -> Call:
    assert isinstance(stmt, EvalStmt)
    assert isinstance(stmt.expr, Call)
    return stmt.expr


# --- the pass contract -----------------------------------------------------------------------


def test_contract_runs_after_comm_domain_scopes() -> None:
    assert LowerHostTensorCollectives.requires == {Property.COMM_DOMAIN_SCOPES_MATERIALIZED}
    assert LowerHostTensorCollectives.produces == {Property.HOST_COLLECTIVES_LOWERED}
    prefix = default_pipeline().until("AutoDeriveTaskDependencies").passes
    with pytest.raises(PipelineOrderError, match="requires CommDomainScopesMaterialized"):
        PassManager((*prefix, LowerHostTensorCollectives())).check_order()


# --- the rewrite -----------------------------------------------------------------------------


def test_lowers_to_namesake_builtin_fanned_out_over_the_world() -> None:
    source = host_source()
    func = host_function(lower(source))
    stmts = scope_body(func)
    assert len(stmts) == 12  # ten window statements, the fan-out loop, the rebind
    loop = stmts[10]
    assert isinstance(loop, ForStmt)
    assert loop.var == Var("r", INDEX)
    assert (loop.start, loop.step) == (ConstInt(0), ConstInt(1))
    assert isinstance(loop.stop, Call) and loop.stop.op == "pld.world_size"
    (stmt,) = loop.body.stmts
    call = dispatch(stmt)
    assert call.op == BUILTIN
    assert [a.name for a in call.args if isinstance(a, Var)] == ARG_NAMES
    assert call.kwargs == (("dtype", DataType.FP32), ("core_num", ConstInt(1)))
    assert call.attrs == (
        ("dtype", DataType.FP32),
        ("device", Var("r", INDEX)),
        ("arg_directions", DIRECTIONS),
    )
    target = call.args[1].type
    assert isinstance(target, DistributedTensorType) and target.window == "data_buf"
    assert call.type == target
    assert span_location(loop.span) == position(source, "data = pld.tensor")
    assert span_location(rebind_span(func)) == position(source, "data = pld.tensor")
    assert span_location(call.span) == position(source, A2AV)


def test_result_is_rebound_to_the_target() -> None:
    func = host_function(lower(host_source()))
    rebind = scope_body(func)[-1]
    assert isinstance(rebind, AssignStmt)
    target = DistributedTensorType((8, 64), DataType.FP32, window="data_buf")
    assert rebind == AssignStmt((Var("data", target),), Var("data", target))


def test_bare_collective_has_no_rebind() -> None:
    func = host_function(lower(host_source(WINDOWS + A2AV + "\n")))
    assert isinstance(scope_body(func)[-1], ForStmt)


def test_explicit_devices_fan_out_as_a_sequence_in_list_order() -> None:
    func = host_function(lower(host_source(devices="[1, 0]")))
    fan_out, rebind = scope_body(func)[10:]
    assert isinstance(fan_out, SeqStmts)
    calls = [dispatch(s) for s in fan_out.stmts]
    assert [get_attr(c.attrs, "device") for c in calls] == [ConstInt(1), ConstInt(0)]
    assert all(c.op == BUILTIN and get_attr(c.attrs, "arg_directions") == DIRECTIONS for c in calls)
    assert isinstance(rebind, AssignStmt)


def test_comm_domain_with_devices_0_1() -> None:
    func = host_function(lower(host_source(devices="[0, 1]")))
    (scope,) = func.body.stmts
    assert isinstance(scope, CommDomainScopeStmt) and scope.devices == (0, 1)
    assert [get_attr(c.attrs, "device") for c in builtin_calls(func)] == [
        ConstInt(0),
        ConstInt(1),
    ]


def test_fan_out_loop_variable_does_not_rebind_a_user_name() -> None:
    body = WINDOWS + COLLECTIVE + "for r in pl.range(pld.world_size()):\n    n = r\n"
    func = host_function(lower(host_source(body)))
    loop = scope_body(func)[10]
    assert isinstance(loop, ForStmt) and loop.var.name == "r1"
    assert get_attr(dispatch(loop.body.stmts[0]).attrs, "device") == Var("r1", INDEX)


def test_int8_variant() -> None:
    (call, *_) = builtin_calls(host_function(lower(host_source(dtype="INT8"))))
    assert get_attr(call.kwargs, "dtype") is DataType.INT8
    assert get_attr(call.attrs, "dtype") is DataType.INT8


@pytest.mark.parametrize(
    ("core_num", "expected"),
    [("n", Var("n", INDEX)), ("4", ConstInt(4))],
)
def test_core_num_is_forwarded_runtime_or_constant(core_num: str, expected: object) -> None:
    body = WINDOWS + COLLECTIVE.replace("recv)", f"recv, core_num={core_num})")
    (call,) = builtin_calls(host_function(lower(host_source(body))))
    assert get_attr(call.kwargs, "core_num") == expected


def test_sample_program_through_the_whole_pipeline() -> None:
    """tests/programs/host_rail_int8.py, up to MaterializeDistTensorCtx, verified throughout."""
    (program,) = parse_file(PROGRAMS / "host_rail_int8.py")
    lowered = run_verified(program, *PIPELINE, MaterializeDistTensorCtx())
    func = host_function(lowered)
    (call,) = builtin_calls(func)
    assert [a.name for a in call.args if isinstance(a, Var)] == [
        "stage",
        "data",
        "signal",
        "counts",
        "recv",
    ]
    assert call.kwargs == (("dtype", DataType.INT8), ("core_num", ConstInt(2)))
    # ``r`` is the user's loop variable there.
    assert get_attr(call.attrs, "device") == Var("r1", INDEX)
    assert not any(is_managed_collective(c.callee_name) for c in walk_calls(func.body))


def test_only_host_orchestrators_change() -> None:
    (program,) = parse_file(PROGRAMS / "host_rail_int8.py")
    program = SCOPED.run(program)
    lowered = LowerHostTensorCollectives().apply(program)
    changed = [f.name for f in lowered.functions if program.function(f.name) is not f]
    assert changed == ["host_orch"]


def test_collective_in_a_branch_uses_the_enclosing_domain() -> None:
    func = host_function(lower(host_source(WINDOWS + "if n > 0:\n    " + COLLECTIVE)))
    branch = scope_body(func)[10]
    assert isinstance(branch, IfStmt)
    loop, rebind = branch.then_body.stmts
    assert isinstance(loop, ForStmt) and isinstance(rebind, AssignStmt)


def test_nested_domain_dispatches_over_the_domain_that_allocated_the_windows() -> None:
    """FindScopeForBuffers: the innermost scope holding all five buffers, here the outer world
    domain, not the explicit two-device domain the statement sits in."""
    body = WINDOWS + "with pld.comm_domain(devices=[0, 1]):\n    " + COLLECTIVE
    func = host_function(lower(host_source(body)))
    inner = scope_body(func)[10]
    assert isinstance(inner, CommDomainScopeStmt) and inner.devices == (0, 1)
    loop = inner.body.stmts[0]
    assert isinstance(loop, ForStmt) and isinstance(loop.stop, Call)
    assert loop.stop.op == "pld.world_size"


def test_host_orchestrator_without_collectives_is_untouched() -> None:
    body = WINDOWS + "for r in pl.range(pld.world_size()):\n    n = r\n"
    program = parse_one(host_source(body))
    program = SCOPED.run(program)
    assert LowerHostTensorCollectives().apply(program) is program


def test_printed_builtin_dispatch_does_not_parse_back() -> None:
    text = print_programs([lower(host_source(devices="[0, 1]"))])
    dispatch_text = (
        "builtin.tensor.all_to_all_v(inp, data, signal, counts, recv, dtype=pl.FP32, "
        'core_num=1, attrs={"dtype": pl.FP32, "device": 0, "arg_directions": '
        '("In", "InOut", "InOut", "In", "InOut")})'
    )
    # The fan-out sequence prints flat, inside the scope's block.
    assert f"\n            {dispatch_text}\n" in text
    # An internal op has no DSL spelling: the front end refuses it like any unknown call.
    source = host_source(WINDOWS + dispatch_text + "\n")
    with pytest.raises(ProgramError) as info:
        parse_one(source)
    assert info.value.message == (
        "call of 'builtin.tensor.all_to_all_v' is not supported in a PyPTO program"
    )


# --- host-bound operands ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("replace", "role", "index"),
    [
        (("(inp,", "(x,"), "input", 0),
        (("(inp,", "(u,"), "input", 0),
        (("counts, recv)", "pc, recv)"), "send_counts", 3),
        (("counts, recv)", "c, recv)"), "send_counts", 3),
    ],
    ids=["plain-input", "unbound-input", "plain-send-counts", "unbound-send-counts"],
)
def test_plain_or_unbound_operand_is_rejected(
    replace: tuple[str, str], role: str, index: int
) -> None:
    source = host_source(WINDOWS + COLLECTIVE.replace(*replace))
    error = lowering_error(source)
    assert error.message == (
        f"pld.tensor.all_to_all_v {role} must be a window-bound DistributedTensor (a view of an "
        "alloc_window_buffer) when called from a HOST orchestrator; a plain Tensor or an "
        "unbound DistributedTensor parameter is only supported on the InCore composite path"
    )
    assert located(error) == at_operand(source, index)


# --- CheckPairwiseDistinctWindows ------------------------------------------------------------


@pytest.mark.parametrize(
    ("window", "buffer", "roles", "index"),
    [
        ("data", "inp_buf", ("input", "target"), 1),
        ("signal", "inp_buf", ("input", "signal"), 2),
        ("recv", "data_buf", ("target", "recv_counts"), 4),
        ("recv", "signal_buf", ("signal", "recv_counts"), 4),
        ("recv", "counts_buf", ("send_counts", "recv_counts"), 4),
    ],
    ids=["input-target", "input-signal", "target-recv", "signal-recv", "counts-recv"],
)
def test_aliased_windows_are_rejected(
    window: str, buffer: str, roles: tuple[str, str], index: int
) -> None:
    """Window ``window`` views ``buffer`` instead of its own buffer."""
    view = f"{window} = pld.window("
    windows = WINDOWS.replace(f"{view}{window}_buf", f"{view}{buffer}")
    source = host_source(windows + COLLECTIVE)
    error = lowering_error(source)
    assert "different window allocations" in error.message
    assert error.message == (
        f"pld.tensor.all_to_all_v {roles[0]} and {roles[1]} must be different window "
        "allocations (two pld.window views over the same alloc_window_buffer are a "
        "cross-process data race under in-kernel TPUT/notify)"
    )
    assert located(error) == at_operand(source, index)


def test_first_aliased_pair_in_role_order_is_reported() -> None:
    # signal and recv_counts both view inp_buf: (input, signal) comes first.
    windows = WINDOWS.replace("(signal_buf", "(inp_buf").replace("(recv_buf", "(inp_buf")
    error = lowering_error(host_source(windows + COLLECTIVE))
    assert error.message.startswith("pld.tensor.all_to_all_v input and signal must be different")


# --- dtype, core_num, signal capacity --------------------------------------------------------


def test_unsupported_dtype_is_rejected() -> None:
    source = host_source(dtype="FP16")
    error = lowering_error(source)
    assert error.message == (
        "managed pld.tensor.all_to_all_v currently supports only dtype=FP32 or INT8, got fp16"
    )
    assert located(error) == position(source, A2AV)


def test_constant_core_num_out_of_range_is_rejected() -> None:
    source = host_source(WINDOWS + COLLECTIVE.replace("recv)", "recv, core_num=0)"))
    error = lowering_error(source)
    assert error.message == (
        "HOST pld.tensor.all_to_all_v: core_num must be in [1, 2147483647], got 0"
    )
    assert located(error) == position(source, "0)")


@pytest.mark.parametrize("devices", ["[0, 1, 2]", "[1]"], ids=["more-devices", "fewer-devices"])
def test_signal_rows_other_than_the_explicit_device_count_are_rejected(devices: str) -> None:
    # NR = 2: a domain of three devices lacks rows, one of one device would place every row at
    # the wrong offset (the kernel takes the rank count from the CommContext).
    source = host_source(devices=devices)
    error = lowering_error(source)
    count = devices.count(",") + 1
    assert error.message == (
        f"collective signal shape[0] (NR = 2) must equal the comm domain's device count "
        f"({count}): the kernel takes the rank count from the CommContext, so the signal and "
        "the counts have one row per device of the domain"
    )
    assert located(error) == at_operand(source, 2)


def test_signal_capacity_accepts_rank_1_and_2_and_trusts_the_world() -> None:
    check_static_signal_capacity(TensorType((2, 1), DataType.INT32), 0, SYNTHETIC)
    check_static_signal_capacity(TensorType((4,), DataType.INT32), 4, SYNTHETIC)
    check_static_signal_capacity(TensorType((4, 2), DataType.INT32), 4, SYNTHETIC)


def test_signal_of_other_rank_is_rejected() -> None:
    span = Span(FILE, 3, 4)
    with pytest.raises(ProgramError) as info:
        check_static_signal_capacity(TensorType((2, 1, 1), DataType.INT32), 0, span)
    assert info.value.message == (
        "collective signal must be rank-1 [world_size] or rank-2 [world_size, signal_stride]"
    )
    assert (info.value.span, info.value.phase) == (span, PHASE)


# --- rejected collectives --------------------------------------------------------------------


INDEXED = "pld.tensor.indexed_all_to_all_v(inp, data, signal, counts, recv, idx)"
ALLREDUCE = "pld.tensor.allreduce(data, signal, op=pld.ReduceOp.Sum)"


@pytest.mark.parametrize(
    ("body", "marker", "message"),
    [
        pytest.param(
            "idx_buf = pld.alloc_window_buffer([T], dtype=pl.INT32)\n"
            "idx = pld.window(idx_buf, [T], dtype=pl.INT32)\n"
            f"data = {INDEXED}\n",
            INDEXED,
            "pld.tensor.indexed_all_to_all_v is not supported in a HOST orchestrator: it runs "
            "only on the CHIP rail (call it from a CHIP Orchestration function)",
            id="indexed_all_to_all_v",
        ),
        pytest.param(
            f"data = {ALLREDUCE}\n",
            ALLREDUCE,
            "pld.tensor.allreduce is not supported in a HOST orchestrator: the HOST rail of "
            "pypto-build lowers only pld.tensor.all_to_all_v",
            id="other-managed-collective",
        ),
        pytest.param(
            f"data = pl.reshape({A2AV}, [T, W])\n",
            A2AV,
            "pld.tensor.all_to_all_v in a HOST orchestrator must be a statement of its own "
            "('x = pld.tensor.all_to_all_v(...)' or a bare call): the HOST rail replaces the "
            "statement with one builtin dispatch per device",
            id="nested-in-an-expression",
        ),
    ],
)
def test_collective_the_rail_cannot_lower_is_rejected(body: str, marker: str, message: str) -> None:
    source = host_source(WINDOWS + body)
    error = lowering_error(source)
    assert error.message == message
    assert located(error) == position(source, marker)


def test_collective_in_a_loop_is_rejected_before_lowering() -> None:
    source = host_source(WINDOWS + "for i in pl.range(2):\n    " + COLLECTIVE)
    error = lowering_error(source, phase="MaterializeCommDomainScopes")
    assert "a collective nested in a for/while is rejected on the HOST rail" in error.message
    assert error.message.endswith("hoist it out of the loop")
    assert located(error) == position(source, A2AV)


# --- FindScopeForBuffers invariants ----------------------------------------------------------


def test_collective_outside_any_scope_is_an_internal_error() -> None:
    program = parse_one(host_source())
    with pytest.raises(InternalError, match="must appear inside a CommDomainScopeStmt"):
        LowerHostTensorCollectives().apply(program)


def test_buffers_of_no_single_scope_are_an_internal_error() -> None:
    program = parse_one(host_source())
    program = SCOPED.run(program)
    func = host_function(program)
    (scope,) = func.body.stmts
    assert isinstance(scope, CommDomainScopeStmt)
    partial = dataclasses.replace(scope, buffers=scope.buffers[:-1])
    broken = with_function(program, dataclasses.replace(func, body=SeqStmts((partial,))))
    with pytest.raises(
        InternalError,
        match=r"pld\.tensor\.all_to_all_v window buffers must resolve to the same "
        "comm-domain scope",
    ):
        LowerHostTensorCollectives().apply(broken)


# --- the internal builtin op -----------------------------------------------------------------


def test_builtin_op_is_internal() -> None:
    assert resolve_dsl_name(BUILTIN) is None
    assert resolve_dsl_name("pl." + BUILTIN) is None
    assert dsl_spelling(BUILTIN) == BUILTIN
    assert not is_managed_collective(BUILTIN)


def _builtin_call() -> Call:
    (call, *_) = builtin_calls(host_function(lower(host_source())))
    return call


def test_builtin_deducer_requires_window_bound_input_and_send_counts() -> None:
    call = _builtin_call()
    plain = Var("x", TensorType((8, 64), DataType.FP32))
    with pytest.raises(ProgramError) as info:
        deduce_type(dataclasses.replace(call, args=(plain, *call.args[1:])))
    assert info.value.message == (
        "builtin.tensor.all_to_all_v input must be a window-bound DistributedTensor "
        "(a view of an alloc_window_buffer), got 'x' of type Tensor[[8, 64], fp32]"
    )
    unbound = Var("c", DistributedTensorType((2,), DataType.INT32))
    with pytest.raises(ProgramError, match="send_counts must be a window-bound"):
        deduce_type(dataclasses.replace(call, args=(*call.args[:3], unbound, call.args[4])))


def test_builtin_deducer_requires_dtype_of_the_target() -> None:
    call = _builtin_call()
    kwargs = (("dtype", DataType.INT8), ("core_num", ConstInt(1)))
    with pytest.raises(ProgramError) as info:
        deduce_type(dataclasses.replace(call, kwargs=kwargs))
    assert info.value.message == (
        "builtin.tensor.all_to_all_v dtype int8 does not match target dtype fp32"
    )


def _renamed(text: str, suffix: str) -> str:
    """``text`` with each of the five windows and their buffers renamed."""
    for name in ARG_NAMES:
        text = re.sub(rf"\b{name}(_buf)?\b", lambda m: m.group(0) + suffix, text)
    return text


@pytest.mark.parametrize(("devices", "refused"), [("[0, 1]", False), ("[0, 3]", True)])
def test_a_subset_domain_must_lie_inside_the_world_a_collective_fixes(
    devices: str, refused: bool
) -> None:
    # The collectives over every device (two rounds) have windows for NR = 2: the world is
    # devices 0 and 1.
    subset = textwrap.indent(_renamed(WINDOWS + COLLECTIVE, "2"), "    ")
    body = WINDOWS + COLLECTIVE * 2 + f"with pld.comm_domain(devices={devices}):\n" + subset
    source = host_source(body)
    if not refused:
        lower(source)
        return
    error = lowering_error(source)
    call = source.index(A2AV)
    line = source[:call].count("\n") + 1
    col = call - source.rindex("\n", 0, call) - 1
    assert error.message == (
        "pld.comm_domain(devices=[0, 3]) names device 3, but this program's world has 2 "
        f"devices: the collective over every device at {line}:{col} has windows sized for "
        "NR = 2 (its signal's shape[0]), so PyPTO's runtime runs the program on devices 0 to "
        "1; name devices below 2, or size that collective's windows for 4 devices"
    )
    assert error.span.line == source[: source.index("with pld.comm_domain")].count("\n") + 1

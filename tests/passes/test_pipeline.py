"""The default pipeline on the CHIP-rail program: the collective becomes an ordered task
of the chip's own pipeline with the kernel ABI's trailing contexts; a wrong order is refused."""

from __future__ import annotations

import pytest
from _support.passes import PROGRAMS, direction_names, function, self_calls

from pypto_build.lowering import pass_names
from pypto_build.lowering.frontend import parse_file
from pypto_build.lowering.ir import (
    Call,
    CommCtxType,
    DistributedTensorType,
    Program,
    TensorType,
    Var,
    get_attr,
)
from pypto_build.lowering.ir.names import arg_directions
from pypto_build.lowering.passes import (
    PASS_NAMES,
    AutoDeriveTaskDependencies,
    DeriveCallDirections,
    FuseCreateAssembleToSlice,
    LowerCompositeOps,
    LowerL2TensorCollectives,
    MaterializeDistTensorCtx,
    Pass,
    PassManager,
    PipelineOrderError,
    Property,
    default_pipeline,
)
from pypto_build.lowering.verifier import verify

CHIP_PIPELINE = PROGRAMS / "chip_pipeline.py"
BUILTIN = "__builtin_all_to_all_v__fp32"


@pytest.fixture(scope="module")
def lowered() -> tuple[Program, list[str]]:
    """The CHIP pipeline program through the default pipeline, verified after every pass."""
    (program,) = parse_file(CHIP_PIPELINE)
    verify(program)
    ran: list[str] = []

    def check(done: Pass, result: Program) -> None:
        verify(result)
        ran.append(done.name)

    return default_pipeline().run(program, instruments=[check]), ran


def test_every_pass_ran_in_order_and_verified(lowered: tuple[Program, list[str]]) -> None:
    _, ran = lowered
    assert tuple(ran) == PASS_NAMES == default_pipeline(("a3",)).names()
    assert PASS_NAMES == (
        "LowerCompositeOps",
        "FuseCreateAssembleToSlice",
        "LowerL2TensorCollectives",
        "DeriveCallDirections",
        "AutoDeriveTaskDependencies",
        "MaterializeCommDomainScopes",
        "LowerHostTensorCollectives",
        "MaterializeDistTensorCtx",
        "CheckLegality",
    )


def test_stage_collective_consume_carry_dependency_edges(
    lowered: tuple[Program, list[str]],
) -> None:
    program, _ = lowered
    stage, collective, consume = self_calls(program, "chip_pipeline")
    assert [c.callee_name for c in (stage, collective, consume)] == [
        "stage_step",
        BUILTIN,
        "consume_step",
    ]
    stage_id = get_attr(stage.attrs, "task_id")
    collective_id = get_attr(collective.attrs, "task_id")
    collective_deps = get_attr(collective.attrs, "deps")
    consume_deps = get_attr(consume.attrs, "deps")
    assert isinstance(collective_deps, tuple) and stage_id in collective_deps
    assert isinstance(consume_deps, tuple) and collective_id in consume_deps
    assert (stage_id, collective_id, get_attr(consume.attrs, "task_id")) == (0, 1, 2)


def test_builtin_kernel_directions_and_trailing_contexts(
    lowered: tuple[Program, list[str]],
) -> None:
    program, _ = lowered
    kernel = function(program, BUILTIN)
    names = [p.var.name for p in kernel.params]
    assert names == [
        "input",
        "target",
        "signal",
        "send_counts",
        "recv_counts",
        "target__ctx",
        "signal__ctx",
        "recv_counts__ctx",
    ]
    assert [type(p.var.type) for p in kernel.params[:5]] == [
        TensorType,
        DistributedTensorType,
        DistributedTensorType,
        TensorType,
        DistributedTensorType,
    ]
    assert all(p.var.type == CommCtxType() for p in kernel.params[5:])
    (_, collective, _) = self_calls(program, "chip_pipeline")
    assert direction_names(collective) == (
        "In",
        "InOut",
        "InOut",
        "In",
        "InOut",
        "Scalar",
        "Scalar",
        "Scalar",
    )
    # The call site passes the pipeline's own contexts for target, signal and recv_counts.
    assert list(collective.args[5:]) == [
        Var("data__ctx", CommCtxType()),
        Var("signal__ctx", CommCtxType()),
        Var("recv__ctx", CommCtxType()),
    ]


def test_host_dispatch_passes_one_window_context_per_window(
    lowered: tuple[Program, list[str]],
) -> None:
    program, _ = lowered
    (dispatch,) = self_calls(program, "host_orch")
    pipeline = function(program, "chip_pipeline")
    assert len(dispatch.args) == len(pipeline.params) == 7 + 5
    contexts = dispatch.args[7:]
    assert all(isinstance(c, Call) and c.op == "pld.get_comm_ctx" for c in contexts)
    assert get_attr(dispatch.attrs, "task_id") is None


def test_collective_rewritten_after_directions_is_refused() -> None:
    wrong = PassManager(
        (
            LowerCompositeOps(),
            FuseCreateAssembleToSlice(),
            DeriveCallDirections(),
            LowerL2TensorCollectives(),
            AutoDeriveTaskDependencies(),
            MaterializeDistTensorCtx(),
        )
    )
    with pytest.raises(PipelineOrderError) as info:
        wrong.check_order()
    assert info.value.pass_name == "DeriveCallDirections"
    assert info.value.missing == (Property.L2_COLLECTIVES_LOWERED,)
    assert "L2CollectivesLowered" in str(info.value)


def test_until_cuts_the_pipeline_after_a_named_pass() -> None:
    prefix = default_pipeline().until("LowerL2TensorCollectives")
    assert prefix.names() == PASS_NAMES[:3]
    (program,) = parse_file(CHIP_PIPELINE)
    lowered = prefix.run(program)
    verify(lowered)
    (_, collective, _) = self_calls(lowered, "chip_pipeline")
    assert collective.callee_name == BUILTIN
    assert arg_directions(collective) is None


def test_every_pass_is_named_after_its_class_once() -> None:
    """A pass's name (its diagnostics' phase) is spelled once, in ``pass_names``, and is the
    name of its class."""
    passes = default_pipeline(("a3",)).passes
    assert [p.name for p in passes] == [type(p).__name__ for p in passes]
    declared = {
        value
        for name, value in vars(pass_names).items()
        if name.isupper() and isinstance(value, str)
    }
    assert declared == {p.name for p in passes}

"""MaterializeDistTensorCtx: one CommCtx parameter per DistributedTensor parameter, and the
matching context at every call site (a parameter's context, or a window's)."""

from __future__ import annotations

import textwrap

from _support.passes import (
    direction_names,
    function,
    parse_one,
    pass_error,
    run_verified,
    self_calls,
)

from pypto_build.lowering.ir import (
    Call,
    CommCtxType,
    Function,
    ParamDirection,
    Program,
    Var,
    get_attr,
)
from pypto_build.lowering.passes import (
    DeriveCallDirections,
    MaterializeDistTensorCtx,
    Pass,
    Property,
)

HEADER = """\
import pypto.language as pl
import pypto.language.distributed as pld


@pl.program
class Ctx:
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/exch.cpp")
    def exch(
        self,
        inp: pl.Tensor[[8, 64], pl.FP32],
        target: pl.InOut[pld.DistributedTensor[[8, 64], pl.FP32]],
        signal: pl.InOut[pld.DistributedTensor[[2, 1], pl.INT32]],
        n: pl.Scalar[pl.INDEX],
    ) -> pld.DistributedTensor[[8, 64], pl.FP32]: ...

    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/plain.cpp")
    def plain(
        self, x: pl.Tensor[[8, 64], pl.FP32], y: pl.Out[pl.Tensor[[8, 64], pl.FP32]]
    ) -> pl.Tensor[[8, 64], pl.FP32]: ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip_orch(
        self,
        x: pl.Tensor[[8, 64], pl.FP32],
        data: pl.InOut[pld.DistributedTensor[[8, 64], pl.FP32]],
        sig: pl.InOut[pld.DistributedTensor[[2, 1], pl.INT32]],
        other: pl.InOut[pld.DistributedTensor[[8, 64], pl.FP32]],
        y: pl.Out[pl.Tensor[[8, 64], pl.FP32]],
        n: pl.Scalar[pl.INDEX],
    ) -> pld.DistributedTensor[[8, 64], pl.FP32]:
"""

CHIP_BODY = """\
y = self.plain(x, y)
data = self.exch(x, data, sig, n)
data = self.exch(y, data, sig, n)
return data
"""

HOST = """
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.HOST)
    def host_orch(self, x: pl.Tensor[[8, 64], pl.FP32], y: pl.Out[pl.Tensor[[8, 64], pl.FP32]]):
        data_buf = pld.alloc_window_buffer(2048, name="data")
        sig_buf = pld.alloc_window_buffer(8, name="sig")
        other_buf = pld.alloc_window_buffer(2048, name="other")
        data = pld.window(data_buf, [8, 64], dtype=pl.FP32)
        sig = pld.window(sig_buf, [2, 1], dtype=pl.INT32)
        other = pld.window(other_buf, [8, 64], dtype=pl.FP32)
        for r in pl.range(pld.world_size()):
            self.chip_orch(x, data, sig, other, y, 4, device=r)
"""

#: Everything before MaterializeDistTensorCtx is established for these hand-written programs.
ESTABLISHED = frozenset(Property) - {Property.DIST_TENSOR_CTX_MATERIALIZED}


def _parse(chip_body: str = CHIP_BODY, host: str = HOST) -> Program:
    return parse_one(HEADER + textwrap.indent(chip_body, " " * 8) + host)


def _materialize(program: Program, *before: Pass) -> Program:
    return run_verified(program, *before, MaterializeDistTensorCtx(), established=ESTABLISHED)


def _tail_params(func: Function, count: int) -> list[tuple[str, object, ParamDirection]]:
    return [(p.var.name, p.var.type, p.direction) for p in func.params[-count:]]


def test_one_ctx_param_per_distributed_tensor_param_appended_last() -> None:
    program = _parse()
    result = _materialize(program)
    exch = function(result, "exch")
    assert [p.var.name for p in exch.params] == [
        "inp",
        "target",
        "signal",
        "n",
        "target__ctx",
        "signal__ctx",
    ]
    assert _tail_params(exch, 2) == [
        ("target__ctx", CommCtxType(), ParamDirection.In),
        ("signal__ctx", CommCtxType(), ParamDirection.In),
    ]
    chip = function(result, "chip_orch")
    assert [p.var.name for p in chip.params[6:]] == ["data__ctx", "sig__ctx", "other__ctx"]
    assert chip.return_types == function(program, "chip_orch").return_types
    assert function(result, "plain") is function(program, "plain")


def test_chip_call_sites_pass_the_callers_ctx_params_through_renaming() -> None:
    result = _materialize(_parse())
    plain, first, second = self_calls(result, "chip_orch")
    assert len(plain.args) == 2
    ctx = [Var("data__ctx", CommCtxType()), Var("sig__ctx", CommCtxType())]
    assert list(first.args[4:]) == ctx
    # ``data`` is the first exchange's result: it still traces to the ``data`` parameter.
    assert list(second.args[4:]) == ctx
    assert first.type == function(result, "exch").return_types[0]


def test_host_dispatch_passes_the_window_contexts() -> None:
    result = _materialize(_parse())
    (dispatch,) = self_calls(result, "host_orch")
    assert len(dispatch.args) == 9
    for arg, window in zip(dispatch.args[6:], ["data", "sig", "other"], strict=True):
        assert isinstance(arg, Call) and arg.op == "pld.get_comm_ctx"
        assert arg.type == CommCtxType()
        (view,) = arg.args
        assert isinstance(view, Var) and view.name == window
    assert get_attr(dispatch.attrs, "device") is not None


def test_arg_directions_grow_one_scalar_per_context() -> None:
    result = _materialize(_parse(), DeriveCallDirections())
    _, first, _ = self_calls(result, "chip_orch")
    assert direction_names(first) == (
        "In",
        "InOut",
        "InOut",
        "Scalar",
        "Scalar",
        "Scalar",
    )
    (dispatch,) = self_calls(result, "host_orch")
    directions = direction_names(dispatch)
    assert isinstance(directions, tuple) and directions[-3:] == ("Scalar",) * 3


def test_a_value_from_two_parameters_names_no_single_context() -> None:
    body = """\
if n > 0:
    w = data
else:
    w = other
w = self.exch(x, w, sig, n)
return w
"""
    error = pass_error(_parse(body), MaterializeDistTensorCtx(), established=ESTABLISHED)
    assert error.message.startswith(
        "cannot tell which communication context to pass for DistributedTensor parameter "
        "'target' of 'exch': in 'chip_orch'"
    )
    assert error.span.line == HEADER.count("\n") + 5
    assert error.span.col == len("        w = self.exch(x, ")


def test_a_name_taken_by_the_ctx_param_is_rejected() -> None:
    program = _parse(CHIP_BODY.replace("return data", "data__ctx = n\nreturn data"))
    error = pass_error(program, MaterializeDistTensorCtx(), established=ESTABLISHED)
    assert "'data__ctx' in function 'chip_orch' collides" in error.message

"""DeriveCallDirections: every self-call of an orchestration-like body records how each
argument is passed, from the callee's parameters."""

from __future__ import annotations

import textwrap

from _support.passes import direction_names, parse_one, run_verified, self_calls

from pypto_build.lowering.ir import GlobalVar, Program, get_attr
from pypto_build.lowering.ir.walk import walk_calls
from pypto_build.lowering.passes import DeriveCallDirections

SOURCE = textwrap.dedent(
    """\
    import pypto.language as pl
    import pypto.language.distributed as pld


    @pl.program
    class Directions:
        @pl.function(type=pl.FunctionType.AIV, external_source="kernels/step.cpp")
        def step(
            self,
            x: pl.Tensor[[4, 8], pl.FP32],
            y: pl.Out[pl.Tensor[[4, 8], pl.FP32]],
            w: pl.InOut[pld.DistributedTensor[[4, 8], pl.FP32]],
            n: pl.Scalar[pl.INDEX],
        ) -> tuple[pl.Tensor[[4, 8], pl.FP32], pld.DistributedTensor[[4, 8], pl.FP32]]: ...

        @pl.function(type=pl.FunctionType.Orchestration)
        def chip_orch(
            self,
            x: pl.Tensor[[4, 8], pl.FP32],
            y: pl.Out[pl.Tensor[[4, 8], pl.FP32]],
            w: pl.InOut[pld.DistributedTensor[[4, 8], pl.FP32]],
            n: pl.Scalar[pl.INDEX],
        ) -> pl.Tensor[[4, 8], pl.FP32]:
            v = pl.reshape(x, [8, 4])
            for i in pl.range(2):
                y, w = self.step(x, y, w, i)
            result, tid = pl.submit(self.step, x, y, w, n)
            return y

        @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.HOST)
        def host_orch(self, x: pl.Tensor[[4, 8], pl.FP32], y: pl.Out[pl.Tensor[[4, 8], pl.FP32]]):
            buf = pld.alloc_window_buffer(128, name="w")
            w = pld.window(buf, [4, 8], dtype=pl.FP32)
            for r in pl.range(pld.world_size()):
                self.chip_orch(x, y, w, 3, device=r)
    """
)


def _derive() -> tuple[Program, Program]:
    program = parse_one(SOURCE)
    return program, run_verified(program, DeriveCallDirections())


def test_kernel_calls_get_param_directions_and_scalars() -> None:
    _, derived = _derive()
    calls = self_calls(derived, "chip_orch")
    assert len(calls) == 2  # the plain call in the loop and the pl.submit
    for call in calls:
        assert direction_names(call) == ("In", "Out", "InOut", "Scalar")
    assert get_attr(calls[1].attrs, "submit") is True


def test_host_dispatches_get_directions_too_and_keep_their_attrs() -> None:
    _, derived = _derive()
    (dispatch,) = self_calls(derived, "host_orch")
    assert dispatch.attrs[0][0] == "device"
    assert direction_names(dispatch) == ("In", "Out", "InOut", "Scalar")


def test_op_calls_and_kernel_bodies_are_untouched() -> None:
    program, derived = _derive()
    for before, after in zip(program.functions, derived.functions, strict=True):
        if not after.func_type.is_orchestration_like:
            assert after is before
    op_calls = [c for c in walk_calls(derived.functions[1].body) if not isinstance(c.op, GlobalVar)]
    assert op_calls and all(c.attrs == () for c in op_calls)


def test_rerunning_replaces_instead_of_duplicating() -> None:
    _, derived = _derive()
    again = DeriveCallDirections().apply(derived)
    assert again == derived
    for call in self_calls(again, "chip_orch"):
        assert [key for key, _ in call.attrs].count("arg_directions") == 1


WRAPPERS = textwrap.dedent(
    """\
    import pypto.language as pl


    @pl.program
    class Wrappers:
        @pl.function(type=pl.FunctionType.AIV, external_source="kernels/fill.cpp")
        def fill(
            self, src: pl.Tensor[[4, 8], pl.FP32], dst: pl.InOut[pl.Tensor[[4, 8], pl.FP32]]
        ) -> pl.Tensor[[4, 8], pl.FP32]: ...

        @pl.function(type=pl.FunctionType.Orchestration)
        def chip_orch(
            self,
            read_only: pl.Tensor[[4, 8], pl.FP32],
            direct: pl.Tensor[[4, 8], pl.FP32],
            through_view: pl.Tensor[[8, 8], pl.FP32],
            assembled: pl.Tensor[[8, 8], pl.FP32],
            declared_out: pl.Out[pl.Tensor[[4, 8], pl.FP32]],
        ):
            direct = self.fill(read_only, direct)
            half = pl.slice(through_view, [4, 8], [0, 0])
            half = self.fill(read_only, half)
            assembled = pl.assemble(assembled, read_only, [4, 0])
            declared_out = self.fill(read_only, declared_out)

        @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.HOST)
        def host_orch(
            self,
            a: pl.Tensor[[4, 8], pl.FP32],
            b: pl.Tensor[[4, 8], pl.FP32],
            c: pl.Tensor[[8, 8], pl.FP32],
            d: pl.Tensor[[8, 8], pl.FP32],
            e: pl.Out[pl.Tensor[[4, 8], pl.FP32]],
        ):
            self.chip_orch(a, b, c, d, e, device=0)
    """
)


def _directions(program: Program, name: str) -> dict[str, str]:
    func = program.function(name)
    assert func is not None
    return {p.var.name: p.direction.value for p in func.params}


def test_written_in_parameters_of_wrappers_become_inout() -> None:
    derived = run_verified(parse_one(WRAPPERS), DeriveCallDirections())
    # Written directly, through a slice view, or by an assemble: the runtime must copy back.
    assert _directions(derived, "chip_orch") == {
        "read_only": "In",
        "direct": "InOut",
        "through_view": "InOut",
        "assembled": "InOut",
        "declared_out": "Out",
    }
    # The HOST orchestrator passes its tensors to the upgraded parameters: upgraded in turn,
    # and its dispatch records the CHIP orchestration's materialized directions.
    assert _directions(derived, "host_orch") == {
        "a": "In",
        "b": "InOut",
        "c": "InOut",
        "d": "InOut",
        "e": "Out",
    }
    (dispatch,) = self_calls(derived, "host_orch")
    assert direction_names(dispatch) == ("In", "InOut", "InOut", "InOut", "Out")

"""The CHIP rail's contiguity proof: one accepted program per whitelist entry, one rejection per
refused form (each located at the operand and naming the construct's line), and tracing through
loop-carried values and branch results."""

from __future__ import annotations

import dataclasses
import textwrap

import pytest
from _support.passes import (
    builtin_kernel_calls,
    function,
    line_of,
    located,
    parse_one,
    pass_error,
    position,
    run_verified,
    with_function,
)

from pypto_build.lowering.analysis.contiguity import ContiguityAnalysis, Violation
from pypto_build.lowering.diagnostics import ProgramError, Span
from pypto_build.lowering.ir import (
    AssignStmt,
    Call,
    MakeTuple,
    Program,
    ReturnStmt,
    Var,
)
from pypto_build.lowering.passes import LowerL2TensorCollectives

#: Annotation shorthands (the DSL has no type aliases).
TYPES = {
    "TILE": "pl.Tensor[[T, W], pl.FP32]",
    "PAYLOAD": "pld.DistributedTensor[[T, W], pl.FP32]",
    "SIGNAL": "pld.DistributedTensor[[NR, 1], pl.INT32]",
    "COUNTS": "pld.DistributedTensor[[NR], pl.INT32]",
}

PROGRAM = """\
import pypto.language as pl
import pypto.language.distributed as pld

NR = NRANKS
T = NR * MAX_RECV
W = 64


@pl.program
class Contiguity:
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/fill.cpp")
    def fill(self, src: TILE, dst: pl.Out[TILE]) -> TILE:
        ...

    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/split.cpp")
    def split(self, src: TILE, a: pl.Out[TILE], b: pl.Out[TILE]) -> tuple[TILE, TILE]:
        ...

    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/make.cpp")
    def make(self, src: TILE) -> TILE:
        ...

    @pl.function(type=pl.FunctionType.InCore)
    def passthrough(self, x: pl.InOut[TILE]) -> TILE:
        return x

    @pl.function(type=pl.FunctionType.InCore)
    def rebinds(self, x: pl.InOut[TILE], y: TILE) -> TILE:
        x = y
        return x

    @pl.function(type=pl.FunctionType.Orchestration)
    def pipeline(
        self,
        inp: TILE,
        data: pl.InOut[PAYLOAD],
        signal: pl.InOut[SIGNAL],
        counts: COUNTS,
        recv: pl.InOut[SIGNAL],
        n: pl.Scalar[pl.INDEX],
        PARAMS
    ) -> PAYLOAD:
"""

CALL = "return pld.tensor.all_to_all_v(x, data, signal, counts, recv)"


def source(body: str, params: str = "", nranks: int = 4, max_recv: int = 2) -> str:
    """``pipeline`` with extra ``params``, running ``body`` and then the collective of ``x``."""
    text = PROGRAM.replace("PARAMS", params).replace("NRANKS", str(nranks))
    text = text.replace("MAX_RECV", str(max_recv))
    for alias, spelled in TYPES.items():
        text = text.replace(alias, spelled)
    return text + textwrap.indent(textwrap.dedent(body) + CALL + "\n", " " * 8)


def lower(text: str) -> Program:
    return run_verified(parse_one(text), LowerL2TensorCollectives())


def rejection(program: Program) -> ProgramError:
    return pass_error(program, LowerL2TensorCollectives())


def assert_rejected(text: str, construct: str, marker: str, role: str = "input") -> None:
    """The operand of ``role`` (written in the call, the last line) is rejected, naming
    ``construct`` at the line of ``marker``."""
    error = rejection(parse_one(text))
    assert error.message == (
        f"pld.tensor.all_to_all_v {role} is not provably contiguous: it may come from "
        f"{construct} at line {line_of(text, marker)}; the builtin kernel needs dense row-major "
        "operands (make a contiguous copy with a kernel, or pass a parameter/window)"
    )
    operand = {"input": "x, data, signal", "target": "data, signal"}[role]
    assert located(error) == position(text, operand, occurrence=-1)


# --- whitelist: accepted ----------------------------------------------------------------------

ACCEPTED = {
    "parameter": ("x = inp", ""),
    "window": (
        'buf = pld.alloc_window_buffer(T * W * 4, name="x")\n'
        "x = pld.window(buf, [T, W], dtype=pl.FP32)",
        "",
    ),
    "create": ("x = pl.create_tensor([T, W], dtype=pl.FP32)", ""),
    "reshape": ("x = pl.reshape(flat, [T, W])", "flat: pl.Tensor[[T * W], pl.FP32],"),
    "view": ("x = pl.view(flat, [T, W])", "flat: pl.Tensor[[T * W], pl.FP32],"),
    "set_validshape": ("x = pl.set_validshape(inp, T, W)", ""),
    "assemble target": ("x = pl.assemble(inp, part, [2, 0])", "part: pl.Tensor[[2, W], pl.FP32],"),
    "collective target": (
        "x = pld.tensor.all_to_all_v(inp, other, signal, counts, recv)",
        "other: pl.InOut[PAYLOAD],",
    ),
    "external kernel Out": ("x = self.fill(inp, pl.create_tensor([T, W], dtype=pl.FP32))", ""),
    "external kernel tuple element": (
        "a, b = self.split(inp, pl.create_tensor([T, W], dtype=pl.FP32), inp)\nx = b",
        "",
    ),
    "kernel returning its parameter": ("x = self.passthrough(inp)", ""),
    "pl.submit Out": (
        "x, tid = pl.submit(self.fill, inp, pl.create_tensor([T, W], dtype=pl.FP32))",
        "",
    ),
    "pl.submit tuple element": (
        "pair, tid = pl.submit(self.split, inp, inp, pl.create_tensor([T, W], dtype=pl.FP32))\n"
        "x = pair[1]",
        "",
    ),
    "leading-dim slice": (
        "x = pl.slice(big, [T, W], [T, 0])",
        "big: pl.Tensor[[2 * T, W], pl.FP32],",
    ),
    "leading-dim slice at a dynamic row": (
        "x = pl.slice(big, [T, W], [n * T, 0])",
        "big: pl.Tensor[[4 * T, W], pl.FP32],",
    ),
    "chain of views": (
        "x = pl.reshape(pl.view(pl.slice(big, [T, W], [0, 0]), [T * W]), [T, W])",
        "big: pl.Tensor[[2 * T, W], pl.FP32],",
    ),
    "if result": (
        "if n > 0:\n    x = inp\nelse:\n    x = pl.create_tensor([T, W], dtype=pl.FP32)",
        "",
    ),
    "loop-carried": ("x = inp\nfor i in pl.range(n):\n    x = self.passthrough(x)", ""),
    "while-carried": (
        "x = inp\nwhile n > 0:\n    x = pl.reshape(pl.reshape(x, [T * W]), [T, W])",
        "",
    ),
    "rebound before use": ("x = pl.write(inp, [0, 0], 1.0)\nx = inp", ""),
}


@pytest.mark.parametrize(("body", "params"), ACCEPTED.values(), ids=ACCEPTED.keys())
def test_whitelisted_source_is_accepted(body: str, params: str) -> None:
    calls = builtin_kernel_calls(lower(source(body + "\n", params)), "pipeline")
    assert calls[-1].callee_name == "__builtin_all_to_all_v__fp32"


def test_every_operand_of_the_indexed_exchange_is_traced() -> None:
    text = source("", "index: pl.Tensor[[T], pl.INT32],").replace(
        CALL,
        "idx = pl.write(index, [0], 3)\n"
        "        return pld.tensor.indexed_all_to_all_v(inp, data, signal, counts, "
        "pl.create_tensor([NR, 1], dtype=pl.INT32), idx)",
    )
    error = rejection(parse_one(text))
    assert error.message.startswith(
        "pld.tensor.indexed_all_to_all_v index is not provably contiguous: it may come from "
        f"tensor.write at line {line_of(text, 'idx = ')};"
    )
    assert located(error) == position(text, "idx)", occurrence=-1)


# --- rejected forms ---------------------------------------------------------------------------


def test_transpose_is_rejected() -> None:
    text = source(
        "t = pl.transpose(wide, 0, 1)\nx = pl.slice(t, [T, W], [0, 0])\n",
        "wide: pl.Tensor[[W, T], pl.FP32],",
    )
    assert_rejected(text, "tensor.transpose", "t = pl.transpose")


def test_transpose_of_a_window_target_is_rejected() -> None:
    text = source(
        "data = pl.reshape(pl.reshape(pl.transpose(flip, 0, 1), [T * W]), [T, W])\nx = inp\n",
        "flip: pl.InOut[pld.DistributedTensor[[W, T], pl.FP32]],",
    )
    assert_rejected(text, "tensor.transpose", "data = pl.reshape", role="target")


def test_non_leading_slice_is_rejected() -> None:
    text = source("x = pl.slice(wide, [T, W], [0, 0])\n", "wide: pl.Tensor[[T, 2 * W], pl.FP32],")
    assert_rejected(text, "a tensor.slice that narrows a non-leading dimension", "x = pl.slice")


def test_row_slice_of_a_single_row_is_rejected() -> None:
    """A ``[1, N]`` slice of a ``[1, W]`` tensor is contiguous, but not provably by the rule."""
    text = source(
        "x = pl.slice(row, [1, W], [0, 0])\n",
        "row: pl.Tensor[[1, 2 * W], pl.FP32],",
        nranks=1,
        max_recv=1,
    )
    assert_rejected(text, "a tensor.slice that narrows a non-leading dimension", "x = pl.slice")


def test_dynamic_offset_in_a_non_leading_dimension_is_rejected() -> None:
    text = source("x = pl.slice(big, [T, W], [0, n])\n", "big: pl.Tensor[[2 * T, W], pl.FP32],")
    assert_rejected(
        text,
        "a tensor.slice whose offset in a non-leading dimension is not a literal 0",
        "x = pl.slice",
    )


def test_offset_that_is_not_a_literal_tuple_is_rejected() -> None:
    """The front end only builds literal offsets; a pass may not, so the rule still holds."""
    text = source(
        "off = [T, 0]\nx = pl.slice(big, [T, W], [T, 0])\n", "big: pl.Tensor[[2 * T, W], pl.FP32],"
    )
    program = parse_one(text)
    pipeline = function(program, "pipeline")
    off, sliced = pipeline.body.stmts[0], pipeline.body.stmts[1]
    assert isinstance(off, AssignStmt) and isinstance(sliced, AssignStmt)
    assert isinstance(sliced.value, Call) and isinstance(sliced.value.args[2], MakeTuple)
    offset_var: Var = off.targets[0]
    value = dataclasses.replace(sliced.value, args=(*sliced.value.args[:2], offset_var))
    stmts = (off, dataclasses.replace(sliced, value=value), *pipeline.body.stmts[2:])
    body = dataclasses.replace(pipeline.body, stmts=stmts)
    program = with_function(program, dataclasses.replace(pipeline, body=body))
    error = rejection(program)
    assert (
        f"it may come from a tensor.slice whose offset is not a literal tuple at line "
        f"{line_of(text, 'x = pl.slice')};" in error.message
    )
    assert located(error) == position(text, "x, data, signal", occurrence=-1)


def test_write_result_is_rejected() -> None:
    text = source("x = pl.write(inp, [0, 0], 1.0)\n")
    assert_rejected(text, "tensor.write", "x = pl.write")


@pytest.mark.parametrize(
    "call", ["self.rebinds(inp, inp)", "self.make(inp)"], ids=["rebound-param", "no-written-param"]
)
def test_callee_result_that_is_not_a_parameter_is_rejected(call: str) -> None:
    name = call.split("(")[0].removeprefix("self.")
    text = source(f"x = {call}\n")
    assert_rejected(
        text,
        f"the result of self.{name}, whose return value is not one of its parameters",
        f"x = {call}",
    )


def test_dn_layout_on_the_chain_is_rejected() -> None:
    text = source("x = pl.view(dn, layout=pl.ND)\n", "dn: pl.Tensor[[T, W], pl.FP32, pl.DN],")
    assert_rejected(text, "'dn' with layout DN", "dn: pl.Tensor")


@pytest.mark.parametrize(
    "body",
    ["x = pl.slice(padded, [T, W], [0, 0])\n", "x = self.passthrough(padded)\n"],
    ids=["slice", "kernel"],
)
def test_padded_stride_on_the_chain_is_rejected(body: str) -> None:
    params = "padded: pl.Tensor[[T, W], pl.FP32, pl.TensorView(stride=[2 * W, 1])],"
    text = source(body, params)
    assert_rejected(text, "'padded' with non-compact stride [128, 1]", "padded: pl.Tensor")


# --- every reaching definition ----------------------------------------------------------------

WRITE = "pl.write(inp, [0, 0], 1.0)"


@pytest.mark.parametrize(
    ("body", "marker"),
    [
        (f"x = {WRITE}\nfor i in pl.range(n):\n    x = inp\n", "x = pl.write"),
        (
            "x = inp\nfor i in pl.range(n):\n"
            f"    x = self.passthrough(x)\n    y = {WRITE}\n    x = y\n",
            "y = pl.write",
        ),
        (f"x = {WRITE}\nwhile n > 0:\n    x = inp\n", "x = pl.write"),
        (f"x = inp\nif n > 0:\n    x = {WRITE}\n", "x = pl.write"),
        (f"if n > 0:\n    x = inp\nelse:\n    x = {WRITE}\n", "x = pl.write"),
        (
            "x = inp\nfor i in pl.range(n):\n    for j in pl.range(n):\n"
            f"        x = self.passthrough(x)\n    x = {WRITE}\n",
            "x = pl.write",
        ),
    ],
    ids=[
        "loop-initial-value",
        "loop-carried",
        "while-initial-value",
        "if-no-else",
        "else",
        "nested-loop",
    ],
)
def test_one_bad_reaching_definition_rejects(body: str, marker: str) -> None:
    assert_rejected(source(body), "tensor.write", marker)


# --- long chains and shared traces --------------------------------------------------------------

#: One stage -> exchange -> consume group: every collective's input and target reach back
#: through every group before it.
GROUP = (
    "x = self.fill(inp, x)\n"
    "data = pld.tensor.all_to_all_v(x, data, signal, counts, recv)\n"
    "x = self.fill(data, x)\n"
)


def test_hundreds_of_chained_collectives_are_lowered() -> None:
    body = "x = pl.create_tensor([T, W], dtype=pl.FP32)\n" + GROUP * 400
    calls = builtin_kernel_calls(lower(source(body)), "pipeline")
    assert len(calls) == 401


@pytest.mark.parametrize(
    "step",
    ["late = self.passthrough(late)\n", "late = pl.reshape(pl.reshape(late, [T * W]), [T, W])\n"],
    ids=["kernel-calls", "views"],
)
def test_violation_at_the_start_of_a_long_chain_is_reported(step: str) -> None:
    """Only the last collective reaches the bad value, through 400 definitions."""
    body = f"x = inp\nlate = {WRITE}\n" + (step + GROUP) * 400 + "x = late\n"
    assert_rejected(source(body), "tensor.write", "late = pl.write")


def test_a_loop_carried_cycle_reaches_the_violation_inside_it() -> None:
    """``x`` comes from a chain through the loop whose every value may be the write: the
    fixpoint carries the violation around the cycle to the collective after the loop."""
    body = (
        "a = inp\n"
        "for i in pl.range(n):\n"
        "    b = a\n"
        "    if n > 0:\n"
        "        c = b\n"
        "    else:\n"
        f"        c = {WRITE}\n"
        "    a = c\n"
        "x = a\n"
    )
    text = source(body)
    program = parse_one(text)
    pipeline = function(program, "pipeline")
    call_stmt = pipeline.body.stmts[-1]
    assert isinstance(call_stmt, ReturnStmt)
    call = call_stmt.values[0]
    assert isinstance(call, Call)
    expected = Violation("tensor.write", Span(*position(text, WRITE)))
    assert ContiguityAnalysis(program, pipeline).violation(call, call.args[0]) == expected

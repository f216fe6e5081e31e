"""What the pass tests share: parsing a test program, running passes with the verifier after
each one, expecting a pass's diagnostic, and locating a marker in a source the way a span does.

Pass tests check each diagnostic's exact location, so the locating helpers answer in the form
of a span: ``(file, 1-based line, 0-based column)``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto_build.lowering.diagnostics import ProgramError, Span
from pypto_build.lowering.frontend import parse_source
from pypto_build.lowering.ir import Call, Function, GlobalVar, Program
from pypto_build.lowering.ir.names import arg_directions
from pypto_build.lowering.ir.walk import walk_calls
from pypto_build.lowering.passes import Pass, PassManager, Property
from pypto_build.lowering.verifier import verify

#: The file name every test source is parsed under (and so the file of every span).
FILE = "program.py"

#: The sample program files under ``tests/programs``.
PROGRAMS = Path(__file__).resolve().parent.parent / "programs"

Location = tuple[str, int, int]


def direction_names(call: Call) -> tuple[str, ...]:
    """The ``arg_directions`` of ``call`` as names: each tensor's direction, ``"Scalar"`` for an
    argument passed by value."""
    directions = arg_directions(call)
    assert directions is not None, f"no valid arg_directions on {call.callee_name}"
    return tuple("Scalar" if d is None else d.value for d in directions)


def with_function(program: Program, func: Function) -> Program:
    """``program`` with its function of ``func``'s name replaced by ``func``."""
    functions = tuple(func if f.name == func.name else f for f in program.functions)
    return Program(program.name, functions, program.span)


def parse_one(source: str) -> Program:
    """The one program of ``source``."""
    (program,) = parse_source(source, FILE)
    return program


def run_verified(
    program: Program, *passes: Pass, established: frozenset[Property] | None = None
) -> Program:
    """``program`` through ``passes``, verified before the first pass and after each one.

    A hand-written test program is taken to hold what the first pass requires unless
    ``established`` says otherwise, so a single pass can be tested on its own.
    """
    verify(program)
    return PassManager(passes).run(
        program,
        instruments=[lambda _, result: verify(result)],
        established=passes[0].requires if established is None else established,
    )


def pass_error(
    program: Program,
    *passes: Pass,
    phase: str | None = None,
    established: frozenset[Property] | None = None,
) -> ProgramError:
    """The diagnostic running ``passes`` over ``program`` raises, from pass ``phase`` (by
    default the last one)."""
    with pytest.raises(ProgramError) as info:
        PassManager(passes).run(
            program, established=passes[0].requires if established is None else established
        )
    assert info.value.phase == (passes[-1].name if phase is None else phase)
    return info.value


def position(source: str, marker: str, occurrence: int = 0, offset: int = 0) -> Location:
    """Where the ``occurrence``-th ``marker`` (negative: counted from the end) starts in
    ``source``, moved right by ``offset`` columns."""
    starts: list[int] = []
    found = source.find(marker)
    while found != -1:
        starts.append(found)
        found = source.find(marker, found + 1)
    if not starts:
        raise AssertionError(f"{marker!r} is not in the source")
    index = starts[occurrence] + offset
    line_start = source.rfind("\n", 0, index) + 1
    return FILE, source.count("\n", 0, index) + 1, index - line_start


def line_of(source: str, marker: str) -> int:
    """The 1-based line of the first ``marker``."""
    return position(source, marker)[1]


def span_location(span: Span) -> Location:
    return span.file, span.line, span.col


def located(error: ProgramError) -> Location:
    return span_location(error.span)


def function(program: Program, name: str) -> Function:
    """Function ``name`` of ``program``, which must exist."""
    func = program.function(name)
    assert func is not None, f"no function {name!r}"
    return func


def self_calls(program: Program, name: str) -> list[Call]:
    """The calls of program functions in function ``name``, in evaluation order."""
    return [c for c in walk_calls(function(program, name).body) if isinstance(c.op, GlobalVar)]


def callees(program: Program, name: str) -> list[str]:
    """Names of the functions function ``name`` calls, in evaluation order."""
    return [call.callee_name for call in self_calls(program, name)]


def builtin_kernel_calls(program: Program, name: str) -> list[Call]:
    """The calls of synthesized builtin kernels (``__builtin_*``) in function ``name``."""
    return [call for call in self_calls(program, name) if call.callee_name.startswith("__builtin_")]


# --- HOST-rail test programs -----------------------------------------------------------------

#: The start of a HOST-rail test program, up to its first function: two ranks, ``[T, W]``
#: payloads with four rows per rank.
HOST_PRELUDE = """\
import pypto.language as pl
import pypto.language.distributed as pld

NR = 2
T = NR * 4
W = 64


@pl.program
class Host:
"""

#: Five window buffers and a window over each, the operands of :data:`HOST_A2AV`; ``DT`` stands
#: for the payload dtype.
HOST_WINDOWS = """\
inp_buf = pld.alloc_window_buffer([T, W], dtype=DT)
data_buf = pld.alloc_window_buffer([T, W], dtype=DT)
signal_buf = pld.alloc_window_buffer([NR, 1], dtype=pl.INT32)
counts_buf = pld.alloc_window_buffer([NR], dtype=pl.INT32)
recv_buf = pld.alloc_window_buffer([NR, 1], dtype=pl.INT32)
inp = pld.window(inp_buf, [T, W], dtype=DT)
data = pld.window(data_buf, [T, W], dtype=DT)
signal = pld.window(signal_buf, [NR, 1], dtype=pl.INT32)
counts = pld.window(counts_buf, [NR], dtype=pl.INT32)
recv = pld.window(recv_buf, [NR, 1], dtype=pl.INT32)
"""

HOST_A2AV = "pld.tensor.all_to_all_v(inp, data, signal, counts, recv)"


def host_function(program: Program) -> Function:
    """The HOST orchestrator ``host_orch`` of a HOST-rail test program."""
    return function(program, "host_orch")

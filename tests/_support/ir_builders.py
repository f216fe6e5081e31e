"""Hand-built IR shared by the printer and verifier tests: the common tensor types and the
design's example kernel, so both suites exercise the same program shapes."""

from __future__ import annotations

from pathlib import Path

from pypto_build.lowering.ir import (
    AttrValue,
    DataType,
    DistributedTensorType,
    Function,
    FunctionType,
    Level,
    Param,
    ParamDirection,
    SeqStmts,
    Stmt,
    TensorType,
    Var,
)

#: The sample program files under ``tests/programs``.
PROGRAMS = Path(__file__).resolve().parent.parent / "programs"
SAMPLES = sorted(PROGRAMS.glob("*.py"))

TENSOR = TensorType((8, 64), DataType.FP32)
DIST = DistributedTensorType((8, 64), DataType.FP32)


def seq(*stmts: Stmt) -> SeqStmts:
    return SeqStmts(tuple(stmts))


def stage_step(
    body: SeqStmts | None = None, attrs: tuple[tuple[str, AttrValue], ...] = ()
) -> Function:
    """The AIV kernel of the design's example, ``stage_step(inp, stage) -> stage``, with
    ``body`` (empty by default, as an external kernel's) and ``attrs``."""
    return Function(
        "stage_step",
        (Param(Var("inp", TENSOR)), Param(Var("stage", DIST), ParamDirection.InOut)),
        (DIST,),
        seq() if body is None else body,
        FunctionType.AIV,
        Level.CHIP,
        attrs,
    )

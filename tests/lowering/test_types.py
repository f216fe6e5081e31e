"""Element-type kinds: which dtypes count as integers and floats (typing rules and op checks
both rely on them; BOOL and TASK_ID are neither)."""

from __future__ import annotations

from pypto_build.lowering.ir import DataType


def test_integer_and_float_kinds() -> None:
    integers = {dtype.value for dtype in DataType if dtype.is_integer}
    floats = {dtype.value for dtype in DataType if dtype.is_float}
    assert integers == {"int8", "uint8", "int16", "int32", "int64", "index"}
    assert floats == {"fp32", "fp16", "bf16"}
    assert {"bool", "task_id"}.isdisjoint(integers | floats)

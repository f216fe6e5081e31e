"""A run's inputs against a HOST orchestrator's PARAMETERS table: outputs allocated, inputs
checked by name, shape and element type before anything runs; and the table read from a module
without running it."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from pypto_build import sim
from pypto_build.chip_build.l3_api import DataType, Parameter
from pypto_build.chip_build.sim.arguments import InputError, bind_arguments
from pypto_build.chip_build.sim.program import BuildTreeError, read_host_parameters

PARAMETERS = (
    Parameter("inp", "tensor", (4, 2), DataType.FLOAT32, "In"),
    Parameter("core_num", "scalar", (), DataType.INT64, "In"),
    Parameter("out", "tensor", (3,), DataType.INT32, "Out"),
    Parameter("acc", "tensor", (2,), DataType.BFLOAT16, "InOut"),
    Parameter("gain", "scalar", (), DataType.FLOAT32, "In"),
)


def given() -> dict[str, object]:
    return {
        "inp": np.ones((4, 2), dtype=np.float32),
        "core_num": 2,
        "acc": np.array([1, 2], dtype=np.uint16),
        "gain": np.float32(0.5),
    }


def test_outputs_not_given_start_zero_filled_and_tensors_keep_table_order() -> None:
    inputs = given()
    bound = bind_arguments("host", PARAMETERS, inputs)
    assert list(bound.tensors) == ["inp", "out", "acc"]
    out = bound.tensors["out"]
    assert (out.shape, out.dtype, out.tolist()) == ((3,), np.dtype(np.int32), [0, 0, 0])
    assert bound.scalars == (2, 0.5)
    assert [type(value) for value in bound.scalars] == [int, float]
    # Given arrays are copied: the run never writes into the caller's arrays.
    assert bound.tensors["inp"] is not inputs["inp"]


def test_a_given_output_is_its_initial_contents() -> None:
    inputs = {**given(), "out": np.array([7, 8, 9], dtype=np.int32)}
    assert bind_arguments("host", PARAMETERS, inputs).tensors["out"].tolist() == [7, 8, 9]


def test_missing_inputs_and_unknown_names_are_listed() -> None:
    inputs = {"inp": np.ones((4, 2), dtype=np.float32), "extra": 1}
    message = (
        "inputs of host: missing core_num, acc, gain; unknown extra "
        "(parameters: inp, core_num, out (Out, optional), acc, gain)"
    )
    with pytest.raises(InputError, match=re.escape(message)):
        bind_arguments("host", PARAMETERS, inputs)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "inp",
            np.ones((2, 4), dtype=np.float32),
            "input 'inp' of host: expected shape (4, 2) float32, got shape (2, 4) float32",
        ),
        (
            "inp",
            np.ones((4, 2)),
            "input 'inp' of host: expected shape (4, 2) float32, got shape (4, 2) float64",
        ),
        (
            "acc",
            np.ones(2, dtype=np.float16),
            "input 'acc' of host: expected shape (2,) bfloat16 (as uint16 bit patterns), "
            "got shape (2,) float16",
        ),
        (
            "out",
            np.zeros(3, dtype=np.int64),
            "input 'out' of host: expected shape (3,) int32, got shape (3,) int64",
        ),
        (
            "core_num",
            1.5,
            "scalar 'core_num' of host: expected one int64 value, got float64 1.5",
        ),
        (
            "core_num",
            [1, 2],
            "scalar 'core_num' of host: expected one int64 value, got shape (2,)",
        ),
        (
            "gain",
            True,
            "scalar 'gain' of host: expected one float32 value, got bool True",
        ),
    ],
)
def test_inputs_must_match_the_declared_shape_and_type(
    name: str, value: object, message: str
) -> None:
    with pytest.raises(InputError, match=re.escape(message)) as caught:
        bind_arguments("host", PARAMETERS, {**given(), name: value})
    assert isinstance(caught.value, ValueError)


def test_an_integer_scalar_must_fit_its_type() -> None:
    parameters = (Parameter("count", "scalar", (), DataType.INT32, "In"),)
    assert bind_arguments("host", parameters, {"count": 2**31 - 1}).scalars == (2**31 - 1,)
    with pytest.raises(InputError, match=r"got 2147483648, outside \[-2147483648, 2147483647\]"):
        bind_arguments("host", parameters, {"count": 2**31})


def test_the_public_api_exports_the_table_types() -> None:
    assert sim.Parameter is Parameter
    assert sim.InputError is InputError


MODULE = """\
from pypto_build.chip_build.l3_api import DataType, Parameter

PARAMETERS: tuple[Parameter, ...] = (
    Parameter("inp", "tensor", (4, 2), DataType.FLOAT32, "In"),
    {entry}
)

raise SystemExit("the module must not run")
"""


def write_module(tmp_path: Path, entry: str) -> Path:
    path = tmp_path / "host.py"
    path.write_text(MODULE.format(entry=entry), encoding="utf-8")
    return path


def test_the_table_is_read_without_running_the_module(tmp_path: Path) -> None:
    path = write_module(tmp_path, 'Parameter("n", "scalar", (), DataType.INT64, "In"),')
    assert read_host_parameters(path) == (
        Parameter("inp", "tensor", (4, 2), DataType.FLOAT32, "In"),
        Parameter("n", "scalar", (), DataType.INT64, "In"),
    )


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('Parameter("n", "scalar", (), DataType.INT64),', "must be Parameter(<5 literals>)"),
        ('Parameter("n", "tensor", (N,), DataType.INT64, "In"),', "holds a non-literal field"),
        ('Parameter("n", "tensor", (-1,), DataType.INT64, "In"),', "is not a tuple of sizes"),
        ('Parameter("n", "tensor", (1,), DataType.COMPLEX, "In"),', "is not DataType.<member>"),
        ('Parameter("n", "scalar", (), DataType.INT64, "Out"),', "shape () and direction In"),
        ('Parameter("n", "vector", (1,), DataType.INT64, "In"),', "unknown kind 'vector'"),
        ('Parameter("inp", "tensor", (1,), DataType.INT64, "In"),', "names a parameter twice"),
    ],
)
def test_a_malformed_table_is_a_build_tree_error(tmp_path: Path, entry: str, message: str) -> None:
    with pytest.raises(BuildTreeError, match=re.escape(message)):
        read_host_parameters(write_module(tmp_path, entry))


def test_a_module_without_a_table_must_be_built_again(tmp_path: Path) -> None:
    path = tmp_path / "host.py"
    path.write_text("def build(callables): ...\n", encoding="utf-8")
    with pytest.raises(BuildTreeError, match="no PARAMETERS table"):
        read_host_parameters(path)

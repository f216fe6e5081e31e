"""A run's inputs against a HOST orchestrator's parameters: outputs allocated, inputs checked by
name, shape and element type before anything runs; and the parameters read from
``distributed_meta.json``, strictly."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from pypto_build import sim
from pypto_build.chip_build.distributed_meta import (
    DistributedMeta,
    MetaError,
    Parameter,
    read_meta,
)
from pypto_build.chip_build.runtime_types import DataType
from pypto_build.chip_build.sim.arguments import (
    InputError,
    bind_arguments,
    bind_rank_arguments,
)
from pypto_build.chip_build.sim.shared import SHARE_BYTES, segment_of, stack
from pypto_build.tree_layout import TreeLayout

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
    assert bound.scalars == {"core_num": 2, "gain": 0.5}
    assert [type(value) for value in bound.scalars.values()] == [int, float]
    # The orchestrator finds every parameter by name, in declaration order.
    assert list(bound.values()) == ["inp", "out", "acc", "core_num", "gain"]
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


# --- a chip orchestration's inputs, per rank -----------------------------------------------

#: A chip orchestration's parameters: a tensor, a window, an Out tensor and a scalar.
CHIP_PARAMETERS = (
    Parameter("inp", "tensor", (2,), DataType.INT32, "In"),
    Parameter("stage", "tensor", (2,), DataType.FLOAT32, "InOut"),
    Parameter("out", "tensor", (2,), DataType.INT32, "Out"),
    Parameter("rows", "scalar", (), DataType.INT64, "In"),
)
WINDOWS = {"stage"}


def test_a_leading_rank_axis_gives_each_rank_its_own_and_a_plain_value_is_everyones() -> None:
    per_rank = np.arange(6, dtype=np.int32).reshape(3, 2)
    inputs = {"inp": per_rank, "rows": np.array([4, 5, 6]), "stage": np.ones(2, np.float32)}
    bound = bind_rank_arguments("pipe", CHIP_PARAMETERS, inputs, 3, WINDOWS)
    assert [b.tensors["inp"].tolist() for b in bound] == [[0, 1], [2, 3], [4, 5]]
    assert [b.scalars["rows"] for b in bound] == [4, 5, 6]
    assert [b.tensors["stage"].tolist() for b in bound] == [[1.0, 1.0]] * 3
    # Each rank's tensors are memory of their own, as each chip has its own, copied from the
    # input; a window's contents are views of the input, which the run copies into the window
    # once.
    tensors = [b.tensors["inp"] for b in bound]
    assert not any(np.shares_memory(tensor, per_rank) for tensor in tensors)
    assert not any(np.shares_memory(a, b) for i, a in enumerate(tensors) for b in tensors[i + 1 :])
    tensors[0][...] = -1
    assert tensors[1].tolist() == [2, 3] and per_rank[0].tolist() == [0, 1]
    assert all(np.shares_memory(b.tensors["stage"], inputs["stage"]) for b in bound)
    one_scalar = bind_rank_arguments(
        "pipe", CHIP_PARAMETERS, {"inp": per_rank, "rows": 7}, 3, WINDOWS
    )
    assert [b.scalars["rows"] for b in one_scalar] == [7, 7, 7]
    # Out tensors not given start zeroed; windows not given are left to the run's windows,
    # which start zeroed.
    assert [b.tensors["out"].tolist() for b in one_scalar] == [[0, 0]] * 3
    assert all("stage" not in b.tensors for b in one_scalar)


def test_windows_are_optional_and_marked_so() -> None:
    message = "inputs of pipe: missing inp, rows (parameters: inp, stage (window, optional), "
    message += "out (Out, optional), rows)"
    with pytest.raises(InputError, match=re.escape(message)):
        bind_rank_arguments("pipe", CHIP_PARAMETERS, {}, 2, WINDOWS)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "inp",
            np.zeros((3, 2), dtype=np.int32),
            "input 'inp' of pipe: expected shape (2, 2) (one per rank) or (2,) (every rank's) "
            "int32, got shape (3, 2) int32",
        ),
        (
            "inp",
            np.zeros((2, 2), dtype=np.int64),
            "input 'inp' of pipe: expected shape (2, 2) int32, got shape (2, 2) int64",
        ),
        (
            "rows",
            np.array([1, 2, 3]),
            "scalar 'rows' of pipe: expected one int64 value, or one per rank (shape (2,)), "
            "got shape (3,)",
        ),
    ],
)
def test_per_rank_inputs_are_checked(name: str, value: object, message: str) -> None:
    inputs = {"inp": np.zeros(2, dtype=np.int32), "rows": 1, name: value}
    with pytest.raises(InputError, match=re.escape(message)):
        bind_rank_arguments("pipe", CHIP_PARAMETERS, inputs, 2, WINDOWS)


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
    assert bind_arguments("host", parameters, {"count": 2**31 - 1}).scalars == {"count": 2**31 - 1}
    with pytest.raises(InputError, match=r"got 2147483648, outside \[-2147483648, 2147483647\]"):
        bind_arguments("host", parameters, {"count": 2**31})


def test_the_public_api_exports_the_table_types() -> None:
    assert sim.Parameter is Parameter
    assert sim.InputError is InputError


def write_meta(tmp_path: Path, text: str) -> Path:
    path = TreeLayout(tmp_path).distributed_meta
    path.write_text(text, encoding="utf-8")
    return path


def test_the_parameters_round_trip_through_distributed_meta(tmp_path: Path) -> None:
    meta = DistributedMeta(PARAMETERS, 0, "Ascend910B", 4, "a2a3sim")
    assert read_meta(write_meta(tmp_path, meta.render())) == meta


VALID = {
    "schema": 2,
    "params": [{"name": "inp", "direction": "In", "shape": [4, 2], "dtype": "fp32"}],
    "num_return_types": 0,
    "backend_type": "Ascend910B",
    "distributed_config": {"device_ids": [0, 1], "num_sub_workers": 0},
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"schema": 1}, "not a schema 2 distributed_meta.json"),
        ({"params": {}}, "'params' must be a list"),
        ({"distributed_config": {"device_ids": []}}, "device_ids must be a non-empty int list"),
        ({"num_return_types": -1}, "num_return_types must be a count"),
        ({"backend_type": "Ascend310"}, "backend_type must be one of"),
        ({"params": [{"name": "x y", "shape": None, "dtype": "fp32"}]}, "is not an identifier"),
        ({"params": [{"name": "x", "shape": None, "dtype": "f32"}]}, "element type 'f32'"),
        ({"params": [{"name": "x", "shape": [-1], "dtype": "fp32"}]}, "is not a list of sizes"),
        (
            {"params": [{"name": "x", "direction": "Out", "shape": None, "dtype": "fp32"}]},
            "shape () and direction In",
        ),
        (
            {"params": [VALID["params"][0], VALID["params"][0]]},  # type: ignore[index]
            "a parameter is named twice",
        ),
    ],
)
def test_a_malformed_meta_is_an_error(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    with pytest.raises(MetaError, match=re.escape(message)):
        read_meta(write_meta(tmp_path, json.dumps({**VALID, **change})))


def test_an_unreadable_meta_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(MetaError, match="not JSON"):
        read_meta(write_meta(tmp_path, "{"))
    with pytest.raises(MetaError, match="unreadable"):
        read_meta(tmp_path / "missing.json")


def test_every_problem_of_the_inputs_is_named_at_once() -> None:
    inputs = {
        "inp": np.ones((2, 4), dtype=np.float32),
        "out": np.zeros(3, dtype=np.int64),
        "core_num": 1.5,
        "extra": 1,
    }
    with pytest.raises(InputError) as caught:
        bind_arguments("host", PARAMETERS, inputs)
    assert caught.value.problems == (
        "inputs of host: missing acc, gain; unknown extra (parameters: inp, core_num, "
        "out (Out, optional), acc, gain)",
        "input 'inp' of host: expected shape (4, 2) float32, got shape (2, 4) float32",
        "scalar 'core_num' of host: expected one int64 value, got float64 1.5",
        "input 'out' of host: expected shape (3,) int32, got shape (3,) int64",
    )
    assert str(caught.value) == "\n".join(caught.value.problems)
    per_rank = {"inp": np.zeros((3, 2), dtype=np.int32), "rows": np.array([1, 2, 3])}
    with pytest.raises(InputError) as caught:
        bind_rank_arguments("pipe", CHIP_PARAMETERS, per_rank, 2, WINDOWS)
    assert [problem.split(":")[0] for problem in caught.value.problems] == [
        "input 'inp' of pipe",
        "scalar 'rows' of pipe",
    ]


def test_large_rank_tensors_are_rows_of_one_shared_block_that_stacks_without_a_copy() -> None:
    """Every rank's copy of a large tensor is a row of one block of shared memory: a worker
    process reads them where the caller wrote them, and the result's leading rank axis is a view
    of that block, not another copy."""
    rows = SHARE_BYTES // 8  # two ranks of int32 rows: the block is SHARE_BYTES
    parameters = [Parameter("big", "tensor", (rows,), DataType.INT32, "In"), *CHIP_PARAMETERS[1:]]
    per_rank = np.arange(2 * rows, dtype=np.int32).reshape(2, rows)
    given = {"big": per_rank, "rows": 1}
    bound = bind_rank_arguments("pipe", parameters, given, 2, WINDOWS)
    big = [b.tensors["big"] for b in bound]
    segment = segment_of(big[0])
    assert segment is not None and segment_of(big[1]) is segment
    assert not np.shares_memory(big[0], per_rank)
    stacked = stack(big)
    assert np.shares_memory(stacked, big[0]) and np.shares_memory(stacked, big[1])
    np.testing.assert_array_equal(stacked, per_rank)
    # Every rank's Out tensor not given starts zeroed, in one block as well.
    outs = [b.tensors["out"] for b in bound]
    assert [out.tolist() for out in outs] == [[0, 0]] * 2

"""The host API's first stage, ``pypto_build.mc2.get_workspace_size``: every aclnn status path
reachable from it, refused exactly as the DSL op refuses the same operands (the rules are
``tests/lowering/test_mc2_rules.py``'s subject; here, that arrays reach them intact), the
workspace size aclnn returns, and the transposed weight aclnn detects from the strides.

Requests are the aclnn sample's unless a case says otherwise (ep 4, tp 2, E 16, C 12, H 4,
M 12; ``_support.mc2``), turned into one rank's arrays by ``_support.mc2_host``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from _support.mc2 import mc2_request, with_dim, with_dtype, with_shape
from _support.mc2_host import arrays_of, call

from pypto_build import mc2
from pypto_build.chip_build.subbuild import lower_file
from pypto_build.lowering.aclnn.rules import Mc2Request, check
from pypto_build.lowering.aclnn.tiling import tile
from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.ir.types import DataType

FP16, BF16, FP32 = DataType.FP16, DataType.BF16, DataType.FP32
NULLPTR, INVALID = 161001, 161002

#: One refused request per way a rule can fail, by what it breaks, with the status and rule.
REFUSED: dict[str, tuple[Mc2Request, int, str]] = {
    "null x": (dataclasses.replace(mc2_request(), x=None), NULLPTR, "CheckNotNull"),
    "null weight": (dataclasses.replace(mc2_request(), weight=None), NULLPTR, "CheckNotNull"),
    "null out": (dataclasses.replace(mc2_request(), out=None), NULLPTR, "CheckNotNull"),
    "null group_ep": (mc2_request(group_ep=None), NULLPTR, "CheckNotNull"),
    "empty group_tp": (mc2_request(group_tp=""), NULLPTR, "CheckNotNull"),
    "128-byte group_ep": (mc2_request(group_ep="e" * 128), INVALID, "CheckParams"),
    "128-byte UTF-8 group_tp": (mc2_request(group_tp="é" * 64), INVALID, "CheckParams"),
    "FP32 x": (with_dtype(mc2_request(), "x", FP32), INVALID, "CheckDtypeValid"),
    "BF16 weight, FP16 x": (with_dtype(mc2_request(), "weight", BF16), INVALID, "CheckDtypeValid"),
    "FP16 bias, BF16 x": (
        with_dtype(mc2_request(dtype=BF16, bias_rank=2), "bias", FP16),
        INVALID,
        "CheckDtypeValid",
    ),
    "INT32 bias": (
        with_dtype(mc2_request(bias_rank=2), "bias", DataType.INT32),
        INVALID,
        "CheckDtypeValid",
    ),
    "y_shard_type 2": (
        dataclasses.replace(mc2_request(), y_shard_type=2),
        INVALID,
        "CheckAttr",
    ),
    "ep 3": (dataclasses.replace(mc2_request(), ep_world_size=3), INVALID, "CheckAttr"),
    "tp 64": (dataclasses.replace(mc2_request(), tp_world_size=64), INVALID, "CheckAttr"),
    "2-D x": (with_shape(mc2_request(), "x", (4, 48)), INVALID, "CheckIfTensorThreeDim"),
    "4-D bias": (
        with_shape(mc2_request(bias_rank=3), "bias", (4, 1, 1, 4)),
        INVALID,
        "CheckIfTensorThreeDim",
    ),
    "E != E/ep * ep": (with_dim(mc2_request(), "out", 0, 12), INVALID, "CheckTensorDimCommonShape"),
    "M/tp differs": (with_dim(mc2_request(), "x", 2, 5), INVALID, "CheckTensorDimCommonShape"),
    "shard 1 out H": (with_dim(mc2_request(), "out", 2, 8), INVALID, "CheckTensorDimUniqueShape"),
    "shard 0 out H/tp": (
        with_dim(mc2_request(shard=0), "out", 2, 4),
        INVALID,
        "CheckTensorDimUniqueShape",
    ),
    "bias rows": (with_dim(mc2_request(bias_rank=2), "bias", 0, 3), INVALID, "CheckBiasDim"),
    "3-D bias middle": (with_dim(mc2_request(bias_rank=3), "bias", 1, 2), INVALID, "CheckBiasDim"),
    "E/ep 33": (mc2_request(ep=2, E=66), INVALID, "CheckShapeRange"),
    "M/tp 65536": (mc2_request(ep=2, E=2, C=2, M=2 * 65536), INVALID, "CheckShapeRange"),
    "E 544": (mc2_request(ep=32, tp=2, E=544, C=2, M=2, H=2), INVALID, "CheckShapeRange"),
    "H 65536": (mc2_request(ep=2, E=2, C=2, H=65536, M=2), INVALID, "CheckShapeRange"),
    "same groups": (mc2_request(group_ep="g", group_tp="g"), INVALID, "GroupCheck"),
    "transposed weight, wrong M/tp": (
        with_dim(mc2_request(transpose_weight=True), "weight", 2, 5),
        INVALID,
        "CheckTensorDimCommonShape",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_each_rule_refuses_the_api_as_it_refuses_the_op(case: str) -> None:
    """The API raises the error the op's own check raises for the same operands: same status,
    rule, operand and message (so the DSL op's diagnostic and the API's read alike)."""
    request, status, rule = REFUSED[case]
    with pytest.raises(mc2.Mc2Error) as info:
        call(request)
    error = info.value
    assert (error.status, error.rule) == (status, rule)
    with pytest.raises(mc2.Mc2Error) as same:
        check(dataclasses.replace(request, require_group_names=True))
    expected = same.value
    assert (error.status, error.rule, error.operand, str(error)) == (
        expected.status,
        expected.rule,
        expected.operand,
        str(expected),
    )


@pytest.mark.parametrize(
    ("edit", "out_shape", "group_tp"),
    [
        (("out: pl.Out[pl.Tensor[[E,", "out: pl.Out[pl.Tensor[[6,"), (6, 4, 16), "tp"),
        (("y_shard_type=1\n", "y_shard_type=1, group_ep='ep', group_tp='ep'\n"), (8, 4, 16), "ep"),
    ],
    ids=["common-shape", "group-check"],
)
def test_a_program_and_a_call_get_the_same_message(
    repo_root: Path,
    tmp_path: Path,
    edit: tuple[str, str],
    out_shape: tuple[int, ...],
    group_tp: str,
) -> None:
    """The sample's program with a mistake, and the host API called with the same operands:
    the program's diagnostic is the API's error, after the op's name."""
    text = (repo_root / "samples/moe_mc2/src/moe_mc2/pipelines.py").read_text(encoding="utf-8")
    assert text.count(edit[0]) == 1
    program = tmp_path / "pipelines.py"
    program.write_text(text.replace(*edit), encoding="utf-8")
    with pytest.raises(ProgramError) as diagnostic:
        lower_file(program, ["a3"])
    x = np.zeros((2, 32, 8), np.float16)
    weight, bias = np.zeros((2, 8, 16), np.float16), np.zeros((2, 16), np.float16)
    out = np.zeros(out_shape, np.float16)
    with pytest.raises(mc2.Mc2Error) as error:
        mc2.get_workspace_size(x, weight, bias, "ep", group_tp, 4, 2, 1, out)
    op = "pld.tensor.batch_matmul_reduce_scatter_all_to_all"
    assert diagnostic.value.message == f"{op} {error.value}"


def test_the_status_is_an_int_with_aclnn_names() -> None:
    with pytest.raises(mc2.Mc2Error) as info:
        call(dataclasses.replace(mc2_request(), x=None))
    assert info.value.status == 161001
    assert info.value.status is mc2.AclnnStatus.PARAM_NULLPTR
    assert str(info.value).endswith("(aclnn CheckNotNull: ACLNN_ERR_PARAM_NULLPTR, 161001)")


@pytest.mark.parametrize(
    ("dtype", "shown"),
    [(np.float64, "float64"), (np.uint16, "uint16"), (np.complex64, "complex64")],
)
def test_a_dtype_the_program_model_cannot_name_is_refused_by_check_dtype_valid(
    dtype: type[np.generic], shown: str
) -> None:
    arrays = arrays_of(mc2_request())
    x = np.zeros((4, 48, 6), dtype)
    with pytest.raises(mc2.Mc2Error) as info:
        mc2.get_workspace_size(x, arrays["weight"], None, "ep", "tp", 4, 2, 1, arrays["out"])
    assert (info.value.status, info.value.rule) == (INVALID, mc2.Rule.CHECK_DTYPE_VALID)
    assert info.value.message == f"x.dtype must be FP16 or BF16, got {shown}"


def test_an_unnamed_dtype_waits_for_the_checks_before_it() -> None:
    """aclnn's order holds for an operand NumPy types beyond the program model: a null
    group name (checked first) is reported, not the dtype."""
    arrays = arrays_of(mc2_request())
    x = np.zeros((4, 48, 6), np.float64)
    with pytest.raises(mc2.Mc2Error) as info:
        mc2.get_workspace_size(x, arrays["weight"], None, None, "tp", 4, 2, 1, arrays["out"])
    assert (info.value.status, info.value.rule, info.value.operand) == (
        NULLPTR,
        mc2.Rule.CHECK_NOT_NULL,
        "group_ep",
    )


def test_the_workspace_size_of_the_aclnn_sample_is_the_reference_worked_example() -> None:
    """Upstream's workspace formula ([tiling] of ``docs/mc2.md``) at ep 4, tp 2, E 16, C 12,
    H 4, M 12, y_shard_type 1 (Lite), uncut tiles: 2976 elements of 2 bytes plus 16 MiB =
    16,783,168 bytes."""
    size, executor = call(mc2_request())
    assert size == 16_783_168 == 2976 * 2 + 16 * 1024 * 1024
    assert executor.workspace_size == size
    # The window holds the user part, as aclnn's kernel takes it.
    assert executor.program.workspace_bytes == size - mc2.SYSTEM_BYTES


@pytest.mark.parametrize(
    "request_",
    [
        mc2_request(shard=0),
        mc2_request(shard=1, bias_rank=3),
        mc2_request(ep=2, tp=2, shard=0, dtype=BF16, bias_rank=2, transpose_weight=True),
        mc2_request(ep=2, tp=4, shard=1, C=4 * 700, dtype=BF16),  # C/tp 700: not Lite
    ],
    ids=["shard0", "shard1-bias3", "bf16-shard0-transposed", "not-lite"],
)
def test_the_workspace_size_is_the_tilings_total(request_: Mc2Request) -> None:
    size, executor = call(request_)
    config = check(dataclasses.replace(request_, require_group_names=True))
    assert executor.config == config
    assert size == tile(config).total_bytes == tile(config).user_bytes + mc2.SYSTEM_BYTES


def test_a_transposed_view_of_the_weight_sets_transpose_weight() -> None:
    request = mc2_request(transpose_weight=True)
    arrays = arrays_of(request)
    weight = arrays["weight"]
    assert isinstance(weight, np.ndarray) and weight.shape == (4, 6, 4)  # (E/ep, M/tp, H)
    assert mc2.is_transposed_view(weight)
    _, executor = call(request)
    assert executor.config.transpose_weight
    assert "weight: pl.Tensor[[4, 4, 6], pl.FP16]" in executor.program.text  # as stored
    assert "transpose_weight=True" in executor.program.text


@pytest.mark.parametrize(
    ("make", "transposed"),
    [
        (lambda: np.zeros((4, 6, 4)), False),  # contiguous
        (lambda: np.zeros((4, 4, 6)).transpose(0, 2, 1), True),
        (lambda: np.zeros((6, 4, 4)).transpose(1, 0, 2), False),  # a batch axis moved
        (lambda: np.zeros((4, 4, 12))[:, :, ::2].transpose(0, 2, 1), False),  # strided storage
        (lambda: np.zeros((4, 1, 1)).transpose(0, 2, 1), False),  # 1 x 1: not transposed
        (lambda: np.zeros((2, 4, 4, 6)).transpose(0, 1, 3, 2), True),  # batches of batches
        (lambda: np.zeros((4, 6)), False),
        (lambda: np.zeros((6, 4)).T, True),
    ],
)
def test_is_transposed_view_reads_the_strides_as_aclnn_does(make: object, transposed: bool) -> None:
    assert callable(make)
    assert mc2.is_transposed_view(make()) is transposed


def test_any_other_weight_layout_is_made_contiguous_and_not_transposed() -> None:
    request = mc2_request()
    arrays = arrays_of(request)
    strided = np.zeros((4, 6, 8), np.float16)[:, :, ::2]
    _, executor = mc2.get_workspace_size(
        arrays["x"], strided, None, "ep", "tp", 4, 2, 1, arrays["out"]
    )
    assert not executor.config.transpose_weight
    weight = executor.operands.inputs(transposed=False)["weight"]
    assert weight.flags.c_contiguous and weight.shape == (4, 6, 4)


def test_bf16_operands_as_bit_patterns() -> None:
    _, executor = call(mc2_request(dtype=BF16, bias_rank=2))
    assert executor.config.dtype is BF16 and executor.config.bias_dtype is FP32
    assert "x: pl.Tensor[[4, 48, 6], pl.BF16]" in executor.program.text
    assert "bias: pl.Tensor[[4, 4], pl.FP32]" in executor.program.text
    with pytest.raises(TypeError, match="a BF16 tensor holds uint16 elements, got float32"):
        mc2.Tensor(np.zeros(3, np.float32), BF16)


def test_an_ml_dtypes_bfloat16_array_is_bf16() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    request = mc2_request(dtype=BF16)
    arrays = arrays_of(request)
    x = np.zeros((4, 48, 6), ml_dtypes.bfloat16)
    _, executor = mc2.get_workspace_size(
        x, arrays["weight"], None, "e", "t", 4, 2, 1, arrays["out"]
    )
    assert executor.config.dtype is BF16
    assert executor.operands.x.data.dtype == np.uint16


def test_the_executor_reads_no_data_and_refuses_a_read_only_out() -> None:
    arrays = arrays_of(mc2_request())
    out = arrays["out"]
    assert isinstance(out, np.ndarray)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="out is read-only"):
        mc2.get_workspace_size(arrays["x"], arrays["weight"], None, "e", "t", 4, 2, 1, out)


def test_the_program_names_no_group_so_every_group_shares_it() -> None:
    _, first = call(mc2_request(group_ep="a", group_tp="b"))
    _, second = call(mc2_request(group_ep="c", group_tp="d"))
    assert first.program.text == second.program.text
    assert (first.group_ep, second.group_tp) == ("a", "d")
    _, other = call(mc2_request(bias_rank=2))
    assert other.program.digest != first.program.digest

"""The MC2 op's rules (``pypto_build.lowering.aclnn.rules``): one test per rule, each with the
accepted edge values and the rejected neighbours, the aclnn status and the exact message.

The limits come from upstream's aclnn source and the operator's documentation (``[aclnn]`` and
``[aclnn doc]`` of ``docs/mc2.md``, Upstream sources); the requests are built from logical sizes by
``_support.mc2``. Unless a test says otherwise a request is the aclnn sample's (ep 4, tp 2,
E 16, C 12, H 4, M 12): x (4, 48, 6), weight (4, 6, 4), out (16, 6, 4) for y_shard_type 1 and
(16, 12, 2) for 0.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable

import pytest
from _support.mc2 import mc2_request, with_dim, with_dtype, with_shape

from pypto_build.lowering.aclnn.rules import Mc2Config, Mc2Error, Mc2Request, check
from pypto_build.lowering.ir.types import DataType

FP16, BF16, FP32 = DataType.FP16, DataType.BF16, DataType.FP32


def expect(request: Mc2Request, status: int, rule: str, operand: str, message: str) -> Mc2Error:
    """Checks that ``request`` is refused by ``rule`` with ``status`` about ``operand``, with
    exactly ``message``, and that ``str()`` names the rule and the status."""
    with pytest.raises(Mc2Error) as info:
        check(request)
    error = info.value
    assert (error.status, error.rule, error.operand) == (status, rule, operand)
    assert error.message == message
    name = {161001: "ACLNN_ERR_PARAM_NULLPTR", 161002: "ACLNN_ERR_PARAM_INVALID"}[status]
    assert str(error).startswith(message + " (")
    assert str(error).endswith(f" {rule}: {name}, {status})")
    return error


def test_the_message_names_the_rule_and_the_status() -> None:
    error = expect(
        with_dim(mc2_request(), "out", 0, 12),
        161002,
        "CheckTensorDimCommonShape",
        "out",
        "x.shape[0] * ep_world_size (4 * 4 = 16) must equal out.shape[0] (12): E = E/ep * ep",
    )
    assert str(error) == (
        "x.shape[0] * ep_world_size (4 * 4 = 16) must equal out.shape[0] (12): E = E/ep * ep "
        "(aclnn CheckTensorDimCommonShape: ACLNN_ERR_PARAM_INVALID, 161002)"
    )
    assert isinstance(error, ValueError)


# ---- 1. CheckNotNull -------------------------------------------------------------------------


@pytest.mark.parametrize("operand", ["x", "weight", "out"])
def test_check_not_null_requires_x_weight_and_out(operand: str) -> None:
    request = dataclasses.replace(mc2_request(), **{operand: None})
    message = f"{operand} is missing: x, weight and out are required operands"
    expect(request, 161001, "CheckNotNull", operand, message)


def test_check_not_null_takes_no_bias_as_none() -> None:
    assert not check(mc2_request()).has_bias


@pytest.mark.parametrize("name", ["group_ep", "group_tp"])
def test_check_not_null_requires_non_empty_group_names(name: str) -> None:
    message = f"{name} is empty: a communication group name is required"
    expect(dataclasses.replace(mc2_request(), **{name: ""}), 161001, "CheckNotNull", name, message)
    # The host API passes every name: a null one is a null pointer there.
    missing = dataclasses.replace(mc2_request(), require_group_names=True, **{name: None})
    message = f"{name} is missing: a communication group name is required"
    expect(missing, 161001, "CheckNotNull", name, message)
    # The DSL op names no groups: their checks are skipped.
    check(dataclasses.replace(mc2_request(), **{name: None}))


# ---- 2. CheckParams: group name length ------------------------------------------------------


@pytest.mark.parametrize("name", ["group_ep", "group_tp"])
@pytest.mark.parametrize("length", [1, 127])
def test_group_names_of_1_to_127_bytes_are_accepted(name: str, length: int) -> None:
    other = "tp_group" if name == "group_ep" else "ep_group"
    check(dataclasses.replace(mc2_request(), **{name: "g" * length, _other(name): other}))


@pytest.mark.parametrize("name", ["group_ep", "group_tp"])
def test_group_names_of_0_or_128_bytes_are_refused(name: str) -> None:
    empty = dataclasses.replace(mc2_request(), **{name: ""})
    expect(
        empty,
        161001,
        "CheckNotNull",
        name,
        f"{name} is empty: a communication group name is required",
    )
    long = dataclasses.replace(mc2_request(), **{name: "g" * 128})
    message = (
        f"{name} is 128 bytes long: a group name must be shorter than HCCL_GROUP_NAME_MAX "
        "(128 bytes)"
    )
    expect(long, 161002, "CheckParams", name, message)


def test_group_name_length_counts_utf8_bytes_as_strnlen_does() -> None:
    check(dataclasses.replace(mc2_request(), group_ep="é" * 63 + "g"))  # 127 bytes
    message = (
        "group_ep is 128 bytes long: a group name must be shorter than HCCL_GROUP_NAME_MAX "
        "(128 bytes)"
    )
    expect(
        dataclasses.replace(mc2_request(), group_ep="é" * 64),
        161002,
        "CheckParams",
        "group_ep",
        message,
    )


def _other(name: str) -> str:
    return "group_tp" if name == "group_ep" else "group_ep"


# ---- 3. CheckDtypeValid --------------------------------------------------------------------

DTYPE_CASES: list[
    tuple[tuple[DataType, DataType, DataType, DataType | None], tuple[str, str] | None]
] = [
    ((FP16, FP16, FP16, None), None),
    ((FP16, FP16, FP16, FP16), None),
    ((BF16, BF16, BF16, None), None),
    ((BF16, BF16, BF16, FP32), None),
    ((FP32, FP32, FP32, None), ("x", "x.dtype must be FP16 or BF16, got FP32")),
    ((DataType.INT8, FP16, FP16, None), ("x", "x.dtype must be FP16 or BF16, got INT8")),
    ((FP16, FP32, FP16, None), ("weight", "weight.dtype must be FP16 or BF16, got FP32")),
    ((FP16, FP16, FP32, None), ("out", "out.dtype must be FP16 or BF16, got FP32")),
    ((FP16, BF16, FP16, None), ("weight", "weight.dtype (BF16) must equal x.dtype (FP16)")),
    ((BF16, BF16, FP16, None), ("out", "out.dtype (FP16) must equal x.dtype (BF16)")),
    ((FP16, FP16, FP16, DataType.INT32), ("bias", "bias.dtype must be FP16 or FP32, got INT32")),
    # The op definition's third combination (BF16 bias) is refused, as aclnn refuses it.
    ((BF16, BF16, BF16, BF16), ("bias", "bias.dtype must be FP16 or FP32, got BF16")),
    ((FP16, FP16, FP16, FP32), ("bias", "bias.dtype must be FP16 when x.dtype is FP16, got FP32")),
    ((BF16, BF16, BF16, FP16), ("bias", "bias.dtype must be FP32 when x.dtype is BF16, got FP16")),
]


@pytest.mark.parametrize(
    ("dtypes", "refusal"),
    DTYPE_CASES,
    ids=["-".join(d.name if d else "none" for d in dtypes) for dtypes, _ in DTYPE_CASES],
)
def test_check_dtype_valid(
    dtypes: tuple[DataType, DataType, DataType, DataType | None], refusal: tuple[str, str] | None
) -> None:
    x, weight, out, bias = dtypes
    request = mc2_request(bias_rank=None if bias is None else 3)
    for operand, dtype in (("x", x), ("weight", weight), ("out", out), ("bias", bias)):
        if dtype is not None:
            request = with_dtype(request, operand, dtype)
    if refusal is None:
        config = check(request)
        assert (config.dtype, config.bias_dtype) == (x, bias)
    else:
        expect(request, 161002, "CheckDtypeValid", *refusal)


# ---- 4. CheckAttr ----------------------------------------------------------------------------


@pytest.mark.parametrize("shard", [0, 1])
@pytest.mark.parametrize("size", [2, 4, 8, 16, 32])
def test_check_attr_accepts_the_world_sizes(size: int, shard: int) -> None:
    assert check(mc2_request(ep=size, shard=shard)).ep == size
    assert check(mc2_request(tp=size, shard=shard)).tp == size


@pytest.mark.parametrize("size", [0, 1, 3, 64])
@pytest.mark.parametrize("name", ["ep_world_size", "tp_world_size"])
def test_check_attr_refuses_other_world_sizes(name: str, size: int) -> None:
    request = dataclasses.replace(mc2_request(), **{name: size})
    message = f"{name} must be one of 2, 4, 8, 16, 32, got {size}"
    expect(request, 161002, "CheckAttr", name, message)


@pytest.mark.parametrize("shard", [-1, 2])
def test_check_attr_refuses_y_shard_types_other_than_0_and_1(shard: int) -> None:
    assert check(mc2_request(shard=0)).y_shard_type == 0
    assert check(mc2_request(shard=1)).y_shard_type == 1
    message = f"y_shard_type must be 0 (reduce-scatter H) or 1 (reduce-scatter C), got {shard}"
    request = dataclasses.replace(mc2_request(), y_shard_type=shard)
    expect(request, 161002, "CheckAttr", "y_shard_type", message)


# ---- 5. CheckIfTensorThreeDim ----------------------------------------------------------------

THREE_DIM_CASES = [
    (1, False, "x", (4, 48), "x must be 3-D (E/ep, ep*tp*C/tp, M/tp), got 2-D shape (4, 48)"),
    (0, False, "x", (4, 48, 6, 1), "x must be 3-D (E/ep, ep*C, M/tp), got 4-D shape (4, 48, 6, 1)"),
    (1, False, "weight", (4, 6), "weight must be 3-D (E/ep, M/tp, H), got 2-D shape (4, 6)"),
    (
        1,
        True,
        "weight",
        (4, 4, 6, 1),
        "weight must be 3-D (E/ep, H, M/tp), got 4-D shape (4, 4, 6, 1)",
    ),
    (0, False, "out", (16, 12), "out must be 3-D (E, C, H/tp), got 2-D shape (16, 12)"),
    (1, False, "out", (16, 6, 4, 1), "out must be 3-D (E, C/tp, H), got 4-D shape (16, 6, 4, 1)"),
    (
        0,
        False,
        "bias",
        (2,),
        "bias must be 2-D (E/ep, H/tp) or 3-D (E/ep, 1, H/tp), got 1-D shape (2,)",
    ),
    (
        1,
        False,
        "bias",
        (4, 1, 1, 4),
        "bias must be 2-D (E/ep, H) or 3-D (E/ep, 1, H), got 4-D shape (4, 1, 1, 4)",
    ),
]


@pytest.mark.parametrize(("shard", "transpose", "operand", "shape", "message"), THREE_DIM_CASES)
def test_check_if_tensor_three_dim(
    shard: int, transpose: bool, operand: str, shape: tuple[int, ...], message: str
) -> None:
    request = mc2_request(shard=shard, transpose_weight=transpose, bias_rank=2)
    check(request)
    expect(with_shape(request, operand, shape), 161002, "CheckIfTensorThreeDim", operand, message)


# ---- 6. CheckTensorDimCommonShape ------------------------------------------------------------


@pytest.mark.parametrize("transpose", [False, True])
def test_check_tensor_dim_common_shape(transpose: bool) -> None:
    request = mc2_request(transpose_weight=transpose)
    check(request)
    rule = "CheckTensorDimCommonShape"
    message = "x.shape[0] * ep_world_size (4 * 4 = 16) must equal out.shape[0] (15): E = E/ep * ep"
    expect(with_dim(request, "out", 0, 15), 161002, rule, "out", message)
    message = "x.shape[0] * ep_world_size (4 * 4 = 16) must equal out.shape[0] (17): E = E/ep * ep"
    expect(with_dim(request, "out", 0, 17), 161002, rule, "out", message)
    message = "x.shape[0] (4) must equal weight.shape[0] (3): both are E/ep"
    expect(with_dim(request, "weight", 0, 3), 161002, rule, "weight", message)
    # M/tp is the weight's second stored dimension, or its third when the weight is transposed.
    m_axis = 2 if transpose else 1
    message = f"x.shape[2] (6) must equal weight.shape[{m_axis}] (5): both are M/tp"
    expect(with_dim(request, "weight", m_axis, 5), 161002, rule, "weight", message)


def test_a_transposed_weight_is_given_as_stored() -> None:
    """With transpose_weight the weight is (E/ep, H, M/tp); its logical view (E/ep, M/tp, H)
    passed as is does not fit."""
    logical = with_shape(mc2_request(transpose_weight=True), "weight", (4, 6, 4))
    message = "x.shape[2] (6) must equal weight.shape[2] (4): both are M/tp"
    expect(logical, 161002, "CheckTensorDimCommonShape", "weight", message)
    assert check(mc2_request(transpose_weight=True)) == dataclasses.replace(
        check(mc2_request()), transpose_weight=True
    )


# ---- 7. CheckTensorDimUniqueShape ------------------------------------------------------------

H0 = "H = H/tp * tp (y_shard_type 0)"
X0 = "x.shape[1] = ep * C (y_shard_type 0)"
H1 = "both are H (y_shard_type 1)"
X1 = "x.shape[1] = ep * tp * C/tp (y_shard_type 1)"
OUT2_TP = "out.shape[2] * tp_world_size"
OUT1_EP = "out.shape[1] * ep_world_size"
OUT1_EP_TP = "out.shape[1] * ep_world_size * tp_world_size"

#: (shard, transpose, changed operand, axis, value, the relation's sides, what they are).
UNIQUE_SHAPE_CASES = [
    # y_shard_type 0: out (16, 12, 2), x (4, 48, 6), weight (4, 6, 4).
    (0, False, "out", 2, 3, f"{OUT2_TP} (3 * 2 = 6)", "weight.shape[2] (4)", H0),
    # H = 5 is not a multiple of tp: the documented constraint, implied by this relation.
    (0, False, "weight", 2, 5, f"{OUT2_TP} (2 * 2 = 4)", "weight.shape[2] (5)", H0),
    (0, True, "weight", 1, 5, f"{OUT2_TP} (2 * 2 = 4)", "weight.shape[1] (5)", H0),
    (0, False, "out", 1, 11, f"{OUT1_EP} (11 * 4 = 44)", "x.shape[1] (48)", X0),
    (0, False, "x", 1, 50, f"{OUT1_EP} (12 * 4 = 48)", "x.shape[1] (50)", X0),
    # y_shard_type 1: out (16, 6, 4).
    (1, False, "out", 2, 2, "out.shape[2] (2)", "weight.shape[2] (4)", H1),
    (1, True, "out", 2, 2, "out.shape[2] (2)", "weight.shape[1] (4)", H1),
    (1, False, "out", 1, 5, f"{OUT1_EP_TP} (5 * 4 * 2 = 40)", "x.shape[1] (48)", X1),
    # 44 rows are a multiple of ep but not of ep*tp: C would not be a multiple of tp.
    (1, False, "x", 1, 44, f"{OUT1_EP_TP} (6 * 4 * 2 = 48)", "x.shape[1] (44)", X1),
]


@pytest.mark.parametrize(
    ("shard", "transpose", "operand", "axis", "value", "lhs", "rhs", "meaning"), UNIQUE_SHAPE_CASES
)
def test_check_tensor_dim_unique_shape(
    shard: int,
    transpose: bool,
    operand: str,
    axis: int,
    value: int,
    lhs: str,
    rhs: str,
    meaning: str,
) -> None:
    request = mc2_request(shard=shard, transpose_weight=transpose)
    check(request)
    refused = with_dim(request, operand, axis, value)
    message = f"{lhs} must equal {rhs}: {meaning}"
    expect(refused, 161002, "CheckTensorDimUniqueShape", "out", message)


# ---- 8. CheckBiasDim -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shard", "shape"), [(0, (4, 2)), (0, (4, 1, 2)), (1, (4, 4)), (1, (4, 1, 4))]
)
def test_check_bias_dim_accepts_2d_and_3d_biases(shard: int, shape: tuple[int, ...]) -> None:
    request = with_shape(mc2_request(shard=shard, bias_rank=2), "bias", shape)
    config = check(request)
    assert config.has_bias and config.bias_dtype is FP16


BIAS_DIM_CASES = [
    (0, (4, 4), "bias.shape[1] (4) must equal out.shape[2] (2): both are H/tp (y_shard_type 0)"),
    (0, (4, 1, 4), "bias.shape[2] (4) must equal out.shape[2] (2): both are H/tp (y_shard_type 0)"),
    (0, (4, 1, 1), "bias.shape[2] (1) must equal out.shape[2] (2): both are H/tp (y_shard_type 0)"),
    (1, (4, 2), "bias.shape[1] (2) must equal out.shape[2] (4): both are H (y_shard_type 1)"),
    (1, (4, 1, 5), "bias.shape[2] (5) must equal out.shape[2] (4): both are H (y_shard_type 1)"),
    (1, (4, 2, 4), "bias.shape[1] must be 1 in a 3-D bias (E/ep, 1, H), got 2"),
    (0, (4, 0, 2), "bias.shape[1] must be 1 in a 3-D bias (E/ep, 1, H/tp), got 0"),
    (1, (3, 4), "bias.shape[0] (3) must equal weight.shape[0] (4): both are E/ep"),
    (0, (5, 1, 2), "bias.shape[0] (5) must equal weight.shape[0] (4): both are E/ep"),
]


@pytest.mark.parametrize(("shard", "shape", "message"), BIAS_DIM_CASES)
def test_check_bias_dim_refuses(shard: int, shape: tuple[int, ...], message: str) -> None:
    request = with_shape(mc2_request(shard=shard, bias_rank=2), "bias", shape)
    expect(request, 161002, "CheckBiasDim", "bias", message)


# ---- 9. CheckShapeRange ----------------------------------------------------------------------

RANGE = "CheckShapeRange"


@pytest.mark.parametrize("shard", [0, 1])
def test_check_shape_range_m_over_tp(shard: int) -> None:
    for m_over_tp in (1, 65535):
        assert check(mc2_request(shard=shard, M=m_over_tp * 2)).M_over_tp == m_over_tp
    for m_over_tp in (0, 65536):
        message = f"x.shape[2] (M/tp) must be in [1, 65535], got {m_over_tp}"
        expect(mc2_request(shard=shard, M=m_over_tp * 2), 161002, RANGE, "x", message)


@pytest.mark.parametrize("shard", [0, 1])
def test_check_shape_range_e_over_ep(shard: int) -> None:
    for e_over_ep in (1, 32):
        assert check(mc2_request(ep=4, shard=shard, E=e_over_ep * 4)).E_over_ep == e_over_ep
    for e_over_ep in (0, 33):
        message = f"x.shape[0] (E/ep) must be in [1, 32], got {e_over_ep}"
        expect(mc2_request(ep=4, shard=shard, E=e_over_ep * 4), 161002, RANGE, "x", message)


def test_check_shape_range_e() -> None:
    assert check(mc2_request(ep=2, E=2)).E == 2  # E/ep 1, ep 2: the smallest E there is
    assert check(mc2_request(ep=16, E=512)).E == 512  # E/ep 32
    assert check(mc2_request(ep=32, E=512)).E == 512  # E/ep 16
    # E/ep <= 32 and ep <= 32 still allow E above 512: the range refuses it.
    for ep, E in ((32, 544), (32, 1024)):
        message = f"out.shape[0] (E) must be in [2, 512], got {E}"
        expect(mc2_request(ep=ep, E=E), 161002, RANGE, "out", message)
    # E = 1 and E = 513 are no E/ep * ep: the common shape refuses them first.
    common = "CheckTensorDimCommonShape"
    message = "x.shape[0] * ep_world_size (1 * 2 = 2) must equal out.shape[0] (1): E = E/ep * ep"
    expect(with_dim(mc2_request(ep=2, E=2), "out", 0, 1), 161002, common, "out", message)
    message = (
        "x.shape[0] * ep_world_size (16 * 32 = 512) must equal out.shape[0] (513): E = E/ep * ep"
    )
    expect(with_dim(mc2_request(ep=32, E=512), "out", 0, 513), 161002, common, "out", message)


@pytest.mark.parametrize("transpose", [False, True])
def test_check_shape_range_h(transpose: bool) -> None:
    h_axis = 1 if transpose else 2
    for H in (1, 65535):
        assert check(mc2_request(shard=1, H=H, transpose_weight=transpose)).H == H
    assert check(mc2_request(shard=0, H=65534, transpose_weight=transpose)).H == 65534
    for shard, H in ((1, 0), (1, 65536), (0, 0), (0, 65536)):
        request = mc2_request(shard=shard, H=H, transpose_weight=transpose)
        message = f"weight.shape[{h_axis}] (H) must be in [1, 65535], got {H}"
        expect(request, 161002, RANGE, "weight", message)


@pytest.mark.parametrize(("shard", "meaning"), [(0, "C"), (1, "C/tp")])
def test_check_shape_range_c(shard: int, meaning: str) -> None:
    assert check(mc2_request(shard=shard, C=2)).C == 2  # the smallest C either shard takes
    if shard == 0:
        assert check(mc2_request(shard=0, C=1)).C == 1
    message = f"out.shape[1] ({meaning}) must be positive, got 0: empty tensors are not supported"
    expect(mc2_request(shard=shard, C=0), 161002, RANGE, "out", message)


def test_check_shape_range_checks_in_acl_order() -> None:
    """M/tp before E/ep before E before C before H."""
    request = mc2_request(ep=32, E=33 * 32, M=0, C=0, H=0)
    expect(request, 161002, RANGE, "x", "x.shape[2] (M/tp) must be in [1, 65535], got 0")
    request = mc2_request(ep=32, E=33 * 32, C=0, H=0)
    expect(request, 161002, RANGE, "x", "x.shape[0] (E/ep) must be in [1, 32], got 33")
    request = mc2_request(ep=32, E=17 * 32, C=0, H=0)
    expect(request, 161002, RANGE, "out", "out.shape[0] (E) must be in [2, 512], got 544")
    message = "out.shape[1] (C/tp) must be positive, got 0: empty tensors are not supported"
    expect(mc2_request(C=0, H=0), 161002, RANGE, "out", message)


# ---- 10. GroupCheck --------------------------------------------------------------------------


def test_group_check_refuses_one_group_for_ep_and_tp() -> None:
    check(mc2_request(group_ep="a", group_tp="b"))
    check(mc2_request(group_ep=None, group_tp=None))
    message = "group_ep and group_tp must name different groups, both are 'a'"
    error = expect(
        mc2_request(group_ep="a", group_tp="a"), 161002, "GroupCheck", "group_tp", message
    )
    assert str(error).endswith("(infer-shape GroupCheck: ACLNN_ERR_PARAM_INVALID, 161002)")


# ---- the order ---------------------------------------------------------------------------------

#: One way to break each rule, in aclnn's order; each breaks only its own rule.
BREAKS: list[tuple[str, Callable[[Mc2Request], Mc2Request]]] = [
    ("CheckNotNull", lambda r: dataclasses.replace(r, x=None)),
    ("CheckParams", lambda r: dataclasses.replace(r, group_ep="g" * 128)),
    ("CheckDtypeValid", lambda r: with_dtype(r, "out", BF16)),
    ("CheckAttr", lambda r: dataclasses.replace(r, tp_world_size=64)),
    ("CheckIfTensorThreeDim", lambda r: with_shape(r, "bias", (4,))),
    ("CheckTensorDimCommonShape", lambda r: with_dim(r, "weight", 1, 7)),
    ("CheckTensorDimUniqueShape", lambda r: with_dim(r, "out", 2, 5)),
    ("CheckBiasDim", lambda r: with_dim(r, "bias", 1, 2)),
    ("CheckShapeRange", lambda r: with_dim(with_dim(r, "out", 1, 0), "x", 1, 0)),
    ("GroupCheck", lambda r: dataclasses.replace(r, group_tp="ep_group")),
]


@pytest.mark.parametrize("first", range(len(BREAKS)), ids=[rule for rule, _ in BREAKS])
def test_the_first_broken_rule_in_aclnn_order_is_reported(first: int) -> None:
    """Break every rule from ``first`` on (the earlier break wins where two touch one value):
    ``first`` is the one reported."""
    request = mc2_request(bias_rank=3)
    for rule, breaks in reversed(BREAKS[first:]):
        alone = breaks(mc2_request(bias_rank=3))
        with pytest.raises(Mc2Error) as info:
            check(alone)
        assert info.value.rule == rule
        request = breaks(request)
    with pytest.raises(Mc2Error) as info:
        check(request)
    assert info.value.rule == BREAKS[first][0]


# ---- the documented constraints the relations imply ----------------------------------------


@pytest.mark.parametrize(("ep", "tp", "shard"), list(itertools.product((2, 4), (2, 4), (0, 1))))
def test_the_documented_constraints_hold_for_every_accepted_request(
    ep: int, tp: int, shard: int
) -> None:
    """E a multiple of ep, H a multiple of tp (shard 0), C > 0 and a multiple of tp (shard 1):
    run the two dimensions each is read from over a grid, consistent or not, and no request the
    rules accept breaks one -- so none needs a rule of its own."""
    base = mc2_request(ep, tp, shard, E=ep, C=tp, H=tp, M=tp)
    span = range(2 * ep * tp + 1)
    sweeps = [
        (("x", 0), ("out", 0), range(4), span),  # E = out[0], E/ep = x[0]
        (("weight", 2), ("out", 2), span, span),  # H = weight[2], H/tp or H = out[2]
        (("x", 1), ("out", 1), span, span),  # C from out[1], x[1] = ep*C
    ]
    for first, second, first_values, second_values in sweeps:
        accepted: list[Mc2Config] = []
        for a, b in itertools.product(first_values, second_values):
            try:
                accepted.append(check(with_dim(with_dim(base, *first, a), *second, b)))
            except Mc2Error:
                continue
        assert accepted
        for config in accepted:
            assert config.E % ep == 0 and config.E >= 2
            assert config.C > 0
            if shard == 0:
                assert config.H % tp == 0
            else:
                assert config.C % tp == 0


# ---- the configuration -----------------------------------------------------------------------


def test_the_configuration_follows_the_tiling_derivation() -> None:
    """[tiling]: E and C from out (C = out[1] * tp for shard 1), E/ep and M/tp from x,
    H from the weight; out is the shape infer-shape derives ([infershape])."""
    shard1 = check(mc2_request(shard=1, bias_rank=2, dtype=BF16))
    assert shard1 == Mc2Config(
        dtype=BF16,
        bias_dtype=FP32,
        ep=4,
        tp=2,
        y_shard_type=1,
        transpose_weight=False,
        has_bias=True,
        E=16,
        E_over_ep=4,
        C=12,
        C_over_tp=6,
        H=4,
        H_over_tp=2,
        M_over_tp=6,
        out_shape=(16, 48 // (4 * 2), 4),
    )
    shard0 = check(mc2_request(shard=0, transpose_weight=True))
    assert shard0 == Mc2Config(
        dtype=FP16,
        bias_dtype=None,
        ep=4,
        tp=2,
        y_shard_type=0,
        transpose_weight=True,
        has_bias=False,
        E=16,
        E_over_ep=4,
        C=12,
        C_over_tp=6,
        H=4,
        H_over_tp=2,
        M_over_tp=6,
        out_shape=(16, 48 // 4, 4 // 2),
    )


def test_a_configuration_knows_whether_it_has_a_bias() -> None:
    config = check(mc2_request())
    with pytest.raises(ValueError, match="has_bias"):
        dataclasses.replace(config, has_bias=True)

"""The op table: DSL names, operand binding and normal form, type deduction and diagnostics."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import pypto_build.lowering.contracts.collective as collective_contract
from pypto_build.builtins import BuiltinRegistryError
from pypto_build.builtins.manifest import COLLECTIVE, load_package
from pypto_build.lowering.builtin_ops import BuiltinOp
from pypto_build.lowering.builtin_registry import builtin_ops, package_op
from pypto_build.lowering.diagnostics import InternalError, ProgramError, Span
from pypto_build.lowering.ir import (
    INDEX,
    AttrValue,
    BinaryOp,
    Call,
    ConstFloat,
    ConstInt,
    DataType,
    DistributedTensorType,
    Expr,
    GlobalVar,
    Layout,
    MakeTuple,
    ReduceOp,
    ScalarType,
    TensorType,
    Type,
    Var,
    WindowBufferType,
    compact_strides,
)
from pypto_build.lowering.ops.signature import Operands
from pypto_build.lowering.optable import (
    deduce_type,
    dsl_spelling,
    is_managed_collective,
    make_call,
    resolve_dsl_name,
)
from pypto_build.lowering.optable.table import lookup, program_ops

FP32 = DataType.FP32
INT32 = DataType.INT32
CALL_SPAN = Span("prog.py", 1, 4)


def at(line: int, col: int = 0) -> Span:
    return Span("prog.py", line, col)


def ints(*values: int, line: int = 90) -> MakeTuple:
    """A list literal of constants; element i sits at column i of ``line``."""
    return MakeTuple(tuple(ConstInt(v, span=at(line, i)) for i, v in enumerate(values)), at(line))


def tensor(
    *shape: int,
    dtype: DataType = FP32,
    layout: Layout = Layout.ND,
    stride: tuple[int, ...] | None = None,
    valid_shape: tuple[int, ...] | None = None,
) -> TensorType:
    return TensorType(shape, dtype, layout, stride, valid_shape)


def window(
    *shape: int,
    dtype: DataType = FP32,
    layout: Layout = Layout.ND,
    stride: tuple[int, ...] | None = None,
    valid_shape: tuple[int, ...] | None = None,
) -> DistributedTensorType:
    """A window tensor viewing the buffer variable ``buf``."""
    return DistributedTensorType(shape, dtype, layout, stride, valid_shape, window="buf")


def index_var(name: str = "i", line: int = 80) -> Var:
    return Var(name, INDEX, at(line))


def call(op: str, *args: AttrValue, **kwargs: AttrValue) -> Call:
    return make_call(op, args, tuple(kwargs.items()), CALL_SPAN)


def error_of(op: str, *args: AttrValue, **kwargs: AttrValue) -> ProgramError:
    with pytest.raises(ProgramError) as info:
        call(op, *args, **kwargs)
    assert info.value.phase == "frontend"
    return info.value


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("path", "op"),
    [
        ("pl.tensor.create", "tensor.create"),
        ("pl.create_tensor", "tensor.create"),
        ("pl.tensor.slice", "tensor.slice"),
        ("pl.slice", "tensor.slice"),
        ("pl.reshape", "tensor.reshape"),
        ("pl.view", "tensor.view"),
        ("pl.assemble", "tensor.assemble"),
        ("pl.transpose", "tensor.transpose"),
        ("pl.set_validshape", "tensor.set_validshape"),
        ("pl.write", "tensor.write"),
        ("pl.tensor.write", "tensor.write"),
        ("pld.window", "pld.window"),
        ("pld.alloc_window_buffer", "pld.alloc_window_buffer"),
        ("pld.world_size", "pld.world_size"),
        ("pld.tensor.all_to_all_v", "pld.tensor.all_to_all_v"),
        ("pld.tensor.indexed_all_to_all_v", "pld.tensor.indexed_all_to_all_v"),
        ("pld.tensor.allreduce", "pld.tensor.allreduce"),
    ],
)
def test_resolve_dsl_name(path: str, op: str) -> None:
    assert resolve_dsl_name(path) == op


@pytest.mark.parametrize(
    "path", ["tensor.create", "pl.range", "pl.submit", "pld.tensor.foo", "pl.window", "pl.create"]
)
def test_resolve_dsl_name_rejects_non_ops(path: str) -> None:
    assert resolve_dsl_name(path) is None


@pytest.mark.parametrize(
    ("op", "spelling"),
    [
        ("tensor.create", "pl.tensor.create"),
        ("tensor.set_validshape", "pl.tensor.set_validshape"),
        ("pld.window", "pld.window"),
        ("pld.tensor.all_to_all_v", "pld.tensor.all_to_all_v"),
    ],
)
def test_dsl_spelling(op: str, spelling: str) -> None:
    assert dsl_spelling(op) == spelling


def test_every_op_spelling_resolves_back() -> None:
    for op in program_ops():
        assert resolve_dsl_name(dsl_spelling(op)) == op


def test_dsl_spelling_of_unknown_op_is_internal_error() -> None:
    with pytest.raises(InternalError):
        dsl_spelling("tensor.frobnicate")


def test_managed_collectives() -> None:
    collectives = sorted(op for op in program_ops() if is_managed_collective(op))
    assert collectives == [
        "pld.tensor.all_to_all",
        "pld.tensor.all_to_all_v",
        "pld.tensor.allgather",
        "pld.tensor.allreduce",
        "pld.tensor.barrier",
        "pld.tensor.batch_matmul_reduce_scatter_all_to_all",
        "pld.tensor.broadcast",
        "pld.tensor.indexed_all_to_all_v",
        "pld.tensor.reduce_scatter",
    ]
    assert is_managed_collective("pld.tensor.all_to_all_v")
    assert not is_managed_collective("pld.window")
    assert not is_managed_collective("tensor.create")


# --------------------------------------------------------------------------- binding


def test_literal_operands_go_to_kwargs_whether_positional_or_keyword() -> None:
    by_position = call("tensor.create", ints(4, 8), FP32)
    by_keyword = call("tensor.create", ints(4, 8), dtype=FP32)
    assert by_position == by_keyword
    assert by_position.args == (ints(4, 8),)
    assert by_position.kwargs == (("dtype", FP32),)
    assert by_position.span == CALL_SPAN


def test_kwargs_follow_signature_order() -> None:
    result = call("tensor.create", ints(4), layout=Layout.DN, dtype=FP32)
    assert result.kwargs == (("dtype", FP32), ("layout", Layout.DN))


def test_optional_expression_operands_go_to_kwargs() -> None:
    src = Var("x", tensor(8, 8), at(10))
    result = call("tensor.slice", src, ints(4, 8), ints(0, 0), ints(2, 8))
    assert result.args == (src, ints(4, 8), ints(0, 0))
    assert result.kwargs == (("valid_shape", ints(2, 8)),)


def test_explicit_none_for_optional_operand_is_omitted() -> None:
    src = Var("x", tensor(8, 8), at(10))
    result = call("tensor.view", src, None, None, layout=None)
    assert result.kwargs == ()
    assert result.type == src.type


def test_plain_int_for_expression_operand_becomes_const_int() -> None:
    result = call("pld.alloc_window_buffer", 256)
    assert result.args == (ConstInt(256),)
    assert result.args[0].span == CALL_SPAN


def test_missing_required_argument() -> None:
    buf = Var("buf", WindowBufferType(64), at(10))
    err = error_of("pld.window", buf, dtype=FP32)
    assert err.message == "pld.window() missing required argument 'shape'"
    assert err.span == CALL_SPAN


def test_unexpected_keyword_argument() -> None:
    src = Var("x", tensor(8, 8), at(10))
    err = error_of("tensor.slice", src, ints(4, 8), ints(0, 0), foo=ConstInt(1, span=at(11)))
    assert err.message == "tensor.slice() got an unexpected keyword argument 'foo'"
    assert err.span == at(11)


def test_multiple_values_for_argument() -> None:
    src = Var("x", tensor(8, 8), at(10))
    err = error_of("tensor.reshape", src, ints(64), shape=ints(64, line=12))
    assert err.message == "tensor.reshape() got multiple values for argument 'shape'"
    assert err.span == at(12)


@pytest.mark.parametrize(
    ("op", "count", "message"),
    [
        ("pld.world_size", 1, "pld.world_size() takes 0 positional arguments but 1 was given"),
        ("tensor.reshape", 3, "tensor.reshape() takes 2 positional arguments but 3 were given"),
        (
            "tensor.slice",
            5,
            "tensor.slice() takes from 3 to 4 positional arguments but 5 were given",
        ),
        ("tensor.view", 4, "tensor.view() takes from 1 to 3 positional arguments but 4 were given"),
        ("pld.window", 3, "pld.window() takes 2 positional arguments but 3 were given"),
    ],
)
def test_too_many_positional_arguments(op: str, count: int, message: str) -> None:
    args = [ConstInt(i, span=at(20 + i)) for i in range(count)]
    err = error_of(op, *args)
    assert err.message == message
    first_extra = len([spec for spec in lookup(op).operands if not spec.keyword_only])
    assert err.span == at(20 + first_extra)


def test_literal_operand_of_wrong_kind() -> None:
    err = error_of("tensor.create", ints(4), Layout.ND)
    assert err.message == (
        "tensor.create() argument 'dtype' must be a data type (e.g. pl.FP32), got Layout.ND"
    )
    x = Var("x", INDEX, at(33))
    err = error_of("tensor.create", ints(4), dtype=x)
    assert "argument 'dtype' must be a data type" in err.message
    assert "'x' of type Scalar[index]" in err.message
    assert err.span == at(33)


def test_expression_operand_given_a_literal() -> None:
    err = error_of("tensor.reshape", "x", ints(4))
    assert err.message == "tensor.reshape() argument 'tensor' must be an expression, got 'x'"


def test_string_operand() -> None:
    result = call("pld.alloc_window_buffer", 64, name="stage")
    assert result.kwargs == (("name", "stage"),)
    err = error_of("pld.alloc_window_buffer", 64, name=3)
    assert (
        err.message == "pld.alloc_window_buffer() argument 'name' must be a string literal, got 3"
    )


def test_unknown_op_is_internal_error() -> None:
    with pytest.raises(InternalError):
        call("tensor.frobnicate")


# --------------------------------------------------------------------------- deduce_type


def test_deduce_type_agrees_with_make_call() -> None:
    src = Var("x", tensor(8, 8), at(10))
    for built in (
        call("tensor.create", ints(4, 8), FP32, Layout.DN),
        call("tensor.slice", src, ints(4, 8), MakeTuple((index_var(), ConstInt(0))), ints(2, 8)),
        call("tensor.view", src, ints(64), layout=Layout.DN),
        call("pld.alloc_window_buffer", ints(4, 4), dtype=FP32, name="b"),
        call("pld.world_size"),
        _a2av(core_num=ConstInt(4)),
    ):
        assert deduce_type(built) == built.type


def test_deduce_type_reports_user_errors_at_operand_spans() -> None:
    good = _a2av()
    bad_signal = Var("signal", window(4, 1, dtype=FP32), at(12))
    broken = dataclasses.replace(good, args=(*good.args[:2], bad_signal, *good.args[3:]))
    with pytest.raises(ProgramError) as info:
        deduce_type(broken)
    assert info.value.message == "pld.tensor.all_to_all_v signal must be INT32, got fp32"
    assert info.value.span == at(12)


@pytest.mark.parametrize(
    "broken",
    [
        Call(GlobalVar("kernel"), (), INDEX),
        Call("tensor.reshape", (Var("x", tensor(4)),), INDEX),
        Call("tensor.create", (ints(4),), INDEX),
        Call("tensor.create", (ints(4),), INDEX, kwargs=(("shape", ints(4)),)),
        Call("tensor.create", (ints(4),), INDEX, kwargs=(("dtype", FP32), ("bogus", 1))),
    ],
)
def test_deduce_type_rejects_malformed_calls(broken: Call) -> None:
    with pytest.raises(InternalError):
        deduce_type(broken)


# --------------------------------------------------------------------------- tensor ops


def test_create() -> None:
    assert call("tensor.create", ints(4, 8), FP32).type == TensorType((4, 8), FP32)
    assert call("tensor.create", ints(4), DataType.INT8, Layout.DN).type == TensorType(
        (4,), DataType.INT8, Layout.DN
    )


def test_create_rejects_dynamic_dim_at_the_dim() -> None:
    n = Var("n", INDEX, at(7, 12))
    err = error_of("tensor.create", MakeTuple((ConstInt(4), n), at(7, 5)), FP32)
    assert err.message == (
        "tensor.create shape dim 1 must be a compile-time integer, got 'n' of type Scalar[index]"
    )
    assert err.span == at(7, 12)


def test_create_rejects_non_positive_dim() -> None:
    err = error_of("tensor.create", ints(4, 0, line=7), FP32)
    assert err.message == "tensor.create shape dim 1 must be positive, got 0"
    assert err.span == at(7, 1)


def test_create_rejects_shape_that_is_not_a_list() -> None:
    err = error_of("tensor.create", ConstInt(4, span=at(7)), FP32)
    assert err.message == (
        "tensor.create shape must be a list of compile-time integers, "
        "got an expression of type Scalar[index]"
    )
    assert err.span == at(7)


def test_slice_type() -> None:
    src = Var("x", window(8, 16, stride=(32, 1)), at(10))
    result = call("tensor.slice", src, ints(4, 16), ints(2, 0))
    assert result.type == TensorType((4, 16), FP32)
    assert type(result.type) is TensorType


def test_slice_keeps_layout_and_records_static_valid_shape() -> None:
    src = Var("x", tensor(8, 16, layout=Layout.DN), at(10))
    result = call("tensor.slice", src, ints(4, 16), ints(0, 0), valid_shape=ints(3, 16))
    assert result.type == TensorType((4, 16), FP32, Layout.DN, valid_shape=(3, 16))


def test_slice_with_dynamic_offset_and_valid_shape() -> None:
    src = Var("x", tensor(8, 16), at(10))
    offsets = MakeTuple((index_var(), ConstInt(0)))
    result = call("tensor.slice", src, ints(4, 16), offsets, MakeTuple((index_var(), ConstInt(16))))
    assert result.type == TensorType((4, 16), FP32)


@pytest.mark.parametrize(
    ("shape", "offset", "message", "col"),
    [
        ((4, 16), (6, 0), "tensor.slice offset dim 0: [6, 10) exceeds the extent 8", 0),
        ((4, 8), (0, 9), "tensor.slice offset dim 1: [9, 17) exceeds the extent 16", 1),
        ((4, 16), (-1, 0), "tensor.slice offset dim 0 must be non-negative, got -1", 0),
    ],
)
def test_slice_out_of_bounds(
    shape: tuple[int, ...], offset: tuple[int, ...], message: str, col: int
) -> None:
    src = Var("x", tensor(8, 16), at(10))
    err = error_of("tensor.slice", src, ints(*shape), ints(*offset, line=11))
    assert err.message == message
    assert err.span == at(11, col)


def test_slice_with_dynamic_offset_still_bounds_the_size() -> None:
    src = Var("x", tensor(8, 16), at(10))
    offsets = MakeTuple((index_var(line=12), ConstInt(0)))
    err = error_of("tensor.slice", src, ints(9, 16), offsets)
    assert err.message == "tensor.slice offset dim 0: size 9 exceeds the extent 8"
    assert err.span == at(12)


def test_slice_rank_mismatches() -> None:
    src = Var("x", tensor(8, 16), at(10))
    err = error_of("tensor.slice", src, ints(8, line=11), ints(0, 0))
    assert (
        err.message
        == "tensor.slice shape [8] has rank 1 but the tensor Tensor[[8, 16], fp32] has rank 2"
    )
    assert err.span == at(11)
    err = error_of("tensor.slice", src, ints(8, 16), ints(0, line=12))
    assert err.message == "tensor.slice offset has 1 entries but the tensor has rank 2"
    assert err.span == at(12)


def test_slice_rejects_non_integer_offset_and_bad_valid_shape() -> None:
    src = Var("x", tensor(8, 16), at(10))
    f = Var("f", ScalarType(FP32), at(13))
    err = error_of("tensor.slice", src, ints(4, 16), MakeTuple((f, ConstInt(0))))
    assert (
        err.message == "tensor.slice offset dim 0 must be an integer, got 'f' of type Scalar[fp32]"
    )
    assert err.span == at(13)
    err = error_of("tensor.slice", src, ints(4, 16), ints(0, 0), valid_shape=ints(5, 16, line=14))
    assert err.message == "tensor.slice valid_shape dim 0 (5) must be in [0, 4]"
    assert err.span == at(14, 0)


def test_slice_of_non_tensor() -> None:
    err = error_of("tensor.slice", index_var(line=10), ints(4), ints(0))
    assert (
        err.message
        == "tensor.slice tensor must be a Tensor or DistributedTensor, got Scalar[index]"
    )
    assert err.span == at(10)


def test_reshape_keeps_window_and_drops_stride() -> None:
    src = Var("x", window(8, 16), at(10))
    assert call("tensor.reshape", src, ints(2, 64)).type == window(2, 64)
    padded = Var("p", tensor(8, 16, stride=(32, 1)), at(10))
    assert call("tensor.reshape", padded, ints(128)).type == tensor(128)


def test_reshape_element_count_must_match() -> None:
    src = Var("x", tensor(8, 16), at(10))
    err = error_of("tensor.reshape", src, ints(5, 16, line=11))
    assert err.message == (
        "tensor.reshape shape [5, 16] has 80 elements but the tensor Tensor[[8, 16], fp32] has 128"
    )
    assert err.span == at(11)


@pytest.mark.parametrize(
    ("valid", "shape", "carried"),
    [
        ((3, 16), (32, 4), (12, 4)),
        ((8, 16), (128,), None),
        ((3, 16), (8, 16), (3, 16)),
    ],
)
def test_reshape_carries_a_row_prefix_valid_shape(
    valid: tuple[int, ...], shape: tuple[int, ...], carried: tuple[int, ...] | None
) -> None:
    src = Var("x", tensor(8, 16, valid_shape=valid), at(10))
    assert call("tensor.reshape", src, ints(*shape)).type.valid_shape == carried  # type: ignore[attr-defined]


@pytest.mark.parametrize(("valid", "shape"), [((8, 6), (128,)), ((3, 16), (4, 32))])
def test_reshape_rejects_uncarriable_valid_shape(
    valid: tuple[int, ...], shape: tuple[int, ...]
) -> None:
    src = Var("x", tensor(8, 16, valid_shape=valid), at(10))
    err = error_of("tensor.reshape", src, ints(*shape))
    assert "cannot be carried to shape" in err.message
    assert err.span == at(10)


def test_view_replaces_given_metadata() -> None:
    src = Var("x", window(8, 16, stride=(16, 1)), at(10))
    assert call("tensor.view", src).type == src.type
    assert call("tensor.view", src, layout=Layout.DN).type == window(
        8, 16, stride=(16, 1), layout=Layout.DN
    )
    assert call("tensor.view", src, ints(4, 32)).type == window(4, 32)
    assert call("tensor.view", src, None, ints(2, 16)).type == window(
        8, 16, stride=(16, 1), valid_shape=(2, 16)
    )


def test_view_with_dynamic_valid_shape_keeps_the_static_region() -> None:
    src = Var("x", tensor(8, 16, valid_shape=(2, 16)), at(10))
    dynamic = MakeTuple((index_var(), ConstInt(16)))
    assert call("tensor.view", src, valid_shape=dynamic).type == src.type
    assert call("tensor.view", src, ints(4, 32), dynamic).type == tensor(4, 32, valid_shape=(1, 32))


def test_view_checks_element_count_and_valid_shape() -> None:
    src = Var("x", tensor(8, 16), at(10))
    err = error_of("tensor.view", src, ints(4, 4, line=11))
    assert "has 16 elements but the tensor" in err.message
    err = error_of("tensor.view", src, valid_shape=ints(8, 17, line=12))
    assert err.message == "tensor.view valid_shape dim 1 (17) must be in [0, 16]"
    assert err.span == at(12, 1)


def test_assemble() -> None:
    target = Var("t", window(8, 16), at(10))
    source = Var("s", tensor(4, 16), at(11))
    assert call("tensor.assemble", target, source, ints(4, 0)).type == target.type


def test_assemble_errors() -> None:
    target = Var("t", tensor(8, 16), at(10))
    err = error_of(
        "tensor.assemble", target, Var("s", tensor(4, 16, dtype=INT32), at(11)), ints(0, 0)
    )
    assert err.message == "tensor.assemble source dtype int32 does not match target dtype fp32"
    assert err.span == at(11)
    err = error_of("tensor.assemble", target, Var("s", tensor(4, 16), at(11)), ints(5, 0, line=12))
    assert err.message == "tensor.assemble offset dim 0: [5, 9) exceeds the extent 8"
    assert err.span == at(12, 0)
    err = error_of("tensor.assemble", target, Var("s", tensor(64), at(11)), ints(0))
    assert err.message.startswith("tensor.assemble source [64] has rank 1 but the tensor")


@pytest.mark.parametrize(("a", "b"), [(0, 1), (1, 0), (-1, -2), (0, -1)])
def test_transpose_swaps_shape_and_stride(a: int, b: int) -> None:
    src = Var("x", window(8, 16), at(10))
    result = call("tensor.transpose", src, ConstInt(a), ConstInt(b))
    assert result.type == window(16, 8, stride=(1, 16))
    assert isinstance(result.type, TensorType)
    assert not result.type.is_compact_nd


def test_transpose_of_explicit_stride_and_valid_shape() -> None:
    src = Var("x", tensor(2, 8, 16, stride=(256, 32, 1), valid_shape=(2, 4, 16)), at(10))
    result = call("tensor.transpose", src, ConstInt(0), ConstInt(2))
    assert result.type == tensor(16, 8, 2, stride=(1, 32, 256), valid_shape=(16, 4, 2))


def test_transpose_axis_errors() -> None:
    src = Var("x", tensor(8, 16), at(10))
    err = error_of("tensor.transpose", src, ConstInt(0), ConstInt(2, span=at(11)))
    assert err.message == "tensor.transpose axis2 2 is out of range for a rank-2 tensor"
    assert err.span == at(11)
    err = error_of("tensor.transpose", src, index_var(line=12), ConstInt(1))
    assert err.message == (
        "tensor.transpose axis1 must be a compile-time integer, got 'i' of type Scalar[index]"
    )
    assert err.span == at(12)


def test_set_validshape_static_is_recorded() -> None:
    src = Var("x", window(8, 16), at(10))
    result = call("tensor.set_validshape", src, ConstInt(3), ConstInt(16))
    assert result.type == window(8, 16, valid_shape=(3, 16))


@pytest.mark.parametrize("dynamic", ["rows", "cols"])
def test_set_validshape_dynamic_keeps_source_type(dynamic: str) -> None:
    src = Var("x", tensor(8, 16, valid_shape=(4, 16)), at(10))
    rows = index_var() if dynamic == "rows" else ConstInt(2)
    cols = index_var() if dynamic == "cols" else ConstInt(8)
    assert call("tensor.set_validshape", src, rows, cols).type == src.type


def test_set_validshape_errors() -> None:
    src = Var("x", tensor(8, 16), at(10))
    err = error_of("tensor.set_validshape", src, ConstInt(9, span=at(11)), ConstInt(1))
    assert err.message == "tensor.set_validshape valid_rows (9) must be in [0, 8]"
    assert err.span == at(11)
    f = Var("f", ScalarType(FP32), at(12))
    err = error_of("tensor.set_validshape", src, ConstInt(1), f)
    assert (
        err.message
        == "tensor.set_validshape valid_cols must be an integer, got 'f' of type Scalar[fp32]"
    )
    assert err.span == at(12)
    err = error_of("tensor.set_validshape", Var("y", tensor(8), at(13)), ConstInt(1), ConstInt(1))
    assert err.message == "tensor.set_validshape tensor must be 2D, got Tensor[[8], fp32]"
    assert err.span == at(13)


def test_write() -> None:
    src = Var("x", tensor(8, 16), at(10))
    assert (
        call("tensor.write", src, MakeTuple((index_var(), ConstInt(3))), ConstFloat(1.0)).type
        == src.type
    )
    err = error_of("tensor.write", src, ints(8, 0, line=11), ConstFloat(1.0))
    assert err.message == "tensor.write indices dim 0: [8, 9) exceeds the extent 8"
    assert err.span == at(11, 0)
    err = error_of("tensor.write", src, ints(0, 0), Var("t", tensor(1), at(12)))
    assert err.message == "tensor.write value must be a scalar, got 't' of type Tensor[[1], fp32]"
    assert err.span == at(12)


# --------------------------------------------------------------------------- window primitives


def test_alloc_window_buffer() -> None:
    assert call("pld.alloc_window_buffer", ConstInt(4096)).type == WindowBufferType(4096)
    assert call("pld.alloc_window_buffer", ints(8, 16), dtype=FP32).type == WindowBufferType(512)
    assert call("pld.alloc_window_buffer", ints(4), dtype=DataType.INT8).type == WindowBufferType(4)


def test_alloc_window_buffer_errors() -> None:
    err = error_of("pld.alloc_window_buffer", ints(8, 16, line=11))
    assert err.message == "pld.alloc_window_buffer size is a shape [8, 16], so dtype= is required"
    assert err.span == at(11)
    err = error_of("pld.alloc_window_buffer", ConstInt(64), dtype=FP32)
    assert err.message == (
        "pld.alloc_window_buffer dtype applies only to a shape size, but size is a byte count"
    )
    assert err.span == CALL_SPAN
    err = error_of("pld.alloc_window_buffer", ConstInt(0, span=at(12)))
    assert err.message == "pld.alloc_window_buffer size must be positive, got 0"
    assert err.span == at(12)
    err = error_of("pld.alloc_window_buffer", index_var(line=13))
    assert err.message.startswith("pld.alloc_window_buffer size must be a byte count or a shape")
    assert err.span == at(13)


def test_window() -> None:
    buf = Var("stage_buf", WindowBufferType(512), at(10))
    result = call("pld.window", buf, ints(8, 16), dtype=FP32)
    assert result.type == DistributedTensorType((8, 16), FP32, window="stage_buf")
    assert result.args == (buf, ints(8, 16))
    assert result.kwargs == (("dtype", FP32),)


def test_window_errors() -> None:
    buf = Var("stage_buf", WindowBufferType(256), at(10))
    err = error_of("pld.window", buf, ints(8, 16, line=11), dtype=FP32)
    assert err.message == (
        "pld.window shape [8, 16] of fp32 needs 512 bytes but window buffer 'stage_buf' has 256"
    )
    assert err.span == at(11)
    not_buf = Var("t", tensor(8, 16), at(12))
    err = error_of("pld.window", not_buf, ints(8, 16), dtype=FP32)
    assert err.message == (
        "pld.window buf must be a pld.alloc_window_buffer variable, got 't' of type "
        "Tensor[[8, 16], fp32]"
    )
    assert err.span == at(12)


def test_world_size() -> None:
    result = call("pld.world_size")
    assert result == Call("pld.world_size", (), INDEX)


# --------------------------------------------------------------------------- all_to_all_v

A2AV_OPERANDS = ("input", "target", "signal", "send_counts", "recv_counts")
A2AV_TYPES: dict[str, Type] = {
    "input": window(8, 16),
    "target": window(8, 16),
    "signal": window(4, 1, dtype=INT32),
    "send_counts": window(4, dtype=INT32),
    "recv_counts": window(4, 1, dtype=INT32),
}
INDEXED_OPERANDS = (*A2AV_OPERANDS, "index")
INDEXED_TYPES: dict[str, Type] = {
    "input": tensor(20, 16),
    "target": window(8, 16),
    "signal": window(4, 2, dtype=INT32),
    "send_counts": window(4, dtype=INT32),
    "recv_counts": tensor(4, 1, dtype=INT32),
    "index": tensor(8, dtype=INT32),
}
OPERAND_LINE = {name: 10 + i for i, name in enumerate(INDEXED_OPERANDS)}


def _operand(name: str, ty: Type) -> Var:
    return Var(name, ty, at(OPERAND_LINE[name]))


def _collective(
    op: str, names: tuple[str, ...], defaults: dict[str, Type], **overrides: Type | Expr
) -> Call:
    args: list[AttrValue] = []
    for name in names:
        given = overrides.pop(name, defaults[name])
        args.append(_operand(name, given) if isinstance(given, Type) else given)
    kwargs: list[tuple[str, AttrValue]] = []
    for key, value in overrides.items():
        assert not isinstance(value, Type), f"keyword operand {key} takes an expression"
        kwargs.append((key, value))
    return make_call(op, args, kwargs, CALL_SPAN)


def _a2av(**overrides: Type | Expr) -> Call:
    return _collective("pld.tensor.all_to_all_v", A2AV_OPERANDS, A2AV_TYPES, **overrides)


def _indexed(**overrides: Type | Expr) -> Call:
    return _collective(
        "pld.tensor.indexed_all_to_all_v", INDEXED_OPERANDS, INDEXED_TYPES, **overrides
    )


Build = Callable[..., Call]
COLLECTIVES: list[tuple[Build, str, tuple[str, ...], dict[str, Type]]] = [
    (_a2av, "pld.tensor.all_to_all_v", A2AV_OPERANDS, A2AV_TYPES),
    (_indexed, "pld.tensor.indexed_all_to_all_v", INDEXED_OPERANDS, INDEXED_TYPES),
]
EACH_COLLECTIVE = [
    pytest.param(build, op, id=op.removeprefix("pld.tensor.")) for build, op, _, _ in COLLECTIVES
]
#: (build, op, operand name, that operand's valid type) for every tensor operand of both ops.
EACH_OPERAND = [
    pytest.param(build, op, name, defaults[name], id=f"{op.removeprefix('pld.tensor.')}-{name}")
    for build, op, names, defaults in COLLECTIVES
    for name in names
]


def _rejection(build: Build, **overrides: Type | Expr) -> ProgramError:
    with pytest.raises(ProgramError) as info:
        build(**overrides)
    assert info.value.phase == "frontend"
    return info.value


@pytest.mark.parametrize(
    "builtin",
    [builtin for builtin in builtin_ops() if builtin.package.contract == COLLECTIVE],
    ids=lambda b: b.stem,
)
def test_a_builtin_public_op_takes_its_manifest_operands_then_core_num(builtin: object) -> None:

    assert isinstance(builtin, BuiltinOp)
    opdef = lookup(builtin.op)
    assert [spec.name for spec in opdef.operands] == [*builtin.names, "core_num"]
    assert opdef.effects.view_of == builtin.result_index
    internal = lookup(builtin.builtin_op)
    assert [spec.name for spec in internal.operands] == [*builtin.names, "dtype", "core_num"]


def test_all_to_all_v_type_is_target_type() -> None:
    result = _a2av()
    assert result.type == A2AV_TYPES["target"]
    assert [arg.name for arg in result.args] == list(A2AV_OPERANDS)  # type: ignore[attr-defined]
    assert result.kwargs == ()


#: Operand types, replacing those of A2AV_TYPES, that all_to_all_v accepts.
A2AV_ACCEPTS: list[dict[str, Type]] = [
    {"input": tensor(8, 16)},
    {"send_counts": tensor(4, dtype=INT32)},
    {"send_counts": window(4, 1, dtype=INT32)},
    {"send_counts": tensor(4, 1, dtype=INT32)},
    {"signal": window(4, 8, dtype=INT32)},
    {"input": window(8, 16, stride=(16, 1))},
    {"target": window(8, 16, valid_shape=(8, 16))},
    {"input": tensor(8, 16, dtype=DataType.INT8), "target": window(8, 16, dtype=DataType.INT8)},
]

#: (operand, its type, the message after the op name) the all_to_all_v deducer rejects.
A2AV_REJECTS: list[tuple[str, Type, str]] = [
    ("input", INDEX, "input must be a Tensor or DistributedTensor, got Scalar[index]"),
    (
        "input",
        window(8, 16, dtype=DataType.INT8),
        "input dtype int8 does not match target dtype fp32",
    ),
    (
        "input",
        tensor(6, 16),
        "input must have shape [NR*MAX_RECV, SIZE], got [6, 16] "
        "(NR*MAX_RECV = 8 from target dim 0, SIZE = 16 from target dim 1)",
    ),
    (
        "input",
        tensor(8, 12),
        "input must have shape [NR*MAX_RECV, SIZE], got [8, 12] "
        "(NR*MAX_RECV = 8 from target dim 0, SIZE = 16 from target dim 1)",
    ),
    (
        "input",
        tensor(128),
        "input must have shape [NR*MAX_RECV, SIZE], got [128] "
        "(NR*MAX_RECV = 8 from target dim 0, SIZE = 16 from target dim 1)",
    ),
    (
        "target",
        tensor(8, 16),
        "target must be a DistributedTensor (a pld.window view), got Tensor[[8, 16], fp32]",
    ),
    ("target", window(2, 4, 16), "target must have shape [NR*MAX_RECV, SIZE], got [2, 4, 16]"),
    ("target", window(0, 16), "target dims must be positive, got [0, 16]"),
    (
        "signal",
        tensor(4, 1, dtype=INT32),
        "signal must be a DistributedTensor (a pld.window view), got Tensor[[4, 1], int32]",
    ),
    ("signal", window(4, 1), "signal must be INT32, got fp32"),
    ("signal", window(4, dtype=INT32), "signal must have shape [NR, S], got [4]"),
    ("signal", window(0, 1, dtype=INT32), "signal dims must be positive, got [0, 1]"),
    ("signal", window(4, 0, dtype=INT32), "signal dims must be positive, got [4, 0]"),
    (
        "send_counts",
        INDEX,
        "send_counts must be a Tensor or DistributedTensor, got Scalar[index]",
    ),
    ("send_counts", window(4, dtype=DataType.INT64), "send_counts must be INT32, got int64"),
    (
        "send_counts",
        window(8, dtype=INT32),
        "send_counts must have shape [NR] or [NR, 1], got [8] (NR = 4 from signal dim 0)",
    ),
    (
        "send_counts",
        window(4, 2, dtype=INT32),
        "send_counts must have shape [NR] or [NR, 1], got [4, 2] (NR = 4 from signal dim 0)",
    ),
    (
        "recv_counts",
        tensor(4, 1, dtype=INT32),
        "recv_counts must be a DistributedTensor (a pld.window view), got Tensor[[4, 1], int32]",
    ),
    ("recv_counts", window(4, 1, dtype=DataType.INT8), "recv_counts must be INT32, got int8"),
    (
        "recv_counts",
        window(4, dtype=INT32),
        "recv_counts must have shape [NR, 1], got [4] (NR = 4 from signal dim 0)",
    ),
    (
        "recv_counts",
        window(2, 1, dtype=INT32),
        "recv_counts must have shape [NR, 1], got [2, 1] (NR = 4 from signal dim 0)",
    ),
]


# ---- rejections shared by both lowered collectives, for every tensor operand


def _tensor_type(ty: Type) -> TensorType:
    assert isinstance(ty, TensorType)
    return ty


@pytest.mark.parametrize(("build", "op", "operand", "ty"), EACH_OPERAND)
@pytest.mark.parametrize("layout", [Layout.DN, Layout.NZ])
def test_rejects_non_nd_layout(
    build: Build, op: str, operand: str, ty: Type, layout: Layout
) -> None:
    err = _rejection(build, **{operand: dataclasses.replace(_tensor_type(ty), layout=layout)})
    assert err.message == f"{op} {operand} must have ND layout, got {layout.value}"
    assert err.span == at(OPERAND_LINE[operand])


@pytest.mark.parametrize(("build", "op", "operand", "ty"), EACH_OPERAND)
def test_rejects_non_packed_stride(build: Build, op: str, operand: str, ty: Type) -> None:
    shape = _tensor_type(ty).shape
    padded = tuple(2 * s for s in compact_strides(shape))
    err = _rejection(build, **{operand: dataclasses.replace(_tensor_type(ty), stride=padded)})
    assert err.message == (
        f"{op} {operand} must be packed row-major: stride {list(padded)} is not the compact "
        f"stride {list(compact_strides(shape))} of shape {list(shape)}"
    )
    assert err.span == at(OPERAND_LINE[operand])


@pytest.mark.parametrize(("build", "op", "operand", "ty"), EACH_OPERAND)
def test_rejects_narrow_valid_shape(build: Build, op: str, operand: str, ty: Type) -> None:
    shape = _tensor_type(ty).shape
    narrow = (shape[0] - 1, *shape[1:])
    err = _rejection(build, **{operand: dataclasses.replace(_tensor_type(ty), valid_shape=narrow)})
    assert err.message == (
        f"{op} {operand} valid_shape {list(narrow)} is narrower than its shape {list(shape)}; "
        "the collective moves whole tensors"
    )
    assert err.span == at(OPERAND_LINE[operand])


@pytest.mark.parametrize(("build", "op"), EACH_COLLECTIVE)
def test_rejects_input_same_expression_as_target(build: Build, op: str) -> None:
    target = _operand("target", window(8, 16))
    same = Var("target", window(8, 16), at(40))
    err = _rejection(build, input=same, target=target)
    assert err.message == (
        f"{op} input must not be the same expression as target: peers write target while this "
        "rank still reads input"
    )
    assert err.span == at(40)


@pytest.mark.parametrize(("build", "op"), EACH_COLLECTIVE)
@pytest.mark.parametrize(
    "core_num",
    [ConstInt(1), ConstInt(8), Var("cores", INDEX), Var("cores", ScalarType(INT32)), 4],
    ids=["const1", "const8", "var_index", "var_int32", "python_int"],
)
def test_core_num_accepted(build: Build, op: str, core_num: AttrValue) -> None:
    result = build(core_num=core_num)
    expected = ConstInt(core_num) if isinstance(core_num, int) else core_num
    assert result.kwargs == (("core_num", expected),)
    assert deduce_type(result) == result.type


@pytest.mark.parametrize(("build", "op"), EACH_COLLECTIVE)
@pytest.mark.parametrize(
    ("core_num", "got"),
    [
        (ConstFloat(1.0, span=at(50)), "an expression of type Scalar[fp32]"),
        (Var("f", ScalarType(FP32), at(50)), "'f' of type Scalar[fp32]"),
        (
            BinaryOp("+", Var("n", INDEX), ConstInt(1), INDEX, at(50)),
            "an expression of type Scalar[index]",
        ),
        (Var("t", tensor(4), at(50)), "'t' of type Tensor[[4], fp32]"),
    ],
    ids=["const_float", "float_var", "binary_op", "tensor"],
)
def test_core_num_rejected(build: Build, op: str, core_num: Expr, got: str) -> None:
    err = _rejection(build, core_num=core_num)
    assert err.message == (
        f"{op} core_num must be a compile-time integer or an integer scalar variable, got {got}"
    )
    assert err.span == at(50)


# ---- indexed_all_to_all_v


def test_indexed_type_and_operand_kinds() -> None:
    result = _indexed(core_num=ConstInt(2))
    assert result.type == INDEXED_TYPES["target"]
    assert [arg.name for arg in result.args] == list(INDEXED_OPERANDS)  # type: ignore[attr-defined]
    assert result.kwargs == (("core_num", ConstInt(2)),)


#: Operand types, replacing those of INDEXED_TYPES, that indexed_all_to_all_v accepts.
INDEXED_ACCEPTS: list[dict[str, Type]] = [
    {"input": window(3, 16)},
    {"recv_counts": window(4, 1, dtype=INT32)},
    {"index": window(8, dtype=INT32)},
    {"signal": window(4, 1, dtype=INT32)},
]


#: (operand, its type, the message after the op name) the indexed_all_to_all_v deducer rejects.
INDEXED_REJECTS: list[tuple[str, Type, str]] = [
    (
        "input",
        tensor(20, 8),
        "input must have shape [N, SIZE], got [20, 8] (SIZE = 16 from target dim 1)",
    ),
    (
        "input",
        tensor(20, 16, dtype=INT32),
        "input dtype int32 does not match target dtype fp32",
    ),
    (
        "target",
        tensor(8, 16),
        "target must be a DistributedTensor (a pld.window view), got Tensor[[8, 16], fp32]",
    ),
    ("signal", window(4, 2, dtype=DataType.INT16), "signal must be INT32, got int16"),
    (
        "send_counts",
        tensor(4, dtype=INT32),
        "send_counts must be a DistributedTensor (a pld.window view), got Tensor[[4], int32]",
    ),
    (
        "send_counts",
        window(4, 1, dtype=INT32),
        "send_counts must have shape [NR], got [4, 1] (NR = 4 from signal dim 0)",
    ),
    (
        "recv_counts",
        tensor(4, dtype=INT32),
        "recv_counts must have shape [NR, 1], got [4] (NR = 4 from signal dim 0)",
    ),
    ("index", tensor(8), "index must be INT32, got fp32"),
    (
        "index",
        tensor(6, dtype=INT32),
        "index must have shape [NR*MAX_RECV], got [6] (NR*MAX_RECV = 8 from target dim 0)",
    ),
    (
        "index",
        tensor(8, 1, dtype=INT32),
        "index must have shape [NR*MAX_RECV], got [8, 1] (NR*MAX_RECV = 8 from target dim 0)",
    ),
    ("index", INDEX, "index must be a Tensor or DistributedTensor, got Scalar[index]"),
]


@pytest.mark.parametrize(
    ("build", "defaults", "overrides"),
    [
        *(pytest.param(_a2av, A2AV_TYPES, o, id=f"all_to_all_v-{o}") for o in A2AV_ACCEPTS),
        *(
            pytest.param(_indexed, INDEXED_TYPES, o, id=f"indexed_all_to_all_v-{o}")
            for o in INDEXED_ACCEPTS
        ),
    ],
)
def test_collective_accepts(
    build: Build, defaults: dict[str, Type], overrides: dict[str, Type]
) -> None:
    assert build(**overrides).type == overrides.get("target", defaults["target"])


@pytest.mark.parametrize(
    ("build", "op", "operand", "ty", "message"),
    [
        *((_a2av, "pld.tensor.all_to_all_v", *case) for case in A2AV_REJECTS),
        *((_indexed, "pld.tensor.indexed_all_to_all_v", *case) for case in INDEXED_REJECTS),
    ],
)
def test_collective_rejects(build: Build, op: str, operand: str, ty: Type, message: str) -> None:
    err = _rejection(build, **{operand: ty})
    assert err.message == f"{op} {message}"
    assert err.span == at(OPERAND_LINE[operand])


@pytest.mark.parametrize(
    ("build", "op", "signal"),
    [
        pytest.param(_a2av, "pld.tensor.all_to_all_v", window(3, 1, dtype=INT32), id="a2av"),
        pytest.param(
            _indexed, "pld.tensor.indexed_all_to_all_v", window(3, 2, dtype=INT32), id="indexed"
        ),
    ],
)
def test_nr_must_divide_target_rows(build: Build, op: str, signal: Type) -> None:
    err = _rejection(build, signal=signal)
    assert err.message == (
        f"{op} target dim 0 (8) must be divisible by NR (3, signal dim 0): "
        "round the window's row count up to a multiple of NR"
    )
    assert err.span == at(OPERAND_LINE["target"])


#: A package whose shape symbols bind every factor of a product: the third-party allgather of
#: tests/third_party (target [NR*M, SIZE] beside input [M, SIZE] and signal [NR, S]).
ALLGATHER_PACKAGE = (
    Path(__file__).resolve().parents[1]
    / "third_party"
    / "acme-collectives"
    / "acme_collectives"
    / "allgather"
)


def _allgather_type(**types: Type) -> Type:
    """The type the allgather package's public op deduces, read from its folder (uninstalled:
    this process's op table does not know it)."""
    builtin = package_op(load_package(ALLGATHER_PACKAGE))
    opdef = builtin.public_def
    values: dict[str, AttrValue] = {name: _operand(name, ty) for name, ty in types.items()}
    return opdef.deduce(Operands(opdef, values, CALL_SPAN))


def test_a_product_of_bound_symbols_must_equal_their_product() -> None:
    signal = window(4, 2, dtype=INT32)
    assert _allgather_type(input=tensor(2, 16), target=window(8, 16), signal=signal) == window(
        8, 16
    )
    # 12 rows are a multiple of NR = 4 and of M = 2, but not NR*M.
    with pytest.raises(ProgramError) as info:
        _allgather_type(input=tensor(2, 16), target=window(12, 16), signal=signal)
    assert info.value.message == (
        "pld.tensor.allgather target dim 0 (12) must be NR*M = 8 "
        "(NR = 4 from signal dim 0, M = 2 from input dim 0)"
    )
    assert info.value.span == at(OPERAND_LINE["target"])


KNOWN_DTYPES = "fp32, fp16, bf16, int8, uint8, int16, int32, int64, index, bool"


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        pytest.param(
            'dtype = "int32"',
            'dtype = "i32"',
            f"operands[2].dtype: unknown dtype 'i32' (known: {KNOWN_DTYPES})",
            id="operand-dtype",
        ),
        pytest.param(
            "[dtypes.int8]",
            "[dtypes.i8]",
            f"dtypes.i8: unknown dtype 'i8' (known: {KNOWN_DTYPES})",
            id="variant-dtype",
        ),
        pytest.param(
            'role = "result"',
            'role = "output"',
            "operands: must have exactly one operand of role 'result' (the window the op writes "
            "and returns), got 0",
            id="no-result",
        ),
        pytest.param(
            'role = "result"\ndirection = "InOut"\nwindow = true',
            'role = "result"\ndirection = "InOut"\nwindow = false',
            "operands[1]: the 'result' operand must be a window of the payload dtype "
            '(window = true, dtype = "payload")',
            id="result-not-a-window",
        ),
        pytest.param(
            'shapes = [["NR", "S"]]',
            'shapes = [["NR", "S", 1]]',
            "operands[2]: a 'signal' operand must be a window (window = true) of shape [NR] or "
            "[NR, S]",
            id="signal-3d",
        ),
    ],
)
def test_taking_a_package_in_checks_its_manifest_in_program_model_terms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str, new: str, message: str
) -> None:
    """What the builtins leaf cannot check (dtype names, the roles the rails read) is refused,
    naming the manifest and the key, when the op table takes the package in."""
    root = shutil.copytree(ALLGATHER_PACKAGE, tmp_path / "allgather")
    manifest = root / "builtin.toml"
    text = manifest.read_text(encoding="utf-8")
    assert old in text, old
    manifest.write_text(text.replace(old, new, 1), encoding="utf-8")
    package = load_package(root)
    with pytest.raises(BuiltinRegistryError) as error:
        package_op(package)
    assert str(error.value) == f"{manifest}: {message}"


def test_indexed_missing_index() -> None:
    names = A2AV_OPERANDS
    args = [_operand(name, INDEXED_TYPES[name]) for name in names]
    with pytest.raises(ProgramError) as info:
        make_call("pld.tensor.indexed_all_to_all_v", args, (), CALL_SPAN)
    assert info.value.message == (
        "pld.tensor.indexed_all_to_all_v() missing required argument 'index'"
    )


# ---- parse-only collectives


#: Upstream's spellings of the collectives without a package (hw-native-sys/pypto e2d0f78,
#: python/pypto/language/distributed/op/tensor_ops.py): operands, keywords, the rebound window.
UPSTREAM_COLLECTIVES = [
    ("pld.tensor.allreduce", ("b",), {}, "b"),
    ("pld.tensor.allreduce", ("b", "s"), {"op": ReduceOp.Sum}, "b"),
    ("pld.tensor.allreduce", ("b", "s"), {"op": ReduceOp.Max, "mode": "ring", "core_num": 2}, "b"),
    ("pld.tensor.allgather", ("a", "b", "s"), {}, "b"),
    ("pld.tensor.reduce_scatter", ("b", "s"), {"op": ReduceOp.Prod}, "b"),
    ("pld.tensor.reduce_scatter", ("b", "s"), {}, "b"),
    ("pld.tensor.broadcast", ("b", "s"), {"root": 0}, "b"),
    ("pld.tensor.all_to_all", ("a", "b", "s"), {}, "b"),
    ("pld.tensor.barrier", ("s",), {}, "s"),
]


@pytest.mark.parametrize(("op", "names", "keywords", "result"), UPSTREAM_COLLECTIVES)
def test_parse_only_collectives_take_upstreams_operands(
    op: str, names: tuple[str, ...], keywords: dict[str, AttrValue], result: str
) -> None:
    values = {
        "a": Var("a", tensor(8, 16), at(10)),
        "b": Var("b", window(8, 16), at(11)),
        "s": Var("s", window(4, 1, dtype=INT32), at(12)),
    }
    args = tuple(values[name] for name in names)
    call = make_call(op, args, tuple(keywords.items()), CALL_SPAN)
    assert call.type == values[result].type
    # A required operand is an arg; allreduce's optional signal is a keyword operand.
    operands = [*call.args, *(value for _, value in call.kwargs if isinstance(value, Expr))]
    assert operands == [*args]
    assert {k: v for k, v in call.kwargs if not isinstance(v, Expr)} == keywords
    assert deduce_type(call) == call.type


def test_allreduce_signal_is_optional_and_takes_no_third_operand() -> None:
    args = [Var(n, window(8, 16), at(10)) for n in ("a", "b", "s")]
    err = error_of("pld.tensor.allreduce", *args)
    assert err.message == (
        "pld.tensor.allreduce() takes from 1 to 2 positional arguments but 3 were given"
    )


def test_broadcast_needs_its_root() -> None:
    args = [Var(n, window(8, 16), at(10)) for n in ("b", "s")]
    err = error_of("pld.tensor.broadcast", *args)
    assert err.message == "pld.tensor.broadcast() missing required argument 'root'"


def test_reduction_must_be_a_reduce_op() -> None:
    args = [Var(n, window(8, 16), at(10)) for n in ("b", "s")]
    with pytest.raises(ProgramError) as info:
        make_call("pld.tensor.reduce_scatter", args, (("op", "sum"),), CALL_SPAN)
    err = info.value
    assert err.message == (
        "pld.tensor.reduce_scatter() argument 'op' must be a reduction (pld.ReduceOp.Sum, Max, "
        "Min or Prod), got 'sum'"
    )


def test_parse_only_collective_rejects_unknown_keyword() -> None:
    args = [Var(n, window(8, 16), at(10)) for n in ("a", "b", "s")]
    err = error_of("pld.tensor.allgather", *args, root=0)
    assert err.message == "pld.tensor.allgather() got an unexpected keyword argument 'root'"


# ---- the collective contract remembers the operand types it accepted


def _counting_type_checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the runs of the collective contract's type checks from now on."""
    runs: list[int] = []
    checks = collective_contract._check_types

    def counted(*args: Any) -> None:
        runs.append(1)
        checks(*args)

    monkeypatch.setattr(collective_contract, "_check_types", counted)
    return runs


def _unseen_a2av_types() -> dict[str, Type]:
    """all_to_all_v operand types no other test uses (so none is remembered yet)."""
    return {"input": window(4 * 97, 16), "target": window(4 * 97, 16)}


def test_collective_type_checks_run_once_per_accepted_types(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runs = _counting_type_checks(monkeypatch)
    types = _unseen_a2av_types()
    first, second = _a2av(**types), _a2av(**types)
    assert len(runs) == 1
    assert first == second
    _a2av(**{**types, "input": tensor(4 * 97, 16)})
    assert len(runs) == 2


def test_collective_rejection_is_not_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _counting_type_checks(monkeypatch)
    rejected = {**_unseen_a2av_types(), "input": tensor(6, 16)}
    for _ in range(2):
        err = _rejection(_a2av, **rejected)
        assert err.message.startswith("pld.tensor.all_to_all_v input must have shape")
    assert len(runs) == 2


def test_collective_expression_checks_run_on_remembered_types() -> None:
    _a2av()  # the default types are accepted, and remembered
    same = Var("target", A2AV_TYPES["target"], at(40))
    err = _rejection(_a2av, input=same, target=_operand("target", A2AV_TYPES["target"]))
    assert "must not be the same expression as target" in err.message
    err = _rejection(_a2av, core_num=Var("cores", ScalarType(DataType.FP32)))
    assert err.message.startswith("pld.tensor.all_to_all_v core_num must be a compile-time")


def test_collective_type_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collective_contract, "ACCEPTED_TYPES_LIMIT", 0)
    runs = _counting_type_checks(monkeypatch)
    types = _unseen_a2av_types() | {"signal": window(4, 3, dtype=INT32)}
    _a2av(**types)
    _a2av(**types)
    assert len(runs) == 2

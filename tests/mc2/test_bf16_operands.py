"""``mc2.bf16`` takes BF16 bit patterns as they are and float16 / float32 values by value, rounded
to nearest with ties to even, and refuses any other array instead of reinterpreting its bits;
``mc2.Tensor`` never reinterprets an array of another element type either."""

from __future__ import annotations

import numpy as np
import pytest

from pypto_build import mc2
from pypto_build.lowering.ir.types import DataType


def _bits(tensor: mc2.Tensor) -> list[int]:
    return [int(bits) for bits in tensor.data.ravel()]


def test_float16_values_are_converted_by_value() -> None:
    """The reported gap: 1.0 in float16 (0x3c00) used to be read as the BF16 bits 0x3c00,
    0.0078125."""
    tensor = mc2.bf16(np.array([1.0, -2.5, 65504.0, 0.0], np.float16))
    assert tensor.dtype is DataType.BF16 and tensor.data.dtype == np.uint16
    assert _bits(tensor) == [0x3F80, 0xC020, 0x4780, 0x0000]


@pytest.mark.parametrize(
    ("float32_bits", "bf16_bits"),
    [
        (0x3F808000, 0x3F80),  # a tie, kept half even: down
        (0x3F818000, 0x3F82),  # a tie, kept half odd: up
        (0x3F808001, 0x3F81),  # above the tie: up
        (0x3F807FFF, 0x3F80),  # below the tie: down
        (0x7F7FFFFF, 0x7F80),  # the largest float32 rounds to infinity
        (0x7F800000, 0x7F80),  # infinity
        (0xFF800000, 0xFF80),  # -infinity
        (0x00000001, 0x0000),  # the smallest subnormal rounds to zero
        (0x80008000, 0x8000),  # -0 tie stays -0
    ],
)
def test_float32_values_round_to_nearest_even(float32_bits: int, bf16_bits: int) -> None:
    values = np.array([float32_bits], np.uint32).view(np.float32)
    assert _bits(mc2.bf16(values)) == [bf16_bits]


def test_a_nan_stays_a_nan() -> None:
    """A NaN whose payload lies only in the low half would round to an infinity bit for bit;
    it is kept a (quiet) NaN of its sign."""
    values = np.array([0x7F800001, 0xFF800001, 0x7FC00000], np.uint32).view(np.float32)
    bits = np.array(_bits(mc2.bf16(values)), np.uint32) << 16
    result = bits.view(np.float32)
    assert np.isnan(result).all()
    assert list(np.signbit(result)) == [False, True, False]


def test_the_rounding_is_ml_dtypes_own() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(0)
    values = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    values = np.concatenate([values, np.arange(2**16, dtype=np.uint16).view(np.float16)])
    values = values[~np.isnan(values)]
    expected = values.astype(ml_dtypes.bfloat16).view(np.uint16)
    np.testing.assert_array_equal(mc2.bf16(values).data, expected)


def test_bit_patterns_are_taken_as_they_are() -> None:
    assert _bits(mc2.bf16(np.array([0x3F80, 0xFFFF], np.uint16))) == [0x3F80, 0xFFFF]
    ml_dtypes = pytest.importorskip("ml_dtypes")
    array = np.array([1.5], ml_dtypes.bfloat16)
    assert _bits(mc2.bf16(array)) == [0x3FC0]


@pytest.mark.parametrize(
    ("array", "shown"),
    [
        (np.array([1.0]), "float64: narrow it to float32 first"),
        (np.array([0x3F80], np.int64), "int64"),
        (np.array([0x3F80], np.int16), "int16"),
        (np.array([True]), "bool"),
        ([1.0, 2.0], "float64: narrow it to float32 first"),
    ],
)
def test_any_other_array_is_refused_naming_its_dtype(array: object, shown: str) -> None:
    with pytest.raises(mc2.ArgumentError) as info:
        mc2.bf16(array)  # type: ignore[arg-type]
    assert str(info.value) == (
        "bf16() takes BF16 bit patterns (uint16 or bfloat16) or float16 / float32 values to "
        f"round to nearest even, got {shown}"
    )


@pytest.mark.parametrize(
    ("data", "dtype", "message"),
    [
        (
            np.zeros(2, np.float16),
            DataType.BF16,
            "a BF16 tensor holds uint16 elements, got float16 (mc2.bf16() converts float16 values)",
        ),
        (np.zeros(2, np.int16), DataType.FP16, "a FP16 tensor holds float16 elements, got int16"),
        (np.zeros(2, np.uint32), DataType.FP32, "a FP32 tensor holds float32 elements, got uint32"),
        (
            np.zeros(2, np.uint16),
            "bf16",
            "a Tensor's dtype must be a DataType (DataType.BF16, ...)",
        ),
    ],
)
def test_a_tensor_never_reinterprets_another_element_type(
    data: np.ndarray, dtype: object, message: str
) -> None:
    with pytest.raises(mc2.ArgumentError) as info:
        mc2.Tensor(data, dtype)  # type: ignore[arg-type]
    assert str(info.value).startswith(message)
    assert isinstance(info.value, TypeError)

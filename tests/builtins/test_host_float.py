"""pypto_build/host_float.h, the simulation's half and bfloat16: its conversions agree with
NumPy's float16 and with the bfloat16 rounding of the MC2 golden on every kind of float
(normals, ties, subnormals, overflow, infinities, NaN), in both rounding modes."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from pypto_build.builtins import include_dir

CompileCxx = Callable[[list[str]], None]

DRIVER = r"""
#include <cstdio>
#include <cstring>

#include "pypto_build/host_float.h"

using pypto_build::bfloat16_t;
using pypto_build::half;

// stdin: float bit patterns (hex); stdout per value: half and bfloat16, to nearest even and
// half away from zero, then the float the nearest-even half and bfloat16 widen back to.
int main() {
  unsigned bits;
  while (std::scanf("%x", &bits) == 1) {
    float value;
    std::memcpy(&value, &bits, sizeof(value));
    const half h = pypto_build::from_float<half>(value);
    const bfloat16_t b = pypto_build::from_float<bfloat16_t>(value);
    const float h_back = pypto_build::to_float(h);
    const float b_back = pypto_build::to_float(b);
    unsigned h_back_bits, b_back_bits;
    std::memcpy(&h_back_bits, &h_back, sizeof(h_back));
    std::memcpy(&b_back_bits, &b_back, sizeof(b_back));
    std::printf("%x %x %x %x %x %x\n", h.bits, pypto_build::from_float_half_away<half>(value).bits,
                b.bits, pypto_build::from_float_half_away<bfloat16_t>(value).bits, h_back_bits,
                b_back_bits);
  }
  return 0;
}
"""


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory, gxx: str, compile_cxx: CompileCxx) -> Path:
    folder = tmp_path_factory.mktemp("host_float")
    (folder / "driver.cpp").write_text(DRIVER)
    binary = folder / "driver"
    flags = ["-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-I", str(include_dir())]
    compile_cxx([gxx, *flags, str(folder / "driver.cpp"), "-o", str(binary)])
    return binary


def run(driver: Path, values: npt.NDArray[np.float32]) -> npt.NDArray[np.uint32]:
    text = "\n".join(f"{bits:x}" for bits in values.view(np.uint32).tolist())
    output = subprocess.run([str(driver)], input=text, capture_output=True, text=True, check=True)
    return np.array(
        [[int(field, 16) for field in line.split()] for line in output.stdout.splitlines()],
        dtype=np.uint32,
    )


def halfway_points() -> tuple[npt.NDArray[np.float32], npt.NDArray[np.uint32]]:
    """Floats exactly halfway between a finite half k (every 7th bit pattern) and k + 1, both
    signs, and the bit pattern of each one's k."""
    bits = np.arange(0, 0x7BFF, 7, dtype=np.uint16)
    low = bits.view(np.float16).astype(np.float64)
    high = (bits + 1).view(np.float16).astype(np.float64)
    middle = ((low + high) / 2).astype(np.float32)
    below = bits.astype(np.uint32)
    return np.concatenate([middle, -middle]), np.concatenate([below, below | 0x8000])


def sample() -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(7)
    scaled = rng.standard_normal(20000) * 10.0 ** rng.integers(-9, 7, 20000)
    patterns = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    special = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 65519.99, 65520.0, 2.0**-24, 2.0**-25,
         3 * 2.0**-26, 2.0**-14, 6.0e-8, 3.0e38, 3.4028235e38, 1.17e-38, 1.0e-45],
        dtype=np.float32,
    )  # fmt: skip
    return np.concatenate([scaled.astype(np.float32), patterns, special, halfway_points()[0]])


def test_narrowing_matches_numpy_and_the_golden(driver: Path) -> None:
    values = sample()
    result = run(driver, values)
    finite = ~np.isnan(values)
    with np.errstate(over="ignore"):
        half_even = values.astype(np.float16).view(np.uint16).astype(np.uint32)
    np.testing.assert_array_equal(result[finite, 0], half_even[finite])
    wide = values.view(np.uint32).astype(np.uint64)
    bf16_even = ((wide + 0x7FFF + ((wide >> 16) & 1)) >> 16).astype(np.uint32)
    np.testing.assert_array_equal(result[finite, 2], bf16_even[finite])
    # Ties away from zero: the magnitude's low half rounds up exactly when it reaches 0x8000.
    bf16_away = ((wide + 0x8000) >> 16).astype(np.uint32)
    np.testing.assert_array_equal(result[finite, 3], bf16_away[finite])
    # NaN stays a quiet NaN in both types.
    nan = np.isnan(values)
    assert np.all((result[nan, 0] & 0x7E00) == 0x7E00)
    assert np.all((result[nan, 2] & 0x7FC0) == 0x7FC0)


def test_half_away_from_zero_differs_from_even_only_on_ties(driver: Path) -> None:
    ties, below = halfway_points()
    result = run(driver, ties)
    # Halfway between k and k + 1: even picks whichever is even, away from zero always k + 1.
    np.testing.assert_array_equal(result[:, 1], below + 1)
    np.testing.assert_array_equal(result[:, 0], below + (below & 1))
    values = sample()
    others = run(driver, values)
    differ = others[:, 0] != others[:, 1]
    assert np.isin(values[differ], ties).all()


def test_widening_is_exact(driver: Path) -> None:
    every_half = np.arange(0x10000, dtype=np.uint32).astype(np.uint16).view(np.float16)
    values = every_half.astype(np.float32)
    result = run(driver, values)
    finite = ~np.isnan(values)
    # half -> float -> half -> float is the identity on every non-NaN half ...
    np.testing.assert_array_equal(result[finite, 4], values[finite].view(np.uint32))
    # ... and bfloat16 is a float's upper half.
    assert np.all(result[:, 5] == (result[:, 2] << 16))


BULK_DRIVER = r"""
#include <cstdio>
#include <cstring>
#include <vector>

#include "pypto_build/host_float.h"

using pypto_build::half;

// stdin: float bit patterns (hex). Checks to_float_n against to_float over every half, and
// from_float_n against from_float over the input, at every length up to 20 and the whole input
// (the vector body and its scalar tail); prints the mismatches, then "ok".
int main() {
  std::vector<float> values;
  unsigned bits;
  while (std::scanf("%x", &bits) == 1) {
    float value;
    std::memcpy(&value, &bits, sizeof(value));
    values.push_back(value);
  }
  int bad = 0;
  std::vector<half> halves(65536);
  for (unsigned i = 0; i < 65536; ++i) halves[i].bits = static_cast<uint16_t>(i);
  std::vector<float> widened(65536);
  pypto_build::to_float_n(halves.data(), widened.data(), 65536);
  for (unsigned i = 0; i < 65536; ++i) {
    const float one = pypto_build::to_float(halves[i]);
    if (std::memcmp(&one, &widened[i], 4) != 0 && one == one) {
      std::printf("widen %x\n", i);
      ++bad;
    }
    if (one != one && widened[i] == widened[i]) {
      std::printf("widen nan %x\n", i);
      ++bad;
    }
  }
  std::vector<half> narrowed(values.size());
  std::vector<size_t> lengths{values.size()};
  for (size_t length = 0; length <= 20 && length < values.size(); ++length) {
    lengths.push_back(length);
  }
  for (const size_t length : lengths) {
    pypto_build::from_float_n(values.data(), narrowed.data(), static_cast<int64_t>(length));
    for (size_t i = 0; i < length; ++i) {
      if (narrowed[i].bits != pypto_build::from_float<half>(values[i]).bits) {
        std::printf("narrow %zu %x\n", length, narrowed[i].bits);
        ++bad;
      }
    }
  }
  std::printf(bad ? "failed\n" : "ok\n");
  return bad != 0;
}
"""


@pytest.mark.parametrize("scalar", [False, True], ids=["dispatched", "scalar"])
def test_the_array_conversions_are_the_scalar_ones_bit_for_bit(
    tmp_path: Path, gxx: str, compile_cxx: CompileCxx, scalar: bool
) -> None:
    """to_float_n and from_float_n (F16C where the CPU has it) give exactly to_float's and
    from_float's bits: every half widened; narrowed, floats of every kind (ties, subnormals,
    overflow, infinities, NaNs with payloads of both signs and a random sample)."""
    (tmp_path / "bulk.cpp").write_text(BULK_DRIVER)
    binary = tmp_path / "bulk"
    flags = ["-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-I", str(include_dir())]
    flags += ["-DPYPTO_BUILD_HOST_FLOAT_SCALAR"] if scalar else []
    compile_cxx([gxx, *flags, str(tmp_path / "bulk.cpp"), "-o", str(binary)])
    ties, _ = halfway_points()
    special = np.array(
        [
            0x0,
            0x80000000,
            0x7F800000,
            0xFF800000,
            0x7FC00000,
            0xFFC00001,
            0x7F800001,
            0xFFA00000,
            0x477FEFFF,
            0x477FF000,
            0x477FF001,
            0x33000000,
            0x33000001,
            0xB3000000,
            0x387FC000,
            0x38800000,
            0x00000001,
            0x807FFFFF,
            0x7F7FFFFF,
        ],
        dtype=np.uint32,
    ).view(np.float32)
    rng = np.random.default_rng(7)
    sample = rng.integers(0, 2**32, 40_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    near = rng.uniform(-70_000, 70_000, 20_000).astype(np.float32)
    values = np.concatenate([special, ties, sample, near])
    text = "\n".join(f"{bits:x}" for bits in values.view(np.uint32).tolist())
    done = subprocess.run([str(binary)], input=text, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.endswith("ok\n"), done.stdout[-2000:]

"""pypto_build/host_matmul.h, the simulation's cube matmul: every FP32 sum is bit for bit the
scalar loop's (one product and one addition per k, k in order) for half and bfloat16 operands,
at shapes with row and column tails, b stored row by row and column by column, with zeros of
both signs, subnormals, infinities and NaN among the operands; compiled as the sim toolchain
compiles (on x86-64 the AVX2 kernel where the CPU has it), with the baseline kernel alone, and
with AVX2 + FMA and contraction allowed, where a fused multiply-add must not change a bit
either."""

from __future__ import annotations

import platform
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from pypto_build.builtins import include_dir

CompileCxx = Callable[[list[str]], None]

DRIVER = r"""
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "pypto_build/host_float.h"
#include "pypto_build/host_matmul.h"

using pypto_build::bfloat16_t;
using pypto_build::half;

static uint32_t state = 12345u;
static uint32_t next_random() {
  state ^= state << 13;
  state ^= state >> 17;
  state ^= state << 5;
  return state;
}

// A 16-bit operand: mostly values in (-2, 2), now and then a special one.
template <typename T>
static T operand(bool specials);

template <>
half operand<half>(bool specials) {
  const uint32_t r = next_random();
  if (specials && r % 97 == 0) {
    const uint16_t special[] = {0x0000, 0x8000, 0x0001, 0x83ff, 0x7c00, 0xfc00, 0x7e00, 0x7bff};
    return half{special[(r >> 8) % 8]};
  }
  return half{static_cast<uint16_t>((r & 0x8000u) | (0x3000u + (r >> 16) % 0x1000u))};
}

template <>
bfloat16_t operand<bfloat16_t>(bool specials) {
  const uint32_t r = next_random();
  if (specials && r % 97 == 0) {
    const uint16_t special[] = {0x0000, 0x8000, 0x0001, 0x807f, 0x7f80, 0xff80, 0x7fc0, 0x7f7f};
    return bfloat16_t{special[(r >> 8) % 8]};
  }
  return bfloat16_t{static_cast<uint16_t>((r & 0x8000u) | (0x3e00u + (r >> 16) % 0x200u))};
}

static bool same(float x, float y) {
  if (std::isnan(x) && std::isnan(y)) return true;
  uint32_t a, b;
  std::memcpy(&a, &x, 4);
  std::memcpy(&b, &y, 4);
  return a == b;
}

// argv: dtype (h or b), rows, depth, cols, specials (0 or 1), b's storage (r: row by row, c:
// column by column). Prints the mismatching sums and
// the number of sums compared.
template <typename T>
static int run(int64_t rows, int64_t depth, int64_t cols, bool specials, bool column_major) {
  std::vector<T> a(static_cast<size_t>(rows * depth)), b(static_cast<size_t>(depth * cols));
  for (T& v : a) v = operand<T>(specials);
  for (T& v : b) v = operand<T>(specials);
  std::vector<float> c(static_cast<size_t>(rows * cols), -1.0f);
  pypto_build::host_matmul::PackedA packed_a;
  pypto_build::host_matmul::PackedB packed_b;
  if (column_major) {  // b packed from a copy stored column by column, as a transposed weight
    std::vector<T> stored(b.size());
    for (int64_t k = 0; k < depth; ++k) {
      for (int64_t j = 0; j < cols; ++j) {
        stored[static_cast<size_t>(j * depth + k)] = b[static_cast<size_t>(k * cols + j)];
      }
    }
    packed_b.set(
        depth, cols,
        [&](int64_t k, int64_t j) {
          return pypto_build::to_float(stored[static_cast<size_t>(j * depth + k)]);
        },
        true);
  } else {
    packed_b.set(depth, cols, [&](int64_t k, int64_t j) {
      return pypto_build::to_float(b[static_cast<size_t>(k * cols + j)]);
    });
  }
  packed_a.set(rows, depth, [&](int64_t i, int64_t k) {
    return pypto_build::to_float(a[static_cast<size_t>(i * depth + k)]);
  });
  // Twice, as a kernel multiplies the same operands by others: what is kept is kept whole.
  for (int pass = 0; pass < 2; ++pass) {
    pypto_build::host_matmul::multiply(packed_a, packed_b, [&](int64_t i, int64_t j, float sum) {
      c[static_cast<size_t>(i * cols + j)] = sum;
    });
  }
  long mismatches = 0;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      float sum = 0.0f;
      for (int64_t k = 0; k < depth; ++k) {
        const float x = pypto_build::to_float(a[static_cast<size_t>(i * depth + k)]);
        const float y = pypto_build::to_float(b[static_cast<size_t>(k * cols + j)]);
        const float product = x * y;
        sum = sum + product;
      }
      if (!same(sum, c[static_cast<size_t>(i * cols + j)])) {
        if (++mismatches <= 5) {
          std::printf("mismatch at %lld %lld: %a vs %a\n", static_cast<long long>(i),
                      static_cast<long long>(j), sum, c[static_cast<size_t>(i * cols + j)]);
        }
      }
    }
  }
  std::printf("compared %lld mismatches %ld\n", static_cast<long long>(rows * cols), mismatches);
  return mismatches == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc != 7) return 2;
  const int64_t rows = std::atoll(argv[2]), depth = std::atoll(argv[3]), cols = std::atoll(argv[4]);
  const bool specials = std::atoi(argv[5]) != 0;
  const bool column_major = argv[6][0] == 'c';
  return argv[1][0] == 'h' ? run<half>(rows, depth, cols, specials, column_major)
                           : run<bfloat16_t>(rows, depth, cols, specials, column_major);
}
"""

BASE_FLAGS = ["-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-I", str(include_dir())]
X86 = platform.machine() in {"x86_64", "AMD64"}
BUILDS = {
    "as_the_sim_toolchain_compiles": [],
    "baseline_only": ["-DPYPTO_BUILD_HOST_MATMUL_BASELINE"],
    "avx2_fma_contracted": ["-mavx2", "-mfma", "-ffp-contract=fast"] if X86 else None,
}
SHAPES = [(1, 1, 1), (4, 16, 16), (7, 33, 50), (130, 512, 17), (64, 1000, 96), (3, 2048, 5)]


@pytest.fixture(scope="module", params=sorted(BUILDS))
def driver(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    gxx: str,
    compile_cxx: CompileCxx,
) -> Path:
    extra = BUILDS[request.param]
    if extra is None:
        pytest.skip(f"{request.param} is an x86-64 build")
    folder = tmp_path_factory.mktemp(f"host_matmul_{request.param}")
    (folder / "driver.cpp").write_text(DRIVER)
    binary = folder / "driver"
    compile_cxx([gxx, *BASE_FLAGS, *extra, str(folder / "driver.cpp"), "-o", str(binary)])
    return binary


@pytest.mark.parametrize("dtype", ["h", "b"])
@pytest.mark.parametrize("specials", [0, 1])
@pytest.mark.parametrize("storage", ["r", "c"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_every_sum_is_the_scalar_loops_bit_for_bit(
    driver: Path, dtype: str, specials: int, storage: str, shape: tuple[int, int, int]
) -> None:
    rows, depth, cols = shape
    argv = [str(driver), dtype, str(rows), str(depth), str(cols), str(specials), storage]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"compared {rows * cols} mismatches 0" in done.stdout

"""Every C++ file of a rendered tree compiles against the headers it travels with, and the
orchestration helper header computes what the codegen relies on."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest
from _support.rendered import RENDERED_STEMS, Render

from pypto_build.builtins import include_dir
from pypto_build.chip_build.toolchains import SimToolchain
from pypto_build.chip_build.toolchains.sim import SIM_API_INCLUDE_DIR

FLAGS = ["-std=c++17", "-Wall", "-Wextra", "-Werror"]
#: How the simulator compiles an orchestration: against its implementation of PyPTO's API.
ORCHESTRATION_FLAGS = ["-I", str(SIM_API_INCLUDE_DIR), "-I", str(include_dir())]


def _unique_sources(tree: Path) -> list[Path]:
    """The tree's C++ files, one per distinct content (chips share most of them)."""
    by_digest: dict[str, Path] = {}
    for path in sorted(tree.rglob("*.cpp")):
        by_digest.setdefault(hashlib.sha256(path.read_bytes()).hexdigest(), path)
    return sorted(by_digest.values())


@pytest.mark.parametrize("stem", RENDERED_STEMS)
def test_every_generated_cpp_file_compiles(rendered: Render, sim: SimToolchain, stem: str) -> None:
    """Kernels compile with nothing but the headers that travel in their sub-build (as PyPTO's
    runtime compiles them), orchestrations against the simulator's orchestration API."""
    sources = _unique_sources(rendered(stem))
    kinds = {path.parent.name for path in sources}
    assert {"orchestration", "aiv"} <= kinds
    for source in sources:
        if source.parent.name == "orchestration":
            extra = ORCHESTRATION_FLAGS
        else:
            extra = ["-I", str(source.parents[2] / "include")]
        result = subprocess.run(
            [str(sim.compiler), "-fsyntax-only", *FLAGS, *extra, str(source)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stderr


VIEWS_HARNESS = r"""
#include <cstdio>
#include <cstdlib>

#include "pto_orchestration_api.h"

#include "pypto_build/orchestration.h"

// The simulator's runtime side, as far as the helpers use it.
static int fatal_count = 0;
extern "C" void pypto_sim_rt_report_fatal(int32_t code, const char*, const char*, ...) {
  if (code == PTO2_ERROR_INVALID_ARGS) ++fatal_count;
}
extern "C" void pypto_sim_rt_alloc(const CoreTaskArgs* args, TaskOutputTensors* outputs) {
  const auto& info = *static_cast<const TensorCreateInfo*>(args->tensors[0]);
  ChipTensor t{};
  t.dtype = info.dtype;
  t.ndims = info.ndims;
  uint32_t stride = 1;
  for (uint32_t d = info.ndims; d-- > 0;) {
    t.shapes[d] = info.shapes[d];
    t.strides[d] = stride;
    stride *= info.shapes[d];
  }
  t.is_contiguous = true;
  outputs->append(t);
}

#define CHECK(cond)                          \
  do {                                       \
    if (!(cond)) {                           \
      std::printf("failed: %s\n", #cond);    \
      std::exit(1);                          \
    }                                        \
  } while (0)

int main() {
  ChipTensor m = pypto_build::create_tensor(DataType::FLOAT32, {8, 16});
  CHECK(m.ndims == 2 && m.strides[0] == 16 && m.strides[1] == 1);
  CHECK(pypto_build::is_contiguous(m));

  ChipTensor rows = pypto_build::slice(m, {4, 16}, {4, 0});
  CHECK(rows.start_offset == 64 && rows.shapes[0] == 4 && pypto_build::is_contiguous(rows));
  CHECK(rows.is_contiguous && rows.extent_elem_cache == 64);
  ChipTensor column = pypto_build::slice(m, {8, 1}, {0, 3});
  CHECK(column.start_offset == 3 && !pypto_build::is_contiguous(column));
  ChipTensor one_row = pypto_build::slice(m, {1, 16}, {7, 0});
  CHECK(pypto_build::is_contiguous(one_row));

  ChipTensor flat = pypto_build::reshape(rows, {64});
  CHECK(flat.ndims == 1 && flat.shapes[0] == 64 && flat.strides[0] == 1 && flat.start_offset == 64);
  CHECK(fatal_count == 0);

  ChipTensor refused = pypto_build::reshape(column, {8});  // strided: no packed shape
  CHECK(fatal_count == 1 && refused.ndims == 2);
  ChipTensor outside = pypto_build::slice(m, {4, 16}, {5, 0});
  CHECK(fatal_count == 2 && outside.shapes[0] == 8);

  CHECK(pypto_build::floordiv<int64_t>(-7, 2) == -4 && pypto_build::floormod<int64_t>(-7, 2) == 1);
  CHECK(pypto_build::floordiv<int64_t>(7, -2) == -4 && pypto_build::floormod<int64_t>(7, -2) == -1);
  CHECK(pypto_build::floordiv<int64_t>(6, 3) == 2 && pypto_build::floormod<int64_t>(6, 3) == 0);
  CHECK(pypto_build::floormod<float>(-1.0f, 4.0f) == 3.0f);
  CHECK(pypto_build::floordiv<int64_t>(1, 0) == 0 && fatal_count == 3);

  CHECK(pypto_build::scalar_bits<int32_t>(-1) == UINT64_MAX);
  CHECK(pypto_build::scalar_bits<float>(1.0f) == 0x3f800000u);
  CHECK(pypto_build::scalar_bits<bool>(true) == 1);
  CHECK(pypto_build::scalar_value<int32_t>(UINT64_MAX) == -1);
  CHECK(pypto_build::scalar_value<float>(0x3f800000u) == 1.0f);
  CHECK(pypto_build::scalar_value<int64_t>(pypto_build::scalar_bits<int64_t>(-5)) == -5);
  std::printf("ok\n");
  return 0;
}
"""


def test_views_header_semantics(sim: SimToolchain, tmp_path: Path) -> None:
    source = tmp_path / "views.cpp"
    source.write_text(VIEWS_HARNESS)
    binary = tmp_path / "views"
    build = subprocess.run(
        [str(sim.compiler), *FLAGS, *ORCHESTRATION_FLAGS, str(source), "-o", str(binary)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(binary)], capture_output=True, text=True, check=False)
    assert (run.returncode, run.stdout) == (0, "ok\n")

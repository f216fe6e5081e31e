"""The simulator orders tasks as PyPTO's runtime does, and no further: a pipeline whose
orchestration names every ordering the runtime's TensorMap misses matches its golden, and the
same pipeline with one of those explicit dependencies removed fails deterministically, naming
the two unordered tasks, where upstream's runtime would race (tests/programs/chip_two_rounds.py:
two exchanges through the same windows)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from _support.goldens import pipeline_golden

from pypto_build import sim as simulation
from pypto_build.chip_build.compile import compile_tree
from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.sim.runtime import NativeRuntime
from pypto_build.chip_build.subbuild import lower_file, render_subbuilds
from pypto_build.chip_build.toolchains.sim import SimToolchain
from pypto_build.tree_layout import RELATIVE

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"
NR, TOTAL, SIZE = 4, 16, 64
ORCHESTRATION = RELATIVE.sub_build("chip_pipeline").orchestration("chip_pipeline")
#: The second exchange's (task 4) dependency on the first consume (task 2), which read the data
#: and recv windows the exchange overwrites.
SECOND_EXCHANGE_DEPS = "    task4_.set_dependencies(task4_deps_.ids, task4_deps_.count);\n"


def _build(folder: Path, cache_dir: Path, sim_toolchain: SimToolchain, *, drop: str = "") -> Path:
    shutil.copytree(PROGRAMS / "kernels", folder / "kernels")
    program = shutil.copy(PROGRAMS / "chip_two_rounds.py", folder / "chip_two_rounds.py")
    out = folder / "out"
    render_subbuilds(lower_file(Path(program), ["a3"]), ["a3"], out, source_root=folder)
    source = out / "a3" / ORCHESTRATION
    text = source.read_text(encoding="utf-8")
    assert text.count(SECOND_EXCHANGE_DEPS) == 1
    source.write_text(text.replace(drop, ""), encoding="utf-8")
    compile_tree(out / "a3", "a3", sim_toolchain, cache=CompileCache(cache_dir), progress=None)
    return out


def _inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    return {
        name: rng.standard_normal((NR, TOTAL, SIZE)).astype(np.float32)
        for name in ("first", "second")
    }


def _run(out: Path) -> simulation.SimResult:
    program = simulation.SimProgram.open(out, chip="a3", program="chip_pipeline")
    return program.run(_inputs(), ranks=NR, timeout=20.0)


def test_two_exchanges_through_the_same_windows_match_the_golden(
    tmp_path: Path, cache_dir: Path, sim: SimToolchain, runtime: NativeRuntime
) -> None:
    out = _build(tmp_path, cache_dir, sim)
    result = _run(out)
    inputs = _inputs()
    np.testing.assert_array_equal(result["out_first"], pipeline_golden(inputs["first"]))
    np.testing.assert_array_equal(result["out_second"], pipeline_golden(inputs["second"]))
    assert [(d.rank, d.tasks) for d in result.dispatches] == [(rank, 6) for rank in range(NR)]


def test_a_missing_write_after_read_dependency_fails_the_run(
    tmp_path: Path, cache_dir: Path, sim: SimToolchain, runtime: NativeRuntime
) -> None:
    out = _build(tmp_path, cache_dir, sim, drop=SECOND_EXCHANGE_DEPS)
    with pytest.raises(simulation.SimulationError) as raised:
        _run(out)
    failures = raised.value.ranks
    assert [(f.rank, f.code) for f in failures] == [
        (r, simulation.UNORDERED_ACCESS) for r in range(NR)
    ]
    for failure in failures:
        assert failure.message.startswith(
            "task 4 (kernel '__builtin_all_to_all_v__fp32' (func_id 1)) writes args[1] (INOUT, "
        )
        assert "which task 2 (kernel 'consume_step' (func_id 2)) reads as args[0] (INPUT)" in (
            failure.message
        )
        assert failure.message.endswith(
            "task 4 needs an explicit dependency on task 2 (set_dependencies)"
        )
    # The first round ran; the second exchange never started, so nothing raced.
    result = raised.value.result
    np.testing.assert_array_equal(result["out_first"], pipeline_golden(_inputs()["first"]))
    assert [(d.rank, d.tasks) for d in result.dispatches] == [(rank, 4) for rank in range(NR)]


LOOP_PROGRAM = """\
import pypto.language as pl


@pl.program
class Many:
    @pl.function(type=pl.FunctionType.AIV, external_source="count.cpp")
    def count(self, tally: pl.Out[pl.Tensor[[4], pl.INT32]]) -> pl.Tensor[[4], pl.INT32]: ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(self, tally: pl.Out[pl.Tensor[[4], pl.INT32]]) -> pl.Tensor[[4], pl.INT32]:
        for i in pl.range(ROUNDS):
            tally = self.count(tally)
        return tally
"""

COUNT_KERNEL = """\
#include "pypto_build/kernel_abi.h"

extern "C" __aicore__ void kernel_entry(__gm__ int64_t* args) {
  __gm__ ChipTensor* tally = reinterpret_cast<__gm__ ChipTensor*>(args[0]);
  reinterpret_cast<__gm__ int32_t*>(tally->buffer.addr)[tally->start_offset] += 1;
}
"""


def test_a_loop_longer_than_the_checked_tasks_follows_its_own_previous_instance(
    tmp_path: Path, cache_dir: Path, sim: SimToolchain, runtime: NativeRuntime
) -> None:
    # Every iteration overwrites its Out tensor, so it follows its previous instance explicitly;
    # past the tasks whose order the simulator checks, the ids stay valid and the run goes on.
    rounds = 4100
    (tmp_path / "count.cpp").write_text(COUNT_KERNEL, encoding="utf-8")
    program = tmp_path / "many.py"
    program.write_text(LOOP_PROGRAM.replace("ROUNDS", str(rounds)), encoding="utf-8")
    out = tmp_path / "out"
    render_subbuilds(lower_file(program, ["a3"]), ["a3"], out, source_root=tmp_path)
    compile_tree(out / "a3", "a3", sim, cache=CompileCache(cache_dir), progress=None)
    result = simulation.SimProgram.open(out, chip="a3", program="orch").run({}, ranks=1)
    assert result["tally"][0].tolist() == [rounds, 0, 0, 0]
    assert [d.tasks for d in result.dispatches] == [rounds]

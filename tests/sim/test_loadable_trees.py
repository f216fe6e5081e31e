"""Every tree carries what PyPTO's L3 loader needs to run it: a HOST comm domain over a subset
of the devices names the world the program addresses, and a program without a HOST
orchestrator whose windows need a comm domain (the fused MC2 operator's workspace) gets a HOST
side that runs its chip orchestration on every rank it is sized for. Both run here the same way."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from _support.goldens import pipeline_golden

from pypto_build import sim as simulation
from pypto_build.chip_build.build import build
from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.sim.runtime import NativeRuntime
from pypto_build.chip_build.toolchains.sim import SimToolchain
from pypto_build.tree_layout import TreeLayout

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests" / "programs"
MC2_SAMPLE = ROOT / "samples" / "moe_mc2"


def _build(program: Path, source_root: Path, out: Path, sim: SimToolchain, cache: Path) -> Path:
    build(
        [program],
        chips=["a3"],
        out_dir=out,
        source_root=source_root,
        toolchain=sim,
        cache=CompileCache(cache),
        progress=None,
    )
    return out / "a3"


def _devices(tree: Path) -> list[int]:
    meta = json.loads(TreeLayout(tree).distributed_meta.read_text(encoding="utf-8"))
    return list(meta["distributed_config"]["device_ids"])


def test_a_subset_domain_names_the_world_the_program_addresses(
    tmp_path: Path, cache_dir: Path, sim: SimToolchain, runtime: NativeRuntime
) -> None:
    shutil.copytree(PROGRAMS / "kernels", tmp_path / "kernels")
    program = Path(shutil.copy(PROGRAMS / "host_subset.py", tmp_path / "host_subset.py"))
    tree = _build(program, tmp_path, tmp_path / "out", sim, cache_dir)
    # Devices 0 and 2 form the domain; the program's world is devices 0 to 2.
    assert _devices(tree) == [0, 1, 2]
    rows = np.random.default_rng(5).standard_normal((3, 8, 64)).astype(np.float32)
    result = simulation.run(tree, ranks=3, inputs={"inp": rows.reshape(24, 64)})
    out = result["out"].reshape(3, 8, 64)
    np.testing.assert_array_equal(out[[0, 2]], pipeline_golden(rows[[0, 2]]))
    assert not out[1].any()
    with pytest.raises(simulation.RankCountError):
        simulation.run(tree, ranks=2, inputs={"inp": rows.reshape(24, 64)})


def test_a_chip_pipeline_with_windows_gets_a_host_side_for_pypto_s_loader(
    tmp_path: Path, cache_dir: Path, sim: SimToolchain, runtime: NativeRuntime
) -> None:
    project = tmp_path / "moe_mc2"
    shutil.copytree(MC2_SAMPLE / "src", project / "src")
    program = project / "src" / "moe_mc2" / "pipelines.py"
    tree = _build(program, project, tmp_path / "out", sim, cache_dir)
    host = TreeLayout(tree).host_module.read_text(encoding="utf-8")
    assert "workers=[*range(world_size)]" in host
    assert 'host_orch._pypto_build_runs_on_every_rank = "expert_combine"' in host
    # The workspace (the sample's 6400 bytes) and the MC2 contract's window tail after it, where
    # the simulated HCCL keeps its state: PyPTO's simulators give the window what it declares.
    assert "window_size=7424," in host
    assert _devices(tree) == list(range(8))  # ep 4 x tp 2
    sys.path.insert(0, str(project / "src"))
    try:
        from moe_mc2 import golden
    finally:
        sys.path.remove(str(project / "src"))
    inputs = golden.inputs()
    # The HOST side takes every rank's tensors stacked, as a chip pipeline's run does, and runs
    # the same kernels; a run that names no program still runs the chip orchestration.
    via_host = simulation.run(tree, chip="a3", program="host_orch", ranks=8, inputs=inputs)
    default = simulation.SimProgram.open(tree, chip="a3")
    assert [p.name for p in default.parameters][:3] == ["x", "weight", "bias"]
    via_chip = simulation.run(tree, chip="a3", program="expert_combine", ranks=8, inputs=inputs)
    np.testing.assert_array_equal(via_host["out"], via_chip["out"])
    assert [p.shape for p in simulation.SimProgram.open(tree, program="host_orch").parameters] == [
        (8, *np.asarray(inputs[name]).shape[1:]) for name in ("x", "weight", "bias")
    ] + [(8, *via_chip["out"].shape[1:])]

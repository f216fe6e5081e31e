"""A run on another rank count than the program's windows were sized for is refused with both
numbers, before anything runs: a HOST orchestrator is sized for the devices its
distributed_meta.json lists, a chip orchestration for its collectives' NR (kernel_config.py's
``ranks``); a chip orchestration without collectives runs on any rank count."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from _support.console import run_cli
from _support.rendered import PROGRAMS_DIR
from _support.sim_programs import BuildProgram, Misbehave, Pipeline

from pypto_build import sim
from pypto_build.chip_build.kernel_config_reader import read_kernel_config
from pypto_build.chip_build.subbuild import lower_file, render_subbuilds
from pypto_build.tree_layout import SUB_BUILD_CONFIGS, SubBuildLayout, TreeLayout

NR = 4
#: ep * tp of tests/programs/mc2_layer.py.
MC2_RANKS = 8


@pytest.mark.parametrize(
    ("host", "program", "why"),
    [
        (True, "host_orch", "distributed_meta.json lists its devices"),
        (False, "chip_pipeline", "kernel_config.py: its collectives' NR"),
    ],
    ids=["host-orchestrator", "chip-orchestration"],
)
def test_another_rank_count_is_refused_with_both_numbers(
    build_program: BuildProgram, host: bool, program: str, why: str
) -> None:
    build = build_program(Pipeline(NR, host=host))
    expected = (
        f"{program} was built for {NR} ranks ({why}); it cannot run on 2: its windows are "
        f"sized for {NR}"
    )
    with pytest.raises(sim.RankCountError, match=re.escape(expected)):
        sim.run(build, ranks=2, inputs={})


def test_run_refuses_another_rank_count_as_a_usage_error(
    build_program: BuildProgram, capsys: pytest.CaptureFixture[str]
) -> None:
    build = build_program(Pipeline(NR, host=False))
    code, out, err = run_cli(capsys, "run", str(build), "--ranks", "8")
    assert (code, out) == (2, "")
    assert err == (
        f"pypto-build: error: chip_pipeline was built for {NR} ranks (kernel_config.py: its "
        f"collectives' NR); it cannot run on 8: its windows are sized for {NR} (run it on {NR} "
        "ranks, or build the program for the rank count you need)\n"
    )


def test_the_tree_records_the_rank_count_of_a_chip_orchestration_s_collectives(
    build_program: BuildProgram,
) -> None:
    chip = TreeLayout(build_program(Pipeline(NR, host=False)) / "a3").next_levels
    config = read_kernel_config(SubBuildLayout(chip / "chip_pipeline").kernel_config)
    assert config.orchestration is not None and config.orchestration.ranks == NR
    plain = TreeLayout(build_program(Misbehave(2)) / "a3").sub_build("chip_misbehave").root
    config = read_kernel_config(SubBuildLayout(plain).kernel_config)
    assert config.orchestration is not None and config.orchestration.ranks is None


def test_a_chip_orchestration_without_collectives_runs_on_any_rank_count(
    build_program: BuildProgram,
) -> None:
    build = build_program(Misbehave(2))
    result = sim.run(build, ranks=3, inputs={"mode": np.zeros(1, dtype=np.int32)})
    assert result["out"].tolist() == [[1], [1], [1]]


def test_the_tree_records_the_mc2_operator_s_rank_count(tmp_path: Path) -> None:
    """The fused operator is sized for ep * tp ranks (its op contract reads them from the
    kernel's variant), so a run on another count is refused like a collective's."""
    program = PROGRAMS_DIR / "mc2_layer.py"
    render_subbuilds(lower_file(program, ("a3",)), ("a3",), tmp_path, source_root=PROGRAMS_DIR)
    (config_path,) = sorted((tmp_path / "a3").glob(SUB_BUILD_CONFIGS))
    config = read_kernel_config(config_path)
    assert config.orchestration is not None and config.orchestration.ranks == MC2_RANKS

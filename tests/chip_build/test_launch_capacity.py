"""A sync-start launch wider than a chip admits is known at build time: the render for that
chip warns, naming the chip, its capacity and the runtime's refusal (code 7); so is one the
chip admits but its host simulation (16 AIV, simpler's a2a3sim and a5sim) does not."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from _support.console import run_cli

from pypto_build.chip_build.subbuild import lower_file, plan_chip
from pypto_build.errors import ExitCode


def _wide_program(tmp_path: Path, repo_root: Path, ranks: int) -> Path:
    """chip_rail_int8.py with NR = core_num = ``ranks``: the collective admits ``ranks``
    blocks."""
    source = (repo_root / "tests" / "programs" / "chip_rail_int8.py").read_text(encoding="utf-8")
    source = source.replace("NR = 2\n", f"NR = {ranks}\n").replace(
        "CORES = 2\n", f"CORES = {ranks}\n"
    )
    shutil.copytree(repo_root / "tests" / "programs" / "kernels", tmp_path / "kernels")
    path = tmp_path / "wide.py"
    path.write_text(source, encoding="utf-8")
    return path


SIMULATION_ONLY = (
    "warning: kernel '__builtin_all_to_all_v__int8' is launched with 40 blocks and sync_start: "
    "chip a3 (Ascend910_93) admits 48, but its host simulation a2a3sim runs 16 AIV cores, so "
    "PyPTO's a2a3sim and pypto-build's simulator refuse the task with "
    "SIMPLER_ERROR_REQUIRE_SYNC_START_INVALID (7)"
)
DEVICE = (
    "warning: kernel '__builtin_all_to_all_v__int8' is launched with 40 blocks and "
    "sync_start, more than chip a5 (Ascend950) admits: its AIV capacity is 36, so PyPTO's "
    "runtime refuses the task with SIMPLER_ERROR_REQUIRE_SYNC_START_INVALID (7)"
)


@pytest.mark.parametrize(("chip", "expected"), [("a3", SIMULATION_ONLY), ("a5", DEVICE)])
def test_a_launch_wider_than_the_chip_admits_warns_for_that_chip(
    chip: str, expected: str, tmp_path: Path, repo_root: Path
) -> None:
    # 40 blocks: within a3's 48 AIV, beyond a5's 36, and beyond the simulation's 16 on both.
    path = _wide_program(tmp_path, repo_root, 40)
    tree = plan_chip(lower_file(path, (chip,)), chip, tmp_path)
    [message] = [warning.render() for warning in tree.warnings]
    assert message.startswith(f"{path}:")
    assert message.endswith(expected)


def test_a_launch_the_simulation_admits_warns_for_no_chip(tmp_path: Path, repo_root: Path) -> None:
    path = _wide_program(tmp_path, repo_root, 16)
    sources = lower_file(path, ("a3", "a5"))
    assert [plan_chip(sources, chip, tmp_path).warnings for chip in ("a3", "a5")] == [(), ()]


def test_render_prints_the_warning_and_succeeds(
    tmp_path: Path, repo_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _wide_program(tmp_path, repo_root, 64)
    code, _, err = run_cli(
        capsys, "render", str(path), "--out", str(tmp_path / "out"), "--chip", "a3"
    )
    assert code == ExitCode.OK
    assert "warning: kernel '__builtin_all_to_all_v__int8' is launched with 64 blocks" in err
    assert "chip a3 (Ascend910_93) admits: its AIV capacity is 48" in err


def test_one_lowered_program_is_judged_against_each_chips_capacity(
    tmp_path: Path, repo_root: Path
) -> None:
    # The program's sync-start launches are found once and then compared with each chip's
    # capacity: the same lowered program warns for a5 only, whichever chip is planned first.
    path = _wide_program(tmp_path, repo_root, 40)
    sources = lower_file(path, ("a5", "a3"))
    warned = {
        chip: [w.message for w in plan_chip(sources, chip, tmp_path).warnings]
        for chip in ("a5", "a3")
    }
    assert [message.split(": ", 1)[0] for message in warned["a5"]] == [
        "kernel '__builtin_all_to_all_v__int8' is launched with 40 blocks and sync_start, more "
        "than chip a5 (Ascend950) admits"
    ]
    assert [message.split(", ", 1)[0] for message in warned["a3"]] == [
        "kernel '__builtin_all_to_all_v__int8' is launched with 40 blocks and sync_start: chip "
        "a3 (Ascend910_93) admits 48"
    ]

"""A seeded run of the program fuzzer (``tests/_support/program_fuzzer.py``): mutants of the
repository's programs through the front end, the passes, the printer and the render plan give
a diagnostic or a result, never a crash. ``bench/bench_reliability.py`` runs it for minutes."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from _support.program_fuzzer import fuzz, try_one

from pypto_build.lowering.runtime_facts import COMM_MAX_RANK_NUM

REPO = Path(__file__).resolve().parent.parent


def test_mutated_programs_never_crash(tmp_path: Path) -> None:
    report = fuzz(tmp_path, seed=2026, count=600)
    assert report.crashes == []
    # The mutants reach both outcomes: refused with a diagnostic and accepted whole.
    assert report.outcomes["ProgramError"] > 0 and report.outcomes["accepted"] > 0


def test_the_rank_bound_is_the_kernel_abis() -> None:
    header = REPO / "pypto_build" / "builtins" / "include" / "pypto_build" / "kernel_abi.h"
    found = re.search(r"COMM_MAX_RANK_NUM = (\d+);", header.read_text(encoding="utf-8"))
    assert found is not None and int(found.group(1)) == COMM_MAX_RANK_NUM


def test_a_chip_orchestration_using_a_host_orchestrators_result_is_a_diagnostic(
    tmp_path: Path,
) -> None:
    # Found by the fuzzer: the two levels swapped in host_rail_fp32.py made the contiguity
    # analysis index the results of a callee that returns none of its parameters.
    folder = tmp_path / "programs"
    shutil.copytree(REPO / "tests" / "programs", folder)
    path = folder / "host_rail_fp32.py"
    host = "@pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.HOST)"
    chip = "@pl.function(type=pl.FunctionType.Orchestration)"
    lines = path.read_text(encoding="utf-8").split("\n")
    first_chip = max(i for i, line in enumerate(lines) if line.strip() == chip)
    first_host = next(i for i, line in enumerate(lines) if line.strip() == host)
    lines[first_chip], lines[first_host] = lines[first_host], lines[first_chip]
    path.write_text("\n".join(lines), encoding="utf-8")
    assert try_one(path, ("a2", "a3", "a5")) == "ProgramError"

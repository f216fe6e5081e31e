"""The benchmark scripts keep working as the code they measure changes.

They run outside the test suite (their figures are recorded, never asserted), so nothing else
would notice a script that no longer imports: each must at least start and print its usage, and
so must ``bench/run_all.py``, which runs them all.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


SCRIPTS = [*sorted(BENCH.glob("bench_*.py")), BENCH / "run_all.py"]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_a_benchmark_script_starts(script: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout


def test_the_performance_document_holds_the_recorded_results() -> None:
    # docs/performance.md's table is written from bench/results by run_all; a results file
    # committed without the document (or the reverse) would make the two disagree.
    done = subprocess.run(
        [sys.executable, str(BENCH / "run_all.py"), "--check-document"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr

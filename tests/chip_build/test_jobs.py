"""The compile job count: CPUs capped by memory, PYPTO_JOBS, --jobs."""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto_build.chip_build.jobs import (
    BYTES_PER_JOB,
    available_memory,
    default_jobs,
    parse_jobs,
    resolve_jobs,
)


def test_memory_caps_the_cpu_count() -> None:
    assert default_jobs(cpus=8, memory=32 * BYTES_PER_JOB) == 8
    assert default_jobs(cpus=8, memory=3 * BYTES_PER_JOB + 5) == 3
    assert default_jobs(cpus=8, memory=BYTES_PER_JOB // 2) == 1


def test_meminfo_is_read_in_kilobytes(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(
        "MemTotal:       24684092 kB\nMemFree:  100 kB\nMemAvailable:    4194304 kB\n",
        encoding="ascii",
    )
    assert available_memory(meminfo) == 4 * BYTES_PER_JOB
    assert available_memory(tmp_path / "missing") is None
    meminfo.write_text("MemTotal: 1 kB\n", encoding="ascii")
    assert available_memory(meminfo) is None


def test_precedence() -> None:
    assert resolve_jobs(3, {"PYPTO_JOBS": "5"}) == 3
    assert resolve_jobs(None, {"PYPTO_JOBS": "5"}) == 5
    assert resolve_jobs(None, {}) == default_jobs()


@pytest.mark.parametrize(
    ("text", "message"),
    [("many", "PYPTO_JOBS: 'many' is not a whole number of jobs"),
     ("0", "PYPTO_JOBS: 0 jobs; at least 1 is needed")],
)  # fmt: skip
def test_invalid_counts(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_jobs(text, "PYPTO_JOBS")
    with pytest.raises(ValueError, match="--jobs: 0 jobs"):
        resolve_jobs(0, {})

"""The default compile job count: CPUs capped by memory."""

from __future__ import annotations

from pathlib import Path

from pypto_build.chip_build.jobs import BYTES_PER_JOB, available_memory, default_jobs


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

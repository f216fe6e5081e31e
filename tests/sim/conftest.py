"""Fixtures of the simulator tests: one runtime and one compile cache for the session, and
program builds (front end -> default pipeline -> render_subbuilds -> compile_tree with the sim
toolchain) shared by every test that runs the same program."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _support.sim_programs import BuildProgram, ProgramSpec

from pypto_build.chip_build.compile import compile_tree
from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.sim.runtime import NativeRuntime, load_runtime
from pypto_build.chip_build.subbuild import lower_file, render_subbuilds
from pypto_build.chip_build.toolchains import SimToolchain


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A compile cache shared by the session's workers (pytest-xdist): the base temporary
    directory of a worker sits inside the run's, which all workers share."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "sim-cache"


@pytest.fixture(scope="session")
def runtime(cache_dir: Path, sim: SimToolchain) -> NativeRuntime:
    """The process's simulation runtime, built into the session's cache on first use."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYPTO_CACHE_DIR", str(cache_dir))
        return load_runtime()


@pytest.fixture(scope="session")
def build_program(
    tmp_path_factory: pytest.TempPathFactory,
    cache_dir: Path,
    sim: SimToolchain,
    runtime: NativeRuntime,
) -> BuildProgram:
    """Build a test program once per session; returns its build directory (``<out>``)."""
    built: dict[ProgramSpec, Path] = {}
    cache = CompileCache(cache_dir)

    def build(spec: ProgramSpec) -> Path:
        if spec not in built:
            folder = tmp_path_factory.mktemp(spec.slug)
            program = spec.write(folder)
            out = folder / "out"
            render_subbuilds(lower_file(program, [spec.chip]), [spec.chip], out, source_root=folder)
            compile_tree(out / spec.chip, spec.chip, sim, jobs=2, cache=cache, progress=None)
            built[spec] = out
        return built[spec]

    return build

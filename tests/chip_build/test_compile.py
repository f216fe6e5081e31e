"""compile_tree with the real host g++ and the compile cache: what a rebuild compiles, what the
tree records, the log and the progress line."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path, PurePosixPath

import pytest
from _support.trees import INPUTS, kernel_source, make_tree, write_subbuild

from pypto_build.chip_build import compile as compile_module
from pypto_build.chip_build.chips import CoreType
from pypto_build.chip_build.compile import (
    CompileReport,
    compile_tree,
    default_log_path,
    find_jobs,
    start_order,
)
from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.compile_cache.layout import LAYOUT
from pypto_build.chip_build.kernel_config_reader import read_kernel_config
from pypto_build.chip_build.toolchains import SimToolchain, UnitKind
from pypto_build.chip_build.tree_manifest import verify_manifest
from pypto_build.files import walk_files
from pypto_build.tree_layout import RELATIVE, SubBuildLayout, TreeLayout

PIPE = RELATIVE.sub_build("pipe").root


@pytest.fixture
def cache(tmp_path: Path) -> CompileCache:
    return CompileCache(tmp_path / "cache")


def _compiled(report: CompileReport) -> list[str]:
    return [result.job.source.name for result in report.results if not result.cached]


def _snapshot(tree: Path) -> dict[str, bytes]:
    return {path.as_posix(): (tree / path).read_bytes() for path in walk_files(tree)}


def test_jobs_come_from_every_kernel_config_sorted(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "out")
    write_subbuild(tree, "other", {"delta": (CoreType.AIV, kernel_source(4))}, orchestration=None)
    jobs = find_jobs(tree, "a3")
    assert [(job.source.as_posix(), job.kind, job.core_type) for job in jobs] == [
        ("next_levels/other/kernels/aiv/delta.cpp", UnitKind.KERNEL, CoreType.AIV),
        ("next_levels/pipe/kernels/aic/gamma.cpp", UnitKind.KERNEL, CoreType.AIC),
        ("next_levels/pipe/kernels/aiv/alpha.cpp", UnitKind.KERNEL, CoreType.AIV),
        ("next_levels/pipe/kernels/aiv/beta.cpp", UnitKind.KERNEL, CoreType.AIV),
        ("next_levels/pipe/orchestration/pipe.cpp", UnitKind.ORCHESTRATION, None),
    ]
    assert {job.chip.name for job in jobs} == {"a3"}


def test_longer_jobs_start_first_and_outcomes_keep_the_job_order(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "out")
    (tree / PIPE / "kernels/aiv/beta.cpp").write_text(kernel_source(2) + "// longer\n" * 9)
    jobs = find_jobs(tree, "a3")
    assert [job.source.name for job in start_order(jobs)][:2] == ["pipe.cpp", "beta.cpp"]
    for workers in (1, 2):
        outcomes = compile_module._run_all(lambda job: job.source.name, jobs, workers)
        assert outcomes == [job.source.name for job in jobs]


def test_without_a_cache_no_dependency_file_is_read(
    sim: SimToolchain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_: object) -> None:
        raise AssertionError("a dependency file was read")

    monkeypatch.setattr(compile_module, "read_depfile", refuse)
    report = compile_tree(make_tree(tmp_path / "out"), "a3", sim, progress=None)
    assert report.compiled == 4


def test_tree_records_its_binaries_and_toolchain(sim: SimToolchain, tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "out")
    stale = tree / PIPE / "kernels/aiv/alpha.o"  # left by an earlier cann build
    stale.write_bytes(b"device object")
    report = compile_tree(tree, "a3", sim, progress=None)
    assert [result.artifact for result in report.results] == [
        PurePosixPath("next_levels/pipe/sim/kernels/aic/gamma.so"),
        PurePosixPath("next_levels/pipe/sim/kernels/aiv/alpha.so"),
        PurePosixPath("next_levels/pipe/sim/kernels/aiv/beta.so"),
        PurePosixPath("next_levels/pipe/sim/orchestration/pipe.so"),
    ]
    assert not stale.exists()
    config = read_kernel_config(SubBuildLayout(tree / PIPE).kernel_config)
    assert {kernel.name: kernel.binary for kernel in config.kernels} == {
        "alpha": "sim/kernels/aiv/alpha.so",
        "beta": "sim/kernels/aiv/beta.so",
        "gamma": "sim/kernels/aic/gamma.so",
    }
    manifest = json.loads(TreeLayout(tree).manifest.read_text(encoding="utf-8"))
    assert manifest["toolchain"] == {"name": "sim", "version": sim.version}
    assert manifest["inputs"] == INPUTS
    listed = [entry["path"] for entry in manifest["files"]]
    assert "next_levels/pipe/sim/kernels/aiv/alpha.so" in listed
    assert verify_manifest(tree) == []


def test_second_build_compiles_nothing(
    sim: SimToolchain, cache: CompileCache, tmp_path: Path
) -> None:
    tree = make_tree(tmp_path / "out")
    first = compile_tree(tree, "a3", sim, jobs=2, cache=cache, progress=None)
    before = _snapshot(tree)
    second = compile_tree(tree, "a3", sim, jobs=2, cache=cache, progress=None)
    assert (first.compiled, first.cache_hits) == (4, 0)
    assert (second.compiled, second.cache_hits) == (0, 4)
    assert _snapshot(tree) == before
    # The binaries and sources the build knew are listed as they are.
    assert verify_manifest(tree) == []
    # Its binaries are now the cache's own files: a third build, hitting again onto them,
    # leaves the tree as it was (nothing beside them).
    third = compile_tree(tree, "a3", sim, jobs=2, cache=cache, progress=None)
    assert (third.compiled, third.cache_hits) == (0, 4)
    assert _snapshot(tree) == before
    assert verify_manifest(tree) == []


def test_changed_kernel_recompiles_only_that_kernel(
    sim: SimToolchain, cache: CompileCache, tmp_path: Path
) -> None:
    tree = make_tree(tmp_path / "out")
    compile_tree(tree, "a3", sim, cache=cache, progress=None)
    (tree / PIPE / "kernels/aiv/beta.cpp").write_text(kernel_source(20), encoding="utf-8")
    report = compile_tree(tree, "a3", sim, cache=cache, progress=None)
    assert _compiled(report) == ["beta.cpp"]
    assert report.cache_hits == 3


def test_changed_header_recompiles_the_kernels_that_include_it(
    sim: SimToolchain, cache: CompileCache, tmp_path: Path
) -> None:
    tree = make_tree(tmp_path / "out")
    header = tree / PIPE / "kernels/aiv/scale.h"
    header.write_text("#define SCALE 1\n", encoding="utf-8")
    source = tree / PIPE / "kernels/aiv/alpha.cpp"
    source.write_text('#include "scale.h"\n' + kernel_source(1), encoding="utf-8")
    compile_tree(tree, "a3", sim, cache=cache, progress=None)
    header.write_text("#define SCALE 2\n", encoding="utf-8")
    report = compile_tree(tree, "a3", sim, cache=CompileCache(cache.root), progress=None)
    assert _compiled(report) == ["alpha.cpp"]


def test_corrupt_cache_entry_is_recompiled(
    sim: SimToolchain, cache: CompileCache, tmp_path: Path
) -> None:
    tree = make_tree(tmp_path / "out")
    first = compile_tree(tree, "a3", sim, cache=cache, progress=None)
    entries = sorted((cache.root / LAYOUT / "entries").glob("*/*/*/artifact"))
    assert len(entries) == 4
    entries[0].write_bytes(b"\x7fELF truncated")
    second = compile_tree(tree, "a3", sim, cache=cache, progress=None)
    assert (second.compiled, second.cache_hits) == (1, 3)
    assert [r.artifact for r in first.results] == [r.artifact for r in second.results]
    assert verify_manifest(tree) == []


def test_job_count_does_not_change_the_tree_or_the_log(sim: SimToolchain, tmp_path: Path) -> None:
    trees = [make_tree(tmp_path / name) for name in ("serial", "parallel")]
    for tree, jobs in zip(trees, (1, 3), strict=True):
        compile_tree(tree, "a3", sim, jobs=jobs, progress=None)
    assert _snapshot(trees[0]) == _snapshot(trees[1])
    logs = [default_log_path(tree, "a3").read_text(encoding="utf-8") for tree in trees]
    assert logs[0] == logs[1]


def test_log_records_every_command(sim: SimToolchain, cache: CompileCache, tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "out")
    compile_tree(tree, "a3", sim, cache=cache, progress=None)
    log = tmp_path / "out" / ".pypto-build-logs" / "a3.log"
    text = log.read_text(encoding="utf-8")
    assert text.startswith(f"pypto-build compile log: chip a3, toolchain sim {sim.version} (")
    assert "== next_levels/pipe/kernels/aiv/alpha.cpp: compiled -> " in text
    assert (
        f"$ (cd next_levels/pipe/kernels/aiv && {sim.compiler} -c -fPIC -O2 -std=c++17 "
        "-D__CPU_SIM -D__DAV_VEC__ -DNDEBUG" in text
    )
    assert str(tmp_path) not in text.replace(str(sim.compiler), "").replace(
        str(Path(__file__).parents[2]), ""
    )
    compile_tree(tree, "a3", sim, cache=cache, progress=None)
    assert "== next_levels/pipe/kernels/aiv/alpha.cpp: cache hit -> " in log.read_text(
        encoding="utf-8"
    )


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_line_on_a_terminal_only(sim: SimToolchain, tmp_path: Path) -> None:
    terminal = _Terminal()
    compile_tree(make_tree(tmp_path / "tty"), "a3", sim, progress=terminal)
    shown = terminal.getvalue()
    assert "\r[1/4] compiling next_levels/pipe/kernels/aic/gamma.cpp\x1b[K" in shown
    assert "\r[4/4] compiling next_levels/pipe/orchestration/pipe.cpp\x1b[K" in shown
    assert shown.endswith("\r\x1b[K")
    pipe = io.StringIO()
    compile_tree(make_tree(tmp_path / "pipe"), "a3", sim, progress=pipe)
    assert pipe.getvalue() == ""


def test_verbose_prints_each_compile_with_its_commands_and_time(
    sim: SimToolchain, tmp_path: Path
) -> None:
    terminal, verbose = _Terminal(), io.StringIO()
    compile_tree(make_tree(tmp_path / "out"), "a3", sim, progress=terminal, verbose=verbose)
    lines = verbose.getvalue().splitlines()
    titles = [line for line in lines if line.startswith("pypto-build: a3: ")]
    assert len(titles) == 4
    assert re.fullmatch(
        r"pypto-build: a3: next_levels/pipe/kernels/aiv/alpha\.cpp: compiled -> "
        r"next_levels/pipe/sim/kernels/aiv/alpha\.so \(\d+\.\d\d s\)",
        next(title for title in titles if "alpha" in title),
    )
    commands = [line for line in lines if line.startswith("$ (cd ")]
    assert len(commands) == 8  # a compile and a link per source
    assert f"{sim.compiler} -c -fPIC -O2 -std=c++17" in commands[0]
    # The status line is cleared before each verbose block (and once at the end).
    assert terminal.getvalue().count("\r\x1b[K") == 4 + 1
    quiet = io.StringIO()
    compile_tree(make_tree(tmp_path / "quiet"), "a3", sim, progress=quiet)
    assert quiet.getvalue() == ""

"""The engine's entry point: program files in, compiled chip trees out.

Every front end starts the engine here: the hatchling hook and ``pypto-build build`` (which
the CMake package runs) call :func:`build` through :mod:`pypto_build.plugin.project_build`, and
check-render's renders call :func:`render`. In a module of its own, the entry depends on the
steps it chains — lowering and rendering (:mod:`.subbuild`), compiling one tree
(:mod:`.compile`) — and none of them on it, so a caller of the engine needs no step's
internals and a step can change behind the entry.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

from pypto_build.chip_build.compile import BuildFailed, CompileReport, compile_tree
from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.compile_cache.stats import BuildCounts
from pypto_build.chip_build.launch_capacity import BuildWarning
from pypto_build.chip_build.publish import replacing, step
from pypto_build.chip_build.render_errors import NoPrograms
from pypto_build.chip_build.subbuild import (
    ChipTree,
    RenderResult,
    SourceProgram,
    check_output_folder,
    fix_directory_modes,
    lower_file,
    lower_for_programs_default_chips,
    plan_trees,
    render_subbuilds,
    tree_warnings,
    write_trees,
)
from pypto_build.chip_build.toolchains.base import Toolchain
from pypto_build.chip_build.toolchains.launcher import Launcher
from pypto_build.gc_pause import pauses_collector
from pypto_build.tree_layout import LOG_DIR


@dataclass(frozen=True)
class BuildResult:
    """The outcome of :func:`build`: one compile report per chip, in the order asked for."""

    out_dir: Path
    reports: tuple[CompileReport, ...]
    #: What the render found that will fail on a chip (:mod:`.launch_capacity`).
    warnings: tuple[BuildWarning, ...] = ()

    @property
    def compiled(self) -> int:
        return sum(report.compiled for report in self.reports)

    @property
    def cache_hits(self) -> int:
        return sum(report.cache_hits for report in self.reports)

    @property
    def remote_hits(self) -> int:
        return sum(report.remote_hits for report in self.reports)


@pauses_collector
def render(
    program_files: Sequence[Path], *, chips: Sequence[str], out_dir: Path, source_root: Path
) -> RenderResult:
    """Lower ``program_files`` for ``chips`` and render a source tree per chip into
    ``out_dir/<chip>`` (replacing ``out_dir``); ``source_root`` is the folder inputs are
    recorded relative to (the project).

    The collector is paused for the whole of it, not only for each phase: the first collection
    after a pause walks every object made during it that is still alive, which between the
    phases is the whole program's IR, and at the end is only the result."""
    return render_subbuilds(_lower(program_files, chips), chips, out_dir, source_root=source_root)


def _lower(program_files: Sequence[Path], chips: Sequence[str]) -> list[SourceProgram]:
    """Every program of ``program_files``; a file without one is :class:`NoPrograms`."""
    return _programs(program_files, (lower_file(path, chips) for path in program_files))


def _programs(
    program_files: Sequence[Path], lowered: Iterable[Sequence[SourceProgram]]
) -> list[SourceProgram]:
    """The programs ``lowered`` from each of ``program_files``, in turn; a file without one is
    :class:`NoPrograms` (before the files after it are lowered, where ``lowered`` is lazy)."""
    programs: list[SourceProgram] = []
    for path, found in zip(program_files, lowered, strict=True):
        if not found:
            raise NoPrograms(path)
        programs += found
    return programs


def build(
    program_files: Sequence[Path],
    *,
    chips: Sequence[str],
    out_dir: Path,
    source_root: Path,
    toolchain: Toolchain,
    jobs: int = 1,
    cache: CompileCache | None = None,
    launcher: Launcher | None = None,
    progress: TextIO | None = sys.stderr,
    verbose: TextIO | None = None,
) -> BuildResult:
    """Lower ``program_files``, render a tree per chip into ``out_dir/<chip>`` and compile it.

    No ``chips``: every chip the builtins of every file support, found by the lowering that
    the build then uses (:func:`.subbuild.lower_for_programs_default_chips`): a large program's
    lowering costs as much as its render, so it is done once.

    ``source_root`` is the folder inputs are recorded relative to (the project). The trees are
    rendered and compiled in a staging folder that then replaces ``out_dir`` whole
    (:mod:`.publish`): a failed or killed build leaves ``out_dir`` as it was, except that failed
    compiles leave their logs in ``out_dir/.pypto-build-logs`` (a successful build's logs are
    published there with the trees). ``verbose``, when given, gets each compile's command lines
    and wall time (:func:`.compile.compile_tree`). The cache, if given, remembers
    this build's hits and misses for ``pypto-build cache stats``, and its remote tier's uploads
    have landed (or been given up) when this returns.
    """
    chips, trees = _plan(program_files, tuple(dict.fromkeys(chips)), source_root)
    out_dir = Path(out_dir)
    try:
        with replacing(out_dir, check=check_output_folder) as staging:
            write_trees(trees, staging)
            try:
                reports = _compile(
                    staging,
                    chips,
                    toolchain,
                    jobs,
                    cache,
                    launcher,
                    progress,
                    source_root,
                    verbose,
                )
            except BuildFailed as failed:
                raise failed.moved(_keep_logs(staging, out_dir)) from None
            fix_directory_modes(staging)
    finally:
        if cache is not None:
            cache.flush()
    reports = tuple(
        replace(report, log=out_dir / report.log.relative_to(staging)) for report in reports
    )
    result = BuildResult(out_dir, reports, tree_warnings(trees))
    if cache is not None:
        cache.record_build(BuildCounts(result.cache_hits, result.compiled, result.remote_hits))
    return result


@pauses_collector
def _plan(
    program_files: Sequence[Path], chips: tuple[str, ...], source_root: Path
) -> tuple[tuple[str, ...], tuple[ChipTree, ...]]:
    """The chips of a build (no ``chips``: the default ones) and their trees, lowered and
    planned with the collector paused throughout (as for :func:`render`)."""
    if chips:
        programs = _lower(program_files, chips)
    else:
        chips, lowered = lower_for_programs_default_chips(program_files)
        programs = _programs(program_files, lowered)
    return chips, plan_trees(programs, chips, source_root)


def _compile(
    staging: Path,
    chips: Sequence[str],
    toolchain: Toolchain,
    jobs: int,
    cache: CompileCache | None,
    launcher: Launcher | None,
    progress: TextIO | None,
    source_root: Path,
    verbose: TextIO | None,
) -> tuple[CompileReport, ...]:
    """Compile each chip's tree in ``staging``, in order."""
    reports = []
    for chip in chips:
        reports.append(
            compile_tree(
                staging / chip,
                chip,
                toolchain,
                jobs=jobs,
                cache=cache,
                launcher=launcher,
                progress=progress,
                source_root=source_root,
                verbose=verbose,
            )
        )
        step("compiled")
    return tuple(reports)


def _keep_logs(staging: Path, out_dir: Path) -> Path:
    """Move the compile logs of a failed build into ``out_dir`` (the trees stay as they were):
    the failure's message names the log, which must outlive the staging folder."""
    logs = out_dir / LOG_DIR
    out_dir.mkdir(exist_ok=True)
    shutil.rmtree(logs, ignore_errors=True)
    os.replace(staging / LOG_DIR, logs)
    return logs

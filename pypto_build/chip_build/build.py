"""The engine's entry point: program files in, compiled chip trees out.

Every front end starts the engine here: the hatchling hook and ``pypto-build build`` (which
the CMake package runs) call :func:`build` through :mod:`pypto_build.plugin.project_build`, and
check-render's renders call :func:`render`. In a module of its own, the entry depends on the
steps it chains — lowering and rendering (:mod:`.subbuild`), compiling one tree
(:mod:`.compile`) — and none of them on it, so a caller of the engine needs no step's
internals and a step can change behind the entry.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from pypto_build.chip_build.cache import BuildCounts, CompileCache
from pypto_build.chip_build.compile import CompileReport, compile_tree
from pypto_build.chip_build.subbuild import (
    RenderResult,
    SourceProgram,
    lower_file,
    render_subbuilds,
)
from pypto_build.chip_build.toolchains.base import Toolchain
from pypto_build.chip_build.toolchains.launcher import Launcher


@dataclass(frozen=True)
class BuildResult:
    """The outcome of :func:`build`: one compile report per chip, in the order asked for."""

    out_dir: Path
    reports: tuple[CompileReport, ...]

    @property
    def compiled(self) -> int:
        return sum(report.compiled for report in self.reports)

    @property
    def cache_hits(self) -> int:
        return sum(report.cache_hits for report in self.reports)

    @property
    def remote_hits(self) -> int:
        return sum(report.remote_hits for report in self.reports)


def render(
    program_files: Sequence[Path], *, chips: Sequence[str], out_dir: Path, source_root: Path
) -> RenderResult:
    """Lower ``program_files`` for ``chips`` and render a source tree per chip into
    ``out_dir/<chip>`` (replacing ``out_dir``); ``source_root`` is the folder inputs are
    recorded relative to (the project)."""
    programs: list[SourceProgram] = []
    for path in program_files:
        programs += lower_file(path, chips)
    return render_subbuilds(programs, chips, out_dir, source_root=source_root)


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
) -> BuildResult:
    """Lower ``program_files``, render a tree per chip into ``out_dir/<chip>`` and compile it.

    ``source_root`` is the folder inputs are recorded relative to (the project). The cache, if
    given, remembers this build's hits and misses for ``pypto-build cache stats``, and its
    remote tier's uploads have landed (or been given up) when this returns.
    """
    chips = list(dict.fromkeys(chips))
    render(program_files, chips=chips, out_dir=out_dir, source_root=source_root)
    try:
        reports = tuple(
            compile_tree(
                out_dir / chip,
                chip,
                toolchain,
                jobs=jobs,
                cache=cache,
                launcher=launcher,
                progress=progress,
                source_root=source_root,
            )
            for chip in chips
        )
    finally:
        if cache is not None:
            cache.flush()
    result = BuildResult(out_dir, reports)
    if cache is not None:
        cache.record_build(BuildCounts(result.cache_hits, result.compiled, result.remote_hits))
    return result

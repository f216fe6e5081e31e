"""Building a project's kernels from its validated settings: what every adapter does between
reading ``[tool.pypto]`` and calling the engine.

The hatch hook and ``pypto-build build`` (which the CMake package runs) must resolve the
settings exactly alike: program files and path settings relative to the project folder, the
toolchain the ``toolchain`` setting selects, the compiler launcher, the job count, the compile
cache with its remote tier. Both call these functions, which keeps a wheel's kernels the same
as the ones ``pypto-build build`` makes from the same settings.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from pypto_build.chip_build.build import BuildResult, build
from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.compile_cache.remote import RemoteSpec, RemoteTier
from pypto_build.chip_build.jobs import default_jobs
from pypto_build.chip_build.toolchains import Toolchain, launcher_jobs, resolve_launcher
from pypto_build.plugin.project_target import program_paths
from pypto_build.plugin.settings import PyptoSettings
from pypto_build.store.location import default_cache_dir


def remote_specs(settings: PyptoSettings) -> list[RemoteSpec]:
    """The remote caches the settings name, in lookup order: ``remote-cache-url``, then the
    read-only ``remote-cache-fallback-url``."""
    timeout, read_only = settings.remote_cache_timeout, settings.remote_cache_read_only
    signed = settings.remote_cache_signed
    specs = []
    if settings.remote_cache_url is not None:
        specs.append(RemoteSpec(settings.remote_cache_url, read_only, timeout, signed))
    if settings.remote_cache_fallback_url is not None:
        specs.append(RemoteSpec(settings.remote_cache_fallback_url, True, timeout, signed))
    return specs


def project_cache(settings: PyptoSettings, *, warnings: TextIO = sys.stderr) -> CompileCache:
    """The user's compile cache (``$PYPTO_CACHE_DIR``, else the default folder) with the remote
    tier the settings name; the warnings of both tiers go to ``warnings``."""
    specs = remote_specs(settings)

    def warn(message: str) -> None:
        print(f"pypto-build: warning: {message}", file=warnings, flush=True)

    remote = RemoteTier(specs, warn=warn) if specs else None
    return CompileCache(default_cache_dir(), remote=remote, warn=warn)


def build_project(
    project: Path,
    settings: PyptoSettings,
    out_dir: Path,
    *,
    toolchain: Toolchain,
    cache: CompileCache | None,
    progress: TextIO | None = sys.stderr,
) -> BuildResult:
    """Lower, render and compile the programs of ``project`` into ``out_dir/<chip>`` as
    ``settings`` say, with ``toolchain`` (from :func:`.project_target.project_toolchain`).
    ``progress`` gets the compile progress, each compile's command lines and wall time under
    the ``verbose`` setting, and first the toolchain's warnings, one line each (a CANN build
    whose runtime or PTO-ISA revision is unknown: PyPTO's runtime will not reuse its binaries).

    Without a ``chips`` setting, the build targets every chip the ops of the programs support
    (:func:`~pypto_build.chip_build.subbuild.lower_for_programs_default_chips`).

    Raises what the engine raises: ``SettingsError`` for a missing program file,
    ``ProgramError`` for a mistake in a program, ``RenderError``, ``ToolchainError`` and
    ``BuildFailed``.
    """
    paths = program_paths(project, settings)
    if progress is not None:
        for warning in toolchain.warnings():
            print(f"pypto-build: warning: {warning}", file=progress)
    launcher = resolve_launcher(settings.compiler_launcher)
    # A launcher that sends compiles to other hosts (distcc) says how many it can take.
    jobs = settings.jobs or launcher_jobs(launcher) or default_jobs()
    return build(
        paths,
        chips=settings.chips or (),
        out_dir=out_dir,
        source_root=project,
        toolchain=toolchain,
        jobs=jobs,
        cache=cache,
        launcher=launcher,
        progress=progress,
        verbose=progress if settings.verbose else None,
    )

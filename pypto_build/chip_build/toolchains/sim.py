"""The ``sim`` toolchain: the host C++ compiler builds every kernel and orchestration into a
shared object that the host simulation runtime loads.

Flags follow simpler's simulation platforms (simpler 6ebaf77, ``Gxx15Toolchain`` in
``simpler_setup/toolchain.py``): one shared object per source, ``-D__CPU_SIM`` selecting the
simulation side of the headers and ``-D__DAV_VEC__`` / ``-D__DAV_CUBE__`` naming the core type (g++
does not define them), with ``-DNDEBUG``. Unlike simpler we need no PTO-ISA and no ``-std=c++23``
(our portability header is plain C++17), so the distribution's g++ 12 is enough. Symbols the runtime
provides (``pypto_sim_report_error``, ``rt_submit_aiv_task``, ...) stay undefined in the shared
objects and bind when the runtime loads them, which a Linux ``-shared`` link allows by default.

Each source is compiled to an object (``-c -fPIC``) and then linked ``-shared``, as CMake
does, rather than in one command: a compiler launcher such as ccache caches compiles to an
object only, and counts a one-step ``-shared`` build as an uncacheable link.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from pypto_build.builtins import include_dir
from pypto_build.chip_build.chips import Chip, CoreType
from pypto_build.chip_build.toolchains.base import (
    CompileJob,
    CompilePlan,
    Step,
    ToolchainError,
    UnitKind,
    debug_prefix_map,
    dependency_flags,
    first_output_line,
)
from pypto_build.chip_build.toolchains.extra_flags import ExtraFlags
from pypto_build.chip_build.toolchains.wheel_platform import (
    host_platform_problem,
    host_platform_tag,
)
from pypto_build.tree_layout import SIM_BINARIES

#: The simulator's implementation of PyPTO's orchestration API (``pto_orchestration_api.h``),
#: which orchestration sources are compiled against here.
SIM_API_INCLUDE_DIR = Path(__file__).resolve().parents[1] / "sim" / "include"

_COMPILE_FLAGS = ("-c", "-fPIC", "-O2", "-std=c++17")
#: A debug build's: no optimization, debug information, and asserts kept (no ``-DNDEBUG``).
_DEBUG_COMPILE_FLAGS = ("-c", "-fPIC", "-O0", "-g", "-std=c++17")
_KERNEL_DEFINES = {CoreType.AIV: "-D__DAV_VEC__", CoreType.AIC: "-D__DAV_CUBE__"}
_VERSION_NUMBER = re.compile(r"\d+(?:\.\d+)+")


def find_host_compiler(environ: Mapping[str, str] | None = None) -> Path:
    """``$CXX`` if set, else ``g++``, resolved on ``PATH``; an error if it is not there."""
    environ = os.environ if environ is None else environ
    name = environ.get("CXX") or "g++"
    located = shutil.which(name, path=environ.get("PATH"))
    if located is None:
        origin = f"CXX={name}" if environ.get("CXX") else "g++"
        raise ToolchainError(f"toolchain 'sim' needs a host C++ compiler; {origin} is not on PATH")
    return Path(located)


#: The link flag that makes a kernel's ``extern "C" kernel_entry(int64_t*)`` (the kernel ABI's one
#: export) a build-time requirement (GNU ld and lld: "required symbol not defined").
KERNEL_ENTRY_FLAG = "-Wl,--require-defined=kernel_entry"


class SimToolchain:
    """Builds shared objects for the host simulation with ``compiler`` (see the module)."""

    def __init__(
        self, compiler: Path, *, version_line: str | None = None, extra: ExtraFlags | None = None
    ) -> None:
        self.compiler = compiler
        #: What the settings and ``$CXXFLAGS`` add to each command (:mod:`.extra_flags`).
        self.extra = ExtraFlags() if extra is None else extra
        #: The first line of ``compiler --version``, probed now unless given.
        if version_line is None:
            version_line = first_output_line([str(compiler), "--version"])
        self.version_line = version_line

    @classmethod
    def discover(
        cls, environ: Mapping[str, str] | None = None, extra: ExtraFlags | None = None
    ) -> SimToolchain:
        """The sim toolchain on the host compiler :func:`find_host_compiler` picks."""
        return cls(find_host_compiler(environ), extra=extra)

    @property
    def name(self) -> str:
        return "sim"

    @property
    def version(self) -> str:
        """The compiler's name and version number (``g++ 12.2.0``); its whole version line if
        that holds no number."""
        numbers = _VERSION_NUMBER.findall(self.version_line)
        return f"{self.compiler.name} {numbers[-1]}" if numbers else self.version_line

    def identity(self) -> str:
        return f"{self.compiler.name}: {self.version_line}"

    def artifact_suffix(self, kind: UnitKind) -> str:
        return ".so"

    @property
    def binary_dir(self) -> str:
        return SIM_BINARIES

    def platform(self, chip: Chip) -> str:
        return chip.sim_platform

    def binary_context(self, chip: Chip) -> Mapping[str, object] | None:
        return None

    def layout(self, chip: Chip) -> Mapping[str, object]:
        # The commands depend on the compiler, the sources and what the user added alone.
        return self.extra.describe()

    def warnings(self) -> tuple[str, ...]:
        return ()

    def wheel_platform(self) -> str:
        return host_platform_tag()

    def wheel_platform_problem(self, platform: str) -> str | None:
        # This host's interpreter loads the shared objects.
        return host_platform_problem(platform, "sim kernels")

    def plan(self, job: CompileJob, stage: Path) -> CompilePlan:
        stem = job.source.stem
        artifact = f"{stem}{self.artifact_suffix(job.kind)}"
        output = stage / artifact
        depfile = stage / f"{stem}.d"
        obj = f"{stage}/{stem}.o"
        debug = self.extra.debug
        if job.core_type is not None:
            # A kernel sees the headers of its tree only, as PyPTO's runtime compiles it.
            flags: tuple[str, ...] = (
                "-D__CPU_SIM",
                _KERNEL_DEFINES[job.core_type],
                *(() if debug else ("-DNDEBUG",)),
                *job.include_flags(),
            )
        else:
            flags = (f"-I{SIM_API_INCLUDE_DIR}", f"-I{include_dir()}")
        # Debug information names the folder compiled in: recorded as "." (the tree), so a
        # binary the cache serves into another tree names no stale folder.
        mapped = (debug_prefix_map(job.tree),) if debug else ()
        compile_argv = (
            str(self.compiler),
            *(_DEBUG_COMPILE_FLAGS if debug else _COMPILE_FLAGS),
            *flags,
            *mapped,
            *self.extra.compile_args(),
            *dependency_flags(depfile, artifact),
            "-o",
            obj,
            job.source.name,
        )
        # A kernel without its entry point would load and then fail at run time: the link
        # refuses it at build time instead.
        entry = (KERNEL_ENTRY_FLAG,) if job.core_type is not None else ()
        link_argv = (
            str(self.compiler),
            "-shared",
            *entry,
            *self.extra.flags,
            "-o",
            str(output),
            obj,
        )
        return CompilePlan(
            steps=(Step(compile_argv, compiles=True), Step(link_argv, compiles=False)),
            output=output,
            depfile=depfile,
        )

"""The ``cann`` toolchain: AI Core kernels with ``ccec`` + ``ld.lld``, orchestrations with the
toolkit's aarch64 cross compiler, both the way upstream's compile path builds them.

The command lines are those of simpler's ``KernelCompiler`` (``compile_incore``,
``compile_orchestration``) with PyPTO's runtime include directories, at the reference revision
(simpler 6ebaf77: ``simpler_setup/toolchain.py``, ``simpler_setup/kernel_compiler.py``; pypto
e2d0f78: ``python/pypto/runtime/kernel_compiler.py``), so a binary built here is the one PyPTO's
runtime would build for the chip's platform (:mod:`.runtime_tree` derives the runtime's folders per
platform):

* kernel: ``ccec`` with the fixed AI Core flags, the chip's ``--cce-aicore-arch`` for the
  kernel's core type and the chip's extra flags (the chip catalog), then the include
  directories in upstream's order — PTO-ISA's ``include`` and ``include/pto``, the runtime's
  kernel include directories, the tree's own (``kernel_config.py`` ``extra_include_dirs``,
  which upstream also passes last) — compiled to a relocatable object and linked with
  ``ld.lld -e kernel_entry`` (resolves block-local relocations; the device loader takes the
  linked image's ``.text``). The linked image is the artifact, ``<kernel>.o``.
* orchestration: ``aarch64-target-linux-gnu-g++ -shared -fPIC -O3 -g -std=c++17``, plus
  ``-fno-gnu-unique`` when that compiler is GCC (so ``dlclose`` unloads the ``.so``) and
  ``-Wl,--build-id=sha1`` (the runtime recognizes an uploaded callable by its build id), the
  runtime's orchestration sources compiled in and its orchestration include directories, into
  ``<orchestration>.so``. The source includes ``pto_orchestration_api.h`` from those
  directories and its own helpers relative to itself, so it needs no folder of the tree.

To every compile we add ``-fdebug-prefix-map=<tree>=.`` and ``-MD -MF <dep> -MT <artifact>`` for the
compile cache, just before the output: both compilers get upstream's ``-g``, whose debug information
records the compiler's working directory (a folder of the tree), so without the map a binary would
name the absolute path the tree was built at, and a tree's bytes must not depend on where it was
built. With it, debug paths are relative to the chip tree (``./next_levels/...``). The dependency
file of an orchestration lists what its own source read only (see :mod:`.includes`), so its plan
names the runtime's sources and their headers as further inputs for the cache.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path

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
    run_tool,
)
from pypto_build.chip_build.toolchains.discovery import HOST_CXX, CannToolkit
from pypto_build.chip_build.toolchains.extra_flags import ExtraFlags
from pypto_build.chip_build.toolchains.target import CannTarget
from pypto_build.chip_build.toolchains.wheel_platform import DEVICE_PLATFORM

#: ccec flags of every AI Core compile before the arch (simpler's CCEC toolchain).
_CCEC_LEADING = ("-c", "-O3", "-g", "-x", "cce", "-Wall", "-std=c++17", "--cce-aicore-only")
#: ccec flags after the arch: stack sizes, overflow recording, address transform, no scalar
#: dcci insertion, and the MEMORY_BASE define.
_CCEC_TRAILING = (
    "-mllvm",
    "-cce-aicore-stack-size=0x8000",
    "-mllvm",
    "-cce-aicore-function-stack-size=0x8000",
    "-mllvm",
    "-cce-aicore-record-overflow=false",
    "-mllvm",
    "-cce-aicore-addr-transform",
    "-mllvm",
    "-cce-aicore-dcci-insert-for-scalar=false",
    "-DMEMORY_BASE",
)
#: The defines of each side of a MIX kernel (cube:vector 1:2, ``KERNEL_TYPE_MIX_AIC_1_2``):
#: ``__MIX_CORE_MACRO__=1`` on both, as CANN's AscendC op compiler gives the two compiles of a
#: MIX kernel (asc-devkit ``tools/build/asc_op_compile_base/asc_op_compiler``, ``MIX_CORE_MACRO``
#: in ``ascendc_constants.py``, at https://gitcode.com/cann/asc-devkit); and on the cube side
#: alone ``ASCENDC_CUBE_ONLY``, AscendC's pure-cube matmul (the matmul runs on the AIC without
#: the AIV-driven message framework: the sides of a MIX kernel here meet through cross-core
#: flags, ``pypto_build/mix_kernel.h``). The arch already names the side (``dav-*-cube`` /
#: ``dav-*-vec``).
_MIX_DEFINES = {
    CoreType.AIC: ("-D__MIX_CORE_MACRO__=1", "-DASCENDC_CUBE_ONLY"),
    CoreType.AIV: ("-D__MIX_CORE_MACRO__=1",),
}
#: simpler's ``Aarch64GxxToolchain.get_compile_flags`` (``-fno-gnu-unique`` follows for GCC).
_ORCHESTRATION_FLAGS = ("-shared", "-fPIC", "-O3", "-g", "-std=c++17")
_GCC_ONLY_FLAGS = ("-fno-gnu-unique",)
#: ``KernelCompiler._orchestration_link_flags`` for a device (non-host) compiler on Linux.
_ORCHESTRATION_LINK_FLAGS = ("-Wl,--build-id=sha1",)


def _include_flags(dirs: tuple[Path, ...]) -> tuple[str, ...]:
    return tuple(f"-I{path}" for path in dirs)


class CannToolchain:
    """Builds with an installed CANN toolkit for ``target`` (see the module docstring)."""

    def __init__(
        self, toolkit: CannToolkit, target: CannTarget, extra: ExtraFlags | None = None
    ) -> None:
        self.toolkit = toolkit
        self.target = target
        #: What the ``cann-*`` settings add to every compile (:mod:`.extra_flags`).
        self.extra = ExtraFlags() if extra is None else extra

    @property
    def name(self) -> str:
        return "cann"

    @property
    def version(self) -> str:
        return str(self.toolkit.version)

    @functools.cached_property
    def _identity(self) -> str:
        parts = [
            f"cann {self.toolkit.version}",
            f"ccec: {first_output_line([str(self.toolkit.ccec), '--version'])}",
        ]
        if self.toolkit.host_cxx is not None:
            host = first_output_line([str(self.toolkit.host_cxx), "--version"])
            parts.append(f"{HOST_CXX.name}: {host}")
        return "; ".join(parts)

    def identity(self) -> str:
        return self._identity

    def artifact_suffix(self, kind: UnitKind) -> str:
        return ".o" if kind is UnitKind.KERNEL else ".so"

    @property
    def binary_dir(self) -> str:
        return ""

    def platform(self, chip: Chip) -> str:
        return chip.platform

    def binary_context(self, chip: Chip) -> Mapping[str, object] | None:
        return self.target.binary_context(chip.platform)

    def layout(self, chip: Chip) -> Mapping[str, object]:
        dirs = self.target.runtime.platform_dirs(chip.platform)
        return {
            "kernel_include_dirs": [str(path) for path in self.kernel_include_dirs(chip)],
            "orchestration_include_dirs": [str(path) for path in dirs.orchestration_include_dirs],
            "orchestration_inputs": [str(path) for path in dirs.orchestration_inputs],
            "orchestration_sources": [str(path) for path in dirs.orchestration_sources],
            **self.extra.describe(),
        }

    def warnings(self) -> tuple[str, ...]:
        unknown = self.target.unknown_revisions()
        return () if unknown is None else (unknown,)

    def wheel_platform(self) -> str:
        return DEVICE_PLATFORM

    def wheel_platform_problem(self, platform: str) -> str | None:
        # Device binaries run on the NPU whatever the host: an explicit platform is taken as
        # given.
        return None

    def kernel_include_dirs(self, chip: Chip) -> tuple[Path, ...]:
        """Upstream's kernel include directories for ``chip``'s platform, in order: PTO-ISA's
        ``include`` and ``include/pto``, then the runtime's."""
        pto = self.target.pto_isa.path
        runtime = self.target.runtime.platform_dirs(chip.platform)
        return (pto / "include", pto / "include" / "pto", *runtime.kernel_include_dirs)

    def plan(self, job: CompileJob, stage: Path) -> CompilePlan:
        artifact = job.artifact(self.artifact_suffix(job.kind)).name
        output = stage / artifact
        depfile = stage / f"{job.source.stem}.d"
        ours = (
            debug_prefix_map(job.tree),
            *self.extra.compile_args(),
            *dependency_flags(depfile, artifact),
        )
        if job.kind is UnitKind.ORCHESTRATION:
            runtime = self.target.runtime.platform_dirs(job.chip.platform)
            compile_argv = (
                str(self._host_cxx()),
                *_ORCHESTRATION_FLAGS,
                *(_GCC_ONLY_FLAGS if self._host_is_gcc else ()),
                *_ORCHESTRATION_LINK_FLAGS,
                *(str(source) for source in runtime.orchestration_sources),
                *_include_flags(runtime.orchestration_include_dirs),
                *ours,
                "-o",
                str(output),
                job.source.name,
            )
            return CompilePlan(
                steps=(Step(compile_argv, compiles=True),),
                output=output,
                depfile=depfile,
                inputs=runtime.orchestration_inputs,
            )
        assert job.core_type is not None  # CompileJob guarantees it for kernels
        relocatable = stage / f"{job.source.stem}.unlinked.o"
        compile_argv = (
            str(self.toolkit.ccec),
            *_CCEC_LEADING,
            f"--cce-aicore-arch={job.chip.cce_arch(job.core_type)}",
            *_CCEC_TRAILING,
            *job.chip.ccec_extra_flags,
            *(_MIX_DEFINES[job.core_type] if job.mix else ()),
            *_include_flags(self.kernel_include_dirs(job.chip)),
            *job.include_flags(),
            *ours,
            "-o",
            str(relocatable),
            job.source.name,
        )
        link_argv = (
            str(self.toolkit.ld_lld),
            "-e",
            "kernel_entry",
            "-o",
            str(output),
            str(relocatable),
        )
        return CompilePlan(
            steps=(Step(compile_argv, compiles=True), Step(link_argv, compiles=False)),
            output=output,
            depfile=depfile,
        )

    def _host_cxx(self) -> Path:
        if self.toolkit.host_cxx is None:
            raise ToolchainError(
                f"the CANN toolkit at {self.toolkit.root} has no {HOST_CXX}, the aarch64 host "
                "compiler that builds orchestrations"
            )
        return self.toolkit.host_cxx

    @functools.cached_property
    def _host_is_gcc(self) -> bool:
        """Whether the aarch64 compiler is GCC, as upstream decides it: its ``--version`` does
        not mention clang (which has no ``STB_GNU_UNIQUE`` to turn off)."""
        return "clang" not in run_tool([str(self._host_cxx()), "--version"]).output.lower()

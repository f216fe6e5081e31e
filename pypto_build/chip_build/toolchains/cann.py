"""The ``cann`` toolchain: AI Core kernels with ``ccec`` + ``ld.lld``, orchestrations with the
toolkit's aarch64 host compiler.

The command lines are simpler's / PyPTO's (``reference/cann-fused-op-and-toolchain.md`` §B.3 (a),
``reference/upstream-simpler-runtime.md`` §4.1, ``reference/upstream-pypto-collectives.md`` §8.2),
so a kernel built here is the binary PyPTO's runtime would have built:

* kernel: ``ccec`` with the fixed AI Core flags, the chip's ``--cce-aicore-arch`` for the
  kernel's core type and the chip's extra flags (the chip catalog), then the include roots in
  upstream order — PTO-ISA's ``include`` and ``include/pto``, our portability/ABI headers, any
  extra directories — compiled to a relocatable object and linked with
  ``ld.lld -e kernel_entry`` (resolves block-local relocations; the device loader takes the
  linked image's ``.text``). The linked image is the artifact, ``<kernel>.o``.
* orchestration: ``aarch64-target-linux-gnu-g++ -shared -fPIC -O3 -g -std=c++17`` into
  ``<orchestration>.so``. With the runtime's orchestration include directories given, the
  portability header switches to the runtime's own ``orchestration_api.h``
  (``PYPTO_BUILD_RUNTIME_ORCHESTRATION_API``).

To every compile we add ``-MD -MF <dep> -MT <artifact>`` for the compile cache and
``-fdebug-prefix-map=<tree>=.``: both compilers get upstream's ``-g``, whose debug information
records the compiler's working directory (a folder of the tree), so without the map a binary
would name the absolute path the tree was built at (DESIGN §11). With it, debug paths are
relative to the chip tree (``./next_levels/...``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pypto_build.builtins import include_dir
from pypto_build.chip_build.chips import Chip
from pypto_build.chip_build.toolchains.base import (
    CompileJob,
    CompilePlan,
    Step,
    ToolchainError,
    UnitKind,
    dependency_flags,
    first_output_line,
)
from pypto_build.chip_build.toolchains.discovery import HOST_CXX, CannToolkit

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
_ORCHESTRATION_FLAGS = ("-shared", "-fPIC", "-O3", "-g", "-std=c++17")
#: The define that makes pypto_build/orchestration_api.h use the runtime's own header.
_RUNTIME_API_DEFINE = "-DPYPTO_BUILD_RUNTIME_ORCHESTRATION_API"


def debug_prefix_map(tree: Path) -> str:
    """The flag that records ``tree`` as ``.`` in debug information. A compiler run in a folder
    of the tree records that folder as the kernel reports it (symbolic links resolved), so the
    tree is mapped in the same spelling."""
    return f"-fdebug-prefix-map={tree.resolve()}=."


class CannToolchain:
    """Builds with an installed CANN toolkit (see the module docstring)."""

    def __init__(
        self,
        toolkit: CannToolkit,
        *,
        pto_isa_root: Path,
        extra_include_dirs: Sequence[Path] = (),
        orchestration_include_dirs: Sequence[Path] = (),
    ) -> None:
        self.toolkit = toolkit
        self.pto_isa_root = pto_isa_root
        self.extra_include_dirs = tuple(extra_include_dirs)
        self.orchestration_include_dirs = tuple(orchestration_include_dirs)
        self._identity: str | None = None

    @property
    def name(self) -> str:
        return "cann"

    @property
    def version(self) -> str:
        return str(self.toolkit.version)

    def identity(self) -> str:
        if self._identity is None:
            ccec = first_output_line([str(self.toolkit.ccec), "--version"])
            self._identity = f"cann {self.toolkit.version}; ccec: {ccec}"
        return self._identity

    def artifact_suffix(self, kind: UnitKind) -> str:
        return ".o" if kind is UnitKind.KERNEL else ".so"

    @property
    def binary_dir(self) -> str:
        return ""

    def platform(self, chip: Chip) -> str:
        return chip.platform

    def binary_context(self, chip: Chip) -> Mapping[str, object] | None:
        return None

    def include_flags(self) -> tuple[str, ...]:
        """Kernel include roots in upstream order: PTO-ISA, our headers, extra directories."""
        dirs = (
            self.pto_isa_root / "include",
            self.pto_isa_root / "include" / "pto",
            include_dir(),
            *self.extra_include_dirs,
        )
        return tuple(f"-I{path}" for path in dirs)

    def plan(self, job: CompileJob, stage: Path) -> CompilePlan:
        artifact = job.artifact(self.artifact_suffix(job.kind)).name
        output = stage / artifact
        depfile = stage / f"{job.source.stem}.d"
        source = job.source.name
        if job.kind is UnitKind.ORCHESTRATION:
            return CompilePlan(
                steps=(
                    Step(
                        (
                            str(self._host_cxx()),
                            *_ORCHESTRATION_FLAGS,
                            *self._orchestration_include_flags(),
                            debug_prefix_map(job.tree),
                            *dependency_flags(depfile, artifact),
                            "-o",
                            str(output),
                            source,
                        ),
                        compiles=True,
                    ),
                ),
                output=output,
                depfile=depfile,
            )
        assert job.core_type is not None  # CompileJob guarantees it for kernels
        relocatable = stage / f"{job.source.stem}.unlinked.o"
        compile_argv = (
            str(self.toolkit.ccec),
            *_CCEC_LEADING,
            f"--cce-aicore-arch={job.chip.cce_arch(job.core_type)}",
            *_CCEC_TRAILING,
            *job.chip.ccec_extra_flags,
            *self.include_flags(),
            *job.include_flags(),
            debug_prefix_map(job.tree),
            *dependency_flags(depfile, artifact),
            "-o",
            str(relocatable),
            source,
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

    def _orchestration_include_flags(self) -> tuple[str, ...]:
        flags = [f"-I{include_dir()}"]
        if self.orchestration_include_dirs:
            flags.append(_RUNTIME_API_DEFINE)
            flags += [f"-I{path}" for path in self.orchestration_include_dirs]
        return tuple(flags)

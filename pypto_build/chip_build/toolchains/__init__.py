"""Toolchains that turn a rendered sub-build's sources into binaries: ``cann`` (the CANN device
compiler) and ``sim`` (the host compiler, for the simulation runtime), how they are found, what
a CANN build is built for (PyPTO's runtime and PTO-ISA), and the compiler launchers that can
front them."""

from pypto_build.chip_build.toolchains.base import (
    CompileError,
    CompileJob,
    CompilePlan,
    Step,
    Toolchain,
    ToolchainError,
    ToolkitNotFoundError,
    UnitKind,
    run_plan,
)
from pypto_build.chip_build.toolchains.cann import CannToolchain
from pypto_build.chip_build.toolchains.discovery import (
    CannToolkit,
    SearchedRoot,
    ToolkitSearch,
    find_toolkit,
)
from pypto_build.chip_build.toolchains.launcher import (
    Launcher,
    find_launchers,
    launcher_jobs,
    resolve_launcher,
)
from pypto_build.chip_build.toolchains.revisions import Revision
from pypto_build.chip_build.toolchains.runtime_tree import RUNTIME_NAME, PlatformDirs, RuntimeTree
from pypto_build.chip_build.toolchains.select import (
    TOOLCHAIN_NAMES,
    ToolchainName,
    select_toolchain,
)
from pypto_build.chip_build.toolchains.sim import SimToolchain, find_host_compiler
from pypto_build.chip_build.toolchains.target import (
    CannTarget,
    PtoIsaRoot,
    TargetSettings,
    resolve_pto_isa_root,
    resolve_target,
)
from pypto_build.chip_build.toolchains.version import Version

__all__ = [
    "RUNTIME_NAME",
    "TOOLCHAIN_NAMES",
    "CannTarget",
    "CannToolchain",
    "CannToolkit",
    "CompileError",
    "CompileJob",
    "CompilePlan",
    "Launcher",
    "PlatformDirs",
    "PtoIsaRoot",
    "Revision",
    "RuntimeTree",
    "SearchedRoot",
    "SimToolchain",
    "Step",
    "TargetSettings",
    "Toolchain",
    "ToolchainError",
    "ToolchainName",
    "ToolkitNotFoundError",
    "ToolkitSearch",
    "UnitKind",
    "Version",
    "find_host_compiler",
    "find_launchers",
    "find_toolkit",
    "launcher_jobs",
    "resolve_launcher",
    "resolve_pto_isa_root",
    "resolve_target",
    "run_plan",
    "select_toolchain",
]

"""Everything :mod:`pypto_build.chip_build.toolchains` offers, imported when the package's first
name is read (:mod:`pypto_build.lazy_exports`)."""

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
from pypto_build.chip_build.toolchains.registry import TOOLCHAIN_NAMES
from pypto_build.chip_build.toolchains.revisions import Revision
from pypto_build.chip_build.toolchains.runtime_tree import RUNTIME_NAME, PlatformDirs, RuntimeTree
from pypto_build.chip_build.toolchains.select import select_toolchain
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

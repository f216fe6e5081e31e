"""The layout of a chip tree: every name and path PyPTO's runtime, and our own tools, find in one.

One module owns them, so the writer (:mod:`pypto_build.chip_build.subbuild`, the compile
engine), the readers (the simulator's :mod:`pypto_build.chip_build.sim.program`, the host API
:mod:`pypto_build.mc2`, the depfile and build records), the builtin headers' scan, the
lowering's diagnostics that name a path of the tree, and the tests spell a path of a tree in one
place only. It imports nothing of the package, so every part may use it, as
:mod:`pypto_build.files`::

    <out>/<chip>/next_levels/<name>/orchestration/<orch>.cpp        a sub-build (SubBuildLayout)
                                   /kernels/{aiv,aic}/<kernel>.cpp
                                   /include/pypto_build/*.h
                                   /kernel_config.py
                                   /cache/binary_context.json          CANN builds
                                   /sim/{orchestration,kernels/aiv}/*.so  sim builds
    <out>/<chip>/orchestration/host_orch.py                          the HOST orchestrator
    <out>/<chip>/distributed_meta.json                               its parameters
    <out>/<chip>/manifest.json                                       every file's hash
    <out>/.pypto-build-logs/<chip>.log                               beside the tree, not in it

The names PyPTO's runtime looks for are upstream's (pypto ``e2d0f78``: ``next_levels/<name>``
compiled by ``compile_and_assemble`` from its ``kernel_config.py``, reusing binaries under
``cache/binary_context.json``; the L3 loader's ``orchestration/host_orch.py`` and
``distributed_meta.json``); ``manifest.json``, the ``sim/`` binaries and the log folder are ours.

A layout is rooted at a :class:`~pathlib.Path` to reach a tree on disk, or at an empty
:class:`~pathlib.PurePosixPath` (:data:`RELATIVE`, :data:`RELATIVE_SUB_BUILD`) for the paths
relative to the tree that a plan and a manifest key on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath, PurePosixPath
from typing import Generic, TypeVar

#: The folder of a tree that holds its sub-builds, one per chip callable.
NEXT_LEVELS = "next_levels"
#: The folder of a tree holding the HOST orchestrator, and of a sub-build holding its AICPU
#: orchestration source.
ORCHESTRATION = "orchestration"
#: The folder of a sub-build holding its kernels, one folder per core type.
KERNELS = "kernels"
#: The folder of a sub-build holding the headers of ours its sources include
#: (``include/pypto_build/<name>``; :mod:`pypto_build.builtins.headers` copies them there).
INCLUDE = "include"
#: A sub-build's configuration, in upstream's format.
KERNEL_CONFIG = "kernel_config.py"
#: The HOST orchestrator module's file name, in the tree's :data:`ORCHESTRATION` folder.
HOST_MODULE_NAME = "host_orch.py"
#: The HOST orchestrator's module, relative to the tree.
HOST_MODULE = f"{ORCHESTRATION}/{HOST_MODULE_NAME}"
#: The HOST orchestrator's parameters, for PyPTO's L3 loader.
DISTRIBUTED_META = "distributed_meta.json"
#: Every file of the tree with its hash (ours).
MANIFEST = "manifest.json"
#: Where PyPTO's runtime looks for the record of what the binaries beside a sub-build's sources
#: were built for (``pypto/runtime/_binary_cache.py``).
BINARY_CONTEXT = "cache/binary_context.json"
#: The folder of a sub-build that holds its sim binaries (``sim/kernels/aiv/<name>.so``,
#: ``sim/orchestration/<name>.so``). They are binaries for our simulator, whose orchestration
#: interface is its own, so they stay out of the places where PyPTO's runtime looks for (and,
#: when they were not built for it, deletes) the binaries of its platforms.
SIM_BINARIES = "sim"
#: The folder of an output directory where a build writes its compile logs, beside the chip
#: trees, never inside one (so no manifest lists it).
LOG_DIR = ".pypto-build-logs"
#: The glob, relative to a tree, of every sub-build's ``kernel_config.py``.
SUB_BUILD_CONFIGS = f"{NEXT_LEVELS}/*/{KERNEL_CONFIG}"

P = TypeVar("P", bound=PurePath)


@dataclass(frozen=True)
class SubBuildLayout(Generic[P]):
    """The paths of one sub-build (``next_levels/<name>``), under :attr:`root`."""

    root: P

    @property
    def name(self) -> str:
        """The chip callable's name (its folder's)."""
        return self.root.name

    @property
    def kernel_config(self) -> P:
        return self.root / KERNEL_CONFIG

    @property
    def binary_context(self) -> P:
        return self.root / BINARY_CONTEXT

    @property
    def include(self) -> P:
        return self.root / INCLUDE

    @property
    def orchestration_dir(self) -> P:
        return self.root / ORCHESTRATION

    def orchestration(self, name: str) -> P:
        """The AICPU orchestration source ``orchestration/<name>.cpp``."""
        return self.root / ORCHESTRATION / f"{name}.cpp"

    def kernel(self, core_type: str, name: str) -> P:
        """The source of kernel ``name`` for ``core_type``: ``kernels/<core type>/<name>.cpp``."""
        return self.root / kernel_source(core_type, name)

    def kernels(self, core_type: str) -> P:
        """The folder of the kernels of ``core_type``."""
        return self.root / KERNELS / core_type

    def sim_binaries(self) -> P:
        """The folder of the sub-build's sim binaries (``sim/``)."""
        return self.root / SIM_BINARIES


@dataclass(frozen=True)
class TreeLayout(Generic[P]):
    """The paths of one chip tree (``<out>/<chip>``), under :attr:`root`."""

    root: P

    @property
    def chip(self) -> str:
        """The chip the tree is for (its folder's name)."""
        return self.root.name

    @property
    def next_levels(self) -> P:
        return self.root / NEXT_LEVELS

    @property
    def host_module(self) -> P:
        return self.root / HOST_MODULE

    @property
    def distributed_meta(self) -> P:
        return self.root / DISTRIBUTED_META

    @property
    def manifest(self) -> P:
        return self.root / MANIFEST

    def sub_build(self, name: str) -> SubBuildLayout[P]:
        """Sub-build ``next_levels/<name>``."""
        return SubBuildLayout(self.root / NEXT_LEVELS / name)


def kernel_source(core_type: str, name: str) -> str:
    """:meth:`SubBuildLayout.kernel` relative to the sub-build, as text: what its
    ``kernel_config.py`` lists, asked for several times per kernel by every build."""
    return f"{KERNELS}/{core_type}/{name}.cpp"


#: The tree's paths relative to itself, as a plan, a manifest and a compile job name them.
RELATIVE: TreeLayout[PurePosixPath] = TreeLayout(PurePosixPath())
#: A sub-build's paths relative to itself, as its ``kernel_config.py`` names them.
RELATIVE_SUB_BUILD: SubBuildLayout[PurePosixPath] = SubBuildLayout(PurePosixPath())

"""Hand-made rendered chip trees for the toolchain, cache and compile tests.

A tree has the layout the sub-build writer produces (``<out>/<chip>/next_levels/<name>/...``
with ``kernel_config.py`` and a ``manifest.json``), with small sources that compile with the
host compiler and include our ABI headers, which travel in the sub-build as in a rendered one (so
the compile cache sees real header dependencies).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

from pypto_build.builtins.headers import header_closure
from pypto_build.chip_build.chips import CoreType
from pypto_build.chip_build.kernel_config import KernelEntry, OrchestrationEntry
from pypto_build.chip_build.kernel_config_writer import render_kernel_config
from pypto_build.chip_build.tree_manifest import write_manifest
from pypto_build.files import atomic_write_text
from pypto_build.tree_layout import INCLUDE, TreeLayout

#: Inputs the "renderer" recorded; compiling must keep them in the manifest.
INPUTS = {"src/pkg/pipelines.py": hashlib.sha256(b"program").hexdigest()}


def kernel_source(value: int) -> str:
    """A kernel that stores ``value`` through its first argument slot."""
    return (
        "#include <cstdint>\n"
        '#include "pypto_build/kernel_abi.h"\n'
        'extern "C" void kernel_entry(int64_t* args) {\n'
        f"  *reinterpret_cast<int64_t*>(args[0]) = {value};\n"
        "}\n"
    )


ORCHESTRATION_SOURCE = (
    '#include "pto_orchestration_api.h"\n'
    'extern "C" void aicpu_orchestration_entry(const ChipTaskArgs& args) {\n'
    "  CoreTaskArgs task;\n"
    "  task.add_scalar(args.scalar(0));\n"
    "  rt_submit_aiv_task(0, task);  // the runtime's side is left undefined until it loads this\n"
    "}\n"
)


def write_subbuild(
    tree: Path,
    name: str,
    kernels: Mapping[str, tuple[CoreType, str]],
    *,
    orchestration: str | None = ORCHESTRATION_SOURCE,
) -> Path:
    """Write sub-build ``next_levels/<name>`` of the chip tree ``tree``: ``kernels`` maps a
    kernel name to its core type and source (func_ids in that order). Returns the sub-build
    root."""
    sub_build = TreeLayout(tree).sub_build(name)
    root = sub_build.root
    headers = header_closure(source.encode() for _, source in kernels.values())
    for header, data in headers.items():
        atomic_write_text(sub_build.include / header, data.decode())
    include_dirs = (INCLUDE,) if headers else ()
    entries = []
    for func_id, (kernel, (core_type, source)) in enumerate(kernels.items()):
        entry = KernelEntry(func_id, kernel, core_type, include_dirs=include_dirs)
        atomic_write_text(root / entry.source, source)
        entries.append(entry)
    orch = None
    if orchestration is not None:
        orch = OrchestrationEntry(name)
        atomic_write_text(root / orch.source, orchestration)
    atomic_write_text(sub_build.kernel_config, render_kernel_config(orch, entries))
    return root


def make_tree(out: Path, chip: str = "a3") -> Path:
    """``<out>/<chip>`` with one sub-build ``pipe``: kernels ``alpha`` (aiv), ``beta`` (aiv),
    ``gamma`` (aic) and an orchestration, plus a manifest with :data:`INPUTS`."""
    tree = out / chip
    write_subbuild(
        tree,
        "pipe",
        {
            "alpha": (CoreType.AIV, kernel_source(1)),
            "beta": (CoreType.AIV, kernel_source(2)),
            "gamma": (CoreType.AIC, kernel_source(3)),
        },
    )
    write_manifest(tree, chip=chip, toolchain="none", toolchain_version="", inputs=INPUTS)
    return tree

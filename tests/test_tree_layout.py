"""The chip tree's layout: the names PyPTO's runtime looks for, as upstream spells them.

Every other test names a tree's paths through :mod:`pypto_build.tree_layout`; this one pins
the layout itself, literally, against the loader it must satisfy (pypto ``e2d0f78``:
``pypto/runtime/`` ``compile_and_assemble`` and ``_assemble_chip_callables`` read
``next_levels/<name>/kernel_config.py`` and reuse binaries under ``cache/binary_context.json``;
the L3 loader reads ``orchestration/host_orch.py`` and ``distributed_meta.json``).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from pypto_build import tree_layout
from pypto_build.tree_layout import RELATIVE, RELATIVE_SUB_BUILD, TreeLayout


def test_the_names_pyptos_runtime_loads_are_upstreams() -> None:
    assert RELATIVE.sub_build("pipe").kernel_config == PurePosixPath(
        "next_levels/pipe/kernel_config.py"
    )
    assert RELATIVE.sub_build("pipe").binary_context == PurePosixPath(
        "next_levels/pipe/cache/binary_context.json"
    )
    assert RELATIVE.host_module == PurePosixPath("orchestration/host_orch.py")
    assert RELATIVE.distributed_meta == PurePosixPath("distributed_meta.json")
    assert RELATIVE_SUB_BUILD.orchestration("pipe") == PurePosixPath("orchestration/pipe.cpp")
    assert RELATIVE_SUB_BUILD.kernel("aiv", "k") == PurePosixPath("kernels/aiv/k.cpp")


def test_our_own_names() -> None:
    assert RELATIVE.manifest == PurePosixPath("manifest.json")
    assert RELATIVE_SUB_BUILD.include == PurePosixPath("include")
    assert RELATIVE_SUB_BUILD.sim_binaries() == PurePosixPath("sim")
    assert tree_layout.LOG_DIR == ".pypto-build-logs"
    assert tree_layout.SUB_BUILD_CONFIGS == "next_levels/*/kernel_config.py"


def test_a_layout_on_disk_is_rooted_at_its_tree(tmp_path: Path) -> None:
    tree = TreeLayout(tmp_path / "a3")
    assert tree.chip == "a3"
    assert tree.manifest == tmp_path / "a3" / "manifest.json"
    sub_build = tree.sub_build("pipe")
    assert sub_build.name == "pipe"
    assert sub_build.root == tree.next_levels / "pipe"
    assert sub_build.kernels("aic") == tmp_path / "a3/next_levels/pipe/kernels/aic"
    assert sub_build.orchestration_dir == tmp_path / "a3/next_levels/pipe/orchestration"

"""The MC2 op in a sub-build (tests/programs/mc2_layer.py): two variants of the MIX kernel, each
listed on the AIC and the AIV with the tiling it was rendered for (``kernel_config.py``'s
``variant``), submitted as a cluster, with the headers they include; the tree is a3's alone and
``check-render`` passes on it."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support.mc2 import mc2_request
from _support.rendered import PROGRAMS_DIR

from pypto_build.builtins import render, resolve
from pypto_build.chip_build.chips import CoreType
from pypto_build.chip_build.determinism.render import check_render
from pypto_build.chip_build.kernel_config_reader import read_kernel_config
from pypto_build.chip_build.subbuild import default_chips, lower_file, render_subbuilds
from pypto_build.lowering.aclnn.rules import check
from pypto_build.lowering.aclnn.tiling import tile
from pypto_build.lowering.ir.types import DataType
from pypto_build.tree_layout import RELATIVE, SubBuildLayout

PROGRAM = PROGRAMS_DIR / "mc2_layer.py"
HANDLE = ":pypto.runtime.builtins.mc2.batch_matmul_reduce_scatter_all_to_all"
SUB_BUILD = f"a3/{RELATIVE.sub_build('layer').root}"
#: The program's two calls: (kernel, its request as the rules see it).
VARIANTS = (
    ("__builtin_bmm_rs_a2a__fp16", mc2_request(4, 2, 1, bias_rank=3)),
    (
        "__builtin_bmm_rs_a2a__bf16",
        mc2_request(4, 2, 0, dtype=DataType.BF16, transpose_weight=True),
    ),
)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mc2") / "tree"
    render_subbuilds(lower_file(PROGRAM, ["a3"]), ["a3"], out, source_root=PROGRAMS_DIR)
    return out


def test_the_op_builds_for_a3_only() -> None:
    assert default_chips(PROGRAM) == ("a3",)


def test_each_variant_is_one_source_per_core_type_with_the_headers_it_includes(tree: Path) -> None:
    root = tree / SUB_BUILD
    files = sorted(path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file())
    assert files == [
        "include/pypto_build/host_float.h",
        "include/pypto_build/host_matmul.h",
        "include/pypto_build/host_mix.h",
        "include/pypto_build/kernel_abi.h",
        "include/pypto_build/mix_kernel.h",
        "include/pypto_build/orchestration.h",
        "include/pypto_build/portability.h",
        "kernel_config.py",
        "kernels/aic/__builtin_bmm_rs_a2a__bf16.cpp",
        "kernels/aic/__builtin_bmm_rs_a2a__fp16.cpp",
        "kernels/aiv/__builtin_bmm_rs_a2a__bf16.cpp",
        "kernels/aiv/__builtin_bmm_rs_a2a__fp16.cpp",
        "orchestration/layer.cpp",
    ]


def test_kernel_config_lists_each_variant_on_both_cores_with_its_tiling(tree: Path) -> None:
    config = read_kernel_config(SubBuildLayout(tree / SUB_BUILD).kernel_config)
    listed = [(kernel.func_id, kernel.name, kernel.core_type) for kernel in config.kernels]
    assert listed == [
        (0, VARIANTS[0][0], CoreType.AIC),
        (1, VARIANTS[0][0], CoreType.AIV),
        (2, VARIANTS[1][0], CoreType.AIC),
        (3, VARIANTS[1][0], CoreType.AIV),
    ]
    for position, (_, request) in enumerate(VARIANTS):
        tiling = tuple(tile(check(request)).template_vars().items())
        assert config.kernels[2 * position].variant == tiling
        assert config.kernels[2 * position + 1].variant == tiling
    # The FP16 call has a bias: the tiling says so, and the key's bias digit.
    variant = dict(config.kernels[0].variant)
    assert (variant["common_tiling_is_bias"], variant["tiling_key"]) == (
        "true",
        "1000000000000001101",
    )


def test_the_tree_ships_the_kernel_the_package_renders(tree: Path) -> None:
    package = resolve(HANDLE)
    for name, request in VARIANTS:
        dtype = request.x.dtype.value
        expected = render(
            package,
            "kernel.cpp.in",
            {
                "template_package": package.package,
                **package.dtype_variables(dtype),
                **tile(check(request)).template_vars(),
            },
        )
        for core in ("aic", "aiv"):
            assert SubBuildLayout(tree / SUB_BUILD).kernel(core, name).read_text() == expected


def test_each_call_is_one_cluster_and_the_workspace_orders_them(tree: Path) -> None:
    source = SubBuildLayout(tree / SUB_BUILD).orchestration("layer").read_text()
    first = source.index("rt_submit_task(MixedKernels{0, 1, 1}, task0_);")
    assert first < source.index("rt_submit_task(MixedKernels{2, 3, 3}, task1_);")
    assert "set_block_num" not in source  # one cluster: the default launch


def test_check_render_passes(tmp_path: Path) -> None:
    result = check_render(
        PROGRAM,
        lower_file(PROGRAM, ["a3"]),
        ["a3"],
        source_root=PROGRAMS_DIR,
        report_dir=tmp_path / "report",
        diffoscope=None,
    )
    assert result.passed, result.to_json()
    assert [check.name for check in result.checks] == ["rail-identity", "reproducible"]

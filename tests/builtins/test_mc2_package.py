"""The mc2 package (``pypto_build/builtins/mc2/batch_matmul_reduce_scatter_all_to_all``): its
manifest as the mc2 contract reads it, and its one kernel template, rendered with the variables
the contract gives a variant (the dtype's, then the build-time tiling's): every one of them used,
the render deterministic, and the simulation side of the source compiling for the AIC and for the
AIV, for each shard type, with and without a bias, transposed and plain weight, FP16 and BF16.
(The CANN side needs the toolkit's AscendC headers, which no test machine here has.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import jinja2
import jinja2.meta
import pytest
from _support.mc2 import mc2_request

from pypto_build.builtins import include_dir, render, resolve
from pypto_build.lowering.aclnn.rules import check
from pypto_build.lowering.aclnn.tiling import tile
from pypto_build.lowering.ir.types import DataType

CompileCxx = Callable[[list[str]], None]

HANDLE = ":pypto.runtime.builtins.mc2.batch_matmul_reduce_scatter_all_to_all"
KERNEL = "kernel.cpp.in"
#: (dtype, y_shard_type, bias, transposed weight): each flag on and off across the set.
CONFIGS = [
    (DataType.FP16, 1, False, False),
    (DataType.FP16, 0, True, True),
    (DataType.BF16, 1, True, False),
    (DataType.BF16, 0, False, True),
]


def variables(dtype: DataType, shard: int, bias: bool, transposed: bool) -> dict[str, str]:
    """What the CHIP rail renders the kernel with for this configuration at ep 4, tp 2."""
    package = resolve(HANDLE)
    request = mc2_request(
        4, 2, shard, dtype=dtype, bias_rank=2 if bias else None, transpose_weight=transposed
    )
    return {
        "template_package": package.package,
        **package.dtype_variables(dtype.value),
        **tile(check(request)).template_vars(),
    }


def config_id(config: tuple[DataType, int, bool, bool]) -> str:
    dtype, shard, bias, transposed = config
    weight = "transposed" if transposed else "plain"
    return f"{dtype.value}-shard{shard}-{'bias' if bias else 'nobias'}-{weight}"


def test_the_manifest_is_the_mc2_contract_s() -> None:
    package = resolve(HANDLE)
    assert (package.public_op, package.contract, package.kernel_stem) == (
        "pld.tensor.batch_matmul_reduce_scatter_all_to_all",
        "mc2",
        "bmm_rs_a2a",
    )
    assert (package.core_type, package.chips, package.rails) == ("mix", ("a3",), ("chip",))
    assert [(op.name, op.window, op.optional, op.dtype) for op in package.operands] == [
        ("x", False, False, "payload"),
        ("weight", False, False, "payload"),
        ("bias", False, True, "any"),
        ("out", False, False, "payload"),
        ("workspace", True, False, "any"),
    ]
    assert package.dtype_variables("fp16") == {"x_cpp": "half", "bias_cpp": "half"}
    assert package.dtype_variables("bf16") == {"x_cpp": "bfloat16_t", "bias_cpp": "float"}
    assert [spec.name for spec in package.templates] == [KERNEL]


def test_the_template_uses_exactly_the_variables_a_variant_has() -> None:
    package = resolve(HANDLE)
    source = package.template(KERNEL).decode()
    referenced = jinja2.meta.find_undeclared_variables(jinja2.Environment().parse(source))
    given = set(variables(*CONFIGS[0]))
    assert referenced == set(package.template_spec(KERNEL).variables) == given
    assert source.startswith("// Generated from {{ template_package }}.\n")


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_renders_are_deterministic_and_complete(config: tuple[DataType, int, bool, bool]) -> None:
    package = resolve(HANDLE)
    given = variables(*config)
    text = render(package, KERNEL, given)
    assert render(package, KERNEL, dict(reversed(given.items()))) == text
    assert "{{" not in text and "{%" not in text
    assert text.splitlines()[0] == f"// Generated from {package.package}."
    assert f"    {given['tiling_key']}ull,\n" in text


@pytest.mark.parametrize("core", ["__DAV_CUBE__", "__DAV_VEC__"])
@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_the_simulation_side_compiles_for_both_cores(
    config: tuple[DataType, int, bool, bool],
    core: str,
    gxx: str,
    compile_cxx: CompileCxx,
    tmp_path: Path,
) -> None:
    source = tmp_path / "kernel.cpp"
    source.write_text(render(resolve(HANDLE), KERNEL, variables(*config)))
    flags = ["-std=c++17", "-Wall", "-Wextra", "-Werror", "-D__CPU_SIM", f"-D{core}"]
    compile_cxx([gxx, "-fsyntax-only", *flags, "-I", str(include_dir()), str(source)])

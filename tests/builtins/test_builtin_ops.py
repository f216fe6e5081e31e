"""A package's manifest, read as an op of the program model (``lowering/builtin_ops.py``).

The lowering takes a package in only once what its manifest says makes sense in the program
model's terms; the kernel it synthesizes is the kind the manifest declares.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pypto_build.builtins import load_package
from pypto_build.lowering.builtin_ops import BuiltinOp
from pypto_build.lowering.builtin_registry import builtin_op, builtin_ops, package_op
from pypto_build.lowering.ir import DataType, DistributedTensorType, FunctionType, TensorType
from pypto_build.lowering.ir.names import template_dir, template_vars

MakePackage = Callable[..., Path]

#: The result window the minimal package's source is copied into (on every rank).
TARGET = """
[[operands]]
name = "target"
role = "result"
direction = "InOut"
window = true
remote = true
dtype = "payload"
shapes = [["N"]]
"""


def _manifest(minimal: str, core_type: str) -> str:
    """The minimal package with a result window and ``core_type``."""
    return (
        minimal.replace('core_type = "aiv"', f'core_type = "{core_type}"')
        .replace("\n[dtypes.fp32]", f"{TARGET}\n[dtypes.fp32]")
        .replace("tensor_count = 1\nctx_slot = 1", "tensor_count = 2\nctx_slot = 2")
    )


def _op(make_package: MakePackage, minimal: str, core_type: str) -> BuiltinOp:
    return package_op(load_package(make_package(manifest=_manifest(minimal, core_type))))


@pytest.mark.parametrize(
    ("core_type", "func_type"), [("aiv", "AIV"), ("aic", "AIC"), ("mix", "InCore")]
)
def test_the_synthesized_kernel_is_the_declared_core_type(
    make_package: MakePackage, minimal_manifest: str, core_type: str, func_type: str
) -> None:
    op = _op(make_package, minimal_manifest, core_type)
    source = TensorType((8,), DataType.FP32)
    target = DistributedTensorType((8,), DataType.FP32, window="buf")
    variables = op.template_vars(DataType.FP32)
    kernel = op.synthesize_kernel("__builtin_copy__fp32", variables, [(0, source), (1, target)])
    assert kernel.func_type is FunctionType[func_type]
    assert [p.var.type for p in kernel.params] == [source, target.unbound()]
    assert (template_dir(kernel), template_vars(kernel)) == (
        ":acme.kernels.copy",
        "dtype_cpp=float",
    )


def test_configuration_variables_follow_the_dtype_variables(
    make_package: MakePackage, minimal_manifest: str
) -> None:
    op = _op(make_package, minimal_manifest, "aiv")
    config = (("tiling_key", "1000000000000001001"),)
    assert (
        op.template_vars(DataType.FP32, config) == "dtype_cpp=float,tiling_key=1000000000000001001"
    )


def test_our_packages_are_ops() -> None:
    ops = {op.op: op for op in builtin_ops()}
    assert sorted(ops) == [
        "pld.tensor.all_to_all_v",
        "pld.tensor.batch_matmul_reduce_scatter_all_to_all",
        "pld.tensor.indexed_all_to_all_v",
    ]
    a2av = ops["pld.tensor.all_to_all_v"]
    assert builtin_op("builtin.tensor.all_to_all_v") is a2av
    assert a2av.names == ("input", "target", "signal", "send_counts", "recv_counts")
    assert (a2av.result_index, a2av.launch_width.name) == (1, "all_to_all_v")
    assert a2av.template_vars(DataType.INT8) == "dtype_cpp=int8_t"
    mc2 = ops["pld.tensor.batch_matmul_reduce_scatter_all_to_all"]
    assert (mc2.package.contract, mc2.package.core_type, mc2.stem) == ("mc2", "mix", "bmm_rs_a2a")
    assert mc2.names == ("x", "weight", "bias", "out", "workspace")
    assert mc2.kernel_name(DataType.BF16) == "__builtin_bmm_rs_a2a__bf16"
    assert mc2.template_vars(DataType.BF16) == "x_cpp=bfloat16_t,bias_cpp=float"

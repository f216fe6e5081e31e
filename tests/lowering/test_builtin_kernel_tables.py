"""The lowering's builtin collective tables agree with the template packages' manifests.

Both rails build a kernel declaration from :mod:`pypto_build.lowering.builtin_kernels`, and the
backend renders that kernel from the package its ``builtin_template_dir`` names; the op, the
operand order and directions and the dtype variants must be the same in both places. (Whether a
parameter is a DistributedTensor is the lowering's own fact: it fixes the kernel's trailing
CommCtx arguments, which the manifest does not describe.)
"""

from __future__ import annotations

import pytest

from pypto_build.builtins import resolve
from pypto_build.lowering.builtin_kernels import (
    ALL_TO_ALL_V,
    INDEXED_ALL_TO_ALL_V,
    SUPPORTED_DTYPES,
    BuiltinCollective,
    template_vars,
)

BUILTINS = [
    pytest.param(ALL_TO_ALL_V, id="all_to_all_v"),
    pytest.param(INDEXED_ALL_TO_ALL_V, id="indexed_all_to_all_v"),
]


@pytest.mark.parametrize("builtin", BUILTINS)
def test_op_and_operands_match_the_manifest(builtin: BuiltinCollective) -> None:
    package = resolve(builtin.template_dir)
    assert builtin.op == package.public_op
    assert builtin.stem == package.package.rsplit(".", 1)[1]
    assert [(o.role, o.direction.value) for o in builtin.operands] == [
        (o.name, o.direction.value) for o in package.operands
    ]
    assert [o.name for o in package.operands if o.role == "result"] == [builtin.result_role]


@pytest.mark.parametrize("builtin", BUILTINS)
def test_dtype_variants_and_template_vars_match_the_manifest(builtin: BuiltinCollective) -> None:
    package = resolve(builtin.template_dir)
    assert [dtype.value for dtype in SUPPORTED_DTYPES] == [v.name for v in package.dtypes]
    for dtype in SUPPORTED_DTYPES:
        variables = package.dtype_variables(dtype.value)
        assert template_vars(dtype) == ",".join(f"{k}={v}" for k, v in variables.items())

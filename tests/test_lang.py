"""The typed DSL stand-ins: runtime behaviour and what a type checker makes of program files."""

from __future__ import annotations

import functools
import importlib.util
import inspect
import textwrap
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import pypto_build.lang as pl
import pypto_build.lang.distributed as pld
from pypto_build.lang._forms import ParamAnnotation
from pypto_build.lowering.builtin_registry import builtin_ops
from pypto_build.lowering.ir import (
    DataType,
    DistributedTensorType,
    FunctionType,
    Layout,
    Level,
    ParamDirection,
    Role,
    ScalarType,
    TensorType,
)


def test_exported_names_exist() -> None:
    for module in (pl, pld):
        missing = [name for name in module.__all__ if not hasattr(module, name)]
        assert missing == []


def test_enums_are_the_irs() -> None:
    dtypes = [pl.FP32, pl.FP16, pl.BF16, pl.INT8, pl.UINT8, pl.INT16, pl.INT32, pl.INT64]
    assert [*dtypes, pl.INDEX, pl.BOOL] == [
        DataType.FP32,
        DataType.FP16,
        DataType.BF16,
        DataType.INT8,
        DataType.UINT8,
        DataType.INT16,
        DataType.INT32,
        DataType.INT64,
        DataType.INDEX,
        DataType.BOOL,
    ]
    assert (pl.ND, pl.DN, pl.NZ) == (Layout.ND, Layout.DN, Layout.NZ)
    assert pl.TensorLayout is Layout
    assert pl.FunctionType is FunctionType
    assert [t.name for t in pl.FunctionType] == [
        "Opaque",
        "Orchestration",
        "InCore",
        "Inline",
        "AIC",
        "AIV",
        "Group",
        "Spmd",
        "Graph",
    ]
    assert (pl.Level.HOST, pl.Level.CHIP) == (Level.HOST, Level.CHIP)
    assert pl.Role is Role


def test_annotations_evaluate_to_ir_types() -> None:
    assert pl.Tensor[[8, 64], pl.FP32] == TensorType((8, 64), DataType.FP32)
    assert pl.Tensor[(4,), pl.INT8, pl.DN] == TensorType((4,), DataType.INT8, Layout.DN)
    assert pld.DistributedTensor[[4, 1], pl.INT32] == DistributedTensorType((4, 1), DataType.INT32)
    assert pl.Scalar[pl.INDEX] == ScalarType(DataType.INDEX)
    assert pl.Out[pl.Tensor[[2], pl.FP16]] == ParamAnnotation(
        ParamDirection.Out, TensorType((2,), DataType.FP16)
    )
    assert pl.InOut[pld.DistributedTensor[[2], pl.FP32]].direction is ParamDirection.InOut


def test_annotation_names_show_their_dsl_spelling() -> None:
    names = [pl.Tensor, pld.DistributedTensor, pl.Out, pl.InOut, pl.Scalar]
    assert [repr(name) for name in names] == [
        "pl.Tensor",
        "pld.DistributedTensor",
        "pl.Out",
        "pl.InOut",
        "pl.Scalar",
    ]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: pl.Tensor[[8, 64]], r"pl.Tensor\[\[d0, d1, ...\], dtype\(, layout\)\]: got 1"),
        (lambda: pl.Tensor[8, pl.FP32], "the shape must be a list of ints, got 8"),
        (lambda: pl.Tensor[[8, "n"], pl.FP32], "the shape must be a list of ints"),
        (lambda: pl.Tensor[[True], pl.FP32], "the shape must be a list of ints"),
        (lambda: pl.Tensor[[8], "fp32"], "the dtype must be a pl dtype"),
        (lambda: pld.DistributedTensor[[8], pl.FP32, "ND"], r"pld.DistributedTensor.*layout"),
        (lambda: pl.Out[pl.FP32], r"pl.Out\[...\] wraps a tensor annotation"),
        (lambda: pl.Scalar[[1]], r"pl.Scalar\[dtype\] needs a pl dtype"),
    ],
)
def test_malformed_annotation_says_what_was_expected(
    build: Callable[[], object], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        build()


def test_decorators_return_what_they_decorate() -> None:
    class Program:
        pass

    def kernel() -> None:
        pass

    assert pl.program(Program) is Program
    assert pl.function(kernel) is kernel
    decorate = pl.function(type=pl.FunctionType.AIV, external_source="kernels/k.cpp")
    assert decorate(kernel) is kernel


_OPS: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [
    ("pl.range", pl.range, (4,)),
    ("pl.submit", pl.submit, (print,)),
    ("pl.func_attr", pl.func_attr, ({},)),
    ("pl.tensor.create", pl.create_tensor, ([8], pl.FP32)),
    ("pl.tensor.slice", pl.slice, (None, [1], [0])),
    ("pl.tensor.reshape", pl.reshape, (None, [8])),
    ("pl.tensor.view", pl.view, (None,)),
    ("pl.tensor.assemble", pl.assemble, (None, None, [0])),
    ("pl.tensor.transpose", pl.transpose, (None, 0, 1)),
    ("pl.tensor.set_validshape", pl.set_validshape, (None, 1, 1)),
    ("pl.tensor.write", pl.write, (None, [0], 1.0)),
    ("pld.alloc_window_buffer", pld.alloc_window_buffer, (64,)),
    ("pld.window", pld.window, (None, [4])),
    ("pld.world_size", pld.world_size, ()),
    ("pld.tensor.all_to_all_v", pld.tensor.all_to_all_v, (None,) * 5),
    ("pld.tensor.indexed_all_to_all_v", pld.tensor.indexed_all_to_all_v, (None,) * 6),
    (
        "pld.tensor.batch_matmul_reduce_scatter_all_to_all",
        functools.partial(
            pld.tensor.batch_matmul_reduce_scatter_all_to_all,
            ep_world_size=2,
            tp_world_size=1,
            y_shard_type=0,
        ),
        (None,) * 5,
    ),
    ("pld.WindowBuffer", pld.WindowBuffer, ()),
]


@pytest.mark.parametrize(("spelling", "op", "args"), _OPS, ids=[op[0] for op in _OPS])
def test_calling_an_op_raises(spelling: str, op: Callable[..., Any], args: tuple[Any, ...]) -> None:
    kwargs = {"dtype": pl.FP32} if spelling == "pld.window" else {}
    with pytest.raises(RuntimeError) as caught:
        op(*args, **kwargs)
    message = str(caught.value)
    assert message.startswith("PyPTO programs are compiled by pypto-build, not executed; ")
    assert f"{spelling} has no Python implementation" in message


#: Our builtin ops, each with a stub in ``pld.tensor`` (another distribution's are not ours).
_OUR_BUILTINS = [b for b in builtin_ops() if b.package.handle.startswith(":pypto.runtime.")]


def test_every_stub_of_pld_tensor_is_a_builtin_op_of_ours() -> None:
    stubs = {
        name
        for name, value in vars(pld.tensor).items()
        if inspect.isfunction(value) and value.__module__ == pld.tensor.__name__
    }
    assert stubs == {builtin.op.removeprefix("pld.tensor.") for builtin in _OUR_BUILTINS}


@pytest.mark.parametrize("builtin", _OUR_BUILTINS, ids=lambda builtin: builtin.op)
def test_a_stub_takes_the_operands_of_its_op(builtin: Any) -> None:
    """The stub's parameters are the op's operands, in order, positional or keyword-only as
    the op binds them; an optional operand has a default unless a required positional operand
    follows it (Python has no such parameter: the stub admits None there instead)."""
    stub = getattr(pld.tensor, builtin.op.removeprefix("pld.tensor."))
    params = list(inspect.signature(stub).parameters.values())
    operands = builtin.public_def.operands
    assert [param.name for param in params] == [spec.name for spec in operands]
    for position, (param, spec) in enumerate(zip(params, operands, strict=True)):
        later = operands[position + 1 :]
        defaulted = not spec.required and not any(
            other.required and not other.keyword_only for other in later
        )
        keyword = inspect.Parameter.KEYWORD_ONLY
        assert (param.kind is keyword, param.default is not param.empty) == (
            spec.keyword_only,
            defaulted,
        ), param.name
        if defaulted and spec.default is not None:
            assert param.default == spec.default, param.name


def test_short_aliases_are_the_tensor_namespace_ops() -> None:
    aliases = {
        pl.create_tensor: pl.tensor.create,
        pl.slice: pl.tensor.slice,
        pl.reshape: pl.tensor.reshape,
        pl.view: pl.tensor.view,
        pl.assemble: pl.tensor.assemble,
        pl.transpose: pl.tensor.transpose,
        pl.set_validshape: pl.tensor.set_validshape,
        pl.write: pl.tensor.write,
    }
    assert all(alias is op for alias, op in aliases.items())


def _import_file(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("sample_pipelines", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sample_program_imports_and_its_annotations_are_ir_types(sample_program: Path) -> None:
    module = _import_file(sample_program)
    annotations = module.MoeDispatch.chip_pipeline.__annotations__
    assert annotations["signal"] == DistributedTensorType((4, 4), DataType.INT32)
    assert annotations["out"] == ParamAnnotation(
        ParamDirection.Out, TensorType((16, 64), DataType.FP32)
    )


_GOOD_PROGRAM = """\
    import pypto_build.lang as pl
    import pypto_build.lang.distributed as pld

    ROWS = 8


    @pl.program
    class Tiny:
        @pl.function(type=pl.FunctionType.AIV, external_source="kernels/scale.cpp")
        def scale(
            self,
            x: pl.Tensor[[ROWS, 64], pl.FP32],
            y: pl.Out[pl.Tensor[[ROWS, 64], pl.FP32]],
        ) -> pl.Tensor[[ROWS, 64], pl.FP32]: ...

        @pl.function(type=pl.FunctionType.Orchestration)
        def orch(
            self,
            x: pl.Tensor[[ROWS, 64], pl.FP32],
            n: pl.Scalar[pl.INDEX],
        ) -> pl.Tensor[[ROWS, 64], pl.FP32]:
            pl.func_attr({"note": "tiny"})
            y = pl.create_tensor([ROWS, 64], pl.FP32)
            for i in pl.range(n):
                part = pl.slice(x, [1, 64], [i, 0])
                y = pl.assemble(y, part, [i, 0])
            y, task = pl.submit(self.scale, x, y)
            return self.scale(x, y, core_num=2)

        @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
        def host(self, x: pl.Tensor[[ROWS, 64], pl.FP32]) -> None:
            buf = pld.alloc_window_buffer(ROWS * 64 * 4, name="w")
            w = pld.window(buf, [ROWS, 64], dtype=pl.FP32)
            for r in pl.range(pld.world_size()):
                self.orch(w, 1, device=r)
"""

_BAD_PROGRAM = """\
    import pypto_build.lang as pl

    x = pl.create_tensor([8], pl.FP33)
    y = pl.slice(x, [8], [0], layout=pl.DN)
    z = pl.range("eight")
"""


def test_program_files_type_check_with_mypy(tmp_path: Path, sample_program: Path) -> None:
    api = pytest.importorskip("mypy.api")
    good = tmp_path / "good.py"
    good.write_text(textwrap.dedent(_GOOD_PROGRAM), encoding="utf-8")
    bad = tmp_path / "bad.py"
    bad.write_text(textwrap.dedent(_BAD_PROGRAM), encoding="utf-8")
    stdout, stderr, _ = api.run(
        [
            "--strict",
            "--disable-error-code=empty-body",
            "--no-error-summary",
            f"--cache-dir={tmp_path / 'mypy-cache'}",
            str(good),
            str(bad),
            str(sample_program),
        ]
    )
    assert stderr == ""
    reports = stdout.splitlines()
    assert [line for line in reports if not line.startswith(str(bad))] == []
    errors = [line.removeprefix(f"{bad}:") for line in reports if ": error: " in line]
    assert [error.split(": error: ")[0] for error in errors] == ["3", "4", "5"]
    assert 'Module has no attribute "FP33"' in errors[0]
    assert 'Unexpected keyword argument "layout"' in errors[1]
    assert 'Argument 1 to "range" has incompatible type "str"' in errors[2]

"""HOST orchestrator codegen: the generated module is in PyPTO's distributed entry format and
drives a recording stand-in of PyPTO's L3 API with the dispatches the lowered program describes."""

from __future__ import annotations

import ast
import builtins
import json
import types
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _support.rendered import Render

from pypto_build.chip_build.distributed_meta import Parameter, read_meta
from pypto_build.chip_build.host_orch_codegen import (
    ENTRY_MARKER,
    HostOrchestrator,
    generate_host_orchestrator,
    py_name,
)
from pypto_build.chip_build.runtime_types import DataType, TensorArgType
from pypto_build.chip_build.subbuild import lower_file
from pypto_build.tree_layout import TreeLayout


@dataclass(frozen=True)
class FakeTensor:
    """A tensor as a label: host arrays and window views alike."""

    label: str

    def __getitem__(self, index: object) -> FakeTensor:
        return FakeTensor(f"{self.label}{_index_text(index)}")

    def reshape(self, shape: Sequence[int]) -> FakeTensor:
        return FakeTensor(f"{self.label}.reshape{tuple(shape)}")


def _index_text(index: object) -> str:
    parts = index if isinstance(index, tuple) else (index,)
    text = []
    for part in parts:
        if isinstance(part, slice):
            start = "" if part.start is None else part.start
            stop = "" if part.stop is None else part.stop
            text.append(f"{start}:{stop}")
        else:
            text.append(str(part))
    return "[" + ", ".join(text) + "]"


@dataclass(frozen=True)
class FakeBuffer:
    where: str

    def tensor(
        self,
        shapes: Sequence[int],
        dtype: DataType,
        strides: Sequence[int] | None = None,
        byte_offset: int = 0,
    ) -> FakeTensor:
        view = "" if strides is None else f"/{tuple(strides)}@{byte_offset}"
        return FakeTensor(f"{self.where}{tuple(shapes)}:{DataType(dtype).name}{view}")


@dataclass(frozen=True)
class FakeHandle:
    name: str
    device: int
    domain_rank: int
    domain_size: int
    buffers: Mapping[str, FakeBuffer]

    @property
    def device_ctx(self) -> int:
        return 0x1000 + self.device


@dataclass
class FakeTaskArgs:
    tensors: list[tuple[str, str]] = field(default_factory=list)
    scalars: list[int | float] = field(default_factory=list)

    def add_tensor(self, tensor: FakeTensor, tag: TensorArgType) -> None:
        assert not self.scalars, "a tensor after a scalar"
        self.tensors.append((tensor.label, tag.name))

    def add_scalar(self, value: int | float) -> None:
        self.scalars.append(value)


@dataclass
class FakeOrchestrator:
    """Records domains and dispatches; dispatch arguments are kept as plain labels."""

    domains: list[tuple[str, list[int], int, list[tuple[str, int, int]]]] = field(
        default_factory=list
    )
    submits: list[tuple[str, int, list[tuple[str, str]], list[int | float]]] = field(
        default_factory=list
    )

    @property
    def _worker(self) -> str:
        return "worker"

    @contextmanager
    def allocate_domain(
        self, *, name: str, workers: Sequence[int], window_size: int, buffers: Sequence[Any]
    ) -> Iterator[Mapping[int, FakeHandle]]:
        members = list(workers)
        specs = [(spec.name, spec.count, spec.nbytes) for spec in buffers]
        self.domains.append((name, members, window_size, specs))
        yield {
            device: FakeHandle(
                name,
                device,
                rank,
                len(members),
                {spec.name: FakeBuffer(f"{name}[{device}].{spec.name}") for spec in buffers},
            )
            for rank, device in enumerate(members)
        }


@dataclass(frozen=True)
class FakeSpec:
    name: str
    dtype: str
    count: int
    nbytes: int


def _fake_modules(orch: FakeOrchestrator) -> dict[str, types.ModuleType]:
    def zeros(shape: Sequence[int], dtype: str) -> Any:
        return types.SimpleNamespace(share_memory_=lambda: FakeTensor(f"token{tuple(shape)}"))

    def submit_chip(
        orch_: FakeOrchestrator, callable_: str, args: FakeTaskArgs, config: Any, worker: int
    ) -> None:
        assert orch_ is orch
        orch.submits.append((callable_, worker, args.tensors, args.scalars))

    def make_tensor_arg(worker: str, tensor: FakeTensor) -> FakeTensor:
        assert worker == "worker"
        return tensor

    def module(name: str, **attributes: object) -> types.ModuleType:
        made = types.ModuleType(name)
        made.__dict__.update(attributes)
        return made

    return {
        "torch": module("torch", zeros=zeros, int32="int32"),
        "simpler.task_interface": module(
            "simpler.task_interface",
            CallConfig=object,
            CommBufferSpec=FakeSpec,
            DataType=DataType,
            TaskArgs=FakeTaskArgs,
            TensorArgType=TensorArgType,
        ),
        "pypto.runtime.tensor_arg": module("tensor_arg", make_tensor_arg=make_tensor_arg),
        "pypto.runtime.distributed_runner": module("runner", _submit_chip=submit_chip),
    }


def _run(
    generated: HostOrchestrator, orch: FakeOrchestrator, world_size: int, **tensors: object
) -> None:
    """Run the module as PyPTO's L3 runner does: intermediates first, then the marked entry,
    with the sub-build names as the callables."""
    fakes = _fake_modules(orch)

    def import_(name: str, *args: Any, **kwargs: Any) -> types.ModuleType:
        return fakes[name]

    namespace: dict[str, Any] = {
        "__name__": "host_orch",
        "__builtins__": {**vars(builtins), "__import__": import_},
    }
    exec(compile(generated.source, "host_orch.py", "exec"), namespace)
    [entry] = [v for v in namespace.values() if getattr(v, ENTRY_MARKER, False)]
    run_tensors: dict[str, object] = dict(tensors)
    namespace["_alloc_intermediates"](run_tensors, world_size=world_size)
    callables = {name: name for name in _dispatched(generated.source)}
    entry(
        orch,
        None,
        "config",
        tensors=run_tensors,
        callables=callables,
        sub_ids={},
        _keep=[],
        world_size=world_size,
    )


def _dispatched(source: str) -> set[str]:
    module = ast.parse(source)
    return {
        node.slice.value
        for node in ast.walk(module)
        if isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id == "callables"
        and isinstance(node.slice, ast.Constant)
    }


def _generated(rendered: Render, stem: str) -> HostOrchestrator:
    tree = rendered(stem) / "a3"
    meta = read_meta(TreeLayout(tree).distributed_meta)
    source = TreeLayout(tree).host_module.read_text()
    return HostOrchestrator(source, meta.parameters, meta.returns)


HOST_TENSORS = {"inp": FakeTensor("inp"), "out": FakeTensor("out")}


def test_host_rail_fans_out_per_rank(rendered: Render) -> None:
    orch = FakeOrchestrator()
    _run(_generated(rendered, "host_rail_int8"), orch, 2, **HOST_TENSORS)
    # Each buffer padded to whole cache lines; the runtime carves them in order.
    assert orch.domains == [
        (
            "d0",
            [0, 1],
            512 + 512 + 64 + 64 + 64,
            [
                ("stage", 512, 512),
                ("data", 512, 512),
                ("signal", 16, 64),
                ("counts", 8, 64),
                ("recv", 8, 64),
            ],
        )
    ]
    variant = "builtin.tensor.all_to_all_v__int8"
    assert [(name, worker) for name, worker, _, _ in orch.submits] == [
        ("stage_orch", 0),
        ("stage_orch", 1),
        (variant, 0),
        (variant, 1),
        ("consume_orch", 0),
        ("consume_orch", 1),
    ]
    _, _, tensors, scalars = orch.submits[3]
    assert tensors == [
        ("d0[1].stage(8, 64):INT8", "INPUT"),
        ("d0[1].data(8, 64):INT8", "INOUT"),
        ("d0[1].signal(2, 2):INT32", "INOUT"),
        ("d0[1].counts(2,):INT32", "INPUT"),
        ("d0[1].recv(2, 1):INT32", "INOUT"),
        ("token(1,)", "INOUT"),
    ]
    # nranks, this rank's CommContext, core_num: the entry's scalars in manifest order.
    assert scalars == [2, 0x1001, 2]
    _, _, tensors, scalars = orch.submits[4]
    # The rank's ordering token follows the real tensors of every dispatch on the domain.
    assert tensors == [
        ("d0[0].data(8, 64):INT8", "INPUT"),
        ("d0[0].recv(2, 1):INT32", "INPUT"),
        ("out", "OUTPUT_EXISTING"),
        ("token(1,)", "INOUT"),
    ]
    assert scalars == [0x1000, 0x1000]


def test_chip_rail_host_dispatches_the_pipeline(rendered: Render) -> None:
    orch = FakeOrchestrator()
    _run(_generated(rendered, "chip_pipeline"), orch, 3, **HOST_TENSORS)
    assert [(name, worker) for name, worker, _, _ in orch.submits] == [
        ("chip_pipeline", 0),
        ("chip_pipeline", 1),
        ("chip_pipeline", 2),
    ]
    _, _, tensors, scalars = orch.submits[2]
    assert [kind for _, kind in tensors] == ["INPUT", "OUTPUT_EXISTING"] + ["INOUT"] * 6
    assert tensors[2] == ("d0[2].stage(8, 64):FLOAT32", "INOUT")
    assert scalars == [0x1002] * 5


EXPLICIT_DOMAIN = """\
import pypto.language as pl
import pypto.language.distributed as pld

@pl.program
class Explicit:
    @pl.function(type=pl.FunctionType.AIV, external_source="k.cpp")
    def k(self, x: pl.Tensor[[4, 64], pl.FP32], w: pl.InOut[pld.DistributedTensor[[8, 64], pl.FP32]]
          ) -> pld.DistributedTensor[[8, 64], pl.FP32]: ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def fill(self, x: pl.Tensor[[4, 64], pl.FP32],
             w: pl.InOut[pld.DistributedTensor[[8, 64], pl.FP32]], rounds: pl.Scalar[pl.INT64]):
        w = self.k(x, w)

    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.HOST)
    def host(self, x: pl.Tensor[[8, 64], pl.FP32], rounds: pl.Scalar[pl.INT64]):
        with pld.comm_domain(devices=[3, 1]):
            stage_buf = pld.alloc_window_buffer(2048, name="stage")
            data_buf = pld.alloc_window_buffer(2048, name="data")
            signal_buf = pld.alloc_window_buffer(8, name="signal")
            counts_buf = pld.alloc_window_buffer(8, name="counts")
            recv_buf = pld.alloc_window_buffer(8, name="recv")
            stage = pld.window(stage_buf, [8, 64], dtype=pl.FP32)
            data = pld.window(data_buf, [8, 64], dtype=pl.FP32)
            signal = pld.window(signal_buf, [2, 1], dtype=pl.INT32)
            counts = pld.window(counts_buf, [2], dtype=pl.INT32)
            recv = pld.window(recv_buf, [2, 1], dtype=pl.INT32)
            if rounds > 1:
                half = pl.slice(x, [4, 64], [4, 0])
            else:
                half = pl.slice(x, [4, 64], [0, 0])
            self.fill(half, stage, rounds * 2, device=3)
            pld.tensor.all_to_all_v(stage, data, signal, counts, recv, core_num=rounds)
"""


def _explicit_host(tmp_path: Path, program: str = EXPLICIT_DOMAIN) -> HostOrchestrator:
    """The generated module of ``program``'s HOST orchestrator ``host``."""
    path = tmp_path / "explicit.py"
    path.write_text(program)
    (tmp_path / "k.cpp").write_text("// the kernel's source\n")
    (source,) = lower_file(path, ("a3",))
    host = source.program.function("host")
    assert host is not None
    return generate_host_orchestrator(source.program, host, ["fill"])


def test_explicit_domain_slices_scalars_and_branches(tmp_path: Path) -> None:
    generated = _explicit_host(tmp_path)
    orch = FakeOrchestrator()
    _run(generated, orch, 4, x=FakeTensor("x"), rounds=2)
    assert [(name, members) for name, members, _, _ in orch.domains] == [("d0", [3, 1])]
    # No builtin kernel of the program keeps state beyond the buffers: the window is theirs.
    ((_, _, window_size, specs),) = orch.domains
    assert window_size == sum(nbytes for _, _, nbytes in specs)
    assert [(name, worker) for name, worker, _, _ in orch.submits] == [
        ("fill", 3),
        ("builtin.tensor.all_to_all_v__fp32", 3),
        ("builtin.tensor.all_to_all_v__fp32", 1),
    ]
    _, _, tensors, scalars = orch.submits[0]
    assert tensors == [
        ("x[4:8, :]", "INPUT"),
        ("d0[3].stage(8, 64):FLOAT32", "INOUT"),
        ("token(1,)", "INOUT"),
    ]
    assert scalars == [4, 0x1003]
    # A runtime core_num is forwarded to the entry, which folds it at run time.
    assert orch.submits[2][3] == [2, 0x1001, 2]
    # Tokens exist for every device an explicit domain names, whatever the world size.
    assert "for _ in range(max(world_size, 4))" in generated.source


def test_parameters_list_tensors_and_scalars_in_declaration_order(tmp_path: Path) -> None:
    program = EXPLICIT_DOMAIN.replace(
        "def host(self, x: pl.Tensor[[8, 64], pl.FP32], rounds: pl.Scalar[pl.INT64]):",
        "def host(self, x: pl.Tensor[[8, 64], pl.FP32], rounds: pl.Scalar[pl.INT64],\n"
        "             y: pl.Out[pl.Tensor[[2, 3], pl.INT8]], gain: pl.Scalar[pl.FP32]):",
    )
    generated = _explicit_host(tmp_path, program)
    assert generated.parameters == (
        Parameter("x", "tensor", (8, 64), DataType.FLOAT32, "In"),
        Parameter("rounds", "scalar", (), DataType.INT64, "In"),
        Parameter("y", "tensor", (2, 3), DataType.INT8, "Out"),
        Parameter("gain", "scalar", (), DataType.FLOAT32, "In"),
    )
    # Every parameter is the runtime's tensors[name], scalars included.
    assert '    y = tensors["y"]\n' in generated.source
    assert '    gain = tensors["gain"]\n' in generated.source


@pytest.mark.parametrize("stem", ["chip_pipeline", "host_rail_int8", "host_rail_fp32"])
def test_distributed_meta_is_pypto_s_schema(rendered: Render, stem: str) -> None:
    tree = rendered(stem) / "a3"
    document = json.loads(TreeLayout(tree).distributed_meta.read_text())
    assert list(document) == [
        "schema",
        "params",
        "num_return_types",
        "backend_type",
        "distributed_config",
    ]
    assert document["schema"] == 2
    assert document["backend_type"] == "Ascend910B"
    assert document["params"] == [
        {"name": "inp", "direction": "In", "shape": document["params"][0]["shape"], "dtype": ANY},
        {"name": "out", "direction": "Out", "shape": document["params"][1]["shape"], "dtype": ANY},
    ]
    # Sized for the ranks the program's windows were written for.
    assert document["distributed_config"] == {
        "device_ids": list(range(NRANKS[stem])),
        "num_sub_workers": 0,
        "runtime": "tensormap_and_ringbuffer",
        "aicpu_thread_num": 0,
    }


class _Any:
    def __eq__(self, other: object) -> bool:
        return True


ANY = _Any()
NRANKS = {"chip_pipeline": 2, "host_rail_int8": 2, "host_rail_fp32": 2}


@pytest.mark.parametrize("stem", ["chip_pipeline", "host_rail_int8", "host_rail_fp32"])
def test_the_module_imports_what_pypto_s_modules_import(rendered: Render, stem: str) -> None:
    module = ast.parse(TreeLayout(rendered(stem) / "a3").host_module.read_text())
    imported = [
        (node.module, tuple(alias.name for alias in node.names))
        if isinstance(node, ast.ImportFrom)
        else (None, tuple(alias.name for alias in node.names))
        for node in ast.walk(module)
        if isinstance(node, ast.Import | ast.ImportFrom)
    ]
    assert imported == [
        (None, ("torch",)),
        (
            "simpler.task_interface",
            ("CallConfig", "CommBufferSpec", "DataType", "TaskArgs", "TensorArgType"),
        ),
        ("pypto.runtime.distributed_runner", ("_submit_chip",)),
        ("pypto.runtime.tensor_arg", ("make_tensor_arg",)),
    ]
    assert "pypto_build" not in ast.unparse(module)


def test_python_names_avoid_the_modules_own() -> None:
    assert py_name("stage") == "stage"
    assert py_name("orch") == "orch_"
    assert py_name("tensors") == "tensors_"
    assert py_name("TaskArgs") == "TaskArgs_"
    assert py_name("d0_") == "d0__"

"""HOST orchestrator codegen: the generated module is self-contained, type-checks, and drives a
recording L3 runtime with the dispatches the lowered program describes."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from chip_build.rendered import Render
from pypto_build.chip_build.host_orch_codegen import generate_host_orchestrator, py_name
from pypto_build.chip_build.l3_api import BufferSpec, CallConfig, DataType, Parameter, TaskArgs
from pypto_build.chip_build.sim.program import read_host_parameters
from pypto_build.chip_build.subbuild import lower_file
from pypto_build.lowering.diagnostics import ProgramError


@dataclass(frozen=True)
class FakeTensor:
    label: str

    def slice(self, offsets: Sequence[int], shape: Sequence[int]) -> FakeTensor:
        return FakeTensor(f"{self.label}[{tuple(offsets)}:{tuple(shape)}]")

    def reshape(self, shape: Sequence[int]) -> FakeTensor:
        return FakeTensor(f"{self.label}.reshape{tuple(shape)}")


@dataclass(frozen=True)
class FakeArgs:
    tensors: tuple[FakeTensor, ...]
    scalars: tuple[int, ...] = ()

    def __getitem__(self, index: int) -> FakeTensor:
        return self.tensors[index]

    def scalar(self, index: int) -> int:
        return self.scalars[index]


@dataclass(frozen=True)
class FakeBuffer:
    where: str

    def tensor(self, shape: Sequence[int], dtype: DataType) -> FakeTensor:
        return FakeTensor(f"{self.where}{tuple(shape)}:{dtype.name}")


@dataclass(frozen=True)
class FakeHandle:
    domain: str
    device: int
    domain_rank: int
    domain_size: int
    buffers: Mapping[str, FakeBuffer]

    @property
    def device_ctx(self) -> int:
        return 0x1000 + self.device

    @property
    def ordering_token(self) -> FakeTensor:
        return FakeTensor(f"{self.domain}[{self.device}].token")


@dataclass
class FakeOrchestrator:
    """Records domains and dispatches; dispatch arguments are kept as plain labels."""

    size: int
    domains: list[tuple[str, list[int], list[BufferSpec]]] = field(default_factory=list)
    submits: list[tuple[str, int, list[tuple[str, str]], list[int | float]]] = field(
        default_factory=list
    )

    def world_size(self) -> int:
        return self.size

    @contextmanager
    def allocate_domain(
        self, name: str, devices: Sequence[int], buffers: Sequence[BufferSpec]
    ) -> Iterator[Mapping[int, FakeHandle]]:
        members = list(devices)
        self.domains.append((name, members, list(buffers)))
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

    def submit_next_level(
        self, next_level: Any, args: TaskArgs, config: CallConfig, *, worker: int
    ) -> None:
        tensors = [(tensor.label, kind.name) for tensor, kind in args.tensors]
        self.submits.append((next_level.name, worker, tensors, list(args.scalars)))


def _run(source: str, orch: FakeOrchestrator, args: FakeArgs) -> None:
    namespace: dict[str, Any] = {}
    exec(compile(source, "host_orch.py", "exec"), namespace)
    callables = {name: SimpleNamespace(name=name) for name in namespace["NEXT_LEVELS"]}
    namespace["build"](callables)(orch, args, CallConfig())


def _host_source(rendered: Render, stem: str, name: str) -> str:
    return (rendered(stem) / "a3" / "orchestration" / f"{name}.py").read_text()


HOST_TENSORS = FakeArgs((FakeTensor("inp"), FakeTensor("out")))


def test_host_rail_fans_out_per_rank(rendered: Render) -> None:
    orch = FakeOrchestrator(size=2)
    _run(_host_source(rendered, "host_rail_int8", "host_orch"), orch, HOST_TENSORS)
    assert orch.domains == [
        (
            "d0",
            [0, 1],
            [
                BufferSpec("stage_buf", 512),
                BufferSpec("data_buf", 512),
                BufferSpec("signal_buf", 16),
                BufferSpec("counts_buf", 8),
                BufferSpec("recv_buf", 8),
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
        ("d0[1].stage_buf(8, 64):INT8", "INPUT"),
        ("d0[1].data_buf(8, 64):INT8", "INOUT"),
        ("d0[1].signal_buf(2, 2):INT32", "INOUT"),
        ("d0[1].counts_buf(2,):INT32", "INPUT"),
        ("d0[1].recv_buf(2, 1):INT32", "INOUT"),
        ("d0[1].token", "INOUT"),
    ]
    # nranks, this rank's CommContext, core_num: the entry's scalars in manifest order.
    assert scalars == [2, 0x1001, 2]
    _, _, tensors, scalars = orch.submits[4]
    assert tensors == [
        ("d0[0].data_buf(8, 64):INT8", "INPUT"),
        ("d0[0].recv_buf(2, 1):INT32", "INPUT"),
        ("out", "OUTPUT_EXISTING"),
    ]
    assert scalars == [0x1000, 0x1000]


def test_chip_rail_host_dispatches_the_pipeline(rendered: Render) -> None:
    orch = FakeOrchestrator(size=3)
    _run(_host_source(rendered, "chip_pipeline", "host_orch"), orch, HOST_TENSORS)
    assert [(name, worker) for name, worker, _, _ in orch.submits] == [
        ("chip_pipeline", 0),
        ("chip_pipeline", 1),
        ("chip_pipeline", 2),
    ]
    _, _, tensors, scalars = orch.submits[2]
    assert [kind for _, kind in tensors] == ["INPUT", "OUTPUT_EXISTING"] + ["INOUT"] * 5
    assert tensors[2] == ("d0[2].stage_buf(8, 64):FLOAT32", "INOUT")
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


def _explicit_host(tmp_path: Path, program: str = EXPLICIT_DOMAIN) -> str:
    """The generated module of ``program``'s HOST orchestrator ``host``."""
    path = tmp_path / "explicit.py"
    path.write_text(program)
    (source,) = lower_file(path, ("a3",))
    host = source.program.function("host")
    assert host is not None
    return generate_host_orchestrator(source.program, host, ["fill"])


def test_explicit_domain_slices_scalars_and_branches(tmp_path: Path) -> None:
    text = _explicit_host(tmp_path)
    orch = FakeOrchestrator(size=4)
    _run(text, orch, FakeArgs((FakeTensor("x"),), (2,)))
    assert [(name, members) for name, members, _ in orch.domains] == [("d0", [3, 1])]
    assert [(name, worker) for name, worker, _, _ in orch.submits] == [
        ("fill", 3),
        ("builtin.tensor.all_to_all_v__fp32", 3),
        ("builtin.tensor.all_to_all_v__fp32", 1),
    ]
    _, _, tensors, scalars = orch.submits[0]
    assert tensors == [
        ("x[(4, 0):(4, 64)]", "INPUT"),
        ("d0[3].stage_buf(8, 64):FLOAT32", "INOUT"),
    ]
    assert scalars == [4, 0x1003]
    # A runtime core_num is forwarded to the entry, which folds it at run time.
    assert orch.submits[2][3] == [2, 0x1001, 2]


HOST_MODULES = (
    ("chip_pipeline", "host_orch"),
    ("host_rail_int8", "host_orch"),
    ("host_rail_fp32", "host_fp32"),
)


def _module_parameters(text: str) -> tuple[Parameter, ...]:
    namespace: dict[str, Any] = {}
    exec(compile(text, "host_orch.py", "exec"), namespace)
    parameters: tuple[Parameter, ...] = namespace["PARAMETERS"]
    return parameters


def test_parameters_table_lists_tensors_and_scalars_in_declaration_order(
    tmp_path: Path,
) -> None:
    program = EXPLICIT_DOMAIN.replace(
        "def host(self, x: pl.Tensor[[8, 64], pl.FP32], rounds: pl.Scalar[pl.INT64]):",
        "def host(self, x: pl.Tensor[[8, 64], pl.FP32], rounds: pl.Scalar[pl.INT64],\n"
        "             y: pl.Out[pl.Tensor[[2, 3], pl.INT8]], gain: pl.Scalar[pl.FP32]):",
    )
    text = _explicit_host(tmp_path, program)
    assert _module_parameters(text) == (
        Parameter("x", "tensor", (8, 64), DataType.FLOAT32, "In"),
        Parameter("rounds", "scalar", (), DataType.INT64, "In"),
        Parameter("y", "tensor", (2, 3), DataType.INT8, "Out"),
        Parameter("gain", "scalar", (), DataType.FLOAT32, "In"),
    )
    # Tensors and scalars are each counted in table order, converted by their element type.
    assert "        y = args[1]\n" in text
    assert "        gain = float(args.scalar(1))\n" in text


@pytest.mark.parametrize(("stem", "name"), HOST_MODULES)
def test_parameters_table_reads_back_without_running_the_module(
    rendered: Render, stem: str, name: str, tmp_path: Path
) -> None:
    text = _host_source(rendered, stem, name)
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    parameters = read_host_parameters(path)
    assert parameters == _module_parameters(text)
    assert [(p.name, p.kind, p.direction) for p in parameters] == [
        ("inp", "tensor", "In"),
        ("out", "tensor", "Out"),
    ]


@pytest.mark.parametrize(("stem", "name"), HOST_MODULES)
def test_generated_module_imports_only_the_l3_api(rendered: Render, stem: str, name: str) -> None:
    module = ast.parse(_host_source(rendered, stem, name))
    imports = [node for node in ast.walk(module) if isinstance(node, ast.Import | ast.ImportFrom)]
    assert all(isinstance(node, ast.ImportFrom) for node in imports)
    assert [node.module for node in imports if isinstance(node, ast.ImportFrom)] == [
        "pypto_build.chip_build.l3_api"
    ]


def test_python_names_avoid_the_modules_own() -> None:
    assert py_name("stage") == "stage"
    assert py_name("orch") == "orch_"
    assert py_name("TaskArgs") == "TaskArgs_"
    assert py_name("d0_") == "d0__"


def test_a_dispatch_without_device_is_a_diagnostic(tmp_path: Path) -> None:
    text = EXPLICIT_DOMAIN.replace("rounds * 2, device=3)", "rounds * 2)")
    with pytest.raises(ProgramError, match="pass device=<rank>"):
        _explicit_host(tmp_path, text)


def test_generated_modules_pass_mypy_strict(rendered: Render, tmp_path: Path) -> None:
    modules = []
    for stem, name in HOST_MODULES:
        target = tmp_path / f"{stem}_{name}.py"
        target.write_text(_host_source(rendered, stem, name))
        modules.append(str(target))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(tmp_path / "cache"),
            *modules,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr

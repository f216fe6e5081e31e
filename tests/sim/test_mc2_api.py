"""The host API (``pypto_build.mc2``) run on simulated ranks: every rank's ``out`` against the
NumPy golden of the operator (``_support.mc2_golden``, ``docs/mc2.md``) within the tolerance its
precision model justifies (``mc2_golden.tolerance``: two units in the last place of the I/O
dtype, relative and absolute), on 8 ranks (ep 4, tp 2) and on 4 (ep 2, tp 2); ranks launched from
a thread each, as aclnn's sample does, and from one thread; a repeatable executor run twice; and
the kernel the API ran, byte for byte the one a program's build ships.

Sizes are the aclnn sample's shapes (E = 4*ep, C = 6*tp, H = 2*tp, M = 6*tp).
"""

from __future__ import annotations

import dataclasses
import importlib
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from _support import mc2_golden

from pypto_build import mc2
from pypto_build.chip_build.build import build
from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.kernel_config_reader import read_kernel_config
from pypto_build.chip_build.sim.runtime import NativeRuntime
from pypto_build.chip_build.toolchains import SimToolchain
from pypto_build.tree_layout import MANIFEST, SubBuildLayout, TreeLayout

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "moe_mc2"

F64 = npt.NDArray[np.float64]


@pytest.fixture(autouse=True)
def session_cache(cache_dir: Path, runtime: NativeRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
    """The API compiles through the session's compile cache, with the session's runtime."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(cache_dir))


@dataclass(frozen=True)
class Case:
    """One configuration on ``ep * tp`` ranks with the aclnn sample's shapes."""

    ep: int
    tp: int
    shard: int
    dtype: str
    bias_rank: int | None
    transposed: bool

    @property
    def ranks(self) -> int:
        return self.ep * self.tp

    @property
    def sizes(self) -> tuple[int, int, int, int]:
        """E, C, H, M."""
        return 4 * self.ep, 6 * self.tp, 2 * self.tp, 6 * self.tp

    def __str__(self) -> str:
        bias = f"bias{self.bias_rank}" if self.bias_rank else "nobias"
        weight = "wT" if self.transposed else "w"
        return f"ep{self.ep}tp{self.tp}-shard{self.shard}-{self.dtype}-{bias}-{weight}"


CASES = [
    Case(4, 2, 1, "fp16", 2, False),
    Case(4, 2, 0, "bf16", 3, True),
    Case(2, 2, 0, "fp16", None, True),
    Case(2, 2, 1, "bf16", 2, False),
]


@dataclass(frozen=True)
class Operands:
    """Every rank's values (the I/O dtype's, in float64) with a leading rank axis; the weight
    logical (E/ep, M/tp, H)."""

    x: F64
    weight: F64
    bias: F64 | None


def operands(case: Case, seed: int = 0) -> Operands:
    E, C, H, M = case.sizes
    e, m = E // case.ep, M // case.tp
    rng = np.random.default_rng(seed)
    x = mc2_golden.quantize(rng.uniform(-1, 1, (case.ranks, e, case.ep * C, m)), case.dtype)
    w = mc2_golden.quantize(rng.uniform(-1, 1, (case.ranks, e, m, H)), case.dtype)
    bias = None
    if case.bias_rank is not None:
        last = H // case.tp if case.shard == 0 else H
        shape = (case.ranks, e, last) if case.bias_rank == 2 else (case.ranks, e, 1, last)
        bias_dtype = mc2_golden.BIAS_DTYPES[case.dtype]
        bias = mc2_golden.quantize(rng.uniform(-1, 1, shape), bias_dtype)
    return Operands(x, w, bias)


def _rank(stored: npt.NDArray[np.generic], dtype: str) -> npt.NDArray[np.generic] | mc2.Tensor:
    """One rank's tensor as the API takes it: BF16 as its bit patterns."""
    return mc2.bf16(stored) if dtype == "bf16" else stored


class Api:
    """The API's two stages for every rank of ``case``'s world. The tensors are stored once
    with a leading rank axis, as the simulator stores their dtypes; each rank passes its
    ``[rank]`` (the weight's transposed view when ``case.transposed``)."""

    def __init__(self, case: Case, values: Operands, world: mc2.SimWorld | None = None) -> None:
        self.case = case
        self.values = values
        self.world = mc2.SimWorld(case.ep, case.tp) if world is None else world
        self.x = mc2_golden.storage(values.x, case.dtype)
        logical = values.weight.transpose(0, 1, 3, 2) if case.transposed else values.weight
        self.weight = np.ascontiguousarray(mc2_golden.storage(logical, case.dtype))
        bias_dtype = mc2_golden.BIAS_DTYPES[case.dtype]
        self.bias = None if values.bias is None else mc2_golden.storage(values.bias, bias_dtype)
        E, C, H, _ = case.sizes
        shape = (E, C, H // case.tp) if case.shard == 0 else (E, C // case.tp, H)
        self.out = mc2_golden.storage(np.zeros((case.ranks, *shape)), case.dtype)

    def first_stage(self, rank: int) -> tuple[int, mc2.Executor]:
        case, stream = self.case, self.world.stream(rank)
        weight = self.weight[rank].transpose(0, 2, 1) if case.transposed else self.weight[rank]
        bias_dtype = mc2_golden.BIAS_DTYPES[case.dtype]
        return mc2.get_workspace_size(
            _rank(self.x[rank], case.dtype),
            _rank(weight, case.dtype),
            None if self.bias is None else _rank(self.bias[rank], bias_dtype),
            stream.group_ep,
            stream.group_tp,
            case.ep,
            case.tp,
            case.shard,
            _rank(self.out[rank], case.dtype),
        )

    def launch(self, rank: int, executor: mc2.Executor, size: int) -> None:
        mc2.run(np.empty(size, np.uint8), size, executor, self.world.stream(rank))

    def rank_main(self, rank: int) -> None:
        """What each thread of aclnn's sample does."""
        size, executor = self.first_stage(rank)
        self.launch(rank, executor, size)
        self.world.stream(rank).synchronize()

    def result(self) -> F64:
        return mc2_golden.from_storage(self.out, self.case.dtype)


def golden(case: Case, values: Operands) -> F64:
    return mc2_golden.golden(
        values.x,
        values.weight,
        values.bias,
        ep=case.ep,
        tp=case.tp,
        y_shard_type=case.shard,
        dtype=case.dtype,
    )


def assert_matches(case: Case, got: F64, values: Operands) -> None:
    tol = mc2_golden.tolerance(case.dtype)
    np.testing.assert_allclose(got, golden(case, values), rtol=tol, atol=tol)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_every_rank_matches_the_golden_with_one_thread_per_rank(case: Case) -> None:
    api = Api(case, operands(case))
    threads = [threading.Thread(target=api.rank_main, args=(r,)) for r in range(case.ranks)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert_matches(case, api.result(), api.values)


def test_one_thread_launches_every_rank_and_a_repeatable_executor_runs_again() -> None:
    case = CASES[0]
    api = Api(case, operands(case, seed=1))
    stages = [api.first_stage(rank) for rank in range(case.ranks)]
    for _, executor in stages:
        executor.set_repeatable()
    for rank, (size, executor) in enumerate(stages):
        api.launch(rank, executor, size)
    api.world.synchronize()
    assert_matches(case, api.result(), api.values)
    # An executor holds the tensors, not their values: new inputs, the same executors.
    again = operands(case, seed=2)
    api.x[...] = mc2_golden.storage(again.x, case.dtype)
    for rank, (size, executor) in enumerate(stages):
        api.launch(rank, executor, size)
    api.world.synchronize()
    assert_matches(case, api.result(), dataclasses.replace(api.values, x=again.x))


def test_launches_queued_before_synchronizing_run_in_order() -> None:
    """Two launches of one world, each rank queuing both before anything is synchronized (two
    configurations, other tensors): each ends with its own result."""
    first, second = CASES[2], dataclasses.replace(CASES[2], shard=1, bias_rank=2)
    world = mc2.SimWorld(first.ep, first.tp)
    apis = [Api(case, operands(case, seed), world) for seed, case in enumerate((first, second))]
    for api in apis:
        for rank in range(api.case.ranks):
            size, executor = api.first_stage(rank)
            api.launch(rank, executor, size)
    world.synchronize()
    for api in apis:
        assert_matches(api.case, api.result(), api.values)


def test_the_kernel_the_api_ran_is_the_one_a_programs_build_ships(
    tmp_path: Path, cache_dir: Path, sim: SimToolchain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sample package's program (ep 4, tp 2, y_shard_type 1, an FP16 bias) built as its
    wheel builds it, and the API run for the same configuration: the rendered kernel sources
    are the same bytes, and so are the binaries compiled from them."""
    program = SAMPLE / "src" / "moe_mc2" / "pipelines.py"
    build(
        [program],
        chips=["a3"],
        out_dir=tmp_path / "out",
        source_root=SAMPLE,
        toolchain=sim,
        cache=CompileCache(cache_dir),
        progress=None,
    )
    shipped_root = TreeLayout(tmp_path / "out" / "a3").sub_build("expert_combine").root
    shipped = read_kernel_config(SubBuildLayout(shipped_root).kernel_config)
    builtins = [kernel for kernel in shipped.kernels if kernel.name.startswith("__builtin_")]
    assert sorted(kernel.source for kernel in builtins) == [
        "kernels/aic/__builtin_bmm_rs_a2a__fp16.cpp",
        "kernels/aiv/__builtin_bmm_rs_a2a__fp16.cpp",
    ]

    monkeypatch.syspath_prepend(str(SAMPLE / "src"))
    sample_golden = importlib.import_module("moe_mc2.golden")
    inputs = sample_golden.inputs()
    world = mc2.SimWorld(4, 2)
    out = np.zeros(sample_golden.expected().shape, np.float16)
    for rank in range(world.size):
        stream = world.stream(rank)
        size, executor = mc2.get_workspace_size(
            inputs["x"][rank],
            inputs["weight"][rank],
            inputs["bias"][rank],
            stream.group_ep,
            stream.group_tp,
            4,
            2,
            1,
            out[rank],
        )
        mc2.run(np.empty(size, np.uint8), size, executor, stream)
    world.synchronize()
    np.testing.assert_array_equal(out, sample_golden.expected())

    ran = executor.built()
    ran_sources = ran.kernel_sources()
    assert ran_sources == {
        kernel.source: (shipped_root / kernel.source).read_bytes() for kernel in builtins
    }
    ran_config = read_kernel_config(SubBuildLayout(ran.sub_build).kernel_config)
    ran_binaries = {
        kernel.source: (ran.sub_build / str(kernel.binary)).read_bytes()
        for kernel in ran_config.kernels
    }
    assert ran_binaries == {
        kernel.source: (shipped_root / str(kernel.binary)).read_bytes() for kernel in builtins
    }
    assert (ran.tree / MANIFEST).is_file()

"""The MC2 op on simulated ranks: chip orchestrations calling
``pld.tensor.batch_matmul_reduce_scatter_all_to_all``, built with the sim toolchain for a3 and run
without a HOST orchestrator (``pypto-build run BUILD --ranks P --program <orchestration>``, every
rank's inputs as ``[P, *shape]`` arrays in an .npz), against the NumPy golden of
``tests/_support/mc2_golden.py`` (``docs/mc2.md``; rank = ep_index * tp + tp_index).

Coverage: at ep*tp = 4 (ep 2, tp 2) every combination of dtype (FP16, BF16), y_shard_type (0, 1),
bias (none, or 2-D / 3-D in turn) and weight (plain, transposed): 16 variants; at ep*tp = 8
(ep 4, tp 2, the aclnn sample's sizes E = 16, C = 12, H = 4, M = 12) four variants that take each
of those values at least once. Each variant's workspace window holds exactly the tiling's user
bytes. Each runs twice:

* on small integers, where every product and sum is exact in either dtype, so every rounding of
  the precision model is the identity: the output must equal the golden bit for bit (the
  dataflow: rows, columns, experts, ranks and bias placement);
* on random values of magnitude about 1 (weights scaled by 1/(M/tp)), against the golden within
  the tolerance its precision model justifies (:func:`_support.mc2_golden.tolerance`: two units
  in the last place at magnitude 1, ``|out - golden| <= tol * (1 + |golden|)`` with fp16
  2**-9 ~ 1.95e-3, close to MindSpeed's 2e-3, and bf16 2**-6, as its bias add rounds with
  CAST_ROUND where the golden rounds to even), and with at most 1% of the elements differing
  at all (a difference needs a value on a rounding boundary).

One more run pins the BF16 bias add's rounding: on a tie the kernel rounds away from zero.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from _support.mc2 import mc2_request
from _support.mc2_golden import BIAS_DTYPES, from_storage, golden, storage, tolerance
from _support.sim_programs import BuildProgram, ProgramSpec

from pypto_build.builtins import resolve
from pypto_build.builtins.manifest import BuiltinPackage
from pypto_build.lowering.aclnn.rules import check
from pypto_build.lowering.aclnn.tiling import Mc2Tiling, TileInfo, tile
from pypto_build.lowering.ir.types import DataType
from pypto_build.plugin.cli_run import register

pytestmark = pytest.mark.slow

F64 = npt.NDArray[np.float64]
DSL_TYPES = {"fp16": "pl.FP16", "bf16": "pl.BF16", "fp32": "pl.FP32"}


@dataclass(frozen=True)
class Sizes:
    ep: int
    tp: int
    E: int
    C: int
    H: int
    M: int

    @property
    def ranks(self) -> int:
        return self.ep * self.tp


@dataclass(frozen=True)
class Variant:
    """One call's static configuration; ``bias`` is the bias's rank (2 or 3) or 0 for none."""

    dtype: str
    shard: int
    bias: int
    transposed: bool

    @property
    def name(self) -> str:
        bias = f"bias{self.bias}d" if self.bias else "nobias"
        return f"{self.dtype}_shard{self.shard}_{bias}_{'wt' if self.transposed else 'w'}"

    def shapes(self, s: Sizes) -> dict[str, tuple[int, ...]]:
        """Each operand's shape on one rank ([aclnn doc]), the weight as stored."""
        e, m = s.E // s.ep, s.M // s.tp
        out = (s.E, s.C // s.tp, s.H) if self.shard == 1 else (s.E, s.C, s.H // s.tp)
        shapes = {
            "x": (e, s.ep * s.C, m),
            "w": (e, s.H, m) if self.transposed else (e, m, s.H),
            "out": out,
        }
        if self.bias:
            shapes["bias"] = (e, out[2]) if self.bias == 2 else (e, 1, out[2])
        return shapes

    def tiling(self, s: Sizes) -> Mc2Tiling:
        """The build-time tiling of this call."""
        request = mc2_request(
            s.ep,
            s.tp,
            self.shard,
            E=s.E,
            C=s.C,
            H=s.H,
            M=s.M,
            dtype=DataType(self.dtype),
            bias_rank=self.bias or None,
            transpose_weight=self.transposed,
        )
        return tile(check(request))

    def workspace_bytes(self, s: Sizes) -> int:
        """The user part of the workspace the build-time tiling computes for this call."""
        return self.tiling(s).user_bytes


ALL_FOUR = [
    Variant(dtype, shard, bias, transposed)
    for dtype in ("fp16", "bf16")
    for shard in (0, 1)
    for bias, transposed in ((0, False), (0, True), (2, False), (3, True))
]
EIGHT = [
    Variant("fp16", 1, 3, False),
    Variant("bf16", 0, 2, True),
    Variant("fp16", 0, 0, True),
    Variant("bf16", 1, 0, False),
]
FOUR_RANKS = Sizes(ep=2, tp=2, E=4, C=4, H=6, M=8)
EIGHT_RANKS = Sizes(ep=4, tp=2, E=16, C=12, H=4, M=12)
# Cuts with tails (tests/lowering/test_mc2_tiling.py has the rule): not Lite (C/tp = 641 > 640),
# non-local C/tp cut 321 + 320; y_shard_type 0 with E/ep 3, local E 2 + 1, non-local E 1 x 3
# and C 2 + 1; Lite at ep 4, non-local E 1 x 2 and C/tp 2 + 1.
NOT_LITE = Sizes(ep=2, tp=2, E=4, C=1282, H=4, M=4)
SHARD0_TAILS = Sizes(ep=2, tp=2, E=6, C=3, H=4, M=4)
LITE_TAILS = Sizes(ep=4, tp=2, E=8, C=6, H=4, M=4)
TILED = [
    (NOT_LITE, Variant("fp16", 1, 2, False)),
    (NOT_LITE, Variant("bf16", 1, 0, True)),
    (SHARD0_TAILS, Variant("fp16", 0, 3, False)),
    (SHARD0_TAILS, Variant("bf16", 0, 2, True)),
    (LITE_TAILS, Variant("bf16", 1, 3, False)),
    (LITE_TAILS, Variant("fp16", 0, 0, True)),
]
CASES = (
    [(FOUR_RANKS, variant) for variant in ALL_FOUR]
    + [(EIGHT_RANKS, variant) for variant in EIGHT]
    + TILED
)
# The smallest configurations: one expert per rank, C / tp or H / tp of 1 (the shard's axis).
SMALLEST_FOUR = Sizes(ep=2, tp=2, E=2, C=2, H=2, M=2)
SMALLEST_EIGHT = Sizes(ep=4, tp=2, E=4, C=2, H=2, M=2)
SMALLEST = [
    (sizes, Variant(dtype, shard, bias, transposed))
    for sizes in (SMALLEST_FOUR, SMALLEST_EIGHT)
    for shard in (0, 1)
    for dtype, bias, transposed in (("fp16", 0, False), ("bf16", 2, True), ("fp16", 3, False))
]


@dataclass(frozen=True)
class Mc2Programs(ProgramSpec):
    """One chip orchestration per variant, named after it, each calling the op once."""

    sizes: Sizes
    variants: tuple[Variant, ...]

    @property
    def slug(self) -> str:
        return f"mc2-p{self.sizes.ranks}"

    def kernels(self) -> tuple[Path, ...]:
        return ()

    def source(self) -> str:
        s = self.sizes
        lines = [
            "import pypto.language as pl",
            "import pypto.language.distributed as pld",
            "",
            "",
            "@pl.program",
            "class Mc2Cases:",
        ]
        for variant in self.variants:
            shapes = variant.shapes(s)
            io = DSL_TYPES[variant.dtype]
            params = [
                f"x: pl.Tensor[{list(shapes['x'])}, {io}]",
                f"w: pl.Tensor[{list(shapes['w'])}, {io}]",
            ]
            if variant.bias:
                bias_type = DSL_TYPES[BIAS_DTYPES[variant.dtype]]
                params.append(f"bias: pl.Tensor[{list(shapes['bias'])}, {bias_type}]")
            params += [
                f"out: pl.Out[pl.Tensor[{list(shapes['out'])}, {io}]]",
                f"ws: pl.InOut[pld.DistributedTensor[[{variant.workspace_bytes(s)}], pl.INT8]]",
            ]
            lines += [
                "    @pl.function(type=pl.FunctionType.Orchestration)",
                f"    def {variant.name}(",
                "        self,",
                *(f"        {param}," for param in params),
                "    ):",
                "        out = pld.tensor.batch_matmul_reduce_scatter_all_to_all(",
                f"            x, w, {'bias' if variant.bias else 'None'}, out, ws,",
                f"            ep_world_size={s.ep}, tp_world_size={s.tp},",
                f"            y_shard_type={variant.shard}, transpose_weight={variant.transposed},",
                "        )",
                "",
            ]
        return "\n".join(lines)


@dataclass(frozen=True)
class Inputs:
    """Every rank's operands as the program takes them, and as the golden takes them."""

    arrays: dict[str, npt.NDArray[np.generic]]
    x: F64
    w: F64  # logical (E/ep, M/tp, H) per rank
    bias: F64 | None


def make_inputs(s: Sizes, variant: Variant, *, exact: bool, seed: int) -> Inputs:
    rng = np.random.default_rng(seed)
    shapes = variant.shapes(s)
    ranks = s.ranks

    def draw(shape: tuple[int, ...], scale: float, dtype: str) -> npt.NDArray[np.generic]:
        full = (ranks, *shape)
        values = rng.integers(-2, 3, full) if exact else rng.uniform(-scale, scale, full)
        return storage(values, dtype)

    x = draw(shapes["x"], 1.0, variant.dtype)
    w = draw(shapes["w"], 1.0 / (s.M // s.tp), variant.dtype)
    arrays: dict[str, npt.NDArray[np.generic]] = {"x": x, "w": w}
    logical_w = from_storage(w, variant.dtype)
    if variant.transposed:
        logical_w = logical_w.transpose(0, 1, 3, 2)
    bias = None
    if variant.bias:
        bias_dtype = BIAS_DTYPES[variant.dtype]
        arrays["bias"] = draw(shapes["bias"], 1.0, bias_dtype)
        bias = from_storage(arrays["bias"], bias_dtype)
    return Inputs(arrays, from_storage(x, variant.dtype), logical_w, bias)


def run_cli(build: Path, ranks: int, program: str, inputs: Path, out: Path) -> int:
    parser = argparse.ArgumentParser(prog="pypto-build")
    register(parser.add_subparsers())
    argv = ["run", str(build), "--ranks", str(ranks), "--program", program]
    args = parser.parse_args([*argv, "--inputs", str(inputs), "--out", str(out)])
    status: int = args.command(args)
    return status


@pytest.fixture(scope="session")
def built(build_program: BuildProgram) -> Callable[[Sizes], Path]:
    """The tree of every variant of one size, built on the first test that needs it (a test
    worker that runs only one size's tests builds only that size's tree)."""
    variants: dict[Sizes, list[Variant]] = {}
    for sizes, variant in CASES + SMALLEST:
        variants.setdefault(sizes, []).append(variant)

    def build(sizes: Sizes) -> Path:
        return build_program(Mc2Programs(sizes, tuple(variants[sizes])))

    return build


def run_tree(tree: Path, s: Sizes, variant: Variant, inputs: Inputs, tmp_path: Path) -> F64 | None:
    """Every rank's out from a run of the variant's orchestration in ``tree``; None when the run
    failed."""
    # out starts as NaN on every rank: an element the kernel never writes fails the comparison.
    shape = (s.ranks, *variant.shapes(s)["out"])
    unwritten = storage(np.full(shape, np.nan), variant.dtype)
    np.savez(tmp_path / "inputs.npz", out=unwritten, **inputs.arrays)
    status = run_cli(tree, s.ranks, variant.name, tmp_path / "inputs.npz", tmp_path / "outputs.npz")
    if status != 0:
        return None
    with np.load(tmp_path / "outputs.npz") as outputs:
        # The window held exactly the workspace's user part (the runtime pads to cache lines).
        assert outputs["ws"].shape == (s.ranks, variant.workspace_bytes(s))
        return from_storage(outputs["out"], variant.dtype)


def expected_out(s: Sizes, variant: Variant, inputs: Inputs) -> F64:
    return golden(
        inputs.x,
        inputs.w,
        inputs.bias,
        ep=s.ep,
        tp=s.tp,
        y_shard_type=variant.shard,
        dtype=variant.dtype,
    )


def run_case(
    built: Callable[[Sizes], Path], s: Sizes, variant: Variant, inputs: Inputs, tmp_path: Path
) -> tuple[F64, F64]:
    """Every rank's out from a run of the variant's orchestration, and the golden's."""
    out = run_tree(built(s), s, variant, inputs, tmp_path)
    assert out is not None
    return out, expected_out(s, variant, inputs)


def case_id(case: tuple[Sizes, Variant]) -> str:
    sizes, variant = case
    return f"p{sizes.ranks}-E{sizes.E}-C{sizes.C}-{variant.name}"


def tile_counts(s: Sizes, variant: Variant) -> tuple[int, int]:
    """The tiles of the local and of the non-local phase the kernel's loop runs."""
    tiling = variant.tiling(s)

    def count(e: TileInfo, c: TileInfo) -> int:
        return (e.tile_cnt + e.tail_cnt) * (c.tile_cnt + c.tail_cnt)

    return (
        count(tiling.local_tile_e, tiling.local_tile_c),
        count(tiling.nonlocal_tile_e, tiling.nonlocal_tile_c),
    )


def test_the_cases_run_more_than_one_tile_per_phase_lite_and_not() -> None:
    """Every case at ep 2 cuts both phases (ep > 2 leaves the local phase one tile); the tiled
    cases have tails, and both Lite and non-Lite y_shard_type 1 are there."""
    for sizes, variant in CASES:
        local, nonlocal_ = tile_counts(sizes, variant)
        assert nonlocal_ > 1, (sizes, variant)
        assert local > 1 or sizes.ep > 2, (sizes, variant)
    assert {sizes.C // sizes.tp > 640 for sizes, variant in TILED if variant.shard == 1} == {
        True,
        False,
    }


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_exact_inputs_give_the_golden_bit_for_bit(
    built: Callable[[Sizes], Path], case: tuple[Sizes, Variant], tmp_path: Path
) -> None:
    sizes, variant = case
    inputs = make_inputs(sizes, variant, exact=True, seed=sizes.ranks)
    out, expected = run_case(built, sizes, variant, inputs, tmp_path)
    assert out.shape == (sizes.ranks, *variant.shapes(sizes)["out"])
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_random_inputs_match_the_golden_within_the_precision_model(
    built: Callable[[Sizes], Path], case: tuple[Sizes, Variant], tmp_path: Path
) -> None:
    sizes, variant = case
    inputs = make_inputs(sizes, variant, exact=False, seed=100 + sizes.ranks)
    out, expected = run_case(built, sizes, variant, inputs, tmp_path)
    tol = tolerance(variant.dtype)
    np.testing.assert_allclose(out, expected, rtol=tol, atol=tol)
    # The model differs from the golden only where a value lands on a rounding boundary, which
    # random data rarely does: a systematic slip (another rounding mode, another summation
    # order) would move a large share of the elements by a unit and still pass the tolerance.
    assert np.mean(out != expected) <= 0.01


def test_bf16_bias_add_rounds_ties_away_from_zero_where_the_golden_rounds_to_even(
    built: Callable[[Sizes], Path], tmp_path: Path
) -> None:
    """Every partial product is 64 (x all 1, w all 16, M/tp = 4), so every TP sum is 128 and
    with a bias of 0.5 every output lands halfway between the BF16 values 128 and 129: the
    kernel's CAST_ROUND gives 129, the golden's ties-to-even 128 (one unit, which the bf16
    tolerance allows)."""
    sizes, variant = FOUR_RANKS, Variant("bf16", 1, 2, False)
    shapes = variant.shapes(sizes)
    assert shapes["x"][2] == 4
    ranks = sizes.ranks
    x = storage(np.ones((ranks, *shapes["x"])), "bf16")
    w = storage(np.full((ranks, *shapes["w"]), 16.0), "bf16")
    bias = storage(np.full((ranks, *shapes["bias"]), 0.5), "fp32")
    inputs = Inputs(
        {"x": x, "w": w, "bias": bias},
        from_storage(x, "bf16"),
        from_storage(w, "bf16"),
        from_storage(bias, "fp32"),
    )
    out, expected = run_case(built, sizes, variant, inputs, tmp_path)
    assert np.all(out == 129.0) and np.all(expected == 128.0)


@pytest.mark.parametrize("case", SMALLEST, ids=case_id)
def test_the_smallest_configurations_run_with_a_workspace_of_exactly_the_user_part(
    built: Callable[[Sizes], Path], case: tuple[Sizes, Variant], tmp_path: Path
) -> None:
    """One expert per rank, C and H as small as the rules allow: the user part has no room for
    the simulated HCCL's state (host_mix.h: 40 bytes of flag counters, 8 of group counters, a
    mailbox of 16 + 8 * max(ep, tp)) after the kernel's buffers (the ReduceScatter inputs of both
    phases, the non-local outputs, the send buffer: tp + tp * (ep - 1) + 2 * (ep - 1) blocks of
    an expert's out). The state lives beyond the workspace, at its window's end, so the run needs
    no slack and gives the golden bit for bit, and on random inputs within the precision model."""
    sizes, variant = case
    shard_c = variant.shard == 1
    block = (sizes.C // sizes.tp if shard_c else sizes.C) * (
        sizes.H if shard_c else sizes.H // sizes.tp
    )
    blocks = sizes.tp + sizes.tp * (sizes.ep - 1) + 2 * (sizes.ep - 1)
    buffers = -(-blocks * block * 2 // 8) * 8
    state = 64 + 8 * max(sizes.ep, sizes.tp)
    assert sizes.ep == sizes.E and buffers + state > variant.workspace_bytes(sizes)
    exact = make_inputs(sizes, variant, exact=True, seed=sizes.ranks)
    out, expected = run_case(built, sizes, variant, exact, tmp_path)
    np.testing.assert_array_equal(out, expected)
    noisy = make_inputs(sizes, variant, exact=False, seed=100 + sizes.ranks)
    out, expected = run_case(built, sizes, variant, noisy, tmp_path)
    tol = tolerance(variant.dtype)
    np.testing.assert_allclose(out, expected, rtol=tol, atol=tol)


# ---- the mutation check: a slip in the device path's counts or displacements fails the suite ----

MC2_HANDLE = ":pypto.runtime.builtins.mc2.batch_matmul_reduce_scatter_all_to_all"
KERNEL_TEMPLATE = "kernel.cpp.in"
#: Where a package keeps its renders (pypto_build/builtins/render.py).
RENDERS_KEY = "_renders"
#: One-tile slips in the algorithm both targets run (the template's own lines, and the line with
#: the slip): the AlltoAllV's send displacement, and the ReduceScatter's recvCount.
MUTATIONS = {
    "all-to-all-v-displacement": (
        "static_cast<uint64_t>(send_displacement(tile, position, ops_.my_ep));",
        "static_cast<uint64_t>(send_displacement(tile, position, ops_.my_ep) + tile_elems(tile));",
    ),
    # One tile short: one tile more would write past the end of out (the local phase's
    # ReduceScatter writes out directly), corrupting the process rather than failing cleanly.
    "reduce-scatter-count": (
        "const uint64_t count = static_cast<uint64_t>(reduce_scatter_count(phase, tile));",
        "const uint64_t count = static_cast<uint64_t>(reduce_scatter_count(phase, tile) - "
        "tile_elems(tile));",
    ),
}


@dataclass(frozen=True)
class MutantPrograms(Mc2Programs):
    """The same programs, built apart from the unmutated ones (their own slug)."""

    mutation: str = ""

    @property
    def slug(self) -> str:
        return f"mc2-mutant-{self.mutation}"


def golden_holds(tree: Path, s: Sizes, variant: Variant, inputs: Inputs, tmp_path: Path) -> bool:
    """Whether a run of ``tree`` succeeds and gives the golden bit for bit."""
    out = run_tree(tree, s, variant, inputs, tmp_path)
    return out is not None and bool(np.array_equal(out, expected_out(s, variant, inputs)))


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
@pytest.mark.parametrize("variant", [Variant("fp16", 1, 2, False), Variant("bf16", 0, 3, True)])
def test_a_one_tile_slip_in_a_copy_of_the_template_fails_the_golden(
    build_program: BuildProgram,
    monkeypatch: pytest.MonkeyPatch,
    mutation: str,
    variant: Variant,
    tmp_path: Path,
) -> None:
    """The kernel template with the AlltoAllV's send displacement or the ReduceScatter's count
    off by one tile (the tile's elements of one destination), rendered, compiled and run on
    exact inputs at FOUR_RANKS (more than one tile per phase): the run fails or its output is not
    the golden's, so the bit-exact test above fails on such a slip. The unmutated kernel holds
    the golden for the same inputs (the control)."""
    original, slipped = MUTATIONS[mutation]
    package = resolve(MC2_HANDLE)
    real = BuiltinPackage.template

    def mutated(self: BuiltinPackage, name: str) -> bytes:
        text = real(self, name)
        if self.handle != MC2_HANDLE or name != KERNEL_TEMPLATE:
            return text
        source = text.decode("utf-8")
        assert source.count(original) == 1
        return source.replace(original, slipped).encode("utf-8")

    inputs = make_inputs(FOUR_RANKS, variant, exact=True, seed=FOUR_RANKS.ranks)
    control = build_program(Mc2Programs(FOUR_RANKS, (variant,)))
    assert golden_holds(control, FOUR_RANKS, variant, inputs, tmp_path)
    # Render afresh (the package keeps its renders) from the mutated template.
    monkeypatch.delitem(package.__dict__, RENDERS_KEY, raising=False)
    monkeypatch.setattr(BuiltinPackage, "template", mutated)
    tree = build_program(MutantPrograms(FOUR_RANKS, (variant,), mutation=mutation))
    sources = "".join(path.read_text() for path in tree.rglob("__builtin_bmm_rs_a2a__*.cpp"))
    assert slipped in sources
    assert not golden_holds(tree, FOUR_RANKS, variant, inputs, tmp_path)

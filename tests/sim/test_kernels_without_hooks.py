"""The builtin kernels of shipped trees need no simulator: built as the samples' wheels build
them (the sim toolchain for a3), no kernel binary or source refers to a barrier of a runtime's,
and a kernel loaded where pypto-build's simulation runtime is absent (bare_kernel_host.cpp:
dlopen with RTLD_LOCAL, as PyPTO's a2a3sim loads kernels, nothing else in the process) fails
loudly -- it prints why and traps -- when it reports an error or a wait of its runs out, instead
of returning as if it had succeeded. With the two hooks provided, the same binaries latch the
exact code and return."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from pypto_build.builtins import include_dir
from pypto_build.chip_build.build import build
from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.toolchains import SimToolchain
from pypto_build.tree_layout import INCLUDE, KERNELS, NEXT_LEVELS, SIM_BINARIES

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
HOST = Path(__file__).resolve().parent / "bare_kernel_host.cpp"
#: The hooks a kernel may refer to (weakly): portability.h's, and nothing else of the runtime's.
HOOKS = {"pypto_sim_report_error", "pypto_sim_wait_timeout_ns", "pypto_sim_wait_turn"}
#: __builtin_trap: SIGILL on x86-64, SIGTRAP on AArch64.
TRAPPED = {-signal.SIGILL, -signal.SIGTRAP}
FLOAT32, FLOAT16, INT32, UINT8 = 0, 1, 2, 5  # DataType values (kernel_abi.h)
INVALID_ARGS, TIMEOUT = 5, 100

# samples/moe_mc2: ep 4 x tp 2 ranks, E 8, C 8, H 16, M 16, y_shard_type 1, an FP16 bias.
MC2_RANKS = 8
MC2_OPERANDS = (
    f"h:{FLOAT16}:{2 * 32 * 8}",  # x [E/ep, ep*C, M/tp]
    f"h:{FLOAT16}:{2 * 8 * 16}",  # weight [E/ep, M/tp, H]
    f"h:{FLOAT16}:{2 * 16}",  # bias [E/ep, H]
    f"h:{FLOAT16}:{8 * 4 * 16}",  # out [E, C/tp, H]
    f"w:{UINT8}:6400",  # workspace, the sample's WORKSPACE_BYTES
)


def a2av_operands(nranks: int, rows: int, hidden: int) -> tuple[str, ...]:
    """input, target, signal, send_counts, recv_counts of samples/moe_a2a's call, flattened."""
    return (
        f"h:{FLOAT32}:{rows * hidden}",
        f"w:{FLOAT32}:{rows * hidden}",
        f"w:{INT32}:{nranks}",
        f"w:{INT32}:{nranks}",
        f"w:{INT32}:{nranks}",
    )


@pytest.fixture(scope="module")
def trees(
    tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, sim: SimToolchain
) -> dict[str, Path]:
    """The a3 trees of samples/moe_mc2 and samples/moe_a2a, built with the sim toolchain."""
    built = {}
    for sample, module in (("moe_mc2", "moe_mc2"), ("moe_a2a", "moe_a2a")):
        out = tmp_path_factory.mktemp(sample)
        root = REPO / "samples" / sample
        build(
            [root / "src" / module / "pipelines.py"],
            chips=["a3"],
            out_dir=out,
            source_root=root,
            toolchain=sim,
            cache=CompileCache(cache_dir),
            progress=None,
        )
        built[sample] = out / "a3"
    return built


def kernel_binaries(tree: Path) -> list[Path]:
    return sorted(tree.glob(f"{NEXT_LEVELS}/*/{SIM_BINARIES}/{KERNELS}/**/*.so"))


def only(tree: Path, pattern: str) -> Path:
    (found,) = tree.glob(f"{NEXT_LEVELS}/*/{SIM_BINARIES}/{KERNELS}/{pattern}")
    return found


def undefined_symbols(binary: Path) -> set[str]:
    listing = subprocess.run(
        ["nm", "-D", "--undefined-only", str(binary)], capture_output=True, text=True, check=True
    ).stdout
    return {line.split()[-1] for line in listing.splitlines() if line.strip()}


Host = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory, sim: SimToolchain) -> Host:
    """Run bare_kernel_host (without the hooks, or with them) on one kernel binary."""
    folder = tmp_path_factory.mktemp("bare-host")
    binaries = {}
    for hooks, extra in (
        (False, []),
        (True, ["-DPROVIDE_HOOKS", "-DHOOK_WAIT_MS=200", "-rdynamic"]),
    ):
        binary = folder / ("with-hooks" if hooks else "bare")
        command = [str(sim.compiler), "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", *extra]
        command += ["-I", str(include_dir()), str(HOST), "-ldl", "-o", str(binary)]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stderr
        binaries[hooks] = binary

    def run(
        kernel: Path,
        nranks: int,
        block_num: int,
        operands: tuple[str, ...],
        *,
        sub_block: int = 0,
        hooks: bool = False,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        argv = [str(binaries[hooks]), str(kernel), str(nranks), "0", str(block_num)]
        argv += [str(sub_block), *operands]
        return subprocess.run(
            argv, capture_output=True, text=True, check=False, timeout=60, env=env
        )

    return run


def fast_budget(ms: int = 200) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "PYPTO_BUILD_KERNEL_WAIT_TIMEOUT_MS": str(ms)}


def test_no_kernel_refers_to_a_runtime_barrier(trees: dict[str, Path]) -> None:
    for tree in trees.values():
        binaries = kernel_binaries(tree)
        assert binaries, tree
        for binary in binaries:
            hooks = {name for name in undefined_symbols(binary) if name.startswith("pypto_sim_")}
            assert hooks <= HOOKS, (binary, hooks)
        sources = [
            *tree.glob(f"{NEXT_LEVELS}/*/{KERNELS}/**/*.cpp"),
            *tree.glob(f"{NEXT_LEVELS}/*/{INCLUDE}/**/*.h"),
        ]
        assert sources
        for source in sources:
            assert "pypto_sim_comm_barrier" not in source.read_text(), source
    # Both samples' builtin kernels are there: the MC2 kernel per core type, and all_to_all_v.
    assert only(trees["moe_mc2"], "aic/*bmm_rs_a2a*.so")
    assert only(trees["moe_mc2"], "aiv/*bmm_rs_a2a*.so")
    assert only(trees["moe_a2a"], "aiv/*all_to_all_v*.so")


def test_an_mc2_wait_that_runs_out_traps_without_the_hooks(
    trees: dict[str, Path], host: Host
) -> None:
    # Rank 0's first AIV core alone: its AIC never flags the first tile's products (host_mix.h's
    # cross-core flags, one credit per tile), nor does any other core of the 8 ranks arrive.
    kernel = only(trees["moe_mc2"], "aiv/*bmm_rs_a2a*.so")
    run = host(kernel, MC2_RANKS, 1, MC2_OPERANDS, env=fast_budget())
    assert run.returncode in TRAPPED, (run.returncode, run.stdout, run.stderr)
    assert "returned" not in run.stdout
    assert (
        "pypto_build kernel error 100: signal wait timed out after 200000000 ns: "
        "the slot holds 0, waiting for >= 1" in run.stderr
    )


def test_the_aic_side_traps_too(trees: dict[str, Path], host: Host) -> None:
    # The AIC alone computes every tile, then waits for its AIV cores to end the call.
    kernel = only(trees["moe_mc2"], "aic/*bmm_rs_a2a*.so")
    run = host(kernel, MC2_RANKS, 1, MC2_OPERANDS, env=fast_budget())
    assert run.returncode in TRAPPED, (run.returncode, run.stdout, run.stderr)
    assert "signal wait timed out" in run.stderr


def test_an_mc2_argument_error_traps_without_the_hooks(trees: dict[str, Path], host: Host) -> None:
    kernel = only(trees["moe_mc2"], "aiv/*bmm_rs_a2a*.so")
    run = host(kernel, MC2_RANKS, 2, MC2_OPERANDS)
    assert run.returncode in TRAPPED, (run.returncode, run.stdout, run.stderr)
    assert "error 5: batch_matmul_reduce_scatter_all_to_all runs as one cluster" in run.stderr


def test_an_all_to_all_v_wait_that_runs_out_traps_without_the_hooks(
    trees: dict[str, Path], host: Host
) -> None:
    kernel = only(trees["moe_a2a"], "aiv/*all_to_all_v*.so")
    run = host(kernel, 2, 1, a2av_operands(2, 8, 16), env=fast_budget())
    assert run.returncode in TRAPPED, (run.returncode, run.stdout, run.stderr)
    assert "pypto_build kernel error 100: signal wait timed out after 200000000 ns" in run.stderr


@pytest.mark.parametrize(
    ("scheduler_ms", "budget_ns"),
    [("400", 200_000_000), ("0", 5_000_000_000), (None, 5_000_000_000)],
)
def test_the_default_budget_is_half_the_scheduler_timeout(
    trees: dict[str, Path], host: Host, scheduler_ms: str | None, budget_ns: int
) -> None:
    """Without our variable, half of SIMPLER_SCHEDULER_TIMEOUT_MS, so the kernel reports before
    the scheduler's no-progress timeout would; 5 s, half its default, where simpler keeps that
    default (unset, or 0)."""
    kernel = only(trees["moe_a2a"], "aiv/*all_to_all_v*.so")
    env = {"PATH": "/usr/bin:/bin"}
    if scheduler_ms is not None:
        env["SIMPLER_SCHEDULER_TIMEOUT_MS"] = scheduler_ms
    run = host(kernel, 2, 1, a2av_operands(2, 8, 16), env=env)
    assert run.returncode in TRAPPED, (run.returncode, run.stdout, run.stderr)
    assert f"signal wait timed out after {budget_ns} ns" in run.stderr


def test_a_malformed_budget_is_an_error_that_names_the_variable(
    trees: dict[str, Path], host: Host
) -> None:
    kernel = only(trees["moe_a2a"], "aiv/*all_to_all_v*.so")
    env = {"PATH": "/usr/bin:/bin", "PYPTO_BUILD_KERNEL_WAIT_TIMEOUT_MS": "2s"}
    run = host(kernel, 2, 1, a2av_operands(2, 8, 16), env=env)
    assert run.returncode in TRAPPED
    assert (
        "PYPTO_BUILD_KERNEL_WAIT_TIMEOUT_MS must be a positive whole number of milliseconds, "
        "got '2s'" in run.stderr
    )


def test_with_the_hooks_the_same_binaries_latch_the_code_and_return(
    trees: dict[str, Path], host: Host
) -> None:
    for kernel, nranks, operands in (
        (only(trees["moe_mc2"], "aiv/*bmm_rs_a2a*.so"), MC2_RANKS, MC2_OPERANDS),
        (only(trees["moe_a2a"], "aiv/*all_to_all_v*.so"), 2, a2av_operands(2, 8, 16)),
    ):
        run = host(kernel, nranks, 1, operands, hooks=True)
        assert run.returncode == 0, (kernel, run.stderr)
        assert run.stdout.split() == ["returned", "error", str(TIMEOUT)]
        assert "hook: error 100: signal wait timed out after 200000000 ns" in run.stderr

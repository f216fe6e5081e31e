"""What running the simulated ranks in a worker process costs: the sample run in the caller's
process, in a worker kept from an earlier run, and in a worker started for the run.

Builds ``samples/moe_a2a`` for chip a3 with the ``sim`` toolchain into a temporary folder (its
own compile cache), then runs its HOST orchestrator on its 4 ranks with the inputs of
``samples/moe_a2a/make_inputs.py``, through :meth:`pypto_build.sim.SimProgram.run` (what
``pypto-build run`` and :mod:`pypto_build.mc2` call). Each round runs, in this order:

* ``in_process``: ``isolate=False``, the ranks as threads of this process (no protection);
* ``isolated``: the default, in the worker the previous run left idle: the launch pickled to
  it, the dispatch events and the result pickled back;
* ``isolated_cold``: the idle workers stopped first, so the run starts one: an interpreter,
  the simulator's imports and the runtime library loaded from memory, what the first run of a
  process pays (``pypto-build run`` pays it once per command).

Every run's outputs are checked equal to the first in-process run's (tensors, windows, the
dispatches' codes and task counts): isolation must not change a result. Rounds interleave the
scenarios, so a change in the machine's load touches all alike; the summary takes medians.

Writes ``bench/results/sim_isolation.json``. Run: ``python bench/bench_sim_isolation.py
[--repeat N]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
from recording import (
    REPO_ROOT,
    BenchmarkFailure,
    JsonValue,
    load_average,
    machine,
    print_table,
    relative_to_repo,
    summary,
    write_results,
)

from pypto_build.chip_build.build import build
from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.sim import isolation
from pypto_build.chip_build.toolchains import select_toolchain
from pypto_build.plugin.settings import load_settings
from pypto_build.sim import SimProgram, SimResult

PROJECT = REPO_ROOT / "samples" / "moe_a2a"
CHIP = "a3"
RANKS = 4
SCENARIOS = ("in_process", "isolated", "isolated_cold")


def _prepare(scratch: Path) -> tuple[SimProgram, dict[str, np.ndarray]]:
    """The sample built for the simulator, opened, and its inputs."""
    settings = load_settings(PROJECT, environ={})
    out = scratch / "out"
    build(
        [PROJECT / program for program in settings.programs],
        chips=[CHIP],
        out_dir=out,
        source_root=PROJECT,
        toolchain=select_toolchain("sim"),
        jobs=2,
        cache=CompileCache(scratch / "cache"),
        progress=None,
    )
    inputs_file = scratch / "inputs.npz"
    subprocess.run(
        [sys.executable, str(PROJECT / "make_inputs.py"), str(inputs_file)],
        check=True,
        capture_output=True,
    )
    with np.load(inputs_file) as archive:
        inputs = {name: archive[name] for name in archive.files}
    return SimProgram.open(out, chip=CHIP), inputs


def _fingerprint(result: SimResult) -> tuple[object, ...]:
    """What must not depend on where the run ran (wall times aside)."""
    tensors = tuple((name, result[name].tobytes()) for name in sorted(result))
    windows = tuple((name, result.windows[name].tobytes()) for name in sorted(result.windows))
    dispatches = tuple(
        (d.rank, d.index, d.next_level, d.code, d.tasks, d.log) for d in result.dispatches
    )
    return tensors, windows, dispatches


def _timed(run: Callable[[], SimResult]) -> tuple[float, SimResult]:
    started = time.perf_counter()
    result = run()
    return time.perf_counter() - started, result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The sample run in-process and isolated.")
    parser.add_argument("--repeat", type=int, default=30, help="rounds (default: 30)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat: at least 1")
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="pypto-bench-isolation-") as scratch:
        program, inputs = _prepare(Path(scratch))

        def in_process() -> SimResult:
            return program.run(inputs, ranks=RANKS, isolate=False)

        def isolated() -> SimResult:
            return program.run(inputs, ranks=RANKS)

        def isolated_cold() -> SimResult:
            isolation._POOL.close()
            return program.run(inputs, ranks=RANKS)

        scenarios: Mapping[str, Callable[[], SimResult]] = {
            "in_process": in_process,
            "isolated": isolated,
            "isolated_cold": isolated_cold,
        }
        expected = _fingerprint(in_process())
        isolated()  # the first worker, and the runtime image, outside the measurements
        seconds: dict[str, list[float]] = {name: [] for name in SCENARIOS}
        for _ in range(args.repeat):
            for name in SCENARIOS:
                wall, result = _timed(scenarios[name])
                if _fingerprint(result) != expected:
                    raise BenchmarkFailure(f"{name} changed the result")
                seconds[name].append(wall)
    medians = {name: statistics.median(seconds[name]) for name in SCENARIOS}
    overhead_ms = {
        "isolated_minus_in_process": round((medians["isolated"] - medians["in_process"]) * 1e3, 2),
        "worker_start": round((medians["isolated_cold"] - medians["isolated"]) * 1e3, 1),
    }
    document: dict[str, JsonValue] = {
        "benchmark": "sim_isolation",
        "chip": CHIP,
        "load_average_1min": {"after": load_average(), "before": load_before},
        "machine": machine(),
        "overhead_of_medians_ms": overhead_ms,
        "program": "host_orch",
        "project": relative_to_repo(PROJECT),
        "ranks": RANKS,
        "ratio_isolated_over_in_process": round(medians["isolated"] / medians["in_process"], 2),
        "repeat": args.repeat,
        "scenarios": {name: {"wall_s": summary(seconds[name], 5)} for name in SCENARIOS},
    }
    path = write_results("sim_isolation", document)
    rows = [
        [name, f"{min(seconds[name]) * 1e3:.2f}", f"{medians[name] * 1e3:.2f}"]
        for name in SCENARIOS
    ]
    print_table(["scenario", "min ms", "median ms"], rows)
    print("\n" + ", ".join(f"{name} {value} ms" for name, value in overhead_ms.items()))
    print(f"\nwrote {relative_to_repo(path)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

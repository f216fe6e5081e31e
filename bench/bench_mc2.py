"""Row 8 of ``docs/performance.md``: the fused MC2 operator on simulated ranks, against NumPy's
float32 matmul of the same products.

A user tests a MoE layer's ``batch_matmul_reduce_scatter_all_to_all`` on the simulator before
the device, so the simulation must compute at a speed a realistic shape allows. Its work is the
tile matmuls (FP32 sums of 16-bit products, as the cube unit computes them); the ReduceScatter,
the AlltoAllV and the bias are memory passes beside them. So the anchor is the arithmetic alone,
done as fast as the machine's BLAS does it: for every rank, :func:`numpy.matmul` of that rank's
``x`` (``E/ep x ep*C x M/tp``) and ``weight`` (``E/ep x M/tp x H``) in float32, converted
beforehand (the operator's products, without its exchanges).

Measured at two fp16 shapes on ep 2 x tp 2 (4 ranks, y_shard_type 0): the issue's (E 4, C 256,
H 512, M 1024) and one eight times its work (C 512, H 1024, M 2048). Per shape, one executor per
rank (:func:`pypto_build.mc2.get_workspace_size`, repeatable), a warm-up launch (the kernel
compiled and loaded), then rounds that alternate one simulated call of every rank
(:func:`pypto_build.mc2.run` from one thread, then :meth:`SimWorld.synchronize`) with the
anchor, so a change in the machine's load touches both; the summary takes medians. After each
anchor the script waits :data:`BLAS_IDLE_S` before the next simulated call: NumPy's OpenBLAS
threads spin on their CPUs for a while after a call before they sleep, and a simulated call
started meanwhile shares the 2 CPUs with them (on the recorded machine 144 ms right after an
anchor, 101 ms after the pause; the anchor's own time does not change). Every
round's ``out`` must be bit for bit the first round's (the script stops otherwise), and its
SHA-256 is recorded, so a change of a single result bit shows in the results file's diff.

Target: the simulated call at least 0.3x the anchor's speed (anchor time over call time), at
both shapes. Writes ``bench/results/mc2.json``; exits 1 when a target is missed. Run:
``python bench/bench_mc2.py [--repeat N]`` (needs NumPy, the ``sim`` extra).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from recording import (
    BenchmarkFailure,
    JsonValue,
    Target,
    load_average,
    machine,
    median,
    print_table,
    relative_to_repo,
    report_targets,
    summary,
    targets_exit_status,
    write_results,
)

from pypto_build import mc2

LIMIT = 0.3
#: Seconds after an anchor before the next simulated call: OpenBLAS's idle threads spin up to
#: their ``thread_timeout`` (2**28 cycles by default, about 0.1 s here) before they sleep.
BLAS_IDLE_S = 0.3


@dataclass(frozen=True)
class Shape:
    """One configuration: ``ep x tp`` ranks, ``E`` experts, ``C`` tokens each, ``H`` x ``M``."""

    name: str
    ep: int
    tp: int
    experts: int
    c: int
    h: int
    m: int

    @property
    def ranks(self) -> int:
        return self.ep * self.tp

    @property
    def flops(self) -> int:
        """Every rank's products: E/ep x (ep*C) x (M/tp) x H multiply-adds, two flops each."""
        per_rank = (self.experts // self.ep) * (self.ep * self.c) * (self.m // self.tp) * self.h
        return 2 * per_rank * self.ranks

    def __str__(self) -> str:
        return (
            f"ep {self.ep} x tp {self.tp}, E {self.experts}, C {self.c}, H {self.h}, "
            f"M {self.m}, fp16"
        )


SHAPES = (
    Shape("issue", 2, 2, 4, 256, 512, 1024),
    Shape("larger", 2, 2, 4, 512, 1024, 2048),
)


class Call:
    """Every rank's operands and executor for one shape, launched together."""

    def __init__(self, shape: Shape) -> None:
        rng = np.random.default_rng(0)
        e, m = shape.experts // shape.ep, shape.m // shape.tp
        x_shape = (shape.ranks, e, shape.ep * shape.c, m)
        self.x = rng.uniform(-1, 1, x_shape).astype(np.float16)
        self.weight = rng.uniform(-1, 1, (shape.ranks, e, m, shape.h)).astype(np.float16)
        self.out = np.zeros((shape.ranks, shape.experts, shape.c, shape.h // shape.tp), np.float16)
        # The anchor's operands, converted outside its timing.
        self.x32 = self.x.astype(np.float32)
        self.weight32 = self.weight.astype(np.float32)
        self.world = mc2.SimWorld(shape.ep, shape.tp)
        self.executors: list[tuple[int, mc2.Executor]] = []
        for rank in range(shape.ranks):
            stream = self.world.stream(rank)
            size, executor = mc2.get_workspace_size(
                self.x[rank],
                self.weight[rank],
                None,
                stream.group_ep,
                stream.group_tp,
                shape.ep,
                shape.tp,
                0,
                self.out[rank],
            )
            executor.set_repeatable()
            self.executors.append((size, executor))
        self.workspaces = [np.empty(size, np.uint8) for size, _ in self.executors]

    def simulated(self) -> float:
        started = time.perf_counter()
        for rank, (size, executor) in enumerate(self.executors):
            mc2.run(self.workspaces[rank], size, executor, self.world.stream(rank))
        self.world.synchronize()
        return time.perf_counter() - started

    def anchor(self) -> float:
        started = time.perf_counter()
        for rank in range(len(self.executors)):
            np.matmul(self.x32[rank], self.weight32[rank])
        return time.perf_counter() - started

    def digest(self) -> str:
        return hashlib.sha256(self.out.tobytes()).hexdigest()


@dataclass(frozen=True)
class Measured:
    """One shape's rounds: the simulated calls' and the anchor's times."""

    shape: Shape
    simulated: list[float]
    anchor: list[float]
    out_sha256: str

    @property
    def speed(self) -> float:
        """The anchor's median time over the simulated call's."""
        return median(self.anchor) / median(self.simulated)

    def as_json(self) -> dict[str, JsonValue]:
        return {
            "anchor_s": summary(self.anchor),
            "flops": self.shape.flops,
            "out_sha256": self.out_sha256,
            "shape": str(self.shape),
            "simulated_gflops": round(self.shape.flops / median(self.simulated) / 1e9, 2),
            "simulated_s": summary(self.simulated),
            "speed_vs_anchor": round(self.speed, 4),
        }


def measure(shape: Shape, repeat: int) -> Measured:
    call = Call(shape)
    call.simulated()  # warm-up: the kernel compiled and loaded, the worker started
    call.anchor()
    expected = call.digest()
    simulated: list[float] = []
    anchor: list[float] = []
    for _ in range(repeat):
        call.out[...] = 0
        time.sleep(BLAS_IDLE_S)  # the anchor's BLAS threads asleep again (see the module)
        simulated.append(call.simulated())
        if call.digest() != expected:
            raise BenchmarkFailure(f"{shape}: a round's out differs from the first round's")
        anchor.append(call.anchor())
    return Measured(shape, simulated, anchor, expected)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="rounds per shape (default 7)")
    args = parser.parse_args(argv)
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="bench-mc2-") as cache:
        os.environ["PYPTO_CACHE_DIR"] = str(Path(cache))
        results = [measure(shape, args.repeat) for shape in SHAPES]
    print_table(
        ("shape", "simulated s", "NumPy s", "GFLOP/s", "speed vs NumPy"),
        [
            (
                str(r.shape),
                f"{median(r.simulated):.3f}",
                f"{median(r.anchor):.4f}",
                f"{r.shape.flops / median(r.simulated) / 1e9:.2f}",
                f"{r.speed:.3g}x",
            )
            for r in results
        ],
    )
    targets = [
        Target(
            "8",
            f"MC2 on the simulator, {r.shape}",
            r.speed,
            LIMIT,
            "x",
            "NumPy's float32 matmul of the same products, same run",
            at_most=False,
        )
        for r in results
    ]
    document: dict[str, JsonValue] = {
        "benchmark": "mc2",
        "load_average_1min": {"after": load_average(), "before": load_before},
        "machine": machine(),
        "repeat": args.repeat,
        "shapes": {r.shape.name: r.as_json() for r in results},
        "targets": report_targets(targets),
    }
    path = write_results("mc2", document)
    print(f"\nwrote {relative_to_repo(path)}")
    return targets_exit_status(targets)


if __name__ == "__main__":
    raise SystemExit(main())

"""Run the kernels this package ships on simulated ranks and check them against NumPy.

    python -m moe_mc2.demo

The wheel built by pypto-build's hatch hook holds ``moe_mc2/_kernels/a3/``, the compiled chip
tree of the program; this finds it through ``importlib.resources``, runs the chip orchestration
``MoeCombine.expert_combine`` on its own on RANKS simulated ranks (each rank with its own
inputs; the simulator allocates the workspace window on every rank) and compares every rank's
``out`` with :mod:`moe_mc2.golden`. It needs kernels built with the ``sim`` toolchain (what
``auto`` means on a machine without a CANN toolkit). Exit status 0 when the outputs match.
"""

from __future__ import annotations

import argparse
import sys
from importlib.resources import as_file, files

try:  # the package's `sim` extra
    import numpy  # noqa: F401

    from pypto_build import sim
except ImportError as exc:
    raise SystemExit(
        f"the demo runs the kernels on pypto-build's simulator: pip install 'moe-mc2[sim]' ({exc})"
    ) from None

from moe_mc2 import golden
from moe_mc2.pipelines import EP, RANKS, TP

#: The resource folder the hook fills (``package`` in ``[tool.pypto]``), and what runs.
KERNELS = "_kernels"
CHIP = "a3"
PROGRAM = "expert_combine"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m moe_mc2.demo", description=__doc__)
    parser.parse_args(argv)
    with as_file(files("moe_mc2") / KERNELS) as kernels:
        if not kernels.is_dir():
            print(
                f"{kernels}: no kernels; this moe_mc2 was installed without pypto-build's "
                "build hook",
                file=sys.stderr,
            )
            return 1
        try:
            result = sim.run(
                kernels, chip=CHIP, program=PROGRAM, ranks=RANKS, inputs=golden.inputs()
            )
        except (sim.BuildTreeError, sim.SimulationError) as err:
            print(f"{kernels}: {err}", file=sys.stderr)
            return 1
    tasks = sum(record.tasks for record in result.dispatches)
    print(
        f"moe_mc2/{KERNELS}/{CHIP} {PROGRAM} ran on {RANKS} simulated ranks (ep {EP} x tp {TP}): "
        f"{len(result.dispatches)} dispatches, {tasks} kernel tasks"
    )
    problem = golden.mismatch(result)
    if problem is not None:
        print(problem, file=sys.stderr)
        return 1
    print(golden.summary())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

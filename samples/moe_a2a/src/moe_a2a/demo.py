"""Run the kernels this package ships on simulated ranks and check them against NumPy.

    python -m moe_a2a.demo [--chip a3|a5]

The wheel built by pypto-build's hatch hook holds ``moe_a2a/_kernels/<chip>/``, the compiled
sub-build of every chip in ``[tool.pypto]``; this finds it through ``importlib.resources``, runs
``MoeDispatch.host_orch`` on NR simulated ranks with pypto-build's simulator and compares the
outputs with :mod:`moe_a2a.golden`. It needs kernels built with the ``sim`` toolchain (what
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
        f"the demo runs the kernels on pypto-build's simulator: pip install 'moe-a2a[sim]' ({exc})"
    ) from None

from moe_a2a import golden
from moe_a2a.pipelines import NR

#: The resource folder the hook fills (``package`` in ``[tool.pypto]``).
KERNELS = "_kernels"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m moe_a2a.demo", description=__doc__)
    parser.add_argument("--chip", default="a3", help="the chip tree to run (default: a3)")
    args = parser.parse_args(argv)
    with as_file(files("moe_a2a") / KERNELS) as kernels:
        if not kernels.is_dir():
            print(
                f"{kernels}: no kernels; this moe_a2a was installed without pypto-build's "
                "build hook",
                file=sys.stderr,
            )
            return 1
        try:
            result = sim.run(kernels, chip=args.chip, ranks=NR, inputs=golden.inputs())
        except (sim.BuildTreeError, sim.SimulationError) as err:
            print(f"{kernels}: {err}", file=sys.stderr)
            return 1
    tasks = sum(record.tasks for record in result.dispatches)
    print(
        f"moe_a2a/{KERNELS}/{args.chip} ran on {NR} simulated ranks: "
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

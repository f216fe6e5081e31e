"""Run the kernels this package ships on simulated ranks and check them against NumPy.

    python -m moe_a2a_host.demo [--chip a3|a5]

The wheel holds ``moe_a2a_host/_kernels/<chip>/`` (the hook's ``package``); this runs its HOST
orchestrator on NR simulated ranks with pypto-build's simulator (the ``sim`` extra) and compares
the outputs with :mod:`moe_a2a_host.golden`. Exit status 0 when they match.
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
        "the demo runs the kernels on pypto-build's simulator: "
        f"pip install 'moe-a2a-host[sim]' ({exc})"
    ) from None

from moe_a2a_host import golden
from moe_a2a_host.pipelines import NR


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m moe_a2a_host.demo", description=__doc__)
    parser.add_argument("--chip", default="a3", help="the chip tree to run (default: a3)")
    args = parser.parse_args(argv)
    with as_file(files("moe_a2a_host") / "_kernels") as kernels:
        try:
            result = sim.run(kernels, chip=args.chip, ranks=NR, inputs=golden.inputs())
        except (sim.BuildTreeError, sim.SimulationError) as err:
            print(f"{kernels}: {err}", file=sys.stderr)
            return 1
    print(
        f"moe_a2a_host/_kernels/{args.chip} ran on {NR} simulated ranks: "
        f"{len(result.dispatches)} dispatches (the exchange among them, on the HOST rail)"
    )
    problem = golden.mismatch(result)
    if problem is not None:
        print(f"outputs differ from the NumPy golden: {problem}", file=sys.stderr)
        return 1
    rows = int(golden.expected()["recv_out"].sum())
    print(f"outputs match the NumPy golden: {NR} ranks exchanged {rows} token rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
